package adaptertest

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

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

// KeylessPastReadAhead is the second part of the body the case sends
// (the first is one byte): a little more than fasthttp reads before a
// fiber handler runs when it streams request bodies (8 KiB), so that the
// adapter's handler runs on every framework.
const KeylessPastReadAhead = 9 << 10

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

// checkHeaderFirst checks on a real loopback listener that a request with
// no signature, declaring 1 MiB of body and sending 32 KiB of it, is
// answered 401 missing_signature before the server reads its body: by the
// first byte of the answer the server has read no more than the headers
// and what its read buffers take in with them (fasthttp's 8 KiB read-ahead
// of a streamed body included). On a framework that reads the whole body
// before any handler runs (ReservesDeclaredBody), it checks that instead,
// as the adapter documents it: the server reads all that was sent and
// waits for the rest, having answered nothing.
func checkHeaderFirst(t *testing.T, a Adapter) {
	h, _ := NewHandler(func(cfg *protocol.Config) { cfg.MaxBodyBytes = KeylessDeclared })
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	head := fmt.Sprintf("POST %s HTTP/1.1\r\nHost: %s\r\nContent-Type: %s\r\nContent-Length: %d\r\n\r\n", Path, ln.Addr(), ContentType, KeylessDeclared)
	const sent, readAhead = 32 << 10, 16 << 10
	wl := &waitListener{Listener: ln, sent: int64(len(head) + sent)}
	stop := a.Endpoint(h)(wl)
	defer stop()
	c, err := net.Dial("tcp", ln.Addr().String())
	require.NoError(t, err)
	defer c.Close()
	written := make(chan struct{})
	go func() { // the server may answer before it reads all of it
		defer close(written)
		_, _ = io.WriteString(c, head+strings.Repeat(" ", sent))
	}()
	defer func() { _ = c.Close(); <-written }()

	if a.ReservesDeclaredBody != "" {
		testsupport.Eventually(t, "the server read all that was sent and waits for the rest of the body", func() bool { return wl.waiting.Load() == 1 })
		assert.False(t, wl.wrote.Load(), "the framework answered before it read the body: update ReservesDeclaredBody and the adapter's doc")
		return
	}
	require.NoError(t, c.SetReadDeadline(time.Now().Add(10*time.Second))) // a server that waits for the body never answers
	res, err := http.ReadResponse(bufio.NewReader(c), nil)
	require.NoError(t, err, "the answer to a request with no signature")
	defer res.Body.Close()
	answer, _ := io.ReadAll(res.Body)
	assert.Equal(t, http.StatusUnauthorized, res.StatusCode, "answer %s", answer)
	assert.Contains(t, string(answer), string(protocol.CodeMissingSignature))
	assert.LessOrEqual(t, wl.readAtWrite.Load(), int64(len(head)+readAhead), "bytes the server read before it answered (%d of headers, %d of body sent)", len(head), sent)
}

// waitListener counts the connections whose server side has read all sent
// bytes of them and calls Read again: it waits for more. It also records
// how much the server had read of a connection when it first wrote to it.
type waitListener struct {
	net.Listener
	sent        int64 // the bytes each connection sends
	waiting     atomic.Int64
	wrote       atomic.Bool  // the server wrote to a connection
	readAtWrite atomic.Int64 // the bytes it had read of it by then
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

func (c *waitConn) Write(p []byte) (int, error) {
	if c.l.wrote.CompareAndSwap(false, true) {
		c.mu.Lock()
		c.l.readAtWrite.Store(c.read)
		c.mu.Unlock()
	}
	return c.Conn.Write(p)
}
