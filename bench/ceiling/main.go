// Command ceiling is the HTTP ceiling of the benchmarks: a minimal fiber
// app that answers a constant JSON body, on the anteroom edge's own fiber
// configuration (web.FiberConfig). What differs: no middleware (metrics,
// access log, recover, request ids, the entry cap) and no work. What
// anteroom's status and join reach relative to it is what anteroom's own
// work, middleware included, costs.
//
// It also serves the join's floors: what a join costs whatever does it,
// with none of anteroom's own work. POST /floor/answer answers the bytes
// of a join's answer (a ticket-sized value in a cookie and in the body,
// the headers a join's answer carries). With -redis, two more take a
// number from Redis first, as every join must: POST /floor/join with one
// INCR round trip of its own, POST /floor/batched with an INCR that
// concurrent requests share pipelines for (two in flight, as anteroom's
// joins do). With -nats too, POST /floor/claim is what a claim costs
// whatever does it (floorClaim).
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/redis/go-redis/v9"

	"github.com/anteroom/anteroom/claim"
	"github.com/anteroom/anteroom/internal/jsretry"
	"github.com/anteroom/anteroom/web"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:0", "listen address")
	redisAddr := flag.String("redis", "", "a Redis server's address: POST /floor/join takes a number there (INCR) before it answers")
	natsURL := flag.String("nats", "", "NATS servers (with -redis): POST /floor/claim takes a number and publishes it to a JetStream stream, awaiting its acknowledgement")
	replicas := flag.Int("replicas", 1, "the -nats stream's replicas")
	flag.Parse()
	app := fiber.New(web.FiberConfig(slog.Default(), nil))
	app.Post("/floor/answer", func(c *fiber.Ctx) error { return answerJoin(c, 1) })
	if *redisAddr != "" {
		rdb := redis.NewClient(&redis.Options{Addr: *redisAddr, PoolSize: 128})
		numbered := func(take func(context.Context) (int64, error)) fiber.Handler {
			return func(c *fiber.Ctx) error {
				seq, err := take(c.Context())
				if err != nil {
					return err
				}
				return answerJoin(c, seq)
			}
		}
		app.Post("/floor/join", numbered(func(ctx context.Context) (int64, error) { return rdb.Incr(ctx, "floor:seq").Result() }))
		b := newIncrBatcher(rdb)
		app.Post("/floor/batched", numbered(func(context.Context) (int64, error) { return b.incr() }))
		if *natsURL != "" {
			js, err := floorStream(*natsURL, *replicas)
			if err != nil {
				fmt.Fprintln(os.Stderr, "ceiling:", err)
				os.Exit(1)
			}
			app.Post("/floor/claim", func(c *fiber.Ctx) error { return floorClaim(c, b, js) })
		}
	}
	body := []byte(`{"state":"waiting","position":1234,"ahead":1233,"eta_seconds":12,"poll_after_ms":3000}`)
	handler := func(c *fiber.Ctx) error {
		c.Set(fiber.HeaderContentType, fiber.MIMEApplicationJSON)
		return c.Send(body)
	}
	app.Get("/*", handler)
	app.Post("/*", handler)
	if err := app.Listen(*addr); err != nil {
		fmt.Fprintln(os.Stderr, "ceiling:", err)
		os.Exit(1)
	}
}

// incrBatcher coalesces concurrent INCRs into pipelines: a request queues
// its reply channel; each of two senders takes what is queued (up to 1024)
// and sends it as one pipeline.
type incrBatcher struct {
	rdb  *redis.Client
	reqs chan chan incrReply
}

type incrReply struct {
	seq int64
	err error
}

func newIncrBatcher(rdb *redis.Client) *incrBatcher {
	b := &incrBatcher{rdb: rdb, reqs: make(chan chan incrReply, 4096)}
	for range 2 {
		go b.send()
	}
	return b
}

// incr takes the next number through a shared pipeline.
func (b *incrBatcher) incr() (int64, error) {
	ch := make(chan incrReply, 1)
	b.reqs <- ch
	r := <-ch
	return r.seq, r.err
}

func (b *incrBatcher) send() {
	ctx := context.Background()
	batch := make([]chan incrReply, 0, 1024)
	cmds := make([]*redis.IntCmd, 0, 1024)
	for first := range b.reqs {
		batch = append(batch[:0], first)
	more:
		for len(batch) < cap(batch) {
			select {
			case ch := <-b.reqs:
				batch = append(batch, ch)
			default:
				break more
			}
		}
		pipe := b.rdb.Pipeline()
		cmds = cmds[:0]
		for range batch {
			cmds = append(cmds, pipe.Incr(ctx, "floor:seq"))
		}
		_, err := pipe.Exec(ctx)
		for i, ch := range batch {
			if err != nil {
				ch <- incrReply{err: err}
				continue
			}
			ch <- incrReply{seq: cmds[i].Val()}
		}
	}
}

// floorStream connects to the NATS servers at url and creates the claim
// floor's stream: file storage, replicas copies, a duplicate window as
// the order stream's.
func floorStream(url string, replicas int) (jetstream.JetStream, error) {
	nc, err := nats.Connect(url)
	if err != nil {
		return nil, err
	}
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err = jsretry.Do(ctx, func(ctx context.Context) error { // the cluster may still elect its meta leader
		_, err := js.CreateOrUpdateStream(ctx, jetstream.StreamConfig{Name: "FLOOR_ORDERS", Subjects: []string{"floor.>"},
			Storage: jetstream.FileStorage, Replicas: replicas, Duplicates: claim.DuplicateWindow})
		return err
	})
	return js, err
}

// floorClaim is what a claim costs whatever does it: it reads the bearer
// token (and checks nothing), takes a number from Redis in a shared
// pipeline, publishes an order-sized message with a Nats-Msg-Id (the
// user's) and waits for JetStream's acknowledgement, and answers 201 with
// an order-sized body.
func floorClaim(c *fiber.Ctx, b *incrBatcher, js jetstream.JetStream) error {
	if c.Get(fiber.HeaderAuthorization) == "" {
		return fiber.ErrUnauthorized
	}
	seq, err := b.incr()
	if err != nil {
		return err
	}
	user := c.Get("X-User-ID")
	order := make([]byte, 0, 256)
	order = append(order, `{"claim_id":"`...)
	order = append(order, user...)
	order = append(order, `","event":"floor","user":"`...)
	order = append(order, user...)
	order = append(order, `","unit":`...)
	order = strconv.AppendInt(order, seq, 10)
	order = append(order, `,"status":"granted","granted_at":"2026-12-07T00:00:00Z","expires_at":"2026-12-07T00:10:00Z"}`...)
	msg := &nats.Msg{Subject: "floor.granted", Data: order, Header: nats.Header{}}
	msg.Header.Set(jetstream.MsgIDHeader, user)
	f, err := js.PublishMsgAsync(msg)
	if err != nil {
		return err
	}
	select {
	case <-f.Ok():
	case err := <-f.Err():
		return err
	case <-time.After(10 * time.Second):
		return fiber.ErrGatewayTimeout
	}
	c.Set(fiber.HeaderCacheControl, "no-store")
	c.Set(fiber.HeaderContentType, fiber.MIMEApplicationJSON)
	return c.Status(fiber.StatusCreated).Send(order)
}

// floorTicket is as long as the ticket of the bench's joins: an HS256
// JWT whose claims carry the event, a user id of the wrk script's form,
// the number and the time.
var floorTicket = "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9." + strings.Repeat("e", 100) + "." + strings.Repeat("s", 43)

// answerJoin answers a join's bytes for number seq: the ticket as an
// HttpOnly cookie and in the JSON body, no-store, as anteroom's join does.
func answerJoin(c *fiber.Ctx, seq int64) error {
	c.Cookie(&fiber.Cookie{Name: "ar_t_bjoin", Value: floorTicket, Path: "/", HTTPOnly: true,
		Expires: time.Now().Add(24 * time.Hour), SameSite: fiber.CookieSameSiteLaxMode})
	c.Set(fiber.HeaderCacheControl, "no-store")
	c.Set(fiber.HeaderXRequestID, "bench-floor-0123456789")
	c.Set(fiber.HeaderContentType, fiber.MIMEApplicationJSON)
	b := make([]byte, 0, 320)
	b = append(b, `{"ticket":"`...)
	b = append(b, floorTicket...)
	b = append(b, `","seq":`...)
	b = strconv.AppendInt(b, seq, 10)
	b = append(b, `,"position":`...)
	b = strconv.AppendInt(b, seq, 10)
	b = append(b, `,"state":"waiting","poll_after_ms":1000}`...)
	return c.Send(b)
}
