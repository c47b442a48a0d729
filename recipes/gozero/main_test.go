package main

import (
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/zeromicro/go-zero/core/conf"
	"github.com/zeromicro/go-zero/core/proc"
	"github.com/zeromicro/go-zero/rest"
	"go.uber.org/goleak"

	"github.com/median-go/median/protocol"
	"github.com/median-go/median/recipes/internal/recipetest"
)

// go-zero keeps process-wide goroutines: its signal handler, CPU sampling,
// load-shedding statistics and each server's metrics flusher, none of
// which it stops.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m,
		goleak.IgnoreAnyFunction("github.com/zeromicro/go-zero/core/proc.init.1.func1"),
		goleak.IgnoreAnyFunction("github.com/zeromicro/go-zero/core/stat.init.1.func1"),
		goleak.IgnoreAnyFunction("github.com/zeromicro/go-zero/core/load.(*SheddingStat).loop"),
		goleak.IgnoreAnyFunction("github.com/zeromicro/go-zero/core/executors.(*PeriodicalExecutor).backgroundFlush.func1"))
}

// serve runs newServer around h as main does (server.Start) on a free
// port of 127.0.0.1 and returns its base URL; the server stops when t ends.
func serve(t testing.TB, h *protocol.Handler) string {
	var c rest.RestConf
	if err := conf.FillDefault(&c); err != nil {
		t.Fatal(err)
	}
	c.Host, c.Port = "127.0.0.1", freePort(t)
	c.Log.Level = "severe"      // go-zero logs every request otherwise
	c.DevServer.Enabled = false // its pprof server on :6060
	server, err := newServer(c, h)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		server.Start()
	}()
	t.Cleanup(func() {
		proc.Shutdown() // go-zero's test hook: every started server shuts down
		<-done
	})
	addr := net.JoinHostPort(c.Host, strconv.Itoa(c.Port))
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		conn, err := net.Dial("tcp", addr)
		if err == nil {
			conn.Close()
			return "http://" + addr
		}
		if time.Now().After(deadline) {
			t.Fatalf("go-zero does not listen on %s: %v", addr, err)
		}
	}
}

func freePort(t testing.TB) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// start serves the recipe around the catalog's endpoint built with key.
func start(t testing.TB, key string) (string, error) {
	h, err := recipetest.CatalogHandler(t, key)
	if h == nil {
		return "", err
	}
	return serve(t, h), err
}

// TestConformance runs the whole suite against the recipe over the network.
func TestConformance(t *testing.T) {
	recipetest.Run(t, start, recipetest.CatalogSamples())
}

// TestTrapsAvoided checks go-zero's traps: the server starts (a second
// path panics, "duplicated item") and serves the trailing slash; bodies up
// to the Handler's limit and one byte over reach the Handler (go-zero's
// MaxBytes, 1 MiB by default, answers an empty 413); the tools' deadline
// is not go-zero's Timeout (3 s by default, then a 503 in plain text).
func TestTrapsAvoided(t *testing.T) {
	base, err := start(t, recipetest.Key)
	if err != nil {
		t.Fatal(err)
	}
	recipetest.CheckDiagnostics(t, base+"/api/median/")
	recipetest.CheckBodyLimit(t, base+"/api/median")
	recipetest.CheckDeadline(t, serve(t, recipetest.DeadlineHandler(t))+"/api/median", 10*time.Second)
}
