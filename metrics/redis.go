package metrics

import (
	"context"
	"net"
	"time"

	"github.com/redis/go-redis/v9"
)

// RedisHook returns a go-redis hook that times every command and pipeline
// into anteroom_redis_call_duration_seconds and counts those slower than
// Config.SlowRedis in anteroom_redis_slow_calls_total. Add it to a client
// (or a cluster client) with AddHook. The command label is the command's
// lower-case name (evalsha for the scripts, pipeline for a pipeline): a
// small fixed set, decided by the code, never by a caller.
func (m *Metrics) RedisHook() redis.Hook { return redisHook{m: m, now: time.Now} }

type redisHook struct {
	m   *Metrics
	now func() time.Time
}

// DialHook leaves dialling alone.
func (h redisHook) DialHook(next redis.DialHook) redis.DialHook {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		return next(ctx, network, addr)
	}
}

// ProcessHook times one command.
func (h redisHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		start := h.now()
		err := next(ctx, cmd)
		h.m.observeRedis(cmd.Name(), h.now().Sub(start))
		return err
	}
}

// ProcessPipelineHook times one pipeline (or transaction) as a whole.
func (h redisHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		start := h.now()
		err := next(ctx, cmds)
		h.m.observeRedis("pipeline", h.now().Sub(start))
		return err
	}
}

func (m *Metrics) observeRedis(command string, d time.Duration) {
	if m == nil {
		return
	}
	if command == "" {
		command = "unknown"
	}
	m.redisDuration.WithLabelValues(command).Observe(d.Seconds())
	if d > m.slow {
		m.redisSlow.WithLabelValues(command).Inc()
	}
}
