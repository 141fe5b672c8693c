package claim

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	"github.com/redis/go-redis/v9"
)

// transfer is a pending stock transfer as its donor bucket records it.
type transfer struct {
	ID   string `json:"-"`
	From int    `json:"-"`
	To   int    `json:"to"`
	N    int64  `json:"n"`
	Gen  string `json:"gen"`
	AtMs int64  `json:"at"`
}

// Reply codes of accept.lua.
const (
	acceptCredited = 0
	acceptRepeat   = 1
	acceptStale    = 2
	acceptFrozen   = 4
)

func newTransferID(from, to int) (string, error) {
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	return strconv.Itoa(from) + ">" + strconv.Itoa(to) + ":" + hex.EncodeToString(b[:]), nil
}

// transferOut is step 1 of a transfer: it moves up to most units (at most half
// of what the bucket holds, at least one) out of bucket from's stock into a
// pending record addressed to bucket to. It returns the record, with N = 0
// when from is empty, or ErrPaused while a rebuild runs.
func (s *Store) transferOut(ctx context.Context, ev string, from, to int, most int64) (transfer, error) {
	id, err := newTransferID(from, to)
	if err != nil {
		return transfer{}, err
	}
	k := bucketOf(ev, from)
	res, err := s.lua.donate.Run(ctx, s.rdb, []string{k.stock(), k.transfers(), k.parked(), k.gen(), k.frozen(), k.stats()}, id, to, max(most, 1)).Slice()
	if err != nil {
		return transfer{}, fmt.Errorf("donate %s/%d: %w", ev, from, err)
	}
	f := fields(fmt.Sprintf("donate %s/%d", ev, from), res)
	code, n, gen := f.code(0, 0, codeStale), f.int(1), f.str(2)
	if f.err == nil && len(res) != 3 {
		f.err = fmt.Errorf("donate %s/%d: malformed reply: %d fields, want 3", ev, from, len(res))
	}
	if f.err == nil && code == 0 && n <= 0 {
		f.err = fmt.Errorf("donate %s/%d: malformed reply: %d units moved", ev, from, n)
	}
	if f.err != nil {
		return transfer{}, f.err
	}
	switch code {
	case 0:
		return transfer{ID: id, From: from, To: to, N: n, Gen: gen}, nil
	case codeEmpty:
		return transfer{From: from, To: to}, nil
	case codeFrozen:
		return transfer{}, ErrPaused
	case codeStale:
		return transfer{}, ErrNeedsRebuild
	}
	return transfer{}, fmt.Errorf("donate %s/%d: unknown reply code %d", ev, from, code)
}

// transferIn is step 2: it credits t's units to bucket t.To once per transfer
// id. It returns accept.lua's code: credited, repeat, stale or frozen.
func (s *Store) transferIn(ctx context.Context, ev string, t transfer) (int64, error) {
	k := bucketOf(ev, t.To)
	code, err := s.lua.accept.Run(ctx, s.rdb, []string{k.stock(), k.applied(), k.gen(), k.frozen()}, t.ID, t.N, t.Gen).Int64()
	if err != nil {
		return 0, fmt.Errorf("accept %s/%d: %w", ev, t.To, err)
	}
	return code, nil
}

// transferSettle is step 3: it deletes t's pending record from its donor bucket.
// Call it only after transferIn answered credited, repeat or stale.
func (s *Store) transferSettle(ctx context.Context, ev string, t transfer) error {
	k := bucketOf(ev, t.From)
	if err := s.lua.settle.Run(ctx, s.rdb, []string{k.transfers(), k.parked()}, t.ID).Err(); err != nil {
		return fmt.Errorf("settle %s/%d: %w", ev, t.From, err)
	}
	return nil
}

// complete runs steps 2 and 3 of t. It is idempotent, so the donor's own
// path and the recovery sweep may both run it.
func (s *Store) complete(ctx context.Context, ev string, t transfer) error {
	code, err := s.transferIn(ctx, ev, t)
	if err != nil {
		return err
	}
	if code == acceptFrozen {
		return ErrPaused
	}
	return s.transferSettle(ctx, ev, t)
}

// pendingTransfers returns the transfers bucket from has not settled.
func (s *Store) pendingTransfers(ctx context.Context, ev string, from int) ([]transfer, error) {
	m, err := s.rdb.HGetAll(ctx, bucketOf(ev, from).transfers()).Result()
	if err != nil && !errors.Is(err, redis.Nil) {
		return nil, fmt.Errorf("transfers %s/%d: %w", ev, from, err)
	}
	out := make([]transfer, 0, len(m))
	for id, raw := range m {
		t := transfer{ID: id, From: from}
		if err := json.Unmarshal([]byte(raw), &t); err != nil {
			return nil, fmt.Errorf("transfer %s: decode: %w", id, err)
		}
		out = append(out, t)
	}
	return out, nil
}
