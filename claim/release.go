package claim

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// Reply codes of release.lua, per claim.
const (
	releasedNow      = 0
	releaseNotFound  = 1
	releasedBefore   = 2
	releaseConfirmed = 3
	releaseNotDue    = 4
	releaseFrozen    = 5
	releaseStale     = 6
	releaseUnwritten = 7
)

type releaseOutcome struct {
	code    int64
	status  Status
	payload string
}

// release runs release.lua on bucket b for the claims ids, owned by users
// (same order).
func (s *Store) release(ctx context.Context, ev string, b int, reason Reason, at time.Time, ids, users []string) ([]releaseOutcome, error) {
	k := bucketOf(ev, b)
	keys := k.stockKeys(len(ids))
	args := []any{ev, at.UTC().Format(time.RFC3339Nano), string(reason)}
	for i, id := range ids {
		keys = append(keys, k.userClaims(users[i]))
		args = append(args, id, users[i])
	}
	res, err := s.lua.release.Run(ctx, s.rdb, keys, args...).Slice()
	if err != nil {
		return nil, fmt.Errorf("release %s/%d: %w", ev, b, err)
	}
	if len(res) != 3*len(ids) {
		return nil, fmt.Errorf("release %s/%d: %d replies for %d claims", ev, b, len(res), len(ids))
	}
	f := fields(fmt.Sprintf("release %s/%d", ev, b), res)
	out := make([]releaseOutcome, len(ids))
	for i := range out {
		out[i].code = f.code(3*i, releasedNow, releaseUnwritten)
		out[i].status = Status(f.str(3*i + 1))
		out[i].payload = f.str(3*i + 2)
	}
	if f.err != nil {
		return nil, f.err
	}
	return out, nil
}

// Confirm marks claim id of event ev confirmed if it is pending, and returns
// its status afterwards: confirmed, or released (cancelled) when a release
// (a staff cancellation) came first.
// It returns ErrNotFound, ErrPaused (a rebuild runs; retry later) or
// ErrNeedsRebuild (the bucket's server failed over or lost its data).
func (s *Store) Confirm(ctx context.Context, ev, id string) (Status, error) {
	b, err := ParseClaimID(id)
	if err != nil {
		return "", err
	}
	k := bucketOf(ev, b)
	res, err := s.lua.confirm.Run(ctx, s.rdb, []string{k.records(), k.expiry(), k.frozen(), k.stats()}, id).Slice()
	if err != nil {
		return "", fmt.Errorf("confirm %s: %w", id, err)
	}
	f := fields("confirm "+id, res)
	code, status := f.int(0), Status(f.str(1))
	if f.err == nil && len(res) != 2 {
		f.err = fmt.Errorf("confirm %s: malformed reply: %d fields, want 2", id, len(res))
	}
	if f.err != nil {
		return "", f.err
	}
	switch code {
	case 0:
		if status != StatusConfirmed && status != StatusReleased && status != StatusCancelled {
			return "", fmt.Errorf("confirm %s: malformed reply: status %q", id, status)
		}
		return status, nil
	case 1:
		return "", ErrNotFound
	case releaseFrozen:
		return "", ErrPaused
	case releaseStale:
		return "", ErrNeedsRebuild
	}
	return "", fmt.Errorf("confirm %s: malformed reply: unknown code %d", id, code)
}

// due returns up to n claims of bucket b whose expiry deadline is before
// now, with their users. release.lua checks the deadline again against
// Redis TIME. A record that does not decode is left out (and named in
// bad), so it never holds up the rest of the bucket.
func (s *Store) due(ctx context.Context, ev string, b int, now time.Time, n int) (ids, users []string, bad error, err error) {
	k := bucketOf(ev, b)
	ids, err = s.rdb.ZRangeByScore(ctx, k.expiry(), &redis.ZRangeBy{
		Min: "-inf", Max: strconv.FormatInt(now.UnixMilli(), 10), Count: int64(n),
	}).Result()
	if err != nil || len(ids) == 0 {
		return nil, nil, nil, err
	}
	raws, err := s.rdb.HMGet(ctx, k.records(), ids...).Result()
	if err != nil {
		return nil, nil, nil, fmt.Errorf("due %s/%d: %w", ev, b, err)
	}
	var okIDs, gone []string
	var bads []error
	for i, raw := range raws {
		str, _ := raw.(string)
		if str == "" {
			gone = append(gone, ids[i])
			continue
		}
		rec, err := decodeRecord(ids[i], []byte(str))
		if err != nil {
			bads = append(bads, err)
			continue
		}
		okIDs, users = append(okIDs, ids[i]), append(users, rec.User)
	}
	if len(gone) > 0 {
		// An index entry without a record would block the head forever.
		if err := s.rdb.ZRem(ctx, k.expiry(), gone).Err(); err != nil {
			return nil, nil, nil, fmt.Errorf("due %s/%d: %w", ev, b, err)
		}
	}
	return okIDs, users, errors.Join(bads...), nil
}

// Release returns the unit of claim id of event ev to its bucket, exactly
// once, and puts a "released" order event on JetStream before it returns.
// user is the caller, who must own the claim; "" releases as an admin.
// Releasing a released claim again succeeds and changes nothing. Errors:
// ErrNotFound, ErrConfirmed, ErrCancelled, ErrPaused, ErrUnavailable (the release is
// done; its event stays in the outbox until the sweeper publishes it),
// ErrNeedsRebuild (the bucket's server failed over or lost its data: the
// claim may have been confirmed there; nothing is released before the
// rebuild).
func (s *Service) Release(ctx context.Context, ev, id, user string) (Record, error) {
	b, err := ParseClaimID(id)
	if err != nil {
		return Record{}, err
	}
	reason := ReasonUser
	if user == "" {
		rec, err := s.store.Lookup(ctx, ev, id)
		if err != nil {
			return Record{}, err
		}
		user, reason = rec.User, ReasonAdmin
	}
	res, err := s.store.release(ctx, ev, b, reason, s.now(), []string{id}, []string{user})
	if err != nil {
		return Record{}, err
	}
	switch res[0].code {
	case releasedNow:
		if err := s.publishReleased(ctx, ev, b, []string{id}, []string{res[0].payload}); err != nil {
			return Record{}, err
		}
	case releasedBefore:
	case releaseNotFound:
		return Record{}, ErrNotFound
	case releaseConfirmed:
		if res[0].status == StatusCancelled {
			return Record{}, ErrCancelled
		}
		return Record{}, ErrConfirmed
	case releaseFrozen:
		return Record{}, ErrPaused
	case releaseStale:
		return Record{}, ErrNeedsRebuild
	case releaseUnwritten:
		return Record{}, fmt.Errorf("release %s: its record cannot be rewritten (no \"status\":\"pending\" member): nothing released", id)
	default:
		return Record{}, fmt.Errorf("release %s: unknown reply code %d", id, res[0].code)
	}
	return s.store.Lookup(ctx, ev, id)
}

// publishReleased publishes released events of bucket b (publishBucket).
func (s *Service) publishReleased(ctx context.Context, ev string, b int, ids, payloads []string) error {
	msgs := make([]message, len(ids))
	for i, id := range ids {
		msgs[i] = message{id: id + ":released", payload: payloads[i], ev: OrderEvent{Type: KindReleased}}
	}
	return s.publishBucket(ctx, ev, b, msgs)
}

// expire releases up to n claims per bucket of sale whose deadline passed
// and publishes their released events. It returns how many it released.
// A claim whose record it cannot read stays pending and is reported in the
// error; the rest of its bucket, and the other buckets, still expire.
func (s *Service) expire(ctx context.Context, sale Sale, n int) (int, error) {
	total := 0
	var bad []error
	for b := range sale.Buckets {
		ids, users, unread, err := s.store.due(ctx, sale.ID, b, s.now(), n)
		if unread != nil {
			bad = append(bad, fmt.Errorf("expire %s/%d: left pending: %w", sale.ID, b, unread))
		}
		if err != nil || len(ids) == 0 {
			if err != nil {
				return total, errors.Join(append(bad, err)...)
			}
			continue
		}
		res, err := s.store.release(ctx, sale.ID, b, ReasonExpired, s.now(), ids, users)
		if err != nil {
			return total, errors.Join(append(bad, err)...)
		}
		var done, payloads []string
		for i, r := range res {
			switch r.code {
			case releasedNow:
				done, payloads = append(done, ids[i]), append(payloads, r.payload)
			case releaseUnwritten:
				bad = append(bad, fmt.Errorf("expire %s: its record cannot be rewritten: left pending", ids[i]))
			}
		}
		total += len(done)
		if err := s.publishReleased(ctx, sale.ID, b, done, payloads); err != nil {
			return total, errors.Join(append(bad, err)...)
		}
	}
	return total, errors.Join(bad...)
}
