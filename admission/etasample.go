package admission

import (
	"context"
	"errors"
	"fmt"
	"math/bits"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// The ETA's error is measured on a sample of each queue: a person is in it
// when ETAWho(event, user) is a multiple of the queue's stride, a power of
// two that doubles as the queue grows (ETAStride), so a queue of any size
// has between ETASamples/2 and ETASamples people in it, the sample of a
// larger stride is part of every smaller one's, and every node picks the
// same people without asking anyone. Nodes keep the status answers of
// sampled people in memory (sale.Snapshots.ShownETA: the status poll stays
// free of Redis) and their tick appends them to the event's list
// (RecordETAs); the post-sale report reads them (ETAAnswers) and keeps
// the people of the final stride.

// ETASamples is the most people of one queue whose ETA answers are kept.
const ETASamples = 512

// MaxETAAnswers is the most answers one node keeps of one sampled person:
// with polls at most every MaxPoll that is every answer of a two-hour wait.
const MaxETAAnswers = 256

// ETAStride is the sampling stride of a queue joined people joined: the
// smallest power of two k with joined ≤ ETASamples × k.
func ETAStride(joined int64) uint64 {
	if joined <= ETASamples {
		return 1
	}
	q := uint64(joined-1)/ETASamples + 1 // ⌈joined / ETASamples⌉ ≥ 2
	return 1 << bits.Len64(q-1)
}

// ETAWho names user of event ev in the ETA sample: the FNV-1a hash of both,
// so one person is not sampled in every sale.
// It is hash/fnv's, written out: the status path calls it on every
// waiting answer.
func ETAWho(ev, user string) uint64 {
	const prime = 1099511628211
	h := uint64(14695981039346656037)
	for i := 0; i < len(ev); i++ {
		h = (h ^ uint64(ev[i])) * prime
	}
	h *= prime // a 0 byte between the two
	for i := 0; i < len(user); i++ {
		h = (h ^ uint64(user[i])) * prime
	}
	return h
}

// ETASampled reports whether who is in the sample of a queue joined people
// joined.
func ETASampled(who uint64, joined int64) bool { return who%ETAStride(joined) == 0 }

// ETAAnswer is one status answer a sampled person was given.
type ETAAnswer struct {
	// Lane is the person's lane (0: the default lane); Who is ETAWho.
	Lane int
	Who  uint64
	// At is when the answer was given (the answering node's clock, kept
	// on Redis TIME), to the millisecond.
	At time.Time
	// Admitted is true for the answer that handed the admission token;
	// otherwise the answer was "waiting" with ETASeconds, the
	// eta_seconds the page showed.
	Admitted   bool
	ETASeconds int64
}

// RecordETAs appends answers to event ev's ETA answers in one round trip.
func (f *Frontier) RecordETAs(ctx context.Context, ev string, answers []ETAAnswer) error {
	if len(answers) == 0 {
		return nil
	}
	rdb, ok := f.rdb.(redis.Cmdable)
	if !ok {
		return errors.New("eta answers: the Redis client cannot push")
	}
	vals := make([]any, len(answers))
	for i, a := range answers {
		vals[i] = formatETAAnswer(a)
	}
	if err := rdb.RPush(ctx, etaKey(ev), vals...).Err(); err != nil {
		return fmt.Errorf("eta answers %s: %w", ev, err)
	}
	return nil
}

// ETAAnswers reads every ETA answer recorded for event ev, oldest first.
// Entries it cannot read are skipped.
func (f *Frontier) ETAAnswers(ctx context.Context, ev string) ([]ETAAnswer, error) {
	rdb, ok := f.rdb.(redis.Cmdable)
	if !ok {
		return nil, errors.New("eta answers: the Redis client cannot read lists")
	}
	var out []ETAAnswer
	const page = 4096
	for from := int64(0); ; from += page {
		vals, err := rdb.LRange(ctx, etaKey(ev), from, from+page-1).Result()
		if err != nil {
			return nil, fmt.Errorf("eta answers %s: %w", ev, err)
		}
		for _, v := range vals {
			if a, ok := parseETAAnswer(v); ok {
				out = append(out, a)
			}
		}
		if len(vals) < page {
			return out, nil
		}
	}
}

// formatETAAnswer is a list entry: "lane who at_ms a|w eta_s".
func formatETAAnswer(a ETAAnswer) string {
	state := "w"
	if a.Admitted {
		state = "a"
	}
	return strconv.Itoa(a.Lane) + " " + strconv.FormatUint(a.Who, 10) + " " + strconv.FormatInt(a.At.UnixMilli(), 10) + " " + state + " " + strconv.FormatInt(a.ETASeconds, 10)
}

func parseETAAnswer(v string) (ETAAnswer, bool) {
	f := strings.Fields(v)
	if len(f) != 5 || (f[3] != "a" && f[3] != "w") {
		return ETAAnswer{}, false
	}
	lane, e1 := strconv.Atoi(f[0])
	who, e2 := strconv.ParseUint(f[1], 10, 64)
	at, e3 := strconv.ParseInt(f[2], 10, 64)
	eta, e4 := strconv.ParseInt(f[4], 10, 64)
	if e1 != nil || e2 != nil || e3 != nil || e4 != nil || lane < 0 {
		return ETAAnswer{}, false
	}
	return ETAAnswer{Lane: lane, Who: who, At: time.UnixMilli(at), Admitted: f[3] == "a", ETASeconds: eta}, true
}

func etaKey(ev string) string { return "ar:{" + ev + "}:etas" }
