// Package hertztest stops the Hertz servers of the module's tests. It is
// a package of its own so that hertzmedian's tests use it without loading
// the other frameworks (internal/testonly/footprint checks).
package hertztest

import (
	"context"
	"io"
	"net"
	"net/http"
	"time"

	"github.com/cloudwego/hertz/pkg/app/server"
)

// Stop shuts down hz, which serves ln from a goroutine that closes
// done when Run returns, and waits for it. Hertz reports itself running
// before its transport has built the event loop that serves (netpoll's
// transporter), and a Shutdown in between finds nothing to stop, leaving
// Run serving forever; so it first waits until hz has answered one
// request (any answer will do: a connection waits in the listener's
// backlog until the server serves).
func Stop(hz *server.Hertz, ln net.Listener, done <-chan struct{}) {
	for deadline := time.Now().Add(5 * time.Second); !hz.IsRunning() && time.Now().Before(deadline); {
		time.Sleep(time.Millisecond)
	}
	answered(ln.Addr().String())
	_ = hz.Shutdown(context.Background())
	_ = ln.Close()
	<-done
}

// answered sends one request to addr and reads its answer, giving up
// after 5 s.
func answered(addr string) {
	client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	defer client.CloseIdleConnections()
	if res, err := client.Get("http://" + addr + "/"); err == nil {
		_, _ = io.Copy(io.Discard, res.Body)
		_ = res.Body.Close()
	}
}
