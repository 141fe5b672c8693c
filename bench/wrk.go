package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// wrkResult is what one wrk run measured (closed loop).
type wrkResult struct {
	RPS      float64
	Requests int64 // answers counted by wrk
	Non2xx   int64
	P50, P99 time.Duration
	Command  string
}

var (
	wrkRPS    = regexp.MustCompile(`Requests/sec:\s+([0-9.]+)`)
	wrkNon2xx = regexp.MustCompile(`Non-2xx or 3xx responses:\s+([0-9]+)`)
	wrkCount  = regexp.MustCompile(`([0-9]+) requests in`)
	wrkLat    = regexp.MustCompile(`(?m)^\s+(50|99)\.000%\s+([0-9.]+)(us|ms|s)`)
)

// runWrk runs wrk against url with conns connections for d, optionally with
// a Lua script, and parses its report.
func runWrk(url string, conns int, d time.Duration, script string) (wrkResult, error) {
	args := []string{"-t2", fmt.Sprintf("-c%d", conns), fmt.Sprintf("-d%ds", int(d.Seconds())), "--latency"}
	if script != "" {
		args = append(args, "-s", script)
	}
	args = append(args, url)
	out, err := exec.Command("wrk", args...).CombinedOutput()
	res := wrkResult{Command: "wrk " + strings.Join(args, " ")}
	if err != nil {
		return res, fmt.Errorf("wrk: %v: %s", err, out)
	}
	m := wrkRPS.FindSubmatch(out)
	if m == nil {
		return res, fmt.Errorf("wrk: no Requests/sec in %s", out)
	}
	res.RPS, _ = strconv.ParseFloat(string(m[1]), 64)
	if m := wrkCount.FindSubmatch(out); m != nil {
		res.Requests, _ = strconv.ParseInt(string(m[1]), 10, 64)
	}
	if m := wrkNon2xx.FindSubmatch(out); m != nil {
		res.Non2xx, _ = strconv.ParseInt(string(m[1]), 10, 64)
	}
	for _, m := range wrkLat.FindAllSubmatch(out, -1) {
		v, _ := strconv.ParseFloat(string(m[2]), 64)
		unit := map[string]time.Duration{"us": time.Microsecond, "ms": time.Millisecond, "s": time.Second}[string(m[3])]
		d := time.Duration(v * float64(unit))
		if string(m[1]) == "50" {
			res.P50 = d
		} else {
			res.P99 = d
		}
	}
	return res, nil
}

// luaTickets writes a wrk script that sends each request with the next of
// the given bearer tokens, so per-ticket limits and caches see a crowd.
// Each wrk thread formats its requests once, in init: the generator shares
// the cores with the server, and formatting a request per request (a Lua
// table of headers each time) cost wrk more than the bare handler costs
// the ceiling.
func luaTickets(dir string, tickets []string) (string, error) {
	var b strings.Builder
	b.WriteString("local t = {\n")
	for _, tk := range tickets {
		fmt.Fprintf(&b, "%q,\n", tk)
	}
	b.WriteString(`}
local reqs = {}
local i = 0
init = function()
  for k, tk in ipairs(t) do reqs[k] = wrk.format(nil, nil, {["Authorization"] = "Bearer " .. tk}) end
end
request = function()
  i = i % #reqs + 1
  return reqs[i]
end
`)
	path := filepath.Join(dir, "tickets.lua")
	return path, os.WriteFile(path, []byte(b.String()), 0o600)
}

// luaJoins writes a wrk script that joins a fresh user with every request:
// the request is formatted once per thread around a marker, and each
// request splices in a new user id (random per thread and run, then a
// counter).
func luaJoins(dir string) (string, error) {
	const script = `local threads = 0
setup = function(thread) threads = threads + 1; thread:set("tid", threads) end
local n, head, tail = 0, "", ""
init = function()
  local f = io.open("/dev/urandom", "rb")
  local run = f:read(6):gsub(".", function(c) return string.format("%02x", c:byte()) end)
  f:close()
  local req = wrk.format("POST", nil, {["X-User-ID"] = "\0"})
  local at = req:find("\0", 1, true)
  head = req:sub(1, at - 1) .. "w" .. tid .. "-" .. run .. "-"
  tail = req:sub(at + 1)
end
request = function()
  n = n + 1
  return head .. n .. tail
end
`
	path := filepath.Join(dir, "joins.lua")
	return path, os.WriteFile(path, []byte(script), 0o600)
}
