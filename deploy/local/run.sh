#!/usr/bin/env bash
# run.sh runs anteroom on loopback the way it runs in production, and a
# sale across it:
#
#   - a three-master Redis Cluster (redis-server with deploy/redis/redis.conf,
#     then redis-cli --cluster create),
#   - a three-server NATS cluster with JetStream (`anteroom natsd`),
#   - two `anteroom serve` nodes sharing the ticket secret, the admin token
#     and the signing key directory, with the order stream on 3 replicas,
#   - one `anteroom worker` (the order worker), when the command has one,
#
# then `anteroom loadgen` spreads a crowd over both nodes and prints the
# reconciliation against the Redis Cluster and the stream. Exit status 0
# means the report balanced. Everything lives in a temporary directory on
# free ports and is stopped and removed on exit, whatever happens.
#
# Needs redis-server and redis-cli (scripts/install-deps.sh), curl and Go
# (or ANTEROOM_BIN pointing at a built anteroom).
#
#   deploy/local/run.sh                      # 2,000 shoppers, 400 units
#   USERS=20000 UNITS=2000 deploy/local/run.sh
#   KEEP=1 deploy/local/run.sh               # keep running until Ctrl-C
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
USERS="${USERS:-2000}"
UNITS="${UNITS:-400}"
BUCKETS="${BUCKETS:-4}"
RATE="${RATE:-3000}"
CONCURRENCY="${CONCURRENCY:-64}"

log() { printf 'local: %s\n' "$*"; }
die() { log "$*" >&2; exit 1; }
for tool in redis-server redis-cli curl; do
	command -v "$tool" >/dev/null || die "$tool is missing (scripts/install-deps.sh installs redis)"
done

work="$(mktemp -d "${TMPDIR:-/tmp}/anteroom-local.XXXXXX")"
pids=()
names=()

cleanup() {
	local status=$?
	trap - EXIT INT TERM
	if [ "$status" -ne 0 ] && [ -d "$work" ]; then
		log "failed (status $status); last log lines:"
		for f in "$work"/*.log "$work"/redis-*/redis.log; do
			[ -f "$f" ] || continue
			printf -- '--- %s\n' "${f#"$work"/}"
			tail -n 15 "$f"
		done
	fi
	for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
	# Give everything 15 s to drain, then kill what is left.
	for _ in $(seq 150); do
		local alive=0
		for pid in "${pids[@]}"; do kill -0 "$pid" 2>/dev/null && alive=1; done
		[ "$alive" -eq 0 ] && break
		sleep 0.1
	done
	for pid in "${pids[@]}"; do kill -KILL "$pid" 2>/dev/null || true; done
	wait 2>/dev/null || true
	rm -rf "$work"
	exit "$status"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# start NAME CMD...: run CMD in the background, logging to $work/NAME.log.
start() {
	local name=$1
	shift
	"$@" >"$work/$name.log" 2>&1 &
	pids+=($!)
	names+=("$name")
}

# until_ok WHAT SECONDS CMD...: poll CMD every 100 ms until it succeeds.
until_ok() {
	local what=$1 secs=$2
	shift 2
	for _ in $(seq $((secs * 10))); do
		if "$@" >/dev/null 2>&1; then return 0; fi
		sleep 0.1
	done
	die "$what: not ready after ${secs}s"
}

# free_port: a loopback port nothing listens on, not handed out before,
# below the kernel's ephemeral range (a port some outgoing connection
# holds cannot be bound, and no probe sees it).
ephemeral=$(cut -f1 /proc/sys/net/ipv4/ip_local_port_range 2>/dev/null || echo 32768)
used=" "
free_port() {
	local p
	while :; do
		p=$((10000 + RANDOM % (ephemeral - 10000)))
		case "$used" in *" $p "*) continue ;; esac
		if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then
			used="$used$p "
			echo "$p"
			return
		fi
	done
}

BIN="${ANTEROOM_BIN:-}"
if [ -z "$BIN" ]; then
	log "building anteroom"
	(cd "$ROOT" && go build -o "$work/anteroom" ./cmd/anteroom)
	BIN="$work/anteroom"
fi

# Redis Cluster: three masters, no replicas (a loopback toy; production runs
# a replica per master).
redis_ports=()
for i in 1 2 3; do
	p=$(free_port)
	redis_ports+=("$p")
	mkdir -p "$work/redis-$i"
	start "redis-$i" redis-server "$ROOT/deploy/redis/redis.conf" --port "$p" --cluster-port "$(free_port)" --bind 127.0.0.1 \
		--dir "$work/redis-$i" --logfile "$work/redis-$i/redis.log" --appendonly no --save '' \
		--min-replicas-to-write 0 # no replicas here: the shipped config wants one
done
for p in "${redis_ports[@]}"; do until_ok "redis :$p" 10 redis-cli -p "$p" ping; done
seeds=$(printf '127.0.0.1:%s ' "${redis_ports[@]}")
# shellcheck disable=SC2086 # one argument per seed
redis-cli --cluster create $seeds --cluster-replicas 0 --cluster-yes >"$work/redis-create.log" 2>&1 ||
	die "redis-cli --cluster create failed: $(tail -n 5 "$work/redis-create.log")"
cluster_ok() { for p in "${redis_ports[@]}"; do redis-cli -p "$p" cluster info | grep -q 'cluster_state:ok' || return 1; done; }
until_ok "redis cluster" 20 cluster_ok
REDIS_ADDRS=$(printf '127.0.0.1:%s,' "${redis_ports[@]}")
REDIS_ADDRS=${REDIS_ADDRS%,}
log "redis cluster up: $REDIS_ADDRS"

# NATS cluster: three servers with JetStream, routed to each other.
client_ports=() route_ports=() http_ports=()
for i in 0 1 2; do
	client_ports+=("$(free_port)") route_ports+=("$(free_port)") http_ports+=("$(free_port)")
done
ROUTES=$(printf 'nats://127.0.0.1:%s,' "${route_ports[@]}")
ROUTES=${ROUTES%,}
for i in 0 1 2; do
	start "nats-$((i + 1))" "$BIN" natsd -name "nats-$((i + 1))" -port "${client_ports[$i]}" \
		-cluster-port "${route_ports[$i]}" -routes "$ROUTES" -http-port "${http_ports[$i]}" \
		-store-dir "$work/nats-$((i + 1))"
done
# /healthz answers 200 once JetStream has a meta leader.
for p in "${http_ports[@]}"; do until_ok "nats :$p" 30 curl -fsS "http://127.0.0.1:$p/healthz"; done
NATS_URLS=$(printf 'nats://127.0.0.1:%s,' "${client_ports[@]}")
NATS_URLS=${NATS_URLS%,}
log "nats cluster up: $NATS_URLS"

# Two nodes: same secret, admin token and signing keys; the first creates
# the keys, the second starts once the first is ready.
export ANTEROOM_REDIS_CLUSTER_ADDRS="$REDIS_ADDRS"
export ANTEROOM_NATS_URL="$NATS_URLS"
export ANTEROOM_STREAM_REPLICAS=3
ANTEROOM_TICKET_SECRET="$(od -An -N32 -tx1 /dev/urandom | tr -d ' \n')"
ANTEROOM_ADMIN_TOKEN="local-$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')"
export ANTEROOM_TICKET_SECRET ANTEROOM_ADMIN_TOKEN
export ANTEROOM_SIGNING_KEYS="$work/keys"
export ANTEROOM_LOG_FORMAT=text ANTEROOM_DRAIN_DELAY=0s
# Shoppers are named by a signed visitor cookie (loadgen keeps one cookie
# jar per shopper); header mode would need ANTEROOM_TRUSTED_PROXIES.
export ANTEROOM_IDENTITY=anonymous
# Each node serves /metrics on a loopback port of its own
# (ANTEROOM_METRICS_ADDR), never on its public port.
urls=() metrics_urls=()
for n in a b; do
	p=$(free_port) mp=$(free_port)
	while [ "$mp" = "$p" ]; do mp=$(free_port); done # free_port runs in a subshell: it cannot remember p
	ANTEROOM_ADDR="127.0.0.1:$p" ANTEROOM_METRICS_ADDR="127.0.0.1:$mp" ANTEROOM_DATA_DIR="$work/node-$n" start "node-$n" "$BIN" serve
	until_ok "node $n" 60 curl -fsS "http://127.0.0.1:$p/readyz"
	urls+=("http://127.0.0.1:$p")
	metrics_urls+=("http://127.0.0.1:$mp")
done
log "nodes up: ${urls[*]}"

if "$BIN" help 2>/dev/null | grep -qE '^ +worker '; then
	ANTEROOM_DATA_DIR="$work/worker" start worker "$BIN" worker
	log "order worker started"
else
	log "SKIPPING the order worker: this anteroom has no 'worker' command yet"
fi

# The sale: created through node A, with the per-IP join budget off (every
# simulated shopper comes from 127.0.0.1; a real sale keeps it on), started once node B has it in its view
# too (each node refreshes every 100 ms), so no shopper meets a node that
# does not know the sale yet.
event="local-$(date +%s)"
at() { date -u -d "@$(($(date +%s) + $1))" +%Y-%m-%dT%H:%M:%SZ; }
curl -fsS -X PUT "${urls[0]}/admin/events/$event" -H "Authorization: Bearer $ANTEROOM_ADMIN_TOKEN" \
	-H 'Content-Type: application/json' -o /dev/null -d "{
	\"name\": \"loopback sale\", \"supply\": $UNITS, \"per_user_limit\": 1, \"buckets\": $BUCKETS,
	\"prequeue_opens_at\": \"$(at 2)\", \"starts_at\": \"$(at 4)\", \"ends_at\": \"$(at 3600)\",
	\"random_window_seconds\": 1, \"admit_rate_per_second\": $RATE,
	\"limits\": {\"join\": {\"ip\": {\"per_second\": -1}}}}" || die "creating the sale failed"
for u in "${urls[@]}"; do until_ok "sale on $u" 10 curl -fsS "$u/events/$event"; done
log "sale $event: $USERS shoppers, $UNITS units in $BUCKETS buckets, across both nodes"
"$BIN" loadgen -url "$(IFS=,; echo "${urls[*]}")" -event "$event" -users "$USERS" -concurrency "$CONCURRENCY" \
	-units "$UNITS" -buckets "$BUCKETS" -duration 90s \
	-redis-cluster-addrs "$REDIS_ADDRS" -nats-url "$NATS_URLS" | tr '\r' '\n' | grep -v '%  joined' | tee "$work/loadgen.out"
status=${PIPESTATUS[0]}
[ "$status" -eq 0 ] || die "loadgen: the sale did not balance (status $status)"

for i in "${!urls[@]}"; do
	u=${urls[$i]}
	log "metrics of $u (on ${metrics_urls[$i]}):"
	curl -fsS "${metrics_urls[$i]}/metrics" | grep -E "^anteroom_(claims_granted_total\{event=\"$event\"\}|outbox_depth\{event=\"$event\"\}|order_lag_seconds|order_events_pending) " | sed 's/^/  /' || true
done

if [ -n "${KEEP:-}" ]; then
	log "running; admin token $ANTEROOM_ADMIN_TOKEN; Ctrl-C to stop"
	wait
fi
