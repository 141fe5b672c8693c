package lifecycle

import (
	"context"
	"testing"
	"time"

	"github.com/anteroom/anteroom/admission"
	"github.com/anteroom/anteroom/claim"
	"github.com/anteroom/anteroom/event"
	saleview "github.com/anteroom/anteroom/sale" // this package has a sale helper
)

// TestSoldOutAtTheRealSellOut: staff create a sale that opens at once; a
// node ticks after the configuration is saved and before its stock is
// laid. That tick must not record sold_out (the stock is not there yet,
// not gone): the one-shot event fires when the last unit is sold.
func TestSoldOutAtTheRealSellOut(t *testing.T) {
	s := startServers(t)
	_, js := s.connect(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := claim.EnsureStream(ctx, js, 1); err != nil {
		t.Fatal(err)
	}
	configs, stock := event.NewStore(s.rdb), claim.NewStore(s.rdb)
	snaps := saleview.NewSnapshots(configs, admission.NewFrontier(s.rdb), stock)
	rec := NewRecorder(s.rdb, js)
	tick := func() *admission.Sale {
		t.Helper()
		if err := snaps.Refresh(ctx); err != nil { // the node's tick; "now" is the only sale
			t.Fatal(err)
		}
		v, _ := snaps.Get("now")
		if err := rec.Observe(ctx, v); err != nil {
			t.Fatal(err)
		}
		return v
	}
	soldOutAt := func() string {
		t.Helper()
		at, err := s.rdb.HGet(ctx, stateKey("now"), SoldOut).Result()
		if err != nil {
			return ""
		}
		return at
	}
	now := time.Now().UTC()
	cfg := event.Config{ID: "now", Name: "now", Supply: 1, PerUserLimit: 1, ClaimTTLSeconds: 600,
		PrequeueOpensAt: now.Add(-time.Minute), StartsAt: now.Add(-time.Second), EndsAt: now.Add(time.Hour), Buckets: 1}
	cfg.Defaults()
	saved, err := configs.Put(ctx, cfg) // the save; its stock is laid next
	if err != nil {
		t.Fatal(err)
	}
	if sale := tick(); sale.SoldOut || soldOutAt() != "" {
		t.Fatalf("a tick between the save and the lay: sold out %v, sold_out recorded at %q; want neither", sale.SoldOut, soldOutAt())
	}
	if err := stock.LayFor(ctx, claim.Restock{Event: saved.ID, To: claim.Stock{Buckets: 1, Units: saved.OnSale()}, Version: saved.Version}); err != nil {
		t.Fatal(err)
	}
	if sale := tick(); sale.SoldOut || soldOutAt() != "" {
		t.Fatalf("stock laid: sold out %v, sold_out recorded at %q; want neither", sale.SoldOut, soldOutAt())
	}
	svc := claim.NewService(stock, claim.NewPublisher(js))
	if _, err := svc.Claim(ctx, claim.Request{Event: "now", User: "u", IdemKey: "k", Limit: 1, Buckets: 1}); err != nil {
		t.Fatal(err)
	}
	if sale := tick(); !sale.SoldOut || soldOutAt() == "" {
		t.Fatalf("the last unit sold: sold out %v, sold_out recorded at %q; want both", sale.SoldOut, soldOutAt())
	}
}
