package protocol

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"time"

	"github.com/median-go/median/protocol/internal/schema"
)

// toolNamePattern is the tool-name rule of PROTOCOL.md §6.
var toolNamePattern = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)

// Tool is a registered tool: name, description, risk, input schema and,
// unless your own handlers answer it, the function that runs it. Build it
// with [NewTool], or with [DeclareTool] for a tool your own handlers answer
// behind the middleware, and pass it in
// [Config.Tools]. Problems found while building it (a bad name, a type
// that cannot be described) are reported by [New], all at once, and by
// [Tool.Err]. Interceptors see it: its name is the call's Tool.
type Tool struct {
	name        string
	description string
	risk        Risk
	inputSchema json.RawMessage
	schema      *schema.Schema
	timeout     time.Duration
	readOnly    bool // runs when the store cannot record its claim
	budget      int  // characters; 0: no trimming
	// interceptors run before this tool, after the global ones.
	interceptors []Interceptor
	// prepare decodes and validates the call's input and returns the run
	// (nil for a declared tool).
	prepare  func(call *Call) (func(context.Context) (any, error), error)
	declared bool // built by DeclareTool: no function, its calls are answered behind the middleware
	problems []error
}

// ToolOption configures a tool built with [NewTool] or [DeclareTool].
type ToolOption func(*Tool)

// WithInputSchema replaces the inferred input schema with raw, a JSON Schema
// (draft 2020-12) whose root is an object. Use it when the Go type cannot say
// everything (oneOf, conditionals) or when the schema is shared with other
// services.
func WithInputSchema(raw json.RawMessage) ToolOption {
	return func(t *Tool) { t.inputSchema = raw }
}

// WithTimeout bounds each run of the tool: its context is cancelled after d
// and, when the tool returns because of it, the call is answered
// execution_failed saying it timed out. The tool must honour ctx.
func WithTimeout(d time.Duration) ToolOption {
	return func(t *Tool) { t.timeout = d }
}

// ReadOnly declares that the tool changes nothing, so that a second run of
// one call is harmless (a lookup, a search). When the replay store cannot
// record the call's claim (it fails or misses its deadline), a read-only
// tool still runs: its answer is sent but not kept, and the outage is
// logged and counted for diagnostics (PROTOCOL.md §8). Any other tool is
// then not run and answered execution_failed. Declare only tools that
// truly change nothing.
func ReadOnly() ToolOption {
	return func(t *Tool) { t.readOnly = true }
}

// WithResultBudget trims every result of the tool to at most maxChars
// characters of JSON (0 or less: 4,000, what the agent reads), keeping whole
// list items and saying how many were left out, as [FitResult] does. A
// result that cannot be trimmed to fit is answered execution_failed saying
// why. Use it for tools that return lists of unknown length.
func WithResultBudget(maxChars int) ToolOption {
	if maxChars <= 0 {
		maxChars = maxResultChars
	}
	return func(t *Tool) { t.budget = maxChars }
}

// WithInterceptors adds interceptors that run before this tool only, after
// the global ones in [Config.Interceptors].
func WithInterceptors(ics ...Interceptor) ToolOption {
	return func(t *Tool) { t.interceptors = append(t.interceptors, ics...) }
}

// NewTool describes a typed tool. name must match ^[a-zA-Z0-9_-]{1,64}$,
// description tells the agent when to use it, risk is one of the four
// levels. The input schema is inferred from In (a struct: field names from
// json tags; a field is required unless it is a pointer or has omitempty;
// `jsonschema:"description=…,enum=…,minimum=…,maxLength=…,pattern=…,default=…"`
// adds constraints) unless [WithInputSchema] gives one. If In (or *In) has a
// Validate() error method, it runs after decoding and its error is answered
// invalid_input.
//
// fn receives the request's context and the call with its input decoded
// into In, and returns a result encoded as JSON, a [*Refusal] (answered as a
// refusal result) or an error, answered execution_failed: with its message
// when it is an [AgentError] (or wraps one), else with the tool's name and
// a reference to the log line that holds the error.
//
// For a tool your own handlers answer behind [Handler.Middleware], use
// [DeclareTool], which takes no function.
func NewTool[In, Out any](name string, risk Risk, description string, fn func(ctx context.Context, call ToolCall[In]) (Out, error), opts ...ToolOption) *Tool {
	t := describeTool[In](name, risk, description, opts)
	if fn == nil {
		t.problems = append(t.problems, errors.New("function is nil: pass the tool's function, or declare a tool your own handlers answer with DeclareTool"))
	}
	t.prepare = func(call *Call) (func(context.Context) (any, error), error) {
		tc := ToolCall[In]{Call: call}
		if err := decodeInput(call, &tc.Input); err != nil {
			return nil, err
		}
		return func(ctx context.Context) (any, error) { return fn(ctx, tc) }, nil
	}
	return t
}

// DeclareTool declares a tool without a function, for middleware mode
// ([Handler.Middleware], [Handler.Mount] with handlers, an adapter's Mount
// with handlers or Middleware), where your own handlers answer its calls
// with [Respond]. The manifest lists it, and a call of it has its input
// checked against the schema, the risk floor applied and the interceptors
// run before your handlers; behind the middleware In's Validate method does
// not run (decode the input with [Call.BindInput] and check it there).
//
// name, risk, description and the options are those of [NewTool], checked
// the same way, and the input schema is inferred from In in the same way
// unless [WithInputSchema] gives one: DeclareTool[map[string]any] with
// WithInputSchema for a schema written by hand. [WithTimeout] does not
// bound your handlers, whose work ends with the request's context.
//
// The Handler itself has nothing to run for it: a call of it that
// reaches [Handler.Serve] (the endpoint mounted without handlers) goes
// through every check of a call, In's Validate included, and is then
// answered execution_failed saying that no handler answers the tool here,
// and a warning is logged (at most one line every ten seconds).
func DeclareTool[In any](name string, risk Risk, description string, opts ...ToolOption) *Tool {
	t := describeTool[In](name, risk, description, opts)
	t.declared = true
	t.prepare = func(call *Call) (func(context.Context) (any, error), error) {
		var in In
		return nil, decodeInput(call, &in)
	}
	return t
}

// describeTool builds what [NewTool] and [DeclareTool] share: the options
// applied, the name, risk, description and interceptors checked, and the
// input schema inferred from In or given, then compiled. Every problem is
// kept for [New].
func describeTool[In any](name string, risk Risk, description string, opts []ToolOption) *Tool {
	t := &Tool{name: name, description: description, risk: risk}
	for _, o := range opts {
		o(t)
	}
	if !toolNamePattern.MatchString(name) {
		t.problems = append(t.problems, fmt.Errorf("name %q must match ^[a-zA-Z0-9_-]{1,64}$", name))
	}
	if description == "" {
		t.problems = append(t.problems, errors.New("description is empty: say what the tool does and when the agent should use it"))
	}
	if risk.rank() == 0 {
		t.problems = append(t.problems, fmt.Errorf("risk %q is not one of low, medium, reviewed, high", risk))
	}
	for i, ic := range t.interceptors {
		if ic == nil {
			t.problems = append(t.problems, fmt.Errorf("interceptor %d is nil", i))
		}
	}
	if t.inputSchema == nil {
		raw, err := schema.Infer(reflect.TypeFor[In]())
		if err != nil {
			t.problems = append(t.problems, fmt.Errorf("input type %s: %w", reflect.TypeFor[In](), err))
		}
		t.inputSchema = raw
	}
	if t.inputSchema != nil {
		s, err := schema.Compile(t.inputSchema)
		if err != nil {
			t.problems = append(t.problems, fmt.Errorf("input schema: %w", err))
		}
		t.schema = s
	}
	return t
}

// decodeInput decodes the call's input into in (a pointer to the tool's
// input type) and runs its Validate method, for [Handler.Serve].
func decodeInput(call *Call, in any) error {
	if err := call.BindInput(in); err != nil {
		return err
	}
	return validateInput(in)
}

// Risk returns the tool's declared risk: the lowest risk at which it may
// run (PROTOCOL.md §9).
func (t *Tool) Risk() Risk { return t.risk }

// Name returns the tool's name, the Tool of every call of it. Use it where
// something kept per tool needs a name: a log line, a count's key.
func (t *Tool) Name() string { return t.name }

// Err returns every problem found while building the tool, joined, or nil:
// what [New] reports for it. Use it to check a tool that a package other
// than protocol is given (as ratelimit.Config.Tools is) before the Handler
// is built. A Tool not built with [NewTool] or [DeclareTool] is a problem.
func (t *Tool) Err() error {
	if t.prepare == nil {
		return fmt.Errorf("tool %q was not built with protocol.NewTool or protocol.DeclareTool: build every tool with one of them", t.name)
	}
	if len(t.problems) == 0 {
		return nil
	}
	return fmt.Errorf("tool %q: %w", t.name, errors.Join(t.problems...))
}

// checkInput validates raw input against the tool's schema and returns an
// invalid_input *Error listing every problem.
func (t *Tool) checkInput(raw []byte) *Error {
	if t.schema == nil {
		return nil
	}
	if err := t.schema.Validate(raw); err != nil {
		return newError(CodeInvalidInput, err.Error())
	}
	return nil
}

// validator is the optional method an input type can have.
type validator interface{ Validate() error }

// validateInput runs In's Validate method (on the value or its pointer).
func validateInput(in any) error {
	v, ok := in.(validator)
	if !ok {
		if rv := reflect.ValueOf(in); rv.Kind() == reflect.Pointer && !rv.IsNil() {
			v, ok = rv.Elem().Interface().(validator)
		}
	}
	if !ok {
		return nil
	}
	if err := v.Validate(); err != nil {
		return newError(CodeInvalidInput, err.Error())
	}
	return nil
}
