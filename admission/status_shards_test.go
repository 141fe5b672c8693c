package admission

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/anteroom/anteroom/queue"
)

// TestDecideShards answers polls on a sale of join shards from the node's
// Order alone: a later joiner whose second is not settled on every shard
// has no position and is not admitted however far the frontier is; once
// settled, the position is the Order's, and a window member's is π.
func TestDecideShards(t *testing.T) {
	s := sale(t, "fcfs", true, 3, 100, false, false)
	opens := s.Config.PrequeueOpensAt
	at := func(sec int64) time.Time { return opens.Add(time.Duration(sec) * time.Second) }
	s.Config.JoinShards = 2
	s.Order = queue.NewOrder(2, opens).Next([]queue.ShardRead{
		{Now: at(9), Joined: 4, Window: 2, Starts: []queue.SecondStart{{Second: 7, First: 3}, {Second: 8, First: 4}}},
		{Now: at(8), Joined: 2, Window: 1, Starts: []queue.SecondStart{{Second: 7, First: 2}}},
	})
	now := s.Config.WindowEnd().Add(time.Minute)
	cases := []struct {
		name  string
		place queue.Place
		state State
		pos   int64
	}{
		{"window member of shard 1", queue.Place{Shard: 1, Seq: 1, Joined: at(3)}, Admitted, s.Perm.Apply(3)},
		{"later joiner, settled", queue.Place{Shard: 1, Seq: 2, Joined: at(7)}, Admitted, 5},
		{"later joiner, second not settled", queue.Place{Shard: 0, Seq: 4, Joined: at(8)}, Waiting, 0},
		{"a seq past what was read", queue.Place{Shard: 1, Seq: 9, Joined: at(7)}, Waiting, 0},
	}
	for _, c := range cases {
		d := DecidePlace(s, c.place, now, rand.Float64)
		if d.State != c.state || d.Position != c.pos {
			t.Errorf("%s: %+v, want %s at %d", c.name, d, c.state, c.pos)
		}
	}
}
