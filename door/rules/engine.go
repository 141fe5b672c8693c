package rules

import (
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"

	"github.com/anteroom/anteroom/door"
	"github.com/anteroom/anteroom/event"
	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/types"
)

// Engine compiles and evaluates the sales' door rules over a node's lists
// and crawler verification. It implements door.Rules. Safe for concurrent
// use.
type Engine struct {
	lists    door.Lists
	crawlers door.Crawlers
	env      *cel.Env
	log      *slog.Logger
	// sales maps an event id to its *compiled rules, those of one version.
	sales sync.Map
	pool  sync.Pool
	evalErrors,
	invalid atomic.Uint64
}

var _ door.Rules = (*Engine)(nil)

// Option tunes an Engine.
type Option func(*Engine)

// WithLog is where an Engine logs a sale's rules that do not compile
// (once per version).
//
// Default: slog.Default()
func WithLog(l *slog.Logger) Option { return func(e *Engine) { e.log = l } }

// New returns an Engine over lists and crawlers. A nil lists makes a rule
// calling in_list fail to compile ("this node has no lists"); a nil
// crawlers makes verified_crawler() false.
func New(lists door.Lists, crawlers door.Crawlers, opts ...Option) *Engine {
	env, err := newEnv(lists)
	if err != nil {
		// The declarations are this package's constants: TestNew covers them.
		panic("rules: the rule environment does not build: " + err.Error())
	}
	e := &Engine{lists: lists, crawlers: crawlers, env: env, log: slog.Default()}
	for _, o := range opts {
		o(e)
	}
	e.pool.New = func() any { return new(activation) }
	return e
}

// compiled is one version of a sale's rules, compiled once.
type compiled struct {
	version int64
	once    sync.Once
	rules   []program
	err     error
}

// Match implements door.Rules: the first of cfg.Door.Rules whose when
// holds for r. The rules are compiled on the first call for cfg's id and
// version; rules that do not compile match nothing (logged once).
func (e *Engine) Match(cfg *event.Config, r *door.Request) (name string, then door.Action, ok bool) {
	if len(cfg.Door.Rules) == 0 {
		return "", door.Queue, false
	}
	c := e.programs(cfg)
	if c.err != nil {
		return "", door.Queue, false
	}
	return e.eval(c.rules, r)
}

// Try evaluates cfg's rules for r as Match does, compiled afresh and kept
// nowhere: the console's tester, for saved rules or rules not saved yet.
// A rule that does not compile is the error (a *RuleError).
func (e *Engine) Try(cfg *event.Config, r *door.Request) (name string, then door.Action, ok bool, err error) {
	rules, err := e.compile(cfg.Door.Rules, nil)
	if err != nil {
		return "", door.Queue, false, err
	}
	name, then, ok = e.eval(rules, r)
	return name, then, ok, nil
}

// EvalErrors is how many rule evaluations failed (no match) since the
// Engine was made.
func (e *Engine) EvalErrors() uint64 { return e.evalErrors.Load() }

// Invalid is how many sale versions had rules that did not compile.
func (e *Engine) Invalid() uint64 { return e.invalid.Load() }

// eval runs rules in order over r.
func (e *Engine) eval(rules []program, r *door.Request) (string, door.Action, bool) {
	a := e.pool.Get().(*activation)
	a.reset(r, e.lists, e.crawlers)
	defer func() {
		a.reset(nil, nil, nil)
		e.pool.Put(a)
	}()
	for i := range rules {
		out, _, err := rules[i].prg.Eval(a)
		if errors.Is(err, errUnheld) {
			// Its outcome depends on a list the node does not hold yet:
			// it holds when its then refuses or queues, never when it
			// bypasses (which would skip the lists and the queue).
			if rules[i].then != door.Bypass {
				return rules[i].name, rules[i].then, true
			}
			continue
		}
		if err != nil {
			e.evalErrors.Add(1)
			continue
		}
		if out == types.True {
			return rules[i].name, rules[i].then, true
		}
	}
	return "", door.Queue, false
}

// programs returns the compiled rules of cfg's id and version, compiling
// them on first use.
func (e *Engine) programs(cfg *event.Config) *compiled {
	if v, ok := e.sales.Load(cfg.ID); ok {
		if c := v.(*compiled); c.version == cfg.Version {
			c.once.Do(func() { e.build(c, cfg) })
			return c
		}
	}
	c := &compiled{version: cfg.Version}
	if v, loaded := e.sales.LoadOrStore(cfg.ID, c); loaded {
		if old := v.(*compiled); old.version == cfg.Version {
			c = old
		} else {
			e.sales.Store(cfg.ID, c)
		}
	}
	c.once.Do(func() { e.build(c, cfg) })
	return c
}

// build compiles cfg's rules into c.
func (e *Engine) build(c *compiled, cfg *event.Config) {
	c.rules, c.err = e.compile(cfg.Door.Rules, nil)
	if c.err != nil {
		e.invalid.Add(1)
		e.log.Warn("a sale's door rules do not compile: none of them applies", "event", cfg.ID, "version", cfg.Version, "err", c.err)
	}
}
