// This folder is the Node middleware package (@anteroom/express), not Go.
// This go.mod makes it a module of its own, so that `go list ./...`,
// `go vet ./...` and staticcheck in the repository root never descend into
// its node_modules.
module anteroom.invalid/connectors/node

go 1.22
