package conformance

import (
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"reflect"
	"slices"
	"strings"
	"time"
)

// Target is the endpoint under test and everything the cases need to talk
// to it. Build one with [HandlerTarget] (in process) or [URLTarget] (a
// deployed endpoint) and add your tools' samples. For an app that is not an
// http.Handler, fill it in yourself with a request function that serves it
// in process, such as fibermedian.Do for a fiber app:
//
//	target := conformance.Target{Do: fibermedian.Do(app), URL: "http://example.test/median", Key: key, Replay: true}
//
// (fiber's limiter middleware must allow a run of the suite: raise its Max
// or skip the Median path.)
type Target struct {
	// Do sends a request to the endpoint and returns the answer, like
	// [http.Client.Do]; the caller closes the answer's body.
	Do func(*http.Request) (*http.Response, error)

	// URL is the endpoint's full address, mount path included, for example
	// "http://example.test/api/median". Every case sends its requests there.
	URL string

	// Key is the Median key the endpoint runs with; the cases sign with it.
	Key string

	// Now is the clock the cases sign with; default time.Now. Set it to the
	// clock your handler uses when that is not the real one.
	Now func() time.Time

	// ClockSkew is the margin the timestamp cases leave for clocks that
	// disagree and for time spent in flight: "just inside the window" is
	// 5 minutes minus ClockSkew, "beyond it" is 5 minutes plus ClockSkew.
	// Default 5 seconds.
	ClockSkew time.Duration

	// MaxBodyBytes is the body limit the endpoint enforces; default 1 MiB,
	// the contract's default. The oversized-body cases send one byte more.
	MaxBodyBytes int64

	// Tools holds sample calls of your tools. Cases that run a tool, check
	// its input schema or check its replay protection use them.
	Tools []ToolSample

	// AllowSideEffects lets the cases run samples marked SideEffects.
	AllowSideEffects bool

	// Replay declares that the endpoint has replay protection (the core's
	// default): the replay cases then check that a repeated toolCallId gets
	// the first answer back and that a reused one with another body is
	// refused. When false they are skipped.
	Replay bool

	// BuildWithKey, when set, builds a fresh copy of the endpoint configured
	// with key ("" or an unusable key) and returns its request function. The
	// key cases (docs/PROTOCOL.md §1.2) use it. Their requests go to URL,
	// through the request function it returns, as every case's do: URL
	// must be the endpoint's mount path in the app it builds too. It is
	// called with MEDIAN_KEY, MEDIAN_KEY_PREVIOUS, MEDIAN_KEY_FILE and
	// MEDIAN_KEY_PREVIOUS_FILE unset (set back when it returns), so a
	// constructor that falls back to the environment when given no key,
	// as production code should, builds with the key the case gives it,
	// whatever the shell running the tests exports; a test running in
	// parallel that reads those variables meanwhile sees them unset. An
	// app constructor written the usual way fits through [HandlerBuilder]:
	//
	//	target.BuildWithKey = conformance.HandlerBuilder(NewRouter) // func(key string) (*gin.Engine, error)
	//
	// For a fiber app, return fibermedian.Do of the app your constructor
	// built (nil and its error when it built none).
	//
	// A key case passes when the builder either
	//   - returns an error that names the key problem: its text contains the
	//     code ("missing_secret", "invalid_median_key"), or
	//     errors.Is(err, protocol.CodeMissingSecret) (CodeInvalidMedianKey)
	//     holds; or
	//   - returns a request function whose endpoint answers 500 with that
	//     code (checked too when it comes with the error).
	// An error that names no key problem, with no endpoint, fails the case.
	// Without BuildWithKey the key cases are skipped, or not applicable to a
	// Deployed target: check them in your app's tests.
	BuildWithKey func(key string) (func(*http.Request) (*http.Response, error), error)

	// Deployed marks an endpoint that runs elsewhere (URLTarget sets it):
	// the suite cannot rebuild it with another key, so the key cases are
	// reported not applicable (statusNotApplicable) instead of asking for
	// BuildWithKey.
	Deployed bool

	// Skip lists ids of cases not to run against this target, for gaps you
	// know of and are fixing (like go test -skip). They are reported as
	// skipped, with a message naming this field. An id that names no case
	// is an error, so a renamed case does not silently run again.
	Skip []string

	// Concurrency is how many signed calls the concurrency case sends at
	// once; default 16.
	Concurrency int

	// UserAgent is the User-Agent header of every request the suite and
	// CallTool send; default "median-go-conformance/<version>", the
	// version of this module in the build ("(devel)" when unknown). Your
	// server's log tells the suite's calls apart by it.
	UserAgent string
}

// HandlerTarget returns a Target that serves requests with h in process,
// without a network listener, as if h were mounted at path (for example
// "/api/median") on http://example.test. Use it for a protocol.Handler, or
// for a gin, echo or chi router that has the endpoint mounted at path. A
// panic in h is returned to the case as an error, as a server would drop
// the connection. Replay is set, as the core has replay protection by
// default; clear it when your handler disables it.
func HandlerTarget(h http.Handler, path, key string) Target {
	if !strings.HasPrefix(path, "/") {
		path = "/" + path
	}
	return Target{Do: serveInProcess(h), URL: "http://example.test" + path, Key: key, Replay: true}
}

// serveInProcess returns a request function that serves each request with
// h in process. A panic in h is returned as an error.
func serveInProcess(h http.Handler) func(*http.Request) (*http.Response, error) {
	return func(req *http.Request) (resp *http.Response, err error) {
		r := req.Clone(req.Context())
		r.RequestURI = r.URL.RequestURI()
		if r.Host == "" {
			r.Host = r.URL.Host
		}
		if r.RemoteAddr == "" {
			r.RemoteAddr = "192.0.2.1:1234"
		}
		if r.Body == nil {
			r.Body = http.NoBody
		}
		rec := httptest.NewRecorder()
		defer func() {
			if p := recover(); p != nil {
				resp, err = nil, fmt.Errorf("the handler panicked: %v", p)
			}
		}()
		h.ServeHTTP(rec, r)
		res := rec.Result()
		res.Request = req
		return res, nil
	}
}

// URLTarget returns a Target for a deployed endpoint at url (mount path
// included), with Deployed set. Requests go through an http.Client with a
// 30-second timeout that does not follow redirects: Median does not follow
// them either, so a redirect on the endpoint is reported as what came back.
// Replay is left false: set it when the deployed endpoint keeps answers by
// toolCallId (with several instances, only a shared store such as
// redisstore passes the replay cases). mediancheck sets it unless run with
// -replay=false.
func URLTarget(url, key string) Target {
	client := &http.Client{
		Timeout: 30 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse
		},
	}
	return Target{Do: client.Do, URL: url, Key: key, Deployed: true}
}

// HandlerBuilder adapts an app constructor written the usual way, such as
// NewRouter(key string) (*gin.Engine, error) or a function returning a
// *protocol.Handler, to Target.BuildWithKey: each endpoint it builds is
// served in process, as by [HandlerTarget]. When newHandler returns an
// error, the handler is used only if it is not nil (protocol.New returns a
// Handler that answers 500 with its key error; a constructor that returns
// nil on error is fine too, if its error names the key problem).
func HandlerBuilder[H http.Handler](newHandler func(key string) (H, error)) func(key string) (func(*http.Request) (*http.Response, error), error) {
	return func(key string) (func(*http.Request) (*http.Response, error), error) {
		h, err := newHandler(key)
		if isNil(h) {
			if err == nil {
				err = errors.New("the constructor returned a nil handler and no error")
			}
			return nil, err
		}
		return serveInProcess(h), err
	}
}

// isNil reports whether v is nil, also when it is a nil pointer, map, func
// or other nilable value inside an interface (a (*gin.Engine)(nil)).
func isNil(h any) bool {
	if h == nil {
		return true
	}
	switch v := reflect.ValueOf(h); v.Kind() {
	case reflect.Pointer, reflect.Map, reflect.Func, reflect.Slice, reflect.Chan, reflect.Interface:
		return v.IsNil()
	}
	return false
}

// withDefaults fills the zero fields of t.
func (t Target) withDefaults() Target {
	if t.Now == nil {
		t.Now = time.Now
	}
	if t.ClockSkew <= 0 {
		t.ClockSkew = 5 * time.Second
	}
	if t.MaxBodyBytes <= 0 {
		t.MaxBodyBytes = 1 << 20
	}
	if t.Concurrency <= 0 {
		t.Concurrency = 16
	}
	if t.UserAgent == "" {
		t.UserAgent = defaultUserAgent()
	}
	// Each call a case sends has its own toolCallId.
	tools := make([]ToolSample, len(t.Tools))
	for i, smp := range t.Tools {
		smp.ToolCallID = ""
		tools[i] = smp
	}
	t.Tools = tools
	return t
}

// validate reports what is missing from t.
func (t Target) validate() error {
	switch {
	case t.Do == nil:
		return fmt.Errorf("conformance: Target.Do is nil: build the target with HandlerTarget or URLTarget")
	case t.URL == "":
		return fmt.Errorf("conformance: Target.URL is empty: set the endpoint's address with its mount path")
	case strings.TrimSpace(t.Key) == "":
		return fmt.Errorf("conformance: Target.Key is empty: set the Median key the endpoint runs with")
	}
	for i, smp := range t.Tools {
		if err := smp.validate(); err != nil {
			return fmt.Errorf("conformance: Target.Tools[%d]: %w", i, err)
		}
	}
	for _, id := range t.Skip {
		if _, ok := caseByID(id); !ok {
			return fmt.Errorf("conformance: Target.Skip: no case has id %q (list them with Cases or mediancheck -list)", id)
		}
	}
	return nil
}

// skipped reports whether Target.Skip names id.
func (t Target) skipped(id string) bool {
	return slices.Contains(t.Skip, id)
}
