package limit_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/anteroom/anteroom/limit"
)

// ExampleLimiter_Allow spends a per-user join budget of two requests (then
// one a minute). A node keeps its buckets in Redis; this example has no
// Redis (its client's dialer always fails), which shows the other half of
// the contract: Allow never fails, it decides with node-local buckets and
// says so in Decision.Local, and the Limiter reports itself degraded until
// Redis answers again.
func ExampleLimiter_Allow() {
	noRedis := redis.NewClient(&redis.Options{
		Addr: "redis.invalid:6379",
		Dialer: func(context.Context, string, string) (net.Conn, error) {
			return nil, errors.New("no Redis in this example")
		},
	})
	defer noRedis.Close()
	rdb, err := limit.ClientFor(noRedis) // deadlines honoured, no retries
	if err != nil {
		fmt.Println(err)
		return
	}
	defer rdb.Close()
	l := limit.New(rdb, limit.Config{})

	join := limit.Rule{Budget: "join", Dim: limit.User, Event: "sneaker-drop", Value: "user-42",
		Limit: limit.Limit{Rate: 1.0 / 60, Burst: 2}}
	for i := 1; i <= 3; i++ {
		d := l.Allow(context.Background(), join)
		if d.Allowed {
			fmt.Printf("%d: allowed, %d left, local %v\n", i, d.Remaining, d.Local)
			continue
		}
		fmt.Printf("%d: refused by %s, retry in %v, local %v\n", i, d.Dim, d.RetryAfter.Round(time.Second), d.Local)
	}
	fmt.Println("degraded:", l.Degraded())
	// Output:
	// 1: allowed, 1 left, local true
	// 2: allowed, 0 left, local true
	// 3: refused by user, retry in 1m0s, local true
	// degraded: true
}
