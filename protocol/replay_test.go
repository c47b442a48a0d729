package protocol

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestReplaySameCall(t *testing.T) {
	runs := &int64Counter{}
	obs := &observed{}
	h, _ := newHandler(t, Config{Tools: []*Tool{echoTool(runs)}, Observer: obs.add})
	body := toolCall("echo", "call_r1", `{"orderId":7}`)
	first := h.Serve(context.Background(), post(body))
	requireResult(t, first)
	assert.False(t, obs.last(t).Replayed)
	second := h.Serve(context.Background(), post(body))
	assert.Equal(t, string(first.Body), string(second.Body))
	assert.Equal(t, first.Status, second.Status)
	assert.Equal(t, int64(1), runs.get(), "the tool runs once")
	assert.True(t, obs.last(t).Replayed)

	// Re-signed later (fresh t) the same body is still the same call.
	later := post(body)
	later.Signature = mustParseKey(testKey).Sign(testNow.Add(-time.Minute), []byte(body))
	assert.Equal(t, string(first.Body), string(h.Serve(context.Background(), later).Body))
	assert.Equal(t, int64(1), runs.get())

	// Through net/http too.
	assert.Equal(t, string(first.Body), string(serveHTTP(h, http.MethodPost, post(body).Signature, body).Body))
	assert.Equal(t, int64(1), runs.get())
}

func TestReplayErrorAnswer(t *testing.T) {
	runs := &int64Counter{}
	h, _ := newHandler(t, Config{Tools: []*Tool{fnTool("fail", func(context.Context) (any, error) { runs.add(); return nil, errors.New("nope") })}})
	body := toolCall("fail", "call_r2", `{}`)
	first := h.Serve(context.Background(), post(body))
	requireError(t, first, http.StatusOK, CodeExecutionFailed)
	second := h.Serve(context.Background(), post(body))
	assert.Equal(t, string(first.Body), string(second.Body))
	requireError(t, second, http.StatusOK, CodeExecutionFailed)
	assert.Equal(t, int64(1), runs.get())
}

func TestReplaySameIDDifferentBody(t *testing.T) {
	runs := &int64Counter{}
	h, _ := newHandler(t, Config{Tools: []*Tool{echoTool(runs)}})
	requireResult(t, h.Serve(context.Background(), post(toolCall("echo", "call_r3", `{"orderId":1}`))))
	resp := h.Serve(context.Background(), post(toolCall("echo", "call_r3", `{"orderId":2}`)))
	msg := requireError(t, resp, http.StatusConflict, CodeInvalidBody)
	assert.Contains(t, msg, "call_r3")
	assert.Equal(t, int64(1), runs.get())
}

func TestReplayConcurrent(t *testing.T) {
	runs := &int64Counter{}
	h, _ := newHandler(t, Config{Tools: []*Tool{echoTool(runs)}})
	body := toolCall("echo", "call_r4", `{"orderId":9}`)
	const n = 32
	start := make(chan struct{})
	answers := make([]Response, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			answers[i] = h.Serve(context.Background(), post(body))
		}()
	}
	close(start)
	wg.Wait()
	assert.Equal(t, int64(1), runs.get(), "one run for 32 identical calls")
	for _, a := range answers {
		assert.Equal(t, string(answers[0].Body), string(a.Body))
		assert.Equal(t, http.StatusOK, a.Status)
	}
	requireResult(t, answers[0])
}

func TestReplayDisabled(t *testing.T) {
	runs := &int64Counter{}
	h, _ := newHandler(t, Config{Tools: []*Tool{echoTool(runs)}, DisableReplayProtection: true})
	body := toolCall("echo", "call_r5", `{"orderId":1}`)
	h.Serve(context.Background(), post(body))
	h.Serve(context.Background(), post(body))
	requireResult(t, h.Serve(context.Background(), post(toolCall("echo", "call_r5", `{"orderId":2}`))))
	assert.Equal(t, int64(3), runs.get())
}

// recordingStore records what the core asks of its Store.
type recordingStore struct {
	mu       sync.Mutex
	claims   []string // id/fingerprint
	saves    []string // id/fingerprint/answer
	claimErr error
	inner    *MemoryStore
}

func (s *recordingStore) Claim(ctx context.Context, id, fp string, lease time.Duration) (ClaimResult, error) {
	s.mu.Lock()
	s.claims = append(s.claims, id+"/"+fp)
	err := s.claimErr
	s.mu.Unlock()
	if err != nil {
		return ClaimResult{}, err
	}
	return s.inner.Claim(ctx, id, fp, lease)
}

func (s *recordingStore) Save(ctx context.Context, id, fp string, answer []byte, ttl time.Duration) error {
	s.mu.Lock()
	s.saves = append(s.saves, id+"/"+fp+"/"+string(answer))
	s.mu.Unlock()
	return s.inner.Save(ctx, id, fp, answer, ttl)
}

// TestCoreUsesStore: what reaches the Store, and when.
func TestCoreUsesStore(t *testing.T) {
	store := &recordingStore{inner: NewMemoryStore(MemoryStoreOptions{})}
	runs := &int64Counter{}
	h, logs := newHandler(t, Config{Tools: []*Tool{echoTool(runs)}, Store: store})
	body := toolCall("echo", "call_s1", `{"orderId":3}`)
	resp := h.Serve(context.Background(), post(body))
	sum := sha256.Sum256([]byte(body))
	fp := hex.EncodeToString(sum[:])
	assert.Equal(t, []string{"call_s1/" + fp}, store.claims, "claimed with the body's SHA-256")
	assert.Equal(t, []string{"call_s1/" + fp + "/" + string(resp.Body)}, store.saves)

	// Refusals before the run never touch the store.
	for _, b := range []string{toolCall("nope", "call_s2", `{}`), toolCall("echo", "call_s3", `{}`), `{"op":"diagnostics"}`, `{"tool":1}`} {
		h.Serve(context.Background(), post(b))
	}
	h.Serve(context.Background(), get())
	assert.Len(t, store.claims, 1)

	// A failing store: the tool does not run.
	store.claimErr = errors.New("redis: connection refused")
	msg := requireError(t, h.Serve(context.Background(), post(toolCall("echo", "call_s4", `{"orderId":3}`))), http.StatusOK, CodeExecutionFailed)
	assert.Contains(t, msg, "not run")
	assert.NotContains(t, msg, "redis")
	assert.Equal(t, int64(1), runs.get())
	assert.Len(t, logs.find(t, "replay store failed"), 1)
}

// panickingStore panics in Claim or Save, as a broken custom Store might.
type panickingStore struct {
	inner   *MemoryStore
	inClaim bool
}

func (s *panickingStore) Claim(ctx context.Context, id, fp string, lease time.Duration) (ClaimResult, error) {
	if s.inClaim {
		panic("claim exploded")
	}
	return s.inner.Claim(ctx, id, fp, lease)
}

func (s *panickingStore) Save(context.Context, string, string, []byte, time.Duration) error {
	panic("save exploded")
}

// TestPanickingStore: a store that panics fails the call the way a store
// error does, and never takes the server down.
func TestPanickingStore(t *testing.T) {
	store := &panickingStore{inner: NewMemoryStore(MemoryStoreOptions{}), inClaim: true}
	runs := &int64Counter{}
	h, logs := newHandler(t, Config{Tools: []*Tool{echoTool(runs)}, Store: store})
	msg := requireError(t, h.Serve(context.Background(), post(toolCall("echo", "call_p1", `{"orderId":3}`))), http.StatusOK, CodeExecutionFailed)
	assert.Contains(t, msg, "not run")
	assert.Zero(t, runs.get())
	assert.Contains(t, logs.String(), "claim exploded")

	// Save panics after the tool ran: the answer is still sent, the failure logged.
	store.inClaim = false
	requireResult(t, h.Serve(context.Background(), post(toolCall("echo", "call_p2", `{"orderId":3}`))))
	assert.Equal(t, int64(1), runs.get())
	assert.Contains(t, logs.String(), "save exploded")
}

// TestMemoryStoreKeepsACopyOfTheID: the decoder hands out the toolCallId as
// a substring of the whole body, so a store that kept it as given would keep
// every body alive for the TTL (found in review).
func TestMemoryStoreKeepsACopyOfTheID(t *testing.T) {
	body := strings.Repeat("x", 1<<20) + `call_1`
	id := body[len(body)-len("call_1"):]
	s := NewMemoryStore(MemoryStoreOptions{})
	res, err := s.Claim(context.Background(), id, "fp", time.Minute)
	require.NoError(t, err)
	require.Equal(t, ClaimAcquired, res.Status)
	require.Len(t, s.entries, 1)
	for k, e := range s.entries {
		assert.Equal(t, id, k)
		assert.NotSame(t, unsafe.StringData(id), unsafe.StringData(k), "the map key is a copy")
		assert.NotSame(t, unsafe.StringData(id), unsafe.StringData(e.id), "the entry's id is a copy")
	}
}
