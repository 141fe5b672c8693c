package report

import (
	"encoding/csv"
	"io"
	"strconv"
	"strings"
	"time"
)

// CSVHeader is the first row of WriteCSV: every later row is one figure.
var CSVHeader = []string{"section", "metric", "value"}

// WriteCSV writes r as CSV, one figure a row (section, metric, value), in
// the order of the JSON: a spreadsheet pivots it as it likes. Wait
// histograms have one row per bucket, metric "le_<bound>s" or "gt_<bound>s"
// for the last. The door has a section "door" (blocked, not_eligible,
// sunk, eligible_lists separated by spaces, pre_registered_lottery) and a
// section "door:rule:<name>" per rule (then, matches, removed). The
// ETA's error comes last, a section "eta_error:<lane>" per lane with a row
// per figure of each point ("join_median_abs_error", "q25_p90_abs_error",
// ...), relative errors to four decimals.
func WriteCSV(w io.Writer, r *Report) error {
	cw := csv.NewWriter(w)
	row := func(section, metric, value string) {
		_ = cw.Write([]string{section, metric, cellSafe(value)})
	}
	num := func(section, metric string, n int64) { row(section, metric, strconv.FormatInt(n, 10)) }
	// fig writes a number this function formatted: a minus sign is a
	// sign, not a formula, so it is not quoted.
	fig := func(section, metric string, x float64) {
		_ = cw.Write([]string{section, metric, strconv.FormatFloat(x, 'f', 4, 64)})
	}
	_ = cw.Write(CSVHeader)
	row("event", "id", r.Event)
	row("event", "name", r.Name)
	row("event", "generated_at", r.GeneratedAt.Format(time.RFC3339))
	num("event", "supply", r.Supply)
	f := r.Funnel
	for _, v := range []struct {
		k string
		n int64
	}{
		{"joined", f.Joined}, {"admitted", f.Admitted}, {"present", f.Present}, {"no_shows", f.NoShows},
		{"granted", f.Granted}, {"released", f.Released}, {"confirmed", f.Confirmed},
		{"buyers", f.Buyers}, {"units_granted", f.UnitsGranted}, {"units_released", f.UnitsReleased},
		{"cancelled", f.Cancelled}, {"restocked", f.Restocked},
	} {
		num("funnel", v.k, v.n)
	}
	for _, h := range []struct {
		name string
		w    Waits
	}{{"join_to_admission", r.JoinToAdmission}, {"admission_to_claim", r.AdmissionToClaim}} {
		for i, n := range h.w.Counts {
			num(h.name, bucketName(h.w.BoundsSeconds, i), n)
		}
		num(h.name, "count", h.w.Count)
		row(h.name, "mean_seconds", strconv.FormatFloat(h.w.MeanSeconds, 'f', 2, 64))
	}
	for _, l := range r.Lanes {
		s := "lane:" + l.Lane
		num(s, "joined", l.Joined)
		num(s, "admitted", l.Admitted)
		num(s, "buyers", l.Buyers)
		num(s, "units_granted", l.UnitsGranted)
		num(s, "confirmed", l.Confirmed)
		row(s, "conversion", strconv.FormatFloat(l.Conversion, 'f', 4, 64))
	}
	p := r.Passes
	num("passes", "minted", p.Minted)
	num("passes", "redeemed", p.Redeemed)
	num("passes", "revoked", p.Revoked)
	num("passes", "refused", p.Refused)
	for _, x := range r.Refusals {
		num("refusals", x.Reason, x.Count)
	}
	for _, x := range r.Cancellations {
		num("cancellations", cellSafe(x.Reason), x.Count) // staff's own text
	}
	d := r.Door
	num("door", "blocked", d.Blocked)
	num("door", "not_eligible", d.NotEligible)
	num("door", "sunk", d.Sunk)
	row("door", "eligible_lists", strings.Join(d.EligibleLists, " "))
	row("door", "pre_registered_lottery", strconv.FormatBool(d.PreRegisteredLottery))
	for _, m := range d.Rules {
		s := "door:rule:" + m.Rule
		row(s, "then", m.Then)
		num(s, "matches", m.Matches)
		row(s, "removed", strconv.FormatBool(m.Removed))
	}
	row("draw", "mode", string(r.Draw.Mode))
	row("draw", "seed_commitment", r.Draw.SeedCommitment)
	row("draw", "seed", r.Draw.Seed)
	if r.Draw.WindowSize != nil {
		num("draw", "window_size", *r.Draw.WindowSize)
	}
	row("draw", "window_closes_at", r.Draw.WindowClosesAt.Format(time.RFC3339))
	for _, e := range r.ETAError {
		s := "eta_error:" + e.Lane
		num(s, "people", e.People)
		row(s, "stride", strconv.FormatUint(e.Stride, 10))
		for _, p := range e.Points {
			num(s, p.At+"_count", p.Count)
			fig(s, p.At+"_median_abs_error", p.MedianAbs)
			fig(s, p.At+"_p90_abs_error", p.P90Abs)
			fig(s, p.At+"_median_error", p.Median)
		}
	}
	cw.Flush()
	return cw.Error()
}

// bucketName names bucket i of a histogram over bounds.
func bucketName(bounds []int64, i int) string {
	if i < len(bounds) {
		return "le_" + strconv.FormatInt(bounds[i], 10) + "s"
	}
	return "gt_" + strconv.FormatInt(bounds[len(bounds)-1], 10) + "s"
}

// cellSafe keeps a spreadsheet from reading a cell as a formula.
func cellSafe(v string) string {
	if v != "" && (v[0] == '=' || v[0] == '+' || v[0] == '-' || v[0] == '@') {
		return "'" + v
	}
	return v
}
