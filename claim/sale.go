package claim

import "github.com/anteroom/anteroom/event"

// Sale names an event and its bucket count: what every read or write over
// all of an event's buckets needs to know.
type Sale struct {
	ID      string
	Buckets int
}

// SaleOf returns the Sale of cfg.
func SaleOf(cfg event.Config) Sale {
	return Sale{ID: cfg.ID, Buckets: cfg.Buckets}
}

// share returns bucket b's part of units spread evenly over the sale's
// buckets: the first units%Buckets buckets take one more.
func (s Sale) share(units int64, b int) int64 {
	n := units / int64(s.Buckets)
	if int64(b) < units%int64(s.Buckets) {
		n++
	}
	return n
}
