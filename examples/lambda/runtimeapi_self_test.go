package main

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestRuntimeAPI: the test's Runtime API hands an invocation out with
// Lambda's headers, takes its response (202) or its error, refuses an
// answer to an invocation that is not running (400) and records an init
// error; the function's client here is the test itself.
func TestRuntimeAPI(t *testing.T) {
	rt := newRuntimeAPI(functionTimeout)
	defer rt.Close()
	base := rt.srv.URL + "/2018-06-01/runtime"
	// post returns the status of a POST, or 0 when it failed (t.Error
	// says why): it runs in the background goroutines too.
	post := func(path, body string) int {
		resp, err := http.Post(base+path, "application/json", strings.NewReader(body))
		if err != nil {
			t.Error(err)
			return 0
		}
		defer resp.Body.Close()
		_, _ = io.Copy(io.Discard, resp.Body)
		return resp.StatusCode
	}
	// next asks for an invocation and answers it with answer, in the
	// background, as a function's runtime loop does; the channel closes
	// when answer has returned.
	next := func(answer func(id string, h http.Header, payload []byte)) <-chan struct{} {
		done := make(chan struct{})
		go func() {
			defer close(done)
			resp, err := http.Get(base + "/invocation/next")
			if err != nil {
				t.Error(err)
				return
			}
			payload, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			answer(resp.Header.Get("Lambda-Runtime-Aws-Request-Id"), resp.Header, payload)
		}()
		return done
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	gone := make(chan struct{})

	answered := next(func(id string, h http.Header, payload []byte) {
		ms, err := strconv.ParseInt(h.Get("Lambda-Runtime-Deadline-Ms"), 10, 64)
		if err != nil || time.Until(time.UnixMilli(ms)) <= 0 || time.Until(time.UnixMilli(ms)) > functionTimeout {
			t.Errorf("deadline header %q is not within the function's timeout", h.Get("Lambda-Runtime-Deadline-Ms"))
		}
		if !strings.HasSuffix(h.Get("Lambda-Runtime-Invoked-Function-Arn"), ":function:"+functionName) {
			t.Errorf("function ARN header %q", h.Get("Lambda-Runtime-Invoked-Function-Arn"))
		}
		if code := post("/invocation/"+id+"/response", `echo:`+string(payload)); code != http.StatusAccepted {
			t.Errorf("a response was answered %d, want 202", code)
		}
		if code := post("/invocation/"+id+"/response", `again`); code != http.StatusBadRequest {
			t.Errorf("a second response to one invocation was answered %d, want 400", code)
		}
	})
	out, err := rt.Invoke(ctx, []byte(`{"a":1}`), gone)
	<-answered
	if err != nil || string(out) != `echo:{"a":1}` {
		t.Fatalf("Invoke returned %q, %v; want the function's response", out, err)
	}

	answered = next(func(id string, _ http.Header, _ []byte) {
		post("/invocation/"+id+"/error", `{"errorMessage":"no such event","errorType":"errorString"}`)
	})
	_, err = rt.Invoke(ctx, []byte(`{}`), gone)
	<-answered
	var fe *functionError
	if !errors.As(err, &fe) || fe.Type != "errorString" || fe.Message != "no such event" {
		t.Fatalf("Invoke of an invocation the function failed returned %v, want its error", err)
	}

	if rt.InitError() != nil {
		t.Fatal("an init error is recorded before any was posted")
	}
	if code := post("/init/error", `{"errorMessage":"bad config","errorType":"Runtime.Init"}`); code != http.StatusAccepted {
		t.Errorf("an init error was answered %d, want 202", code)
	}
	if !strings.Contains(string(rt.InitError()), "bad config") {
		t.Errorf("the init error is not recorded: %q", rt.InitError())
	}

	close(gone)
	if _, err := rt.Invoke(ctx, []byte(`{}`), gone); err == nil {
		t.Fatal("Invoke to a function whose process exited returned no error")
	}
}
