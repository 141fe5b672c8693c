package lists

import (
	"bytes"
	"context"
	"fmt"
	"sort"

	"github.com/redis/go-redis/v9"
)

// A list's canonical entries are a Redis hash of numBuckets fields: field
// = the bucket's number, 2 bytes big-endian; value = the bucket's records
// concatenated in ascending byte order. A record of a list of ids is 12
// bytes: the 8-byte keyed hash (big-endian) and the 4-byte FNV-1a-32 of
// the raw id; its bucket is the hash's top 12 bits. A network's record is
// netRecordSize bytes; its bucket is the top 12 bits of the record's
// keyed hash.
const (
	numBuckets   = 4096
	idRecordSize = 12
)

// content is a list's entries in memory: numBuckets sorted blobs of
// records of size size, without duplicates.
type content struct {
	size    int
	buckets [numBuckets][]byte
}

// count is how many records c holds.
func (c *content) count() int64 {
	var n int64
	for _, b := range c.buckets {
		n += int64(len(b) / c.size)
	}
	return n
}

// recordSize is the size of a record of a list of kind k.
func recordSize(k Kind) int {
	if k.ids() {
		return idRecordSize
	}
	return netRecordSize
}

// bucketField is bucket i's field.
func bucketField(i int) string { return string([]byte{byte(i >> 8), byte(i)}) }

// fieldsChunk is how many fields one HMGET or HSET carries, and
// pipeBytes about how much one pipeline carries: bounded commands, so a
// load never blocks Redis for long.
const (
	fieldsChunk = 256
	pipeBytes   = 4 << 20
)

// readContent reads list name's canonical entries.
func (s *Store) readContent(ctx context.Context, name string, k Kind) (*content, error) {
	c := &content{size: recordSize(k)}
	err := s.eachBucket(ctx, name, c.size, func(i int, b []byte) error {
		c.buckets[i] = b
		return nil
	})
	return c, err
}

// eachBucket calls each with every non-empty bucket of list name, in
// order, reading a chunk of buckets per command (a few pipelined).
func (s *Store) eachBucket(ctx context.Context, name string, size int, each func(i int, b []byte) error) error {
	key := listKey(name)
	const perPipe = 4
	for lo := 0; lo < numBuckets; lo += fieldsChunk * perPipe {
		pipe := s.rdb.Pipeline()
		var cmds []*redis.SliceCmd
		for first := lo; first < min(lo+fieldsChunk*perPipe, numBuckets); first += fieldsChunk {
			fields := make([]string, 0, fieldsChunk)
			for i := first; i < min(first+fieldsChunk, numBuckets); i++ {
				fields = append(fields, bucketField(i))
			}
			cmds = append(cmds, pipe.HMGet(ctx, key, fields...))
		}
		if _, err := pipe.Exec(ctx); err != nil {
			return fmt.Errorf("lists: read %s: %w", name, err)
		}
		i := lo
		for _, cmd := range cmds {
			for _, v := range cmd.Val() {
				if str, ok := v.(string); ok && str != "" {
					if len(str)%size != 0 {
						return fmt.Errorf("lists: read %s: bucket %d holds %d bytes, not whole records", name, i, len(str))
					}
					if err := each(i, []byte(str)); err != nil {
						return err
					}
				}
				i++
			}
		}
	}
	return nil
}

// hashWriter writes fields of one hash in bounded HSETs and pipelines.
type hashWriter struct {
	s      *Store
	ctx    context.Context
	key    string
	pipe   redis.Pipeliner
	args   []any
	inArgs int
	inPipe int
}

func (s *Store) newHashWriter(ctx context.Context, key string) *hashWriter {
	return &hashWriter{s: s, ctx: ctx, key: key, pipe: s.rdb.Pipeline()}
}

func (w *hashWriter) set(field string, value []byte) error {
	w.args = append(w.args, field, value)
	w.inArgs += len(value)
	if len(w.args) >= 2*fieldsChunk || w.inArgs >= 256<<10 {
		return w.flushCmd(false)
	}
	return nil
}

func (w *hashWriter) flushCmd(final bool) error {
	if len(w.args) > 0 {
		w.pipe.HSet(w.ctx, w.key, w.args...)
		w.inPipe += w.inArgs
		w.args, w.inArgs = nil, 0
	}
	if w.inPipe >= pipeBytes || final && w.pipe.Len() > 0 {
		if _, err := w.pipe.Exec(w.ctx); err != nil {
			return fmt.Errorf("lists: write %s: %w", w.key, err)
		}
		w.inPipe = 0
	}
	return nil
}

func (w *hashWriter) close() error { return w.flushCmd(true) }

// replaceHash makes key hold exactly the non-empty fields fill sets:
// written under key+":new" (same slot) and renamed over key, so a reader
// never sees half of it. Nothing set: key is deleted.
func (s *Store) replaceHash(ctx context.Context, key string, fill func(set func(field string, value []byte) error) error) error {
	tmp := key + ":new"
	if err := s.rdb.Del(ctx, tmp).Err(); err != nil {
		return fmt.Errorf("lists: write %s: %w", key, err)
	}
	w := s.newHashWriter(ctx, tmp)
	wrote := false
	err := fill(func(field string, value []byte) error {
		if len(value) == 0 {
			return nil
		}
		wrote = true
		return w.set(field, value)
	})
	if err == nil {
		err = w.close()
	}
	if err != nil {
		s.rdb.Del(context.WithoutCancel(ctx), tmp)
		return err
	}
	if !wrote {
		return s.rdb.Del(ctx, key).Err()
	}
	if err := s.rdb.Rename(ctx, tmp, key).Err(); err != nil {
		return fmt.Errorf("lists: write %s: %w", key, err)
	}
	return nil
}

// writeContent replaces list name's canonical entries with c.
func (s *Store) writeContent(ctx context.Context, name string, c *content) error {
	return s.replaceHash(ctx, listKey(name), func(set func(string, []byte) error) error {
		for i, b := range c.buckets {
			if err := set(bucketField(i), b); err != nil {
				return err
			}
		}
		return nil
	})
}

// search finds record r in sorted blob b: its index and whether it is
// there.
func search(b []byte, size int, r []byte) (int, bool) {
	n := len(b) / size
	i := sort.Search(n, func(i int) bool { return bytes.Compare(b[i*size:(i+1)*size], r) >= 0 })
	return i, i < n && bytes.Equal(b[i*size:(i+1)*size], r)
}

// merge returns sorted blob a with sorted blob b's records added, and
// how many of b's were already in a.
func merge(a, b []byte, size int) ([]byte, int) {
	if len(b) == 0 {
		return a, 0
	}
	out := make([]byte, 0, len(a)+len(b))
	dups := 0
	for len(a) > 0 && len(b) > 0 {
		switch c := bytes.Compare(a[:size], b[:size]); {
		case c < 0:
			out, a = append(out, a[:size]...), a[size:]
		case c > 0:
			out, b = append(out, b[:size]...), b[size:]
		default:
			out, a, b = append(out, a[:size]...), a[size:], b[size:]
			dups++
		}
	}
	out = append(out, a...)
	return append(out, b...), dups
}

// recSorter sorts a blob's fixed-size records in place.
type recSorter struct {
	b    []byte
	size int
	tmp  []byte
}

func (r recSorter) Len() int { return len(r.b) / r.size }
func (r recSorter) Less(i, j int) bool {
	return bytes.Compare(r.b[i*r.size:(i+1)*r.size], r.b[j*r.size:(j+1)*r.size]) < 0
}
func (r recSorter) Swap(i, j int) {
	copy(r.tmp, r.b[i*r.size:(i+1)*r.size])
	copy(r.b[i*r.size:(i+1)*r.size], r.b[j*r.size:(j+1)*r.size])
	copy(r.b[j*r.size:(j+1)*r.size], r.tmp)
}

// sortDedupe sorts blob b's records and drops repeats: the blob and how
// many it dropped.
func sortDedupe(b []byte, size int) ([]byte, int) {
	sort.Sort(recSorter{b: b, size: size, tmp: make([]byte, size)})
	out := b[:0]
	dups := 0
	for i := 0; i+size <= len(b); i += size {
		if len(out) >= size && bytes.Equal(out[len(out)-size:], b[i:i+size]) {
			dups++
			continue
		}
		out = append(out, b[i:i+size]...)
	}
	return out, dups
}
