//go:build soak && linux

package soak

import (
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestSoakCatchesPutBackModel runs short soaks on builds broken on
// purpose (testdata/broken-*.patch, applied to a copy of the tree as the
// put-back patches are) and requires porcupine's verdict on the history
// to be Illegal, naming where, whatever the other checks found first:
// the model must catch real breakage, not only the histories of
// TestPorcupineCatches. Minutes long, so outside `make test` (its
// -skip TestSoakCatchesPutBack skips it); `make soak-putback` runs it.
func TestSoakCatchesPutBackModel(t *testing.T) {
	for _, tc := range []struct {
		name, patch, in string
	}{
		{"the stock check off by one (a bucket grants at 0 left)", "broken-stock.patch", "the stock"},
		{"the Idempotency-Key ignored (a retry, a twin or a replay granted anew)", "broken-idempotency.patch", "user "},
		{"a confirmed claim released", "broken-release.patch", "user "},
	} {
		t.Run(strings.TrimSuffix(tc.patch, ".patch"), func(t *testing.T) {
			bin := buildPatched(t, filepath.Join("testdata", tc.patch))
			var mv modelVerdict
			found := runSoak(t, soakRun{length: 3 * time.Minute, seed: 1, bin: bin, quiet: true, model: &mv,
				plan: func(int) plan { return plan{claimTTL: 1800} }})
			if found != nil {
				t.Logf("%s: the soak stopped on: %s", tc.name, found.What)
			}
			if mv.Failed == nil || !strings.Contains(mv.Failed.What, "Illegal") || !strings.Contains(mv.Failed.What, tc.in) {
				t.Fatalf("%s: %s, want Illegal in the partition of %s", tc.name, mv, tc.in)
			}
			t.Logf("%s: caught: %s\n%s", tc.name, mv, mv.Failed.render(1))
		})
	}
}
