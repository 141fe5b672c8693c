package claim

import (
	"context"
	"errors"
	"math/rand/v2"
	"time"
)

// refill moves units into sale's empty bucket h from another bucket. It
// reports false only when a reading of every bucket found no stock and no
// units in transit: the event is sold out.
func (s *Service) refill(ctx context.Context, sale Sale, h int) (bool, error) {
	if sale.Buckets <= 1 {
		return false, nil
	}
	if s.view != nil {
		if view := s.view(sale.ID); len(view) == sale.Buckets {
			if ok, err := s.steal(ctx, sale.ID, h, donors(view, h)); ok || err != nil {
				return ok, err
			}
		}
	}
	for range 3 {
		stock, parked, err := s.store.stockAndParked(ctx, sale, true)
		if err != nil {
			return false, err
		}
		if stock[h] > 0 {
			return true, nil // a transfer or a release refilled h meanwhile
		}
		from := donors(stock, h)
		if len(from) == 0 {
			for _, p := range parked {
				if p > 0 {
					// Units are in transit (or parked by a crashed node
					// until the recovery sweep): not sold out.
					return true, wait(ctx, 10*time.Millisecond)
				}
			}
			return false, nil
		}
		if ok, err := s.steal(ctx, sale.ID, h, from); ok || err != nil {
			return ok, err
		}
		// Others emptied the donors first: read again.
	}
	return true, nil
}

// maxDonors bounds the donor buckets one refill tries.
const maxDonors = 4

// steal runs a whole transfer from the first donor that still has stock.
// A donor that refuses (frozen by a rebuild, or fenced after a failover)
// is skipped: the next may give. Only when none gives and one refused is
// its refusal returned, since the refused stock is unknown (not sold out).
func (s *Service) steal(ctx context.Context, ev string, h int, from []int) (bool, error) {
	var refused error
	for i, d := range from {
		if i == maxDonors {
			break
		}
		t, err := s.store.transferOut(ctx, ev, d, h, s.stealMax)
		if errors.Is(err, ErrPaused) {
			refused = err
			continue
		}
		if err != nil {
			return false, err
		}
		if t.N == 0 {
			continue
		}
		// Steps 2 and 3 must not be cut short by the caller: a transfer
		// left half done parks its units until the recovery sweep.
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 3*time.Second)
		err = s.store.complete(cctx, ev, t)
		cancel()
		if err != nil {
			return false, err
		}
		return true, nil
	}
	return false, refused
}

// donors lists the buckets other than h that stock says hold units, from a
// random starting point so that concurrent refills spread over donors.
func donors(stock []int64, h int) []int {
	out := make([]int, 0, len(stock))
	start := rand.IntN(len(stock))
	for i := range stock {
		b := (start + i) % len(stock)
		if b != h && stock[b] > 0 {
			out = append(out, b)
		}
	}
	return out
}
