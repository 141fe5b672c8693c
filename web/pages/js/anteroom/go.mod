// This folder is the JavaScript client package (@anteroom/client), not Go.
// This go.mod makes it a module of its own, so that `go list ./...`,
// `go vet ./...` and staticcheck in the repository root never descend into
// its node_modules.
module anteroom.invalid/jsclient

go 1.22
