// This go.mod only keeps the Go tool out of this JavaScript package: a
// directory holding its own go.mod is not part of the anteroom module, so
// `go test ./...`, `go vet ./...` and staticcheck never walk node_modules.
// internal/node TestCloudflareWorker tests the Worker.
module github.com/anteroom/anteroom/deploy/gateway/cloudflare-worker

go 1.26.0
