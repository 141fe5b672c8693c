# make test is the one command that runs every test; .ci/run runs exactly it.

GO ?= go
# The official Go tarball's place, for when go is not on PATH; a go on PATH wins.
export PATH := $(PATH):/usr/local/go/bin

.PHONY: test lint demo deps soak soak-putback

STATICCHECK_VERSION ?= v0.8.2

# The timeout only catches a hung package: on a busy machine (issue 24:
# two CPUs shared with a CPU-heavy job) internal/e2e alone takes ~26 min.
#
# The soak runs beside the package tests, its output kept until they end:
# each is a loaded machine for the other, as the suite must hold on one
# (issue 34), and CI is shorter by the soak's minutes. Both must pass.
test: deps lint
	@soaklog="$$(mktemp)"; \
	ANTEROOM_SOAK_DURATION=2m ANTEROOM_SOAK_SEED=$(TEST_SOAK_SEED) $(GO) test -tags soak -count=1 -v -run . -skip TestSoakCatchesPutBack -timeout 10m ./bench/soak >"$$soaklog" 2>&1 & soak=$$!; \
	$(GO) test -race -timeout 45m $(LONGEST_FIRST) ./...; tests=$$?; \
	wait $$soak; soaked=$$?; \
	echo "--- the soak (bench/soak, seed $(TEST_SOAK_SEED)), run beside the package tests:"; cat "$$soaklog"; rm -f "$$soaklog"; \
	test $$tests -eq 0 && test $$soaked -eq 0
	# Allocation counts need a build without the race detector's own.
	$(GO) test -count=1 -run TestHotPathAllocs ./web

# go test starts packages in the order it is given them (each once): the
# longest start first, so that the two cores stay busy to the end
# instead of waiting on internal/e2e, which ./...'s order starts
# half-way through.
LONGEST_FIRST = ./internal/e2e ./internal/node ./claim ./cmd/anteroom

# make test replays one recorded seed (a 2-minute run that passed on this
# code: bench/SOAK.md), so a red test is a regression, not a new draw;
# make soak draws a new seed each run to look for new orders of faults.
TEST_SOAK_SEED ?= 1796184873556234921

# The soak (bench/soak, issue 19): a sale after another under random
# faults, every promise checked. 10 minutes; 2 under CI=true; or
# ANTEROOM_SOAK_DURATION. ANTEROOM_SOAK_SEED replays a run's faults.
ifeq ($(CI),true)
SOAK_DURATION ?= 2m
else
SOAK_DURATION ?= 10m
endif
ANTEROOM_SOAK_DURATION ?= $(SOAK_DURATION)

soak:
	ANTEROOM_SOAK_DURATION=$(ANTEROOM_SOAK_DURATION) $(GO) test -tags soak -count=1 -v -run . -skip TestSoakCatchesPutBack -timeout 40m ./bench/soak

# The soak catches issue 24's bugs 1, 2 and 6 when their fixes are taken
# back, and porcupine's model calls three builds broken on purpose Illegal
# (stock off by one, Idempotency-Key ignored, a confirmed claim released):
# patched builds from bench/soak/testdata, a short soak each (about 3
# minutes a build on an idle machine; bench/SOAK.md has the runs).
soak-putback:
	$(GO) test -tags soak -count=1 -v -run 'TestSoakCatchesPutBack' -timeout 45m ./bench/soak

deps:
	bash scripts/install-deps.sh

lint:
	@out="$$(gofmt -l .)"; if [ -n "$$out" ]; then echo "gofmt -l: not formatted:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	$(GO) vet -tags soak ./bench/soak
	$(GO) vet -tags drills ./bench/drills
	$(GO) run honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION) ./...
	$(GO) run honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION) -tags soak ./bench/soak

demo:
	$(GO) run ./cmd/anteroom demo
