package protocol

import (
	"bytes"
	"context"
	"io"
	"net/http"

	"github.com/median-go/median/internal/adapt/mount"
)

// Middleware verifies Median's requests and lets only verified calls of the
// tools in [Config.Tools] through to next, which answers them with
// [Respond]. Everything else (a refusal, 404 unknown_tool for any other
// tool, the GET manifest, the diagnostics answer, the stored answer of a
// repeated toolCallId) is answered here and next does not run.
//
// The tools in Config.Tools declare the endpoint: the manifest lists them,
// and a call of one has its input checked against the tool's schema and
// the risk floor applied before next runs (a function given to [NewTool]
// is not called). Declare every tool next answers, with [DeclareTool]
// when it has no function of its own: Median only calls the tools of the
// manifest, and a call of any other tool is answered 404 unknown_tool
// before next runs, as [Handler.Serve] answers it.
//
// next sees the call on its request's context ([CallFrom]) and reads the
// body as Median sent it. Only that call is authenticated: Median signs
// the timestamp and the body, nothing else. The request next gets has no
// query string (Median sends none: one there was added by someone else,
// and is dropped, with any form parsed from it); its headers are as they
// arrived, written or added by whoever handled the request on its way, so
// never decide on them who the caller is or what it may do (see
// "Authenticated: the call only" in the package doc). A call next leaves unanswered (it writes
// nothing) is answered execution_failed, and that answer is kept for its
// toolCallId, so a repeat gets it at once; a panic in next is recovered,
// logged with its stack and answered the same way, so the first answer is
// the contract's whatever recovery middleware runs outside. A response
// next writes on its own, without Respond, is sent as written and logged
// (see "Handler chains" in the package doc).
// Mount it on the path with and without a trailing slash, for every method.
func (h *Handler) Middleware(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx, resp, ok := h.Verify(r.Context(), requestFromHTTP(r))
		if !ok {
			resp.write(w)
			return
		}
		body := callStateFrom(ctx).call.Body
		r = r.WithContext(ctx)
		r.Body, r.ContentLength = io.NopCloser(bytes.NewReader(body)), int64(len(body))
		withoutQuery(r)
		tw := &mount.Tracker{ResponseWriter: w}
		defer settleHTTP(ctx, tw)
		next.ServeHTTP(tw, r)
	})
}

// withoutQuery drops r's query string, and any form parsed from it, for
// the handlers behind the middleware: Median signs no part of the URL. r
// is the middleware's own copy; its URL is copied before it is changed.
func withoutQuery(r *http.Request) {
	if r.URL.RawQuery != "" || r.URL.ForceQuery {
		u := *r.URL
		u.RawQuery, u.ForceQuery = "", false
		r.URL = &u
		if r.RequestURI != "" { // a server's request
			r.RequestURI = u.RequestURI()
		}
	}
	r.Form, r.PostForm, r.MultipartForm = nil, nil, nil
}

// Mount registers the whole endpoint on mux at path ("/api/median"): the
// path and the path with a trailing slash, for every method, so that GET
// gets the manifest and any other method the contract's 405. With
// handlers, they answer the verified calls behind [Handler.Middleware]
// instead of the Handler's own tools, as a chain: an authorization check,
// then your dispatcher. The first handler that answers ends the chain (see
// "Handler chains" in the package doc).
//
// It avoids the trap of Go 1.22's method patterns: with
// mux.Handle("POST /api/median", h) the mux itself answers GET (the
// manifest Median syncs tools with) and other methods with its own
// plain-text 405, and "/api/median/" is not routed. Like mux.Handle, Mount
// panics when a pattern is already registered.
func (h *Handler) Mount(mux *http.ServeMux, path string, handlers ...http.Handler) {
	var handler http.Handler = h
	if len(handlers) > 0 {
		handler = h.Middleware(mount.Chain(handlers))
	}
	for _, p := range mount.Paths(path) {
		if p[len(p)-1] == '/' {
			p += "{$}" // the path with its slash, not the subtree under it
		}
		mux.Handle(p, handler)
	}
}

// writtenStatus is what an adapter's writer underneath the middleware implements
// when its framework's handlers write to their own writer rather than the
// one the middleware passes on (the gin and echo adapters): whether a
// response was written or given a status, and that status.
type writtenStatus interface {
	Written() bool
	Status() int
}

// written returns the status of the response written or begun, 0 for none:
// through the tracker, or as the writer underneath reports it.
func written(t *mount.Tracker) int {
	if s := t.Status(); s != 0 {
		return s
	}
	if w, ok := t.ResponseWriter.(writtenStatus); ok && w.Written() {
		return w.Status()
	}
	return 0
}

// settleHTTP ends a middleware call on net/http: http.ErrAbortHandler is
// passed on, as net/http expects, after the call is settled; otherwise the
// answer [Settle] returns is written.
func settleHTTP(ctx context.Context, tw *mount.Tracker) {
	p := recover()
	if p == http.ErrAbortHandler {
		Settle(ctx, written(tw), nil)
		panic(p)
	}
	Settle(ctx, written(tw), p).write(tw)
}

// Respond answers the verified call on r's context (see
// [Handler.Middleware]) and writes the answer to w. Every adapter's
// Respond answers as it does:
//
//   - result as {"result": …};
//   - a [*Refusal] (as result or as err) as a refusal result: the
//     contract's way to refuse, Respond(w, r, nil, Refuse(reason, detail));
//   - [CodeUnknownTool] or an invalid_input error from [Call.BindInput] as
//     that error;
//   - any other err as execution_failed: an [AgentError]'s Message, or
//     the tool's name and a reference to the log line that holds the
//     error ([Config.ErrorMessage] replaces this rule when set).
//
// The answer is kept for replays of the call's toolCallId, and it ends a
// handler chain. A call is answered once: a second Respond writes nothing.
// Without a verified call it answers execution_failed saying so.
func Respond(w http.ResponseWriter, r *http.Request, result any, err error) {
	Answer(r.Context(), result, err).write(w)
}
