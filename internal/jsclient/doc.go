// Package jsclient tests the JavaScript client package (@anteroom/client,
// web/pages/js/anteroom) from Go, so `go test ./...` and CI run it: the
// committed /assets/anteroom.js and anteroom.d.ts, which the node embeds,
// are what the package builds (no drift); the package and an app using
// its types type-check with tsc; and its Node tests (node --test) pass
// against a real node on loopback (real redis-server, in-process NATS
// JetStream). internal/e2e's TestClientLibrary runs the same module in
// Chromium.
//
// The package holds only tests. They need node and the package's
// node_modules (TypeScript, pinned by its package-lock.json), which
// scripts/install-deps.sh installs with npm ci; a missing or stale
// node_modules is installed by the tests with npm ci too. Without node or
// npm the tests skip, except under CI=true, where they fail.
package jsclient
