// Package luascript builds anteroom's Redis Lua scripts: each is the shared
// prelude (now_ms and replid, prelude.lua) followed by the script's own
// text, so a helper is written once and every script reads Redis TIME the
// same way. A script that calls seq_fence, the failover fence of a
// sequence counter (seqfence.lua), or list_has, a list's exact membership
// check (listhas.lua), gets it between the two.
//
// Every script's first line names it and its version
// ("-- claim.lua v2: ..."); TestScriptsPinned pins each script's SHA1, so a
// change to a script, or to the prelude, is a deliberate one. During a
// rolling upgrade a script runs beside its previous version on the same
// keys: a new version reads what the previous one wrote and keeps writing
// what it reads (docs/operate.md, "Rolling upgrades").
//
// TraceHook gives each script call made under a recording span a child
// span named after the script (trace.go): the one place scripts are
// traced, whichever package runs them.
package luascript

import (
	_ "embed"
	"strings"

	"github.com/redis/go-redis/v9"
)

//go:embed prelude.lua
var prelude string

//go:embed seqfence.lua
var seqFence string

//go:embed listhas.lua
var listHas string

// Source returns the text Redis runs for a script whose own text is body:
// the prelude, seqfence.lua when body calls seq_fence, listhas.lua when it
// calls list_has, then body.
func Source(body string) string {
	src := prelude
	if strings.Contains(body, "seq_fence(") {
		src += seqFence
	}
	if strings.Contains(body, "list_has(") {
		src += listHas
	}
	return src + body
}

// New returns the script of body (see Source), run with EVALSHA and loaded
// on NOSCRIPT.
// The script's name and version are remembered for TraceHook.
func New(body string) *redis.Script {
	s := redis.NewScript(Source(body))
	names.LoadOrStore(s.Hash(), nameOf(body))
	return s
}
