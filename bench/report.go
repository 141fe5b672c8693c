package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"time"
)

// row is one line of the results table.
type row struct {
	what, anteroom, baseline, ratio, goal, met string
}

// curve is throughput against concurrency for one target.
type curve struct {
	name   string
	points [][2]float64 // connections, req/s
}

// report collects the run's figures.
type report struct {
	prefix   string // put before every row's name (a shape other than the embedded one)
	flags    string // flags of the run beside -d, as the header shows them
	d        time.Duration
	started  time.Time
	rows     []row
	notes    []string
	commands []string
	curves   []curve
	peaks    map[string]float64
}

func newReport(d time.Duration) *report {
	return &report{d: d, started: time.Now(), peaks: map[string]float64{}}
}

func (r *report) add(what, anteroom, baseline string, ratio float64, goal string, met bool) {
	what = r.prefix + what
	v := "no"
	switch {
	case goal == "—":
		v = "—" // a figure to report, with no goal of its own
	case met:
		v = "yes"
	}
	rs := "—"
	if ratio > 0 {
		rs = fmt.Sprintf("%.2f", ratio)
	}
	r.rows = append(r.rows, row{what, anteroom, baseline, rs, goal, v})
	fmt.Fprintf(os.Stderr, "  %s: %s vs %s (ratio %s, goal %s)\n", what, anteroom, baseline, rs, goal)
}

func (r *report) note(s string)    { r.notes = append(r.notes, s) }
func (r *report) command(s string) { r.commands = append(r.commands, s) }

func machine() string {
	cpu := "unknown CPU"
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(line, "model name") {
				cpu = strings.TrimSpace(strings.SplitN(line, ":", 2)[1])
				break
			}
		}
	}
	redis, _ := exec.Command("redis-server", "--version").Output()
	return fmt.Sprintf("%d × %s, %s, %s; %s", runtime.NumCPU(), cpu, runtime.Version(), runtime.GOOS+"/"+runtime.GOARCH, strings.TrimSpace(string(redis)))
}

func (r *report) write(dir string) error {
	var b strings.Builder
	fmt.Fprintf(&b, "# anteroom benchmark results\n\n")
	fmt.Fprintf(&b, "Measured %s with `go run ./bench -d %s%s` on %s. ", r.started.UTC().Format("2006-01-02 15:04 MST"), r.d, r.flags, machine())
	b.WriteString("Every figure and its baseline were measured in this one run, on this one machine, with the load generator on the same two cores: ratios are the point, absolute numbers are modest.\n\n")
	b.WriteString("| measurement | anteroom | baseline | ratio | goal | met |\n|---|---|---|---|---|---|\n")
	for _, x := range r.rows {
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s |\n", x.what, x.anteroom, x.baseline, x.ratio, x.goal, x.met)
	}
	if len(r.curves) > 0 {
		b.WriteString("\n![throughput against concurrency](throughput.svg)\n")
	}
	if len(r.notes) > 0 {
		b.WriteString("\n## Notes\n\n")
		for _, n := range r.notes {
			fmt.Fprintf(&b, "- %s\n", n)
		}
	}
	b.WriteString("\n## Commands\n\n```\n")
	for _, c := range r.commands {
		b.WriteString(c + "\n")
	}
	b.WriteString("```\n")
	b.WriteString(keptSections(filepath.Join(dir, "RESULTS.md")))
	if err := os.WriteFile(filepath.Join(dir, "RESULTS.md"), []byte(b.String()), 0o644); err != nil {
		return err
	}
	if len(r.curves) > 0 {
		return os.WriteFile(filepath.Join(dir, "throughput.svg"), []byte(svgChart(r.curves)), 0o644)
	}
	return nil
}

// keptMarker starts the hand-written part of RESULTS.md (profiles,
// before-and-after studies), which a new run keeps below its own figures.
const keptMarker = "<!-- written by hand: go run ./bench keeps everything below this line -->"

// keptSections returns the hand-written part of the RESULTS.md at path,
// marker included, or "" when there is none.
func keptSections(path string) string {
	old, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	if i := strings.Index(string(old), keptMarker); i >= 0 {
		return string(old[i:])
	}
	return ""
}
