package admission_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/anteroom/anteroom/admission"
	"github.com/anteroom/anteroom/internal/testenv"
	"github.com/anteroom/anteroom/queue"
)

// BenchmarkEnter compares a safety-net join (enter.lua: admit at once or
// queue, one script) with a sale's join (join.lua) on the same
// redis-server, one new user per operation, sequentially.
//
//	go test -run '^$' -bench Enter -benchtime 3s ./admission
func BenchmarkEnter(b *testing.B) {
	r := testenv.StartRedis(b)
	ctx := context.Background()
	now := time.Now()
	b.Run("join.lua", func(b *testing.B) {
		j := queue.NewJoiner(r.Client(b))
		times := queue.Times{Opens: now.Add(-time.Minute), WindowEnd: now.Add(-time.Minute), JoinEnd: now.Add(time.Hour)}
		i := 0
		for b.Loop() {
			i++
			if _, err := j.Join(ctx, "sale", "u"+strconv.Itoa(i), times); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("enter.lua", func(b *testing.B) {
		f := admission.NewFrontier(r.Client(b))
		e := admission.Entrance{Opens: now.Add(-time.Minute), Ends: now.Add(time.Hour), Rate: 1e6, MaxActive: 1e9, AdmissionTTL: time.Minute}
		i := 0
		for b.Loop() {
			i++
			e.User = "u" + strconv.Itoa(i)
			if en, err := f.Enter(ctx, "room", e); err != nil || !en.Admitted {
				b.Fatalf("%+v %v", en, err)
			}
		}
	})
}
