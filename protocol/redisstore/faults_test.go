package redisstore_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/median-go/median/internal/testonly/redistest"
	"github.com/median-go/median/internal/testonly/toxitest"
	"github.com/median-go/median/protocol"
	"github.com/median-go/median/protocol/redisstore"
	"github.com/median-go/median/protocol/storetest"
)

// These tests put toxiproxy between two Handlers and a Redis server of
// their own, cut the connections while calls are under way, and check what
// the contract promises through it: every call is answered within its
// request's deadline, in the contract's words; each call's tool runs at
// most once while the fault lasts, and exactly once when every call is
// sent again after it, each copy getting the answer of that one run.

const (
	faultLease    = 3 * time.Second // the claims' lease (Config.ReplayLease)
	faultDeadline = 2 * faultLease  // each request's own deadline
	faultCalls    = 12              // calls per fault, each sent to both Handlers at once
	// slowTool runs longer than a lease, ignoring its context: its claim
	// lasts only if renewals get through the fault.
	slowTool = faultLease + faultLease/2
	// quickTool is the tool's time when a fault lets no connection be made
	// (see TestConnectionsCutMidReply).
	quickTool = 100 * time.Millisecond
	// storeDeadline is Config.StoreTimeout's default.
	storeDeadline = time.Second
)

// faultRig is two Handlers, each with its own client and store, on one
// Redis behind one toxiproxy proxy, with a tool that counts its runs by
// order (one order per call) and, while the fault lasts, takes toolTime.
type faultRig struct {
	proxy    *toxitest.Proxy
	handlers [2]*protocol.Handler
	stores   map[*protocol.Handler]*redisstore.Store
	toolTime atomic.Int64 // how long the tool takes (a time.Duration): 0 but during the fault
	mu       sync.Mutex
	runs     map[string]int // by orderId
}

// newFaultRig starts Redis and toxiproxy and builds the two Handlers, on
// the client of the package documentation; with smallHandshake, its
// connections open with HELLO 2 alone (Protocol 2, DisableIdentity: no
// CLIENT SETINFO), 26 bytes instead of about 150.
func newFaultRig(t *testing.T, smallHandshake bool) *faultRig {
	t.Helper()
	toxi := toxitest.Start(t)
	srv := redistest.Start(t)
	r := &faultRig{proxy: toxi.Proxy("redis", srv.Addr), runs: map[string]int{}, stores: map[*protocol.Handler]*redisstore.Store{}}
	tool := protocol.NewTool("charge", protocol.RiskHigh, "Charges an order.",
		func(_ context.Context, call protocol.ToolCall[orderInput]) (map[string]any, error) {
			r.mu.Lock()
			r.runs[call.Input.OrderID]++
			n := r.runs[call.Input.OrderID]
			r.mu.Unlock()
			time.Sleep(time.Duration(r.toolTime.Load())) // a payment API that does not stop when asked
			return map[string]any{"orderId": call.Input.OrderID, "charged": true, "run": n}, nil
		})
	for i := range r.handlers {
		protocolVersion := 0 // go-redis's default, RESP3
		if smallHandshake {
			protocolVersion = 2
		}
		c := redis.NewClient(&redis.Options{
			Addr: r.proxy.Addr, ContextTimeoutEnabled: true, Protocol: protocolVersion, DisableIdentity: smallHandshake,
			DialTimeout: 500 * time.Millisecond, ReadTimeout: 500 * time.Millisecond,
			WriteTimeout: 500 * time.Millisecond, PoolTimeout: 500 * time.Millisecond, MaxRetries: 1,
		})
		t.Cleanup(func() { _ = c.Close() })
		store, err := redisstore.New(c, redisstore.Options{})
		require.NoError(t, err)
		h, err := protocol.New(protocol.Config{
			Keys: []string{storetest.Key}, Store: store, ReplayLease: faultLease, StoreTimeout: storeDeadline,
			Tools: []*protocol.Tool{tool}, Logger: slog.New(slog.DiscardHandler),
		})
		require.NoError(t, err)
		t.Cleanup(func() { _ = h.Close() })
		r.handlers[i], r.stores[h] = h, store
	}
	return r
}

// request is a signed call of charge for order, under id.
func request(t *testing.T, id, order string) protocol.Request {
	t.Helper()
	body := fmt.Appendf(nil, `{"tool":"charge","toolCallId":%q,"input":{"orderId":%q},`+
		`"context":{"conversationId":"conv_1","risk":"high","visitor":{"verified":true,"externalId":"user_7"},"approvedBy":"A teammate"}}`, id, order)
	key, err := protocol.ParseKey(storetest.Key)
	require.NoError(t, err)
	return protocol.Request{Method: http.MethodPost, Signature: key.Sign(time.Now(), body), BodyBytes: body, ContentLength: int64(len(body))}
}

// answered is one request's answer and how long it took.
type answered struct {
	resp protocol.Response
	took time.Duration
}

// serve answers req on h under deadline.
func serve(h *protocol.Handler, req protocol.Request, deadline time.Duration) answered {
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	start := time.Now()
	resp := h.Serve(ctx, req)
	return answered{resp, time.Since(start)}
}

// requireContractAnswer checks that a is a result of charge for order or
// one of the execution_failed answers the replay store causes, within the
// request's deadline, or past it by what the tool and one save take (a
// copy that took the claim before its deadline, once the lease of a claim
// whose reply was lost had ended, runs the tool to its end, which ignores
// its context, and waits for the save's store deadline).
func requireContractAnswer(t *testing.T, a answered, order string, toolTime time.Duration, what string) {
	t.Helper()
	require.Less(t, a.took, faultDeadline+toolTime+storeDeadline+time.Second, "%s: answered within the request's deadline", what)
	require.Equal(t, http.StatusOK, a.resp.Status, "%s: %s", what, a.resp.Body)
	var body struct {
		Result *struct {
			OrderID string `json:"orderId"`
			Charged bool   `json:"charged"`
		} `json:"result"`
		Error *struct {
			Code    protocol.Code `json:"code"`
			Message string        `json:"message"`
		} `json:"error"`
	}
	require.NoError(t, json.Unmarshal(a.resp.Body, &body), "%s: %s", what, a.resp.Body)
	if body.Result != nil {
		require.Equal(t, order, body.Result.OrderID, "%s: %s", what, a.resp.Body)
		require.True(t, body.Result.Charged, "%s: %s", what, a.resp.Body)
		return
	}
	require.NotNil(t, body.Error, "%s: %s", what, a.resp.Body)
	require.Equal(t, protocol.CodeExecutionFailed, body.Error.Code, "%s: %s", what, a.resp.Body)
	msg := body.Error.Message
	require.True(t, strings.Contains(msg, "the tool was not run and nothing was changed") || strings.Contains(msg, "this copy did not run the tool"),
		"%s: an answer of the replay store says the tool did not run: %s", what, msg)
	require.NotContains(t, strings.ToLower(msg), "try again", "%s: Median never retries", what)
}

// isResult reports whether a is a result.
func isResult(a answered) bool { return strings.HasPrefix(string(a.resp.Body), `{"result":`) }

func (r *faultRig) runsOf(order string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.runs[order]
}

// check runs faultCalls calls, each sent to both Handlers at once, while
// toxic cuts the connections and the tool takes toolTime, then sends each
// again once the fault is gone.
func (r *faultRig) check(t *testing.T, toxic toxitest.Toxic, toolTime time.Duration) {
	// Before the fault: both Handlers work, their clients hold open
	// connections (as a busy server's do), and Redis has the store's
	// scripts (a renewal loads its own: a long-running server has them).
	var wg sync.WaitGroup
	for i, h := range r.handlers {
		for j := range faultCalls {
			wg.Go(func() {
				a := serve(h, request(t, storetest.NewID(), fmt.Sprintf("warm-%d-%d", i, j)), faultDeadline)
				assert.True(t, isResult(a), "before the fault, Handler %d: %s", i, a.resp.Body)
			})
		}
	}
	wg.Wait()
	for _, h := range r.handlers {
		require.NoError(t, r.stores[h].Renew(context.Background(), strings.Repeat("0", 64), strings.Repeat("a", 64), faultLease))
	}

	r.toolTime.Store(int64(toolTime))
	r.proxy.Add(toxic)
	ids, orders := make([]string, faultCalls), make([]string, faultCalls)
	during := make([][2]answered, faultCalls)
	for i := range faultCalls {
		ids[i], orders[i] = storetest.NewID(), fmt.Sprintf("A-%d", 1000+i)
		req := request(t, ids[i], orders[i])
		for j, h := range r.handlers {
			wg.Go(func() { during[i][j] = serve(h, req, faultDeadline) })
		}
	}
	wg.Wait()
	r.proxy.Remove(toxic.Name)
	r.toolTime.Store(0)

	results := 0
	for i := range faultCalls {
		var first []byte
		for j := range r.handlers {
			a := during[i][j]
			requireContractAnswer(t, a, orders[i], toolTime, fmt.Sprintf("call %d on Handler %d during the fault", i, j))
			if isResult(a) {
				results++
				if first == nil {
					first = a.resp.Body
				}
				assert.Equal(t, string(first), string(a.resp.Body), "call %d: both copies that got a result got the same bytes", i)
			}
		}
		assert.LessOrEqual(t, r.runsOf(orders[i]), 1, "call %d: the tool ran at most once during the fault", i)
	}
	t.Logf("%s: %d of %d requests answered with a result during the fault", toxic.Name, results, 2*faultCalls)

	// New calls work again at once.
	for i, h := range r.handlers {
		a := serve(h, request(t, storetest.NewID(), fmt.Sprintf("after-%d", i)), faultDeadline)
		require.True(t, isResult(a), "a new call on Handler %d right after the fault: %s", i, a.resp.Body)
	}

	// Every call sent again after the fault: the answers saved again are
	// kept by now or soon, and a claim whose holder never ran the tool
	// ends with its lease; each call's tool then has run exactly once, and
	// every copy gets that run's answer.
	after := make([]answered, faultCalls)
	for i := range faultCalls {
		req := request(t, ids[i], orders[i])
		wg.Go(func() { after[i] = serve(r.handlers[i%2], req, faultLease+faultDeadline) })
	}
	wg.Wait()
	for i, again := range after {
		require.True(t, isResult(again), "call %d sent again after the fault: %s", i, again.resp.Body)
		for j := range r.handlers {
			if a := during[i][j]; isResult(a) {
				assert.Equal(t, string(a.resp.Body), string(again.resp.Body), "call %d: the copy after the fault gets the answer Handler %d gave", i, j)
			}
		}
		assert.Equal(t, 1, r.runsOf(orders[i]), "call %d: the tool ran exactly once", i)
	}
}

// TestConnectionsCutMidCommand: every connection between the Handlers and
// Redis is closed once 300 bytes of commands have passed, so a command (a
// save, with its answer, is longer than that; any command on a connection
// that has carried one) is cut half-way, while the tool runs longer than a
// lease. The clients' handshake is small, so a new connection carries one
// claim or renewal (about 250 bytes): the claims live on renewals that get
// through, and the answers are saved once the fault is gone. (With
// go-redis's usual handshake, about 150 bytes, no command of the store
// would fit: Redis would be down for it, see TestConnectionsCutMidReply.)
func TestConnectionsCutMidCommand(t *testing.T) {
	t.Parallel()
	newFaultRig(t, true).check(t, toxitest.Toxic{Name: "cut_commands", Type: "limit_data", Stream: "upstream", Attributes: map[string]any{"bytes": 300}}, slowTool)
}

// TestConnectionsCutMidReply: every connection is closed once 40 bytes of
// replies have passed, so a reply (a claim that finds the call running, a
// save's or a claim's on a connection that has carried others) is cut
// half-way after Redis ran the command. A new connection's handshake
// (HELLO, whose reply is longer) fails too, so no command reaches Redis
// but on the connections open when the fault began: a claim cannot be
// renewed then, which is a store down, and the tool is quick (the fault
// ends within a lease; see docs/SECURITY.md on a store down for longer).
func TestConnectionsCutMidReply(t *testing.T) {
	t.Parallel()
	newFaultRig(t, false).check(t, toxitest.Toxic{Name: "cut_replies", Type: "limit_data", Stream: "downstream", Attributes: map[string]any{"bytes": 40}}, quickTool)
}
