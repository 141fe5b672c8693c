package admission_test

import (
	"reflect"
	"testing"
	"time"

	"github.com/anteroom/anteroom/admission"
	"github.com/anteroom/anteroom/event"
	"github.com/anteroom/anteroom/queue"
)

// TestStepFor walks the admission rule through its inputs, one named case
// a row, in the manner of golang.org/x/time/rate's tests: the rate × each
// lane's share, the holds (paused, sold out, stock not known, the shop's
// health), a lottery's units, max_active's caps and the credit. Each row
// gives the whole plan it expects.
func TestStepFor(t *testing.T) {
	starts := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	early := starts.Add(-10 * time.Minute)
	until := starts.Add(-time.Hour)
	order := queue.NewOrder(4, starts.Add(-2*time.Hour))
	sale := func(change func(c *event.Config)) event.Config {
		c := event.Config{
			ID: "ev", Supply: 100, Mode: event.FCFS, StartsAt: starts, RandomWindowSeconds: 30,
			AdmitRatePerSecond: 200, NoShowGraceSeconds: 45, AdmissionTTLSeconds: 300,
		}
		if change != nil {
			change(&c)
		}
		return c
	}
	// step is the default lane's step of sale(nil) with stock left, and
	// change applied.
	step := func(change func(s *admission.Step)) admission.Step {
		s := admission.Step{
			Start: starts.Add(30 * time.Second), Rate: 200, Grace: 45 * time.Second, Units: 100,
			AdmissionTTL: 300 * time.Second, MaxCredit: time.Second, ViewUntil: until,
		}
		if change != nil {
			change(&s)
		}
		return s
	}
	inStock := admission.Stock{Left: 60, Known: true}
	lanes := []event.Lane{{Name: "members", Share: 0.25, StartsAt: &early}, {Name: "partners", Share: 0.25}}
	laneSteps := func(hold, health bool) []admission.Step {
		return []admission.Step{
			{Start: early, Rate: 50, Hold: hold, Grace: 45 * time.Second, AdmissionTTL: 300 * time.Second, MaxCredit: time.Second, HealthChecked: health, Lane: 1, ViewUntil: until},
			{Start: starts.Add(30 * time.Second), Rate: 50, Hold: hold, Grace: 45 * time.Second, AdmissionTTL: 300 * time.Second, MaxCredit: time.Second, HealthChecked: health, Lane: 2, ViewUntil: until},
		}
	}
	pending := []admission.Holder{{Pos: 3, User: "ann"}, {Pos: admission.PassPosition, User: "bob"}}

	tests := []struct {
		name   string
		cfg    event.Config
		stock  admission.Stock
		order  *queue.Order
		credit time.Duration
		want   admission.Plan
	}{
		{
			name: "whole rate from the window's end", cfg: sale(nil), stock: inStock, credit: time.Second,
			want: admission.Plan{Step: step(nil)},
		},
		{
			name: "lanes take their share, the default lane the rest", stock: inStock, credit: time.Second,
			cfg:  sale(func(c *event.Config) { c.Lanes = lanes }),
			want: admission.Plan{Step: step(func(s *admission.Step) { s.Rate = 100 }), Lanes: laneSteps(false, false)},
		},
		{
			name: "closed holds every lane, paused or not", stock: inStock, credit: time.Second,
			cfg: sale(func(c *event.Config) { c.Closed, c.Lanes = &event.Closure{Message: "maintenance"}, lanes }),
			want: admission.Plan{
				Step:  step(func(s *admission.Step) { s.Rate, s.Hold = 100, true }),
				Lanes: laneSteps(true, false),
			},
		},
		{
			name: "reopened admits again", stock: inStock, credit: time.Second,
			cfg:  sale(func(c *event.Config) { c.Closed = nil }),
			want: admission.Plan{Step: step(nil)},
		},
		{
			name: "paused holds every lane", stock: inStock, credit: time.Second,
			cfg: sale(func(c *event.Config) { c.Paused, c.Lanes = true, lanes }),
			want: admission.Plan{
				Step:  step(func(s *admission.Step) { s.Rate, s.Hold = 100, true }),
				Lanes: laneSteps(true, false),
			},
		},
		{
			name: "sold out holds every lane", stock: admission.Stock{Left: 0, Known: true}, credit: time.Second,
			cfg: sale(func(c *event.Config) { c.Lanes = lanes }),
			want: admission.Plan{
				SoldOut: true,
				Step:    step(func(s *admission.Step) { s.Rate, s.Hold = 100, true }),
				Lanes:   laneSteps(true, false),
			},
		},
		{
			name: "stock not known is not gone", stock: admission.Stock{Left: 0}, credit: time.Second, cfg: sale(nil),
			want: admission.Plan{Step: step(nil)},
		},
		{
			name: "stock not known keeps a sold-out judgement", stock: admission.Stock{Left: 5, WasSoldOut: true}, credit: time.Second,
			cfg:  sale(nil),
			want: admission.Plan{SoldOut: true, Step: step(func(s *admission.Step) { s.Hold = true })},
		},
		{
			name: "a safety-net room is never sold out", stock: admission.Stock{Left: 0, Known: true}, credit: time.Second,
			cfg:  sale(func(c *event.Config) { c.Mode, c.RandomWindowSeconds = event.SafetyNet, 0 }),
			want: admission.Plan{Step: step(func(s *admission.Step) { s.Start = starts })},
		},
		{
			name: "a shop health check holds through the script", stock: inStock, credit: time.Second,
			cfg: sale(func(c *event.Config) {
				c.Shop.Health, c.Lanes = &event.HealthCheck{URL: "https://shop.example/health"}, lanes
			}),
			want: admission.Plan{
				Step:  step(func(s *admission.Step) { s.Rate, s.HealthChecked = 100, true }),
				Lanes: laneSteps(false, true),
			},
		},
		{
			name: "a lottery admits from the start up to its units and the released",
			cfg: sale(func(c *event.Config) {
				c.Mode, c.ReserveUnits = event.Lottery, 10
			}),
			stock: admission.Stock{Left: 40, Known: true, Released: 7}, credit: time.Second,
			want: admission.Plan{Step: step(func(s *admission.Step) { s.Start, s.Lottery, s.Units = starts, true, 97 })},
		},
		{
			name:  "max_active counts every pending claim's holder",
			cfg:   sale(func(c *event.Config) { c.MaxActive = 2 }),
			stock: admission.Stock{Left: 60, Known: true, Pending: pending}, credit: time.Second,
			want: admission.Plan{Step: step(func(s *admission.Step) { s.MaxActive, s.Pending = 2, pending })},
		},
		{
			name: "join shards bound the frontier by the order", cfg: sale(func(c *event.Config) { c.JoinShards = 4 }),
			stock: inStock, order: order, credit: time.Second,
			want: admission.Plan{Step: step(func(s *admission.Step) { s.Order = order })},
		},
		{
			name: "the credit is the caller's", cfg: sale(func(c *event.Config) { c.Lanes = lanes[:1] }), stock: inStock,
			credit: 3 * time.Second,
			want: admission.Plan{
				Step: step(func(s *admission.Step) { s.Rate, s.MaxCredit = 150, 3*time.Second }),
				Lanes: []admission.Step{{Start: early, Rate: 50, Grace: 45 * time.Second, AdmissionTTL: 300 * time.Second,
					MaxCredit: 3 * time.Second, Lane: 1, ViewUntil: until}},
			},
		},
		{
			name: "no credit given: Advance's default", cfg: sale(nil), stock: inStock,
			want: admission.Plan{Step: step(func(s *admission.Step) { s.MaxCredit = 0 })},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := tt.cfg
			got := admission.StepFor(&cfg, tt.stock, tt.order, tt.credit, until)
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("StepFor:\ngot  %+v\nwant %+v", got, tt.want)
			}
		})
	}
}

// TestStepForIsPure: the same inputs give the same plan, and the plan
// shares nothing it may not: cfg is not written.
func TestStepForIsPure(t *testing.T) {
	starts := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	cfg := event.Config{ID: "ev", Supply: 10, StartsAt: starts, AdmitRatePerSecond: 10, Lanes: []event.Lane{{Name: "a", Share: 0.5}}}
	before := cfg
	before.Lanes = append([]event.Lane(nil), cfg.Lanes...)
	st := admission.Stock{Left: 3, Known: true}
	a := admission.StepFor(&cfg, st, nil, time.Second, time.Time{})
	b := admission.StepFor(&cfg, st, nil, time.Second, time.Time{})
	if !reflect.DeepEqual(a, b) {
		t.Errorf("two plans of the same inputs differ:\n%+v\n%+v", a, b)
	}
	if !reflect.DeepEqual(cfg, before) {
		t.Errorf("StepFor changed the configuration: got %+v, want %+v", cfg, before)
	}
}
