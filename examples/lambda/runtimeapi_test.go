package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// runtimeAPI is the Lambda Runtime API (2018-06-01) for one function
// process, as Lambda serves it at $AWS_LAMBDA_RUNTIME_API: the process asks
// for the next invocation (a GET that waits until there is one), and posts
// its answer or its error; a process that fails before its first request
// posts to /runtime/init/error. Invoke hands it one event at a time, as
// Lambda does an instance.
type runtimeAPI struct {
	srv      *httptest.Server
	timeout  time.Duration // the function's timeout: each invocation's deadline
	queue    chan *invocation
	nextID   atomic.Int64
	mu       sync.Mutex
	running  map[string]*invocation // handed out, not yet answered
	initErr  []byte                 // what the process posted to /runtime/init/error
	firstGet chan struct{}          // closed at the first GET of .../next
	gotFirst sync.Once
}

// invocation is one event on its way to the function and its outcome.
type invocation struct {
	id       string
	payload  []byte
	deadline time.Time
	done     chan outcome // buffered: the handler never waits on it
}

// outcome is what the function posted for an invocation: its response
// payload, or the error document of .../error.
type outcome struct {
	payload []byte
	err     error
}

// functionError is an invocation's error as the function reported it.
type functionError struct {
	Type    string `json:"errorType"`
	Message string `json:"errorMessage"`
}

func (e *functionError) Error() string {
	return fmt.Sprintf("the function answered the invocation with an error: %s: %s", e.Type, e.Message)
}

// newRuntimeAPI serves a Runtime API on a loopback port whose invocations
// end timeout after they are handed out. Close it after the process that
// uses it has exited.
func newRuntimeAPI(timeout time.Duration) *runtimeAPI {
	rt := &runtimeAPI{timeout: timeout, queue: make(chan *invocation), running: map[string]*invocation{}, firstGet: make(chan struct{})}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /2018-06-01/runtime/invocation/next", rt.next)
	mux.HandleFunc("POST /2018-06-01/runtime/invocation/{id}/response", rt.answer)
	mux.HandleFunc("POST /2018-06-01/runtime/invocation/{id}/error", rt.answer)
	mux.HandleFunc("POST /2018-06-01/runtime/init/error", rt.initError)
	rt.srv = httptest.NewServer(mux)
	return rt
}

// Addr is the host:port for AWS_LAMBDA_RUNTIME_API.
func (rt *runtimeAPI) Addr() string { return strings.TrimPrefix(rt.srv.URL, "http://") }

// Close stops the server; a GET still waiting for an invocation ends.
func (rt *runtimeAPI) Close() { rt.srv.Close() }

// InitError returns what the process posted to /runtime/init/error, or nil.
func (rt *runtimeAPI) InitError() []byte {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	return rt.initErr
}

// Invoke hands payload to the function as one invocation and returns its
// response payload, or a *functionError when it answered .../error. It
// gives up when ctx ends or gone closes (the process exited).
func (rt *runtimeAPI) Invoke(ctx context.Context, payload []byte, gone <-chan struct{}) ([]byte, error) {
	inv := &invocation{
		id:      "req-" + strconv.FormatInt(rt.nextID.Add(1), 10),
		payload: payload,
		done:    make(chan outcome, 1),
	}
	select {
	case rt.queue <- inv:
	case <-ctx.Done():
		return nil, fmt.Errorf("the function did not ask for the invocation: %w", ctx.Err())
	case <-gone:
		return nil, errors.New("the function's process exited before it asked for the invocation")
	}
	select {
	case out := <-inv.done:
		return out.payload, out.err
	case <-ctx.Done():
		return nil, fmt.Errorf("the function did not answer invocation %s: %w", inv.id, ctx.Err())
	case <-gone:
		return nil, fmt.Errorf("the function's process exited during invocation %s", inv.id)
	}
}

// next hands out the next invocation, waiting until there is one or the
// process's connection ends.
func (rt *runtimeAPI) next(w http.ResponseWriter, r *http.Request) {
	rt.gotFirst.Do(func() { close(rt.firstGet) })
	var inv *invocation
	select {
	case inv = <-rt.queue:
	case <-r.Context().Done():
		return
	}
	inv.deadline = time.Now().Add(rt.timeout)
	rt.mu.Lock()
	rt.running[inv.id] = inv
	rt.mu.Unlock()
	h := w.Header()
	h.Set("Lambda-Runtime-Aws-Request-Id", inv.id)
	h.Set("Lambda-Runtime-Deadline-Ms", strconv.FormatInt(inv.deadline.UnixMilli(), 10))
	h.Set("Lambda-Runtime-Invoked-Function-Arn", "arn:aws:lambda:"+testRegion+":123456789012:function:"+functionName)
	h.Set("Lambda-Runtime-Trace-Id", "Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=0")
	h.Set("Content-Type", "application/json")
	_, _ = w.Write(inv.payload)
}

// answer takes the response or the error of an invocation handed out and
// not yet answered: 202, as Lambda; 400 for any other id, once answered
// included.
func (rt *runtimeAPI) answer(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	rt.mu.Lock()
	inv, ok := rt.running[id]
	delete(rt.running, id)
	rt.mu.Unlock()
	if !ok {
		http.Error(w, `{"errorMessage":"no invocation `+id+` is running","errorType":"InvalidRequestID"}`, http.StatusBadRequest)
		return
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		inv.done <- outcome{err: fmt.Errorf("reading the answer of invocation %s: %w", id, err)}
		return
	}
	if strings.HasSuffix(r.URL.Path, "/error") {
		fe := &functionError{}
		if err := json.Unmarshal(body, fe); err != nil {
			fe.Message = string(body)
		}
		if fe.Type == "" {
			fe.Type = r.Header.Get("Lambda-Runtime-Function-Error-Type")
		}
		inv.done <- outcome{err: fe}
	} else {
		inv.done <- outcome{payload: body}
	}
	w.WriteHeader(http.StatusAccepted)
}

// initError records the process's report that it could not start.
func (rt *runtimeAPI) initError(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	rt.mu.Lock()
	rt.initErr = append(body, '\n') // never nil, even when empty
	rt.mu.Unlock()
	w.WriteHeader(http.StatusAccepted)
}
