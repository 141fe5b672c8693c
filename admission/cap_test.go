package admission

import (
	"testing"
	"time"

	"github.com/anteroom/anteroom/event"
)

func TestFrontierCap(t *testing.T) {
	c := event.Config{ID: "c", Supply: 100, ReserveUnits: 10, StartsAt: time.Now()}
	c.Defaults()
	prev := &Sale{Reading: Reading{NoShows: 7}}
	cases := []struct {
		name      string
		mode      event.Mode
		maxActive int64
		prev      *Sale
		left      int64
		want      float64
	}{
		{"fcfs without max_active", event.FCFS, 0, prev, 50, 0},
		{"fcfs max_active: no-shows + sold + active", event.FCFS, 20, prev, 50, 7 + 40 + 20},
		{"first refresh counts no no-shows", event.FCFS, 20, nil, 90, 0 + 0 + 20},
		{"lottery: no-shows + units on sale", event.Lottery, 0, prev, 50, 7 + 90},
		{"lottery sold out still caps at the draw", event.Lottery, 0, prev, 0, 7 + 90},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := c
			cfg.Mode, cfg.MaxActive = tc.mode, tc.maxActive
			if got := frontierCap(&cfg, tc.prev, tc.left); got != tc.want {
				t.Fatalf("cap %v, want %v", got, tc.want)
			}
		})
	}
}
