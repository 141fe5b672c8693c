package failopenmap

import (
	"math/rand/v2"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestBelow: Below(n) matches exactly the integers below n, for every n
// up to 2000 against every x up to 2100, and for random ten-digit
// deadlines (Unix seconds until 2286) against numbers around them, every
// digit position varied.
func TestBelow(t *testing.T) {
	check := func(re *regexp.Regexp, n, x uint64) {
		if got := re.MatchString(strconv.FormatUint(x, 10)); got != (x < n) {
			t.Fatalf("Below(%d) = %q matches %d: %v, want %v", n, Below(n), x, got, x < n)
		}
	}
	for n := uint64(1); n <= 2000; n++ {
		re := regexp.MustCompile("^(?:" + Below(n) + ")$")
		for x := uint64(0); x <= 2100; x += 1 + x/50 {
			check(re, n, x)
		}
		check(re, n, n-1)
		check(re, n, n)
		check(re, n, n+1)
	}
	r := rand.New(rand.NewPCG(1, 2))
	for range 300 {
		n := 1_000_000_000 + r.Uint64N(8_999_999_999)
		re := regexp.MustCompile("^(?:" + Below(n) + ")$")
		for _, x := range []uint64{0, 9, n - 1, n, n + 1, n / 10, n * 10, n - 86400, n + 86400, r.Uint64N(2 * n)} {
			if got := re.MatchString(strconv.FormatUint(x, 10)); got != (x < n) {
				t.Fatalf("Below(%d) matches %d: %v", n, x, got)
			}
		}
		// Each digit of n lowered and raised by one.
		d := []byte(strconv.FormatUint(n, 10))
		for i := range d {
			for _, delta := range []int{-1, 1} {
				c := append([]byte(nil), d...)
				if v := int(c[i]-'0') + delta; v >= 0 && v <= 9 && !(i == 0 && v == 0) {
					c[i] = byte('0' + v)
					x, _ := strconv.ParseUint(string(c), 10, 64)
					if got := re.MatchString(string(c)); got != (x < n) {
						t.Fatalf("Below(%d) matches %d: %v", n, x, got)
					}
				}
			}
		}
	}
	if strings.Contains(Below(1765087200), `\`) {
		t.Errorf("Below has a backslash, which nginx's parser may rewrite: %s", Below(1765087200))
	}
}

// TestMap: the entry matches $msec (seconds.milliseconds) before the
// deadline's second and never from it on; a zero deadline has no entry.
func TestMap(t *testing.T) {
	until := time.Date(2026, 12, 7, 6, 0, 0, 700_000_000, time.UTC)
	body := Map(until, "test")
	m := regexp.MustCompile(`(?m)^"~(.*)" "(.*)";$`).FindStringSubmatch(body)
	if m == nil || m[2] != "2026-12-07T06:00:00Z" {
		t.Fatalf("Map = %q, want one entry valued 2026-12-07T06:00:00Z", body)
	}
	re := regexp.MustCompile(m[1])
	secs := until.Unix()
	for _, tc := range []struct {
		msec string
		want bool
	}{
		{strconv.FormatInt(secs-3600, 10) + ".000", true},
		{strconv.FormatInt(secs-1, 10) + ".999", true},
		{strconv.FormatInt(secs, 10) + ".000", false},
		{strconv.FormatInt(secs, 10) + ".699", false}, // rounded down: never late
		{strconv.FormatInt(secs+1, 10) + ".000", false},
		{strconv.FormatInt(secs+86400*365, 10) + ".000", false},
		{strconv.FormatInt(secs-1, 10), false}, // not $msec's shape
	} {
		if got := re.MatchString(tc.msec); got != tc.want {
			t.Errorf("$msec %s: %v, want %v", tc.msec, got, tc.want)
		}
	}
	if off := Map(time.Time{}, "test"); strings.Contains(off, `"~`) {
		t.Errorf("Map(zero) = %q, want no entry", off)
	}
}
