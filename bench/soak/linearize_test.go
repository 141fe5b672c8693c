//go:build soak && linux

package soak

import (
	"cmp"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/anishathalye/porcupine"
)

// porcupineTimeout bounds the search of one sale's history. A sale of the
// soak is a few thousand operations; a legal one is found linearizable in
// well under a second, so 20 s is the margin of a loaded machine, not an
// expected wait. A search that runs out is reported "not checked
// (timeout)" and fails the verdict: it is never read as a pass.
// ANTEROOM_SOAK_PORCUPINE_TIMEOUT overrides it.
const porcupineTimeout = 20 * time.Second

// modelOps turns the history's claims, replays, releases, cancels and
// lookups of
// sale ev into porcupine operations, each from its call to its answer; an
// ambiguous release's answer is the end of the history, an ambiguous
// claim is left out (see model_test.go). h.mu is held.
func (h *history) modelOps(ev string) []porcupine.Operation {
	b := h.sales[ev]
	if b == nil {
		return nil
	}
	var end int64
	for _, o := range h.ops {
		end = max(end, o.At.UnixNano()+1)
	}
	clients := map[string]int{}
	var out []porcupine.Operation
	for _, o := range h.ops {
		kind := o.Kind
		switch {
		case o.Sale != ev:
			continue
		case kind == "replay":
			kind = "claim"
		case kind != "claim" && kind != "release" && kind != "lookup" && kind != "cancel":
			continue
		case kind == "cancel" && o.ClaimID == "":
			continue // a cancellation that named no claim we know of
		}
		unknown := o.Err != "" || o.Status >= 500
		if unknown && kind != "release" && kind != "cancel" {
			continue
		}
		call := o.Start
		if call.IsZero() {
			call = o.At
		}
		in := mInput{Kind: kind, User: o.User, Key: o.Key, Supply: o.Supply, Limit: b.limit, TTL: b.claimTTL,
			Call: call.UnixNano(), Return: o.At.UnixNano()}
		if kind != "claim" {
			in.ClaimID = o.ClaimID
		}
		// A cancel (staff's, recorded as the claim's user) says its
		// restock choice in Key: "restock" returns the unit.
		in.Restock = kind == "cancel" && o.Key == "restock"
		out2 := mOutput{Unknown: unknown, Status: o.Status, Code: o.Code, State: o.State}
		if kind == "claim" {
			out2.ClaimID = o.ClaimID
		}
		if unknown {
			in.Return = end
		}
		if _, ok := clients[o.User]; !ok {
			clients[o.User] = len(clients)
		}
		out = append(out, porcupine.Operation{ClientId: clients[o.User], Input: in, Output: out2,
			Call: in.Call, Return: in.Return, Metadata: o.Seq})
	}
	return out
}

// modelVerdict is porcupine's verdict on every sale of a run.
type modelVerdict struct {
	Sales, Ops int
	Took       time.Duration
	Failed     *violation // the first sale found Illegal or not checked, nil if all Ok
}

func (v modelVerdict) String() string {
	if v.Failed != nil {
		return fmt.Sprintf("porcupine: %s (%d sales, %d operations, %s)", v.Failed.What, v.Sales, v.Ops, v.Took.Round(time.Millisecond))
	}
	return fmt.Sprintf("porcupine: Ok, %d sales, %d operations linearizable (%s)", v.Sales, v.Ops, v.Took.Round(time.Millisecond))
}

// checkModel checks every sale's history against claimModel. An Illegal
// sale's visualization is written to dir (outside the repository).
func (h *history) checkModel(dir string, timeout time.Duration) modelVerdict {
	start := time.Now()
	h.mu.Lock()
	sales := map[string][]porcupine.Operation{}
	for ev := range h.sales {
		if ev != roomID {
			sales[ev] = h.modelOps(ev)
		}
	}
	h.mu.Unlock()
	var v modelVerdict
	for _, ev := range slices.Sorted(maps.Keys(sales)) {
		ops := sales[ev]
		v.Sales++
		v.Ops += len(ops)
		res, info := porcupine.CheckOperationsVerbose(claimModel, ops, timeout)
		switch res {
		case porcupine.Ok:
			continue
		case porcupine.Unknown:
			v.Failed = &violation{What: fmt.Sprintf("sale %s not checked (timeout after %s)", ev, timeout), At: time.Now()}
		default:
			what := fmt.Sprintf("sale %s: no order of its %d claims, releases and lookups explains every answer (Illegal)", ev, len(ops))
			if dir != "" {
				path := filepath.Join(dir, fmt.Sprintf("porcupine-%s-%s.html", ev, time.Now().Format("20060102-150405.000")))
				if err := porcupine.VisualizePath(claimModel, info, path); err != nil {
					what += "; no visualization: " + err.Error()
				} else {
					what += "; visualization " + path
				}
			}
			where, around := h.illegalOps(ops, timeout)
			v.Failed = &violation{What: what + "; in the partition of " + where, At: time.Now(), Ops: around}
		}
		break
	}
	v.Took = time.Since(start)
	return v
}

// illegalOps returns the ops around where porcupine got stuck in the
// first partition it cannot linearize: 40 before and 20 after the first
// operation (in call order) that no longest partial order reaches.
func (h *history) illegalOps(ops []porcupine.Operation, timeout time.Duration) (string, []op) {
	single := claimModel
	single.Partition = nil
	for i, part := range partitionClaims(ops) {
		res, info := porcupine.CheckOperationsVerbose(single, part, timeout)
		if res != porcupine.Illegal {
			continue
		}
		parts := partitionClaims(ops)
		name := "user " + part[0].Input.(mInput).User
		if i == len(parts)-1 {
			name = "the stock"
		}
		reached := map[int]bool{}
		for _, ls := range info.PartialLinearizationsOperations() {
			for _, l := range ls {
				for _, o := range l {
					reached[o.Metadata.(int)] = true
				}
			}
		}
		slices.SortFunc(part, func(a, b porcupine.Operation) int { return cmp.Compare(a.Call, b.Call) })
		stuck := len(part) - 1
		for j, o := range part {
			if !reached[o.Metadata.(int)] {
				stuck = j
				break
			}
		}
		h.mu.Lock()
		defer h.mu.Unlock()
		var out []op
		for _, o := range part[max(0, stuck-40):min(len(part), stuck+21)] {
			out = append(out, h.ops[o.Metadata.(int)])
		}
		return name, out
	}
	return "", nil
}

// modelTimeout is porcupineTimeout or ANTEROOM_SOAK_PORCUPINE_TIMEOUT.
func modelTimeout() (time.Duration, error) {
	if s := os.Getenv("ANTEROOM_SOAK_PORCUPINE_TIMEOUT"); s != "" {
		return time.ParseDuration(s)
	}
	return porcupineTimeout, nil
}
