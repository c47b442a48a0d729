package adaptertest

import (
	"fmt"
	"io"
	"net"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/median-go/median/internal/testonly/testsupport"
	"github.com/median-go/median/protocol"
)

// The keyless-client case: KeylessConns connections, each with the
// headers of a POST declaring KeylessDeclared bytes of body, signed
// t=<now>,v1=<64 zeros> (which passes every check that needs no key),
// then part of the body, held open.
const (
	KeylessConns    = 300
	KeylessDeclared = 1 << 20
	// KeylessHeapBudget bounds the live heap all those connections may add
	// together, framework and adapter included: a few tens of KiB per
	// connection, where reserving the declared length costs 300 MiB.
	KeylessHeapBudget = 32 << 20
)

// KeylessSent are the parts of the body the case sends: one byte, and a
// little more than fasthttp reads before a fiber handler runs when it
// streams request bodies (8 KiB), so that the adapter's handler runs on
// every framework.
var KeylessSent = []int{1, 9 << 10}

// checkKeyless runs the keyless-client case against a's Endpoint on a
// real loopback listener, sending sent bytes of each body: once every
// connection's server side has read all that was sent and waits for more,
// the live heap (after collecting) must have grown by less than
// KeylessHeapBudget.
func checkKeyless(t *testing.T, a Adapter, sent int) {
	if a.ReservesDeclaredBody != "" {
		t.Skip(a.ReservesDeclaredBody)
	}
	h, _ := NewHandler(func(cfg *protocol.Config) { cfg.MaxBodyBytes = KeylessDeclared })
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	request := fmt.Sprintf("POST %s HTTP/1.1\r\nHost: %s\r\nContent-Type: %s\r\nContent-Length: %d\r\n%s: t=%d,v1=%s\r\n\r\n{%s",
		Path, ln.Addr(), ContentType, KeylessDeclared, SignatureHeader, Now.UnixMilli(), strings.Repeat("0", 64), strings.Repeat(" ", sent-1))
	wl := &waitListener{Listener: ln, sent: int64(len(request))}
	stop := a.Endpoint(h)(wl)
	defer stop()

	before := liveHeap()
	conns := make([]net.Conn, 0, KeylessConns)
	defer func() {
		for _, c := range conns {
			_ = c.Close()
		}
	}()
	for range KeylessConns {
		c, err := net.Dial("tcp", ln.Addr().String())
		require.NoError(t, err)
		conns = append(conns, c)
		_, err = io.WriteString(c, request)
		require.NoError(t, err)
	}
	testsupport.Eventually(t, "every connection read to its last byte and waiting for the rest of its body",
		func() bool { return wl.waiting.Load() == KeylessConns })
	grown := int64(liveHeap()) - int64(before)
	t.Logf("%d connections declaring %d bytes and sending %d: live heap %+.1f MiB", KeylessConns, KeylessDeclared, sent, float64(grown)/(1<<20))
	assert.Less(t, grown, int64(KeylessHeapBudget), "the live heap grew by %.1f MiB for %d keyless connections that sent %d bytes of body each", float64(grown)/(1<<20), KeylessConns, sent)
}

// liveHeap is the bytes of live heap objects after a collection: two, so
// that what sync.Pools held (their victim caches) is gone too.
func liveHeap() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// waitListener counts the connections whose server side has read all sent
// bytes of them and calls Read again: it waits for more.
type waitListener struct {
	net.Listener
	sent    int64 // the bytes each connection sends
	waiting atomic.Int64
}

func (l *waitListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &waitConn{Conn: c, l: l}, nil
}

type waitConn struct {
	net.Conn
	l    *waitListener
	mu   sync.Mutex
	read int64
	once sync.Once
}

func (c *waitConn) Read(p []byte) (int, error) {
	c.mu.Lock()
	read := c.read
	c.mu.Unlock()
	if read >= c.l.sent {
		c.once.Do(func() { c.l.waiting.Add(1) })
	}
	n, err := c.Conn.Read(p)
	c.mu.Lock()
	c.read += int64(n)
	c.mu.Unlock()
	return n, err
}
