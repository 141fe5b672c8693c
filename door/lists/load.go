package lists

import (
	"bufio"
	"context"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"

	"github.com/anteroom/anteroom/queue"
	"github.com/redis/go-redis/v9"
)

// LoadOptions say how Load reads and applies an upload.
type LoadOptions struct {
	// Format is the upload's format.
	//
	// Default: CSV
	Format Format
	// Replace makes the upload the whole list (atomically: a join sees
	// the old list or the new one, never half); otherwise it is added.
	Replace bool
	// DryRun reads and counts the upload and changes nothing.
	DryRun bool
	// Max is the most entries the upload and the list it makes may hold:
	// ErrTooLarge past it.
	//
	// Default: MaxEntries (also its largest value)
	Max int64
}

// LoadResult counts an upload.
type LoadResult struct {
	// Read is how many values the upload held (header and blank lines
	// aside).
	Read int64 `json:"read"`
	// Added is how many entries the list gained (with Replace: how many
	// it holds).
	Added int64 `json:"added"`
	// Duplicates is how many values were repeated in the upload or, when
	// appending, already on the list.
	Duplicates int64 `json:"duplicates"`
	// Meta is the list after the upload (with DryRun: as it would be,
	// its Version unchanged).
	Meta Meta `json:"meta"`
}

// record is value's record in a list of kind k and its bucket; an
// ErrInvalid for a value the kind does not take.
func (s *Store) record(k Kind, value string) ([]byte, int, error) {
	if k.ids() {
		if err := checkID(value); err != nil {
			return nil, 0, err
		}
		h := s.Hash(value)
		r := make([]byte, idRecordSize)
		binary.BigEndian.PutUint64(r, h)
		binary.BigEndian.PutUint32(r[8:], queue.UserHash(value))
		return r, int(h >> 52), nil
	}
	p, err := ParseNetwork(value)
	if err != nil {
		return nil, 0, err
	}
	r := netRecord(p)
	return r[:], int(s.recordHash(r[:]) >> 52), nil
}

// recordHash is the keyed hash of a network's record (its bucket).
func (s *Store) recordHash(r []byte) uint64 { return s.Hash(string(r)) }

// Load reads an upload of values from r, streamed, and applies it to list
// name: replacing the list or adding to it. The whole upload is read and
// checked before anything changes: a malformed line is a *LineError
// naming it, and nothing is applied; more values than o.Max is
// ErrTooLarge. ErrNoList when the list does not exist. Every sale whose
// door references the list has its exact copies rebuilt, each renamed
// into place whole, before the list's Version changes. Applied, the
// upload is answered once the Redis replicas hold it; an error wrapping
// event.ErrNotReplicated comes with the result when they did not copy
// it within event.ReplicaWait: the list stands as loaded on the primary.
func (s *Store) Load(ctx context.Context, name string, r io.Reader, o LoadOptions) (LoadResult, error) {
	res, err := s.load(ctx, name, r, o)
	if o.DryRun {
		return res, err
	}
	return res, s.confirmed(ctx, err)
}

// load is Load before the replicas are waited for.
func (s *Store) load(ctx context.Context, name string, r io.Reader, o LoadOptions) (LoadResult, error) {
	if o.Format == "" {
		o.Format = CSV
	}
	if o.Format != CSV && o.Format != NDJSON {
		return LoadResult{}, invalid("format %q must be %q or %q", o.Format, CSV, NDJSON)
	}
	if o.Max <= 0 || o.Max > MaxEntries {
		o.Max = MaxEntries
	}
	if err := s.Init(ctx); err != nil {
		return LoadResult{}, err
	}
	m, err := s.Get(ctx, name)
	if err != nil {
		return LoadResult{}, err
	}
	up := &content{size: recordSize(m.Kind)}
	var res LoadResult
	err = scanValues(r, o.Format, func(_ int, v string) error {
		res.Read++
		if res.Read > o.Max {
			return fmt.Errorf("%w: the upload holds more than %d values", ErrTooLarge, o.Max)
		}
		rec, b, err := s.record(m.Kind, v)
		if err != nil {
			return err
		}
		up.buckets[b] = append(up.buckets[b], rec...)
		return nil
	})
	if err != nil {
		return LoadResult{}, err
	}
	for i, b := range up.buckets {
		var d int
		up.buckets[i], d = sortDedupe(b, up.size)
		res.Duplicates += int64(d)
	}
	if !o.DryRun {
		unlock, err := s.lock(ctx, name)
		if err != nil {
			return LoadResult{}, err
		}
		defer unlock()
		if m, err = s.Get(ctx, name); err != nil { // deleted meanwhile?
			return LoadResult{}, err
		}
	}
	next := up
	if !o.Replace {
		cur, err := s.readContent(ctx, name, m.Kind)
		if err != nil {
			return LoadResult{}, err
		}
		for i := range cur.buckets {
			var d int
			cur.buckets[i], d = merge(cur.buckets[i], up.buckets[i], up.size)
			res.Duplicates += int64(d)
		}
		res.Added = cur.count() - m.Count
		next = cur
	} else {
		res.Added = up.count()
	}
	if n := next.count(); n > o.Max {
		return LoadResult{}, fmt.Errorf("%w: the list would hold %d entries, more than %d", ErrTooLarge, n, o.Max)
	}
	if o.DryRun {
		m.Count = next.count()
		res.Meta = m
		return res, nil
	}
	if res.Meta, err = s.apply(ctx, m, next); err != nil {
		return LoadResult{}, err
	}
	return res, nil
}

// apply makes list m hold c (under its lock): the canonical entries, the
// copies of every sale referencing it, then its Meta with a new Version.
func (s *Store) apply(ctx context.Context, m Meta, c *content) (Meta, error) {
	if err := s.stamp(ctx, &m); err != nil {
		return Meta{}, err
	}
	m.Count = c.count()
	if err := s.writeContent(ctx, m.Name, c); err != nil {
		return Meta{}, err
	}
	uses, err := s.salesOf(ctx, m.Name)
	if err != nil {
		return Meta{}, err
	}
	for _, u := range uses {
		if err := s.buildCopies(ctx, u.ev, u.refs, m, c); err != nil {
			return Meta{}, err
		}
	}
	return m, s.putMeta(ctx, m)
}

// Add puts value on list name (a no-op, Version unchanged, when it is
// there), and on the exact copies of every sale referencing the list.
// ErrInvalid for a value the list's kind does not take, ErrTooLarge at
// MaxEntries, ErrNoList. Like every change it is answered once the Redis
// replicas hold it, a no-op too (so sending a change again confirms
// it); an error wrapping event.ErrNotReplicated comes with the list's
// Meta when they did not copy it within event.ReplicaWait: the change
// stands on the primary.
func (s *Store) Add(ctx context.Context, name, value string) (Meta, error) {
	m, err := s.change(ctx, name, value, true)
	return m, s.confirmed(ctx, err)
}

// Remove takes value off list name (a no-op when it is not there) and off
// the exact copies of every sale referencing it. ErrNoList, ErrInvalid;
// event.ErrNotReplicated as for Add.
func (s *Store) Remove(ctx context.Context, name, value string) (Meta, error) {
	m, err := s.change(ctx, name, value, false)
	return m, s.confirmed(ctx, err)
}

func (s *Store) change(ctx context.Context, name, value string, add bool) (Meta, error) {
	unlock, err := s.lock(ctx, name)
	if err != nil {
		return Meta{}, err
	}
	defer unlock()
	m, err := s.Get(ctx, name)
	if err != nil {
		return Meta{}, err
	}
	rec, b, err := s.record(m.Kind, value)
	if err != nil {
		return Meta{}, err
	}
	key, field := listKey(name), bucketField(b)
	if add && m.Count >= MaxEntries {
		cur, err := s.rdb.HGet(ctx, key, field).Bytes()
		if err != nil && !errors.Is(err, redis.Nil) {
			return Meta{}, fmt.Errorf("lists: read %s: %w", key, err)
		}
		if _, found := search(cur, len(rec), rec); found {
			return m, nil
		}
		return Meta{}, fmt.Errorf("%w: the list holds %d entries already", ErrTooLarge, m.Count)
	}
	changed, err := s.editBlob(ctx, key, field, len(rec), rec, add)
	if err != nil || !changed {
		return m, err
	}
	if err := s.stamp(ctx, &m); err != nil {
		return Meta{}, err
	}
	if add {
		m.Count++
	} else {
		m.Count--
	}
	if m.Kind.ids() {
		uses, err := s.salesOf(ctx, name)
		if err != nil {
			return Meta{}, err
		}
		h, f := binary.BigEndian.Uint64(rec), binary.BigEndian.Uint32(rec[8:])
		for _, u := range uses {
			for _, cp := range u.refs.copies(u.ev, name, m.Kind) {
				if !cp.holds(f) {
					continue
				}
				if _, err := s.editBlob(ctx, cp.key, Arg(h)[:2], 6, []byte(Arg(h)[2:]), add); err != nil {
					return Meta{}, err
				}
			}
			if err := s.rdb.HSet(ctx, copiedKey, u.ev+"\x00"+name, m.Version).Err(); err != nil {
				return Meta{}, fmt.Errorf("lists: copies of %s: %w", name, err)
			}
		}
	}
	return m, s.putMeta(ctx, m)
}

// editBlob adds (or removes) record rec of size size to (from) the sorted
// blob at key's field: whether it changed. Its caller holds the list's
// lock, the only writer of the list's keys.
func (s *Store) editBlob(ctx context.Context, key, field string, size int, rec []byte, add bool) (bool, error) {
	cur, err := s.rdb.HGet(ctx, key, field).Bytes()
	if err != nil && !errors.Is(err, redis.Nil) {
		return false, fmt.Errorf("lists: read %s: %w", key, err)
	}
	i, found := search(cur, size, rec)
	switch {
	case add && found, !add && !found:
		return false, nil
	case add:
		next := make([]byte, 0, len(cur)+size)
		next = append(append(append(next, cur[:i*size]...), rec...), cur[i*size:]...)
		err = s.rdb.HSet(ctx, key, field, next).Err()
	case len(cur) == size:
		err = s.rdb.HDel(ctx, key, field).Err()
	default:
		next := append(append([]byte{}, cur[:i*size]...), cur[(i+1)*size:]...)
		err = s.rdb.HSet(ctx, key, field, next).Err()
	}
	if err != nil {
		return false, fmt.Errorf("lists: write %s: %w", key, err)
	}
	return true, nil
}

// Export writes list name's entries to w, one a line: a network list's
// networks as CIDRs (a single address as /32 or /128); a list of ids as
// the ids' keyed hashes in hex (16 digits), since the store never keeps
// a raw id. ErrNoList.
func (s *Store) Export(ctx context.Context, name string, w io.Writer) error {
	m, err := s.Get(ctx, name)
	if err != nil {
		return err
	}
	bw := bufio.NewWriter(w)
	size := recordSize(m.Kind)
	err = s.eachBucket(ctx, name, size, func(_ int, b []byte) error {
		for i := 0; i+size <= len(b); i += size {
			r := b[i : i+size]
			if m.Kind.ids() {
				var line [17]byte
				hex.Encode(line[:16], r[:8])
				line[16] = '\n'
				if _, err := bw.Write(line[:]); err != nil {
					return err
				}
				continue
			}
			if _, err := bw.WriteString(netOfRecord(r).String() + "\n"); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	return bw.Flush()
}
