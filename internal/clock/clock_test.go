package clock

import (
	"testing"
	"time"
)

// TestObserveKeepsRedisTime: a clock 30 s ahead reads Redis time once it
// observed a fast round trip, and ignores a reading from a slow one.
func TestObserveKeepsRedisTime(t *testing.T) {
	base := time.Unix(1_800_000_000, 0)
	machine := base
	c := &Clock{machine: func() time.Time { return machine }, skew: 30 * time.Second}
	if got := c.Now(); !got.Equal(base.Add(30 * time.Second)) {
		t.Fatalf("before any reading Now = %s, want the skewed machine clock", got)
	}
	// Sent at Local+0, answered 10 ms later, Redis said base+5 ms.
	sent := c.Local()
	if !c.Observe(sent, sent.Add(10*time.Millisecond), base.Add(5*time.Millisecond)) {
		t.Fatal("a 10 ms round trip was ignored")
	}
	if got := c.Now(); !got.Equal(base) {
		t.Fatalf("Now = %s after the reading, want Redis time %s", got, base)
	}
	if c.Observe(sent, sent.Add(MaxRTT+time.Millisecond), base.Add(time.Hour)) {
		t.Fatal("a reading from a round trip slower than MaxRTT was used")
	}
	if off, ok := c.Offset(); !ok || off != -30*time.Second {
		t.Fatalf("offset %s (%v), want -30s", off, ok)
	}
}

func TestParseSkew(t *testing.T) {
	for in, want := range map[string]time.Duration{"": 0, "0": 0, "+3s": 3 * time.Second, "-1m30s": -90 * time.Second, "5m": MaxSkew} {
		if got, err := ParseSkew(in); err != nil || got != want {
			t.Errorf("ParseSkew(%q) = %s, %v; want %s", in, got, err, want)
		}
	}
	for _, in := range []string{"5m1s", "-6m", "3", "soon"} {
		if _, err := ParseSkew(in); err == nil {
			t.Errorf("ParseSkew(%q) accepted", in)
		}
	}
}

// TestAtIsNowOfAReading: At maps a machine reading to what Now would have
// answered at that instant: skew and measured offset both applied.
func TestAtIsNowOfAReading(t *testing.T) {
	machine := time.Unix(1_800_000_000, 0)
	c := &Clock{machine: func() time.Time { return machine }, skew: 30 * time.Second}
	c.offset.Store(int64(-10 * time.Second))
	if got, want := c.At(machine), c.Now(); !got.Equal(want) || !got.Equal(machine.Add(20*time.Second)) {
		t.Fatalf("At = %s, Now = %s, want both %s", got, want, machine.Add(20*time.Second))
	}
}
