package luascript

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"net"
	"strings"
	"sync"

	"github.com/redis/go-redis/v9"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
)

// tracerName is the instrumentation scope of the script spans.
const tracerName = "github.com/anteroom/anteroom/internal/luascript"

// names maps a script's SHA1 (what EVALSHA names) to its name and version
// from its first line, "claim.lua v2". New fills it; TraceHook reads it.
// It is a memo of a pure function of the script's text: every entry is
// the same whoever writes it, and nothing is ever removed or changed.
var names sync.Map

// nameOf is the name and version in body's first line ("-- claim.lua v2:
// ..." gives "claim.lua v2"), or "script" when it has none.
func nameOf(body string) string {
	line, _, _ := strings.Cut(body, "\n")
	line, ok := strings.CutPrefix(line, "-- ")
	if name, _, found := strings.Cut(line, ":"); ok && found && strings.Contains(name, ".lua v") {
		return name
	}
	return "script"
}

// scriptName names the script cmd runs, or reports false for a command
// that runs none. EVALSHA names it by SHA1, EVAL by its source (the NOSCRIPT
// fallback).
func scriptName(cmd redis.Cmder) (string, bool) {
	var byHash bool
	switch cmd.Name() {
	case "evalsha", "evalsha_ro":
		byHash = true
	case "eval", "eval_ro":
	default:
		return "", false
	}
	args := cmd.Args()
	if len(args) < 2 {
		return "script", true
	}
	ref, _ := args[1].(string)
	if !byHash {
		sum := sha1.Sum([]byte(ref))
		ref = hex.EncodeToString(sum[:])
	}
	if n, ok := names.Load(ref); ok {
		return n.(string), true
	}
	return "script", true
}

// TraceHook returns a go-redis hook that gives each script call (EVALSHA,
// EVAL and their _RO forms) made under a recording span a child span
// "redis <script> <version>" (kind client), with the error of a failed
// call; a pipeline holding scripts gets one span "redis pipeline" naming
// them. Commands that run no script, and calls without a recording parent
// (the background loops), get none: scripts are traced as part of the
// request that runs them, never as traces of their own. Add it to a client
// only when tracing is on (telemetry): off, it is not installed at all.
func TraceHook() redis.Hook { return traceHook{} }

type traceHook struct{}

// DialHook leaves dialling alone.
func (traceHook) DialHook(next redis.DialHook) redis.DialHook {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		return next(ctx, network, addr)
	}
}

// ProcessHook spans one script call.
func (traceHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		parent := trace.SpanFromContext(ctx)
		if !parent.IsRecording() {
			return next(ctx, cmd)
		}
		name, ok := scriptName(cmd)
		if !ok {
			return next(ctx, cmd)
		}
		ctx, span := parent.TracerProvider().Tracer(tracerName).Start(ctx, "redis "+name,
			trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(
				attribute.String("db.system.name", "redis"),
				attribute.String("db.operation.name", strings.ToUpper(cmd.Name())),
				attribute.String("anteroom.script", name)))
		err := next(ctx, cmd)
		end(span, err)
		return err
	}
}

// ProcessPipelineHook spans a pipeline that runs scripts, as a whole.
func (traceHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		parent := trace.SpanFromContext(ctx)
		if !parent.IsRecording() {
			return next(ctx, cmds)
		}
		var scripts []string
		for _, c := range cmds {
			if n, ok := scriptName(c); ok {
				scripts = append(scripts, n)
			}
		}
		if len(scripts) == 0 {
			return next(ctx, cmds)
		}
		ctx, span := parent.TracerProvider().Tracer(tracerName).Start(ctx, "redis pipeline",
			trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(
				attribute.String("db.system.name", "redis"),
				attribute.String("db.operation.name", "PIPELINE"),
				attribute.Int("db.operation.batch.size", len(cmds)),
				attribute.StringSlice("anteroom.scripts", scripts)))
		err := next(ctx, cmds)
		failed := err
		for _, c := range cmds {
			if cerr := c.Err(); failed == nil && cerr != nil && !errors.Is(cerr, redis.Nil) {
				failed = cerr // a script's own error: the pipeline's span failed
			}
		}
		end(span, failed)
		return err
	}
}

// end records err (a redis.Nil answer is none) on span and ends it.
func end(span trace.Span, err error) {
	if err != nil && !errors.Is(err, redis.Nil) {
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
	}
	span.End()
}
