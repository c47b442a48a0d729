package pgstore_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"io"
	"net"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5/pgproto3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/median-go/median/internal/testonly/pgtest"
	"github.com/median-go/median/protocol"
	"github.com/median-go/median/protocol/pgstore"
)

// wire is what the store's connections sent the server, decoded: the
// text of every statement (simple queries and the extended protocol's
// Parse) and the parameters bound to them.
type wire struct {
	mu         sync.Mutex
	statements []string
	params     [][]byte
}

func (w *wire) add(statement string, params [][]byte) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if statement != "" {
		w.statements = append(w.statements, statement)
	}
	for _, p := range params {
		w.params = append(w.params, bytes.Clone(p))
	}
}

// tap returns conn with what it writes decoded into w by a goroutine that
// ends when conn is closed.
func (w *wire) tap(conn net.Conn) net.Conn {
	r, pw := io.Pipe()
	go func() {
		b := pgproto3.NewBackend(r, io.Discard)
		for { // SSLRequest, GSSEncRequest, then the StartupMessage
			msg, err := b.ReceiveStartupMessage()
			if err != nil {
				_ = r.CloseWithError(err)
				return
			}
			if _, ok := msg.(*pgproto3.StartupMessage); ok {
				break
			}
		}
		for {
			msg, err := b.Receive()
			if err != nil {
				_ = r.CloseWithError(err)
				return
			}
			switch m := msg.(type) {
			case *pgproto3.Query:
				w.add(m.String, nil)
			case *pgproto3.Parse:
				w.add(m.Query, nil)
			case *pgproto3.Bind:
				w.add("", m.Parameters)
			}
		}
	}()
	return &tapped{Conn: conn, w: pw}
}

// tapped is a connection whose writes also go to w.
type tapped struct {
	net.Conn
	w *io.PipeWriter
}

func (c *tapped) Write(b []byte) (int, error) {
	n, err := c.Conn.Write(b)
	if n > 0 {
		_, _ = c.w.Write(b[:n])
	}
	return n, err
}

func (c *tapped) Close() error {
	_ = c.w.Close()
	return c.Conn.Close()
}

// oddFingerprints are fingerprints a literal could get wrong: quotes,
// backslashes, escape-string and dollar-quote syntax, a statement, and
// every character a text column holds (all of Unicode's scalar values but
// NUL, which PostgreSQL's text refuses, and the surrogates, which are not
// UTF-8), so every byte value UTF-8 allows.
func oddFingerprints() []string {
	var all strings.Builder
	for r := rune(1); r <= utf8.MaxRune; r++ {
		if utf8.ValidRune(r) && (r < 0x10000 || r%0x101 == 0) { // every BMP character, and astral ones of every lead byte
			all.WriteRune(r)
		}
	}
	return []string{
		`it's`, `''`, `\`, `\\'`, `back\slash`, `E'\x41'`, `E'\\'`, `e'\047'`, `$1`, `$$ $tag$`,
		`'); DROP TABLE x; --`, `"quoted"`, "tab\tnew\nline\r", "\x7f\u00a0\u2028\ufeff",
		all.String(),
	}
}

// oddAnswers are answers of every byte value, escape sequences, empty,
// and one of 1 MiB.
func oddAnswers(t *testing.T) [][]byte {
	t.Helper()
	var every []byte
	for i := range 256 {
		every = append(every, byte(i))
	}
	big := make([]byte, 1<<20)
	_, err := rand.Read(big)
	require.NoError(t, err)
	return [][]byte{
		every, bytes.Repeat(every, 3), []byte(`E'\x00'`), []byte(`\x00`), []byte(`'\'`), []byte("\x00"), {}, big,
	}
}

func newKey(t *testing.T) string {
	t.Helper()
	var b [32]byte
	_, err := rand.Read(b[:])
	require.NoError(t, err)
	return hex.EncodeToString(b[:])
}

// TestValuesAreParameters: answers and fingerprints of every kind are kept
// and read back byte for byte, through Claim, Renew, Save and RunClaimed
// (in the tool's transaction and outside it), and no value ever appears in
// a statement's text: every one reaches the server as a parameter.
func TestValuesAreParameters(t *testing.T) {
	srv := pgtest.Start(t)
	var seen wire
	pool := wrappedPool(t, srv.URL, 0, seen.tap)
	s := newStore(t, pool, freshTable(t, pool))
	ctx := context.Background()
	fps, answers := oddFingerprints(), oddAnswers(t)
	var keys []string
	check := func(key, fp string, answer []byte, how string) {
		t.Helper()
		st, got, err := s.Claim(ctx, key, fp, time.Minute)
		require.NoError(t, err, how)
		require.Equal(t, protocol.ClaimDone, st, how)
		require.True(t, bytes.Equal(answer, got), "%s: the answer comes back byte for byte (%d bytes kept, %d read)", how, len(answer), len(got))
		st, _, err = s.Claim(ctx, key, fp+"x", time.Minute)
		require.NoError(t, err)
		require.Equal(t, protocol.ClaimConflict, st, "%s: the fingerprint is kept byte for byte: one character more is another body", how)
	}
	for i, fp := range fps {
		answer := answers[i%len(answers)]
		key := newKey(t)
		keys = append(keys, key)
		st, _, err := s.Claim(ctx, key, fp, time.Minute)
		require.NoError(t, err)
		require.Equal(t, protocol.ClaimAcquired, st)
		require.NoError(t, s.Renew(ctx, key, fp, time.Minute))
		st, _, err = s.Claim(ctx, key, fp, time.Minute)
		require.NoError(t, err)
		require.Equal(t, protocol.ClaimRunning, st, "the claim is this fingerprint's")
		_, err = s.Save(ctx, key, fp, answer, time.Minute)
		require.NoError(t, err)
		check(key, fp, answer, "Save")
	}
	for i, answer := range answers {
		fp := fps[i%len(fps)]
		for _, inTx := range []bool{true, false} {
			key := newKey(t)
			keys = append(keys, key)
			st, _, err := s.RunClaimed(ctx, key, fp, time.Minute, time.Minute, 5*time.Second, func(ctx context.Context) ([]byte, bool) {
				if inTx {
					tx, _ := pgstore.Tx(ctx)
					_, err := tx.Exec(ctx, "SELECT 1")
					require.NoError(t, err)
				}
				return answer, true
			})
			require.Equal(t, protocol.ClaimAcquired, st)
			if inTx {
				require.NoError(t, err)
				check(key, fp, answer, "RunClaimed in the tool's transaction")
				continue
			}
			require.ErrorIs(t, err, pgstore.ErrOutsideTransaction, "the tool did not ask for its transaction")
			_, err = s.Save(ctx, key, fp, answer, time.Minute)
			require.NoError(t, err)
			check(key, fp, answer, "RunClaimed, then Save")
		}
	}

	pool.Close() // ends the taps
	seen.mu.Lock()
	defer seen.mu.Unlock()
	require.NotEmpty(t, seen.statements)
	for _, stmt := range seen.statements {
		for _, key := range keys {
			require.NotContains(t, stmt, key, "a key in a statement's text")
		}
		require.NotContains(t, stmt, "DROP TABLE x", "a fingerprint in a statement's text")
		require.NotContains(t, stmt, "back\\slash", "a fingerprint in a statement's text")
	}
	bound := func(v []byte) bool {
		for _, p := range seen.params {
			if bytes.Equal(p, v) {
				return true
			}
		}
		return false
	}
	for _, fp := range fps {
		assert.True(t, bound([]byte(fp)), "the fingerprint %.20q went as a parameter", fp)
	}
	for _, a := range answers {
		assert.True(t, bound(a), "the answer %.20q went as a parameter", a)
	}
	for _, key := range keys {
		assert.True(t, bound([]byte(key)), "the key went as a parameter")
	}
}

// TestBadValuesAreRefused: what PostgreSQL's text cannot hold is refused
// before anything is sent, with what to fix.
func TestBadValuesAreRefused(t *testing.T) {
	srv := pgtest.Start(t)
	pool := newPool(t, srv.URL)
	s := newStore(t, pool, freshTable(t, pool))
	ctx := context.Background()
	key := newKey(t)
	for _, fp := range []string{"a\x00b", "\xff\xfe", ""} {
		_, _, err := s.Claim(ctx, key, fp, time.Minute)
		require.ErrorContains(t, err, "valid UTF-8 without NUL", "%q", fp)
		require.ErrorContains(t, s.Renew(ctx, key, fp, time.Minute), "valid UTF-8 without NUL", "%q", fp)
	}
	_, _, err := s.Claim(ctx, "0123'; --", "fp", time.Minute)
	require.ErrorContains(t, err, "hex digest")
	require.ErrorContains(t, s.Renew(ctx, key, "fp", 0), "at least 1ms")
	require.False(t, errors.Is(err, pgstore.ErrPoolExhausted))
}
