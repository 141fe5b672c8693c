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
func luaTickets(dir string, tickets []string) (string, error) {
	var b strings.Builder
	b.WriteString("local t = {\n")
	for _, tk := range tickets {
		fmt.Fprintf(&b, "%q,\n", tk)
	}
	b.WriteString("}\nlocal i = 0\nrequest = function()\n  i = i % #t + 1\n  return wrk.format(nil, nil, {[\"Authorization\"] = \"Bearer \" .. t[i]})\nend\n")
	path := filepath.Join(dir, "tickets.lua")
	return path, os.WriteFile(path, []byte(b.String()), 0o600)
}

// luaJoins writes a wrk script that joins a fresh user with every request.
func luaJoins(dir string) (string, error) {
	const script = `local n = 0
local threads = 0
setup = function(thread) threads = threads + 1; thread:set("tid", threads) end
init = function() n = 0 end
request = function()
  n = n + 1
  return wrk.format("POST", nil, {["X-User-ID"] = "w" .. tid .. "-" .. n .. "-" .. math.random(1e9)})
end
`
	path := filepath.Join(dir, "joins.lua")
	return path, os.WriteFile(path, []byte(script), 0o600)
}
