package main

import (
	"context"
	"net"
	"strconv"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/median-go/median/recipes/internal/recipetest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// start serves the recipe around the catalog's endpoint built with key,
// with app.Run as main does, on a free port of 127.0.0.1; the server stops
// when t ends.
func start(t testing.TB, key string) (string, error) {
	h, err := recipetest.CatalogHandler(t, key)
	if h == nil {
		return "", err
	}
	app := newApp(h)
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(freePort(t)))
	done := make(chan struct{})
	go func() {
		defer close(done)
		app.Run(addr)
	}()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := app.Server.Shutdown(ctx); err != nil {
			t.Error(err)
		}
		<-done
	})
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		conn, dialErr := net.Dial("tcp", addr)
		if dialErr == nil {
			conn.Close()
			return "http://" + addr, err
		}
		if time.Now().After(deadline) {
			t.Fatalf("Beego does not listen on %s: %v", addr, dialErr)
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

// TestConformance runs the whole suite against the recipe over the network.
func TestConformance(t *testing.T) {
	recipetest.Run(t, start, recipetest.CatalogSamples())
}

// TestTrapsAvoided checks Beego's traps: both paths reach the Handler,
// and bodies up to its limit and one byte over too (Beego's MaxMemory,
// with CopyRequestBody, answers its own 413 when set at or below it).
func TestTrapsAvoided(t *testing.T) {
	base, err := start(t, recipetest.Key)
	if err != nil {
		t.Fatal(err)
	}
	recipetest.CheckDiagnostics(t, base+"/api/median")
	recipetest.CheckDiagnostics(t, base+"/api/median/")
	recipetest.CheckBodyLimit(t, base+"/api/median")
}
