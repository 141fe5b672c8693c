# make test is the one command that runs every test; .ci/run runs exactly it.

GO ?= go
# The official Go tarball's place, for when go is not on PATH; a go on PATH wins.
export PATH := $(PATH):/usr/local/go/bin

.PHONY: test lint demo deps

STATICCHECK_VERSION ?= v0.8.2

test: deps lint
	$(GO) test -race -timeout 20m ./...

deps:
	bash scripts/install-deps.sh

lint:
	@out="$$(gofmt -l .)"; if [ -n "$$out" ]; then echo "gofmt -l: not formatted:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	$(GO) run honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION) ./...

demo:
	$(GO) run ./cmd/anteroom demo
