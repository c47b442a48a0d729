package ratelimit

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync/atomic"
	"time"

	"github.com/median-go/median/protocol"
	"golang.org/x/time/rate"
)

// Reason is the reason of the refusal a call over its cap is answered
// with (docs/PROTOCOL.md §9.1).
const Reason = "rate_limited"

// DefaultTimeout is [Config.Timeout] when it is zero: the default of
// protocol.Config.StoreTimeout.
const DefaultTimeout = time.Second

// Limit is a cap: at most Calls calls per Per, all of them at once if they
// come together, each coming back Per/Calls after it was used (a token
// bucket of Calls tokens that refills at Calls per Per).
type Limit struct {
	Calls int           // calls allowed per Per; at least 1
	Per   time.Duration // the period; positive
}

// String returns the limit in words, such as "20 calls per 1m0s".
func (l Limit) String() string { return fmt.Sprintf("%d calls per %s", l.Calls, l.Per) }

// check returns why l is not usable, naming it as what.
func (l Limit) check(what string) error {
	if l.Calls <= 0 || l.Per <= 0 {
		return fmt.Errorf("median: ratelimit: %s is %d calls per %s: both must be positive (a zero rate would block everything, a negative one means nothing); leave a tool out of Config.Tools to not limit it", what, l.Calls, l.Per)
	}
	return nil
}

// By says what one count covers. Combine PerTool with PerConversation or
// PerVisitor for a count per tool within each conversation or for each
// visitor.
type By uint8

const (
	// PerConversation counts the calls of each conversation apart.
	PerConversation By = 1 << iota
	// PerVisitor counts the calls of each verified visitor apart, by
	// externalId, across their conversations. An unverified visitor's
	// calls are counted by conversation: only a verified id is trusted.
	PerVisitor
	// PerTool counts the calls of each tool apart. Alone, it caps a tool
	// across every conversation and visitor.
	PerTool
)

// Backend keeps the counts. [Memory] keeps them in this process;
// redislimit.Backend in Redis, shared by every instance.
type Backend interface {
	// Allow takes one call from the count named key under limit. When
	// the count is spent it returns false and how long until a call would
	// be allowed. An error makes the call run unlimited (see the package
	// documentation); ctx carries Config.Timeout.
	Allow(ctx context.Context, key string, limit Limit) (ok bool, retryAfter time.Duration, err error)
}

// Config configures [New].
type Config struct {
	// Limit is the cap of every tool the interceptor covers that Tools
	// does not hold. Leave it zero to limit only the tools in Tools.
	Limit Limit
	// Tools gives tools a cap of their own, counted apart from the
	// others' (as with PerTool). Key each cap by the *protocol.Tool you
	// pass in protocol.Config.Tools: the cap applies to the calls of that
	// tool's name, taken from the tool, so no name can be misspelled, and
	// a tool built again under the same name (another instance's, say)
	// has the same cap. Counts are named by the tool's name too, so
	// instances that share a Backend share them.
	Tools map[*protocol.Tool]Limit
	// By says what one count covers; default PerConversation.
	By By
	// Backend keeps the counts; default a [Memory] with default options.
	Backend Backend
	// Timeout bounds each call to the Backend; default 1 s. Past it the
	// call runs unlimited and the failure is logged.
	Timeout time.Duration
	// Logger receives the backend's failures; default slog.Default().
	Logger *slog.Logger
}

// limiter is what the interceptor New returns holds.
type limiter struct {
	limit   Limit
	tools   map[string]Limit // Config.Tools by the tools' names
	by      By
	backend Backend
	timeout time.Duration
	log     *slog.Logger
	failed  atomic.Int64   // calls let through because the backend failed
	logged  rate.Sometimes // logs those at most every 10 s
}

// New returns an interceptor that refuses calls over their cap with the
// refusal of reason "rate_limited" (see the package documentation). It
// fails when a limit is not usable (a zero or negative number of calls or
// period), when no limit is given, when Config.Tools holds a nil tool or a
// tool with problems ([protocol.Tool.Err]), or when By is not a valid
// combination.
func New(cfg Config) (protocol.Interceptor, error) {
	var problems []error
	if cfg.Limit != (Limit{}) || len(cfg.Tools) == 0 {
		if err := cfg.Limit.check("Config.Limit"); err != nil {
			problems = append(problems, err)
		}
	}
	byName := make(map[string]Limit, len(cfg.Tools))
	for tool, l := range cfg.Tools {
		if tool == nil {
			problems = append(problems, errors.New("median: ratelimit: Config.Tools holds a nil tool: key each cap by the *protocol.Tool you pass in protocol.Config.Tools"))
			continue
		}
		if err := tool.Err(); err != nil {
			problems = append(problems, fmt.Errorf("median: ratelimit: Config.Tools holds a tool that protocol.New would refuse: %w", err))
		}
		if err := l.check(fmt.Sprintf("Config.Tools[%q]", tool.Name())); err != nil {
			problems = append(problems, err)
		}
		if _, twice := byName[tool.Name()]; twice {
			problems = append(problems, fmt.Errorf("median: ratelimit: Config.Tools holds two tools named %q: give each tool one cap", tool.Name()))
		}
		byName[tool.Name()] = l
	}
	if cfg.By == 0 {
		cfg.By = PerConversation
	}
	if cfg.By&^(PerConversation|PerVisitor|PerTool) != 0 || cfg.By&PerConversation != 0 && cfg.By&PerVisitor != 0 {
		problems = append(problems, errors.New("median: ratelimit: Config.By must be PerConversation, PerVisitor or PerTool, or PerTool combined with one of the other two (PerVisitor already counts unverified visitors by conversation)"))
	}
	if cfg.Timeout < 0 {
		problems = append(problems, fmt.Errorf("median: ratelimit: Config.Timeout is %s: give a positive deadline, or 0 for the default", cfg.Timeout))
	}
	if len(problems) > 0 {
		return nil, errors.Join(problems...)
	}
	l := &limiter{limit: cfg.Limit, tools: byName, by: cfg.By, backend: cfg.Backend, timeout: cfg.Timeout, log: cfg.Logger,
		logged: rate.Sometimes{First: 1, Interval: 10 * time.Second}}
	if l.backend == nil {
		l.backend = NewMemory(MemoryOptions{})
	}
	if l.timeout == 0 {
		l.timeout = DefaultTimeout
	}
	if l.log == nil {
		l.log = slog.Default()
	}
	return l.intercept, nil
}

// intercept is the protocol.Interceptor.
func (l *limiter) intercept(ctx context.Context, call *protocol.Call, _ *protocol.Tool) error {
	limit, own := l.tools[call.Tool]
	if !own {
		if l.limit == (Limit{}) {
			return nil // only the tools in Config.Tools are limited
		}
		limit = l.limit
	}
	key, who := l.key(call, own)
	bctx, cancel := context.WithTimeout(ctx, l.timeout)
	ok, retry, err := l.backend.Allow(bctx, key, limit)
	cancel()
	if err != nil {
		n := l.failed.Add(1)
		l.logged.Do(func() {
			l.log.WarnContext(ctx, "median: ratelimit: the backend did not answer, so the call runs unlimited (a limit is protection, not a contract)",
				"tool", call.Tool, "error", err, "unlimitedCalls", n)
		})
		return nil
	}
	if ok {
		return nil
	}
	return protocol.Refuse(Reason, fmt.Sprintf("%s was called too often %s, so it was not carried out. Try again in %s.", call.Tool, who, InWords(retry)))
}

// key names the count a call is taken from, and says whose it is in words
// for the refusal's detail.
func (l *limiter) key(call *protocol.Call, ownLimit bool) (key, who string) {
	var b strings.Builder
	if l.by&PerTool != 0 || ownLimit {
		b.WriteString(call.Tool) // a tool's name never holds '|'
		b.WriteByte('|')
	}
	switch {
	case l.by&PerVisitor != 0:
		if id, ok := call.Visitor.ExternalID(); ok {
			b.WriteString("v:")
			b.WriteString(id)
			return b.String(), "for this customer"
		}
		fallthrough
	case l.by&PerConversation != 0:
		b.WriteString("c:")
		b.WriteString(call.ConversationID)
		return b.String(), "in this conversation"
	}
	return b.String(), "across all conversations"
}
