// Package docs holds no code: its tests keep README.md and docs/*.md
// true. Every shell command in them is either run by a named test (a
// "<!-- tested-by: TestName -->" line right above its block, and for
// blocks a test reads, "<!-- readme-test: name -->") or run by CI
// (.ci/run, which runs make test).
package docs
