package queue

import (
	"sync"
	"time"
)

// FailoverSpan is the longest a Redis primary may go on writing alone
// after its replica's last acknowledgement: deploy/redis's
// min-replicas-max-lag (10 s) plus the second between a replica's
// acknowledgements. A failover can lose at most the joins of this span, so
// join.lua moves a queue's counter on a promoted replica past as many
// sequence numbers as the queue's recorded pace gives in it (see the
// package doc, "What a Redis failover does").
const FailoverSpan = 11 * time.Second

// fenceKey names the failover fence of the queue under key prefix tag: the
// replication id its counter is kept on and the counter's pace (join.lua,
// readshard.lua, admission's enter.lua and advance.lua; internal/luascript's
// seqfence.lua).
func fenceKey(tag string) string { return tag + "sf" }

// Highs is a node's record of the highest sequence number each counter
// (by name: a Joiner's by hash tag) has given it, new or existing. Each
// join reports its counter's to the script (join.lua, admission's
// enter.lua), which keeps the counter at or above it: every ticket this
// node handed out stays below the counter, whatever a Redis failover
// lost. Safe for concurrent use; one entry per counter.
type Highs struct {
	mu  sync.Mutex
	seq map[string]int64
}

// NewHighs returns an empty record.
func NewHighs() *Highs { return &Highs{seq: make(map[string]int64)} }

// High returns the highest seq the counter has given (0: none).
func (h *Highs) High(counter string) int64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.seq[counter]
}

// See records that the counter gave seq.
func (h *Highs) See(counter string, seq int64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if seq > h.seq[counter] {
		h.seq[counter] = seq
	}
}
