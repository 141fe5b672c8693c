package web

import (
	"net/http"
	"testing"
	"time"

	"github.com/anteroom/anteroom/event"
)

// TestStatusFollowsNodeClock: a status poll's time is the node's clock at
// the instant the request arrived (Config.NowAt of fasthttp's reading),
// or Config.Now when NowAt is not given. A sale whose queue opens in half
// an hour is open to a node whose clock runs an hour ahead either way, and
// still closed to one on the machine's clock.
func TestStatusFollowsNodeClock(t *testing.T) {
	ahead := func() time.Time { return time.Now().Add(time.Hour) }
	for _, tc := range []struct {
		name string
		cfg  Config
		want int
	}{
		{"machine clock", Config{}, http.StatusForbidden},
		{"NowAt an hour ahead", Config{Now: ahead, NowAt: func(t time.Time) time.Time { return t.Add(time.Hour) }}, http.StatusUnauthorized},
		{"Now an hour ahead, no NowAt", Config{Now: ahead}, http.StatusUnauthorized},
	} {
		sale := limSale(event.Limits{})
		sale.Config.PrequeueOpensAt = time.Now().Add(30 * time.Minute)
		sale.Config.StartsAt = sale.Config.PrequeueOpensAt.Add(time.Minute)
		app := limApp(t, tc.cfg, sale, Deps{})
		// No ticket: past the early-bird check the poll is refused 401.
		if a := limDo(t, app, "GET", "/events/ev/status", nil, nil); a.status != tc.want {
			t.Errorf("%s: status %d %s, want %d", tc.name, a.status, a.code(), tc.want)
		}
	}
}
