#!/usr/bin/env bash
# install-deps.sh installs what anteroom's tests run against: redis-server and
# redis-cli and redis-benchmark (Redis, Redis Cluster), Chromium (browser tests), a small CJK
# font (Chinese text in screenshots) and small Devanagari and Arabic fonts
# (the Hindi and right-to-left Arabic screenshots of the waiting room), nginx-light (the auth_request gateway
# test), caddy and haproxy (the Caddy and HAProxy gateway tests), Node.js with npm (the Cloudflare Worker package in miniflare, the
# JavaScript client package, the docs' webhook verifier), and from npm:
# axe-core (internal/e2e's accessibility checks, pinned by
# internal/e2e/testdata/axe/package-lock.json), the Cloudflare Worker
# package's miniflare and TypeScript (pinned by
# deploy/gateway/cloudflare-worker/package-lock.json) and the JavaScript
# client package's TypeScript (internal/jsclient's build, type and Node
# tests, pinned by web/pages/js/anteroom/package-lock.json). NATS needs
# nothing: the tests embed it.
#
# Idempotent: when everything is present it changes nothing and runs no
# apt-get. Meant for a fresh Debian machine as root; with sudo otherwise.
# The tests start their own redis-server, nginx, caddy and haproxy on
# random ports, so the
# system services are not needed: they are kept from starting when this
# script installs them, and left alone if they were already there.
set -euo pipefail

log() { printf 'install-deps: %s\n' "$*"; }

# fonts-noto-cjk is ~56 MB to download (91 MB installed); WenQuanYi Micro Hei
# covers Chinese for ~1.6 MB.
CJK_FONT=fonts-wqy-microhei
# Hindi (Devanagari, ~80 KB) and Arabic (~50 KB): fonts-noto-core would be
# ~40 MB for the same two scripts.
SCRIPT_FONTS=(fonts-lohit-deva fonts-kacst-one)

have_cmd() { command -v "$1" >/dev/null 2>&1; }
have_pkg() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q 'install ok installed'; }

missing=()
have_cmd redis-server || missing+=(redis-server)
{ have_cmd redis-cli && have_cmd redis-benchmark; } || missing+=(redis-tools)
have_cmd chromium || missing+=(chromium)
have_cmd curl || missing+=(curl ca-certificates)
have_cmd nginx || [ -x /usr/sbin/nginx ] || missing+=(nginx-light)
have_cmd caddy || missing+=(caddy)
have_cmd haproxy || [ -x /usr/sbin/haproxy ] || missing+=(haproxy)
have_cmd node || missing+=(nodejs)
have_cmd npm || missing+=(npm)
# Debian's PyJWT and cryptography (the Python middleware, connectors/python),
# Ruby with ruby-jwt and RbNaCl (the Rack middleware, connectors/ruby).
for p in python3-jwt python3-cryptography ruby ruby-jwt ruby-rbnacl; do
	if have_cmd dpkg-query && ! have_pkg "$p"; then missing+=("$p"); fi
done
if have_cmd dpkg-query && ! have_pkg "$CJK_FONT"; then
	missing+=("$CJK_FONT")
fi
for f in "${SCRIPT_FONTS[@]}"; do
	if have_cmd dpkg-query && ! have_pkg "$f"; then
		missing+=("$f")
	fi
done

if [ ${#missing[@]} -eq 0 ]; then
	log "nothing to do: redis-server, redis-cli, chromium, nginx, caddy, haproxy, node, npm and the fonts are present"
else
	log "missing: ${missing[*]}"
	if ! have_cmd apt-get; then
		log "no apt-get here; install redis-server, redis-cli, chromium, nginx, caddy, haproxy and node yourself"
		if [ "${CI:-}" = "true" ]; then
			exit 1
		fi
		log "(tests that need them will be skipped)"
		exit 0
	fi
	SUDO=()
	if [ "$(id -u)" -ne 0 ]; then
		if ! have_cmd sudo; then
			log "not root and no sudo: cannot install ${missing[*]}"
			exit 1
		fi
		SUDO=(sudo)
	fi

	# Keep the packages' services (redis-server on 6379, nginx, caddy and
	# haproxy on 80, caddy's admin on 2019) from being
	# started by the install; tests do not use them. An existing
	# policy-rc.d is respected and left in place.
	policy=/usr/sbin/policy-rc.d
	if [ ! -e "$policy" ]; then
		printf '#!/bin/sh\nexit 101\n' | "${SUDO[@]}" tee "$policy" >/dev/null
		"${SUDO[@]}" chmod 755 "$policy"
		trap '"${SUDO[@]}" rm -f "$policy"' EXIT
	fi

	export DEBIAN_FRONTEND=noninteractive
	log "apt-get update"
	"${SUDO[@]}" apt-get update -q
	log "apt-get install ${missing[*]}"
	"${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive \
		apt-get install -y -q --no-install-recommends "${missing[@]}"

	case " ${missing[*]} " in
	*" redis-server "*)
		if have_cmd systemctl && [ -d /run/systemd/system ]; then
			# On a systemd machine the unit may still be enabled for the
			# next boot; the tests never need it.
			"${SUDO[@]}" systemctl disable --now redis-server >/dev/null 2>&1 || true
			log "disabled the redis-server system service (tests start their own)"
		fi
		;;
	esac
	case " ${missing[*]} " in
	*" nginx-light "*)
		if have_cmd systemctl && [ -d /run/systemd/system ]; then
			"${SUDO[@]}" systemctl disable --now nginx >/dev/null 2>&1 || true
			log "disabled the nginx system service (tests start their own)"
		fi
		;;
	esac
	for svc in caddy haproxy; do
		case " ${missing[*]} " in
		*" $svc "*)
			if have_cmd systemctl && [ -d /run/systemd/system ]; then
				"${SUDO[@]}" systemctl disable --now "$svc" >/dev/null 2>&1 || true
				log "disabled the $svc system service (tests start their own)"
			fi
			;;
		esac
	done
fi

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

# npm_ci DIR WHAT FILE... installs the npm package in DIR with npm ci
# (exactly its locked versions; --ignore-scripts loses nothing: workerd's
# binary is an npm package of its own) unless every FILE under
# DIR/node_modules is already there. WHAT names it in the log.
npm_ci() {
	local dir="$1" what="$2" f
	shift 2
	for f in "$@"; do
		if [ ! -f "$dir/node_modules/$f" ]; then
			if have_cmd npm; then
				log "npm ci --prefix $dir ($what)"
				npm ci --prefix "$dir" --no-audit --no-fund --ignore-scripts
			elif [ "${CI:-}" = "true" ]; then
				log "no npm: cannot install $what"
				exit 1
			fi
			return
		fi
	done
	log "$what: present in $dir/node_modules"
}

# axe-core: the browser tests' accessibility checks.
AXE_DIR="$ROOT/internal/e2e/testdata/axe"
npm_ci "$AXE_DIR" axe-core axe-core/axe.min.js
# The Cloudflare Worker package's dev dependencies (miniflare with its
# workerd binary, TypeScript, the Workers types): TestCloudflareWorker.
WORKER_DIR="$ROOT/deploy/gateway/cloudflare-worker"
npm_ci "$WORKER_DIR" "miniflare, TypeScript" miniflare/package.json typescript/package.json
# TypeScript for the JavaScript client package (@anteroom/client).
JS_DIR="$ROOT/web/pages/js/anteroom"
npm_ci "$JS_DIR" "the JavaScript client's TypeScript" typescript/bin/tsc
# jose for the Node middleware, Express for its tests (connectors/node).
MW_DIR="$ROOT/connectors/node"
npm_ci "$MW_DIR" "the Node middleware's jose and Express" jose/package.json express/package.json

log "redis-server: $(command -v redis-server || echo missing) $(redis-server --version 2>/dev/null | awk '{print $3}')"
log "redis-cli:    $(command -v redis-cli || echo missing)"
log "chromium:     $(command -v chromium || echo missing)"
log "nginx:        $(command -v nginx || ls /usr/sbin/nginx 2>/dev/null || echo missing)"
log "caddy:        $(command -v caddy || echo missing) $(caddy version 2>/dev/null | awk '{print $1}')"
log "haproxy:      $(command -v haproxy || ls /usr/sbin/haproxy 2>/dev/null || echo missing) $(haproxy -v 2>/dev/null | awk 'NR==1{print $3}')"
log "node:         $(command -v node || echo missing) $(node --version 2>/dev/null || true)"
log "npm:          $(command -v npm || echo missing) $(npm --version 2>/dev/null || true)"
log "axe-core:     $(ls "$AXE_DIR/node_modules/axe-core/axe.min.js" 2>/dev/null || echo missing)"
log "miniflare:    $(ls "$WORKER_DIR/node_modules/miniflare/package.json" 2>/dev/null || echo missing)"
log "typescript:   $(ls "$JS_DIR/node_modules/typescript/bin/tsc" 2>/dev/null || echo missing)"
log "jose:         $(ls "$MW_DIR/node_modules/jose/package.json" 2>/dev/null || echo missing)"
log "ruby-jwt:     $(/usr/bin/ruby -e 'require "jwt"; require "rbnacl"; puts JWT::VERSION::STRING' 2>/dev/null || echo missing)"
log "python3-jwt:  $(/usr/bin/python3 -c 'import jwt, cryptography; print(jwt.__version__, cryptography.__version__)' 2>/dev/null || echo missing)"
