package redisstore_test

import (
	"bufio"
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/median-go/median/internal/testonly/redistest"
	"github.com/median-go/median/protocol"
	"github.com/median-go/median/protocol/redisstore"
	"github.com/median-go/median/protocol/storetest"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
)

// serverStats is what the capacity test reads from INFO: commands by name
// (commands a script runs are counted too) and bytes in and out.
type serverStats struct {
	calls   map[string]int64
	usec    map[string]int64 // total microseconds the server spent in each command
	in, out int64
	memory  int64   // used_memory
	cpu     float64 // used_cpu_user + used_cpu_sys, seconds
}

func readStats(t *testing.T, c *redis.Client) serverStats {
	t.Helper()
	ctx := context.Background()
	st := serverStats{calls: map[string]int64{}, usec: map[string]int64{}}
	info, err := c.Info(ctx, "commandstats", "stats", "memory", "cpu").Result()
	require.NoError(t, err)
	sc := bufio.NewScanner(strings.NewReader(info))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if name, rest, ok := strings.Cut(line, ":"); ok {
			switch {
			case strings.HasPrefix(name, "cmdstat_"):
				fields := strings.Split(rest, ",")
				require.GreaterOrEqual(t, len(fields), 2, line)
				n, err := strconv.ParseInt(strings.TrimPrefix(fields[0], "calls="), 10, 64)
				require.NoError(t, err, line)
				usec, err := strconv.ParseInt(strings.TrimPrefix(fields[1], "usec="), 10, 64)
				require.NoError(t, err, line)
				st.calls[strings.TrimPrefix(name, "cmdstat_")] = n
				st.usec[strings.TrimPrefix(name, "cmdstat_")] = usec
			case name == "total_net_input_bytes":
				st.in, _ = strconv.ParseInt(rest, 10, 64)
			case name == "total_net_output_bytes":
				st.out, _ = strconv.ParseInt(rest, 10, 64)
			case name == "used_memory":
				st.memory, _ = strconv.ParseInt(rest, 10, 64)
			case name == "used_cpu_user" || name == "used_cpu_sys":
				v, _ := strconv.ParseFloat(rest, 64)
				st.cpu += v
			}
		}
	}
	return st
}

// TestCapacityPerCall serves small tool calls through a Handler on this
// store and measures what each costs Redis: round trips (a counting hook on
// the client), commands (INFO commandstats, the scripts' GET and SET
// included), bytes on the wire (INFO stats) and memory per kept answer
// (MEMORY USAGE). docs/PERFORMANCE.md's capacity model uses the figures it
// logs (go test -v -run TestCapacityPerCall ./protocol/redisstore); it
// fails when a new call costs more than two round trips, a repeat more
// than one, or an answer more than it did when they were measured.
//
// INFO's counters are the whole server's, so the test runs on a server of
// its own: on the shared one, other packages' tests count too.
func TestCapacityPerCall(t *testing.T) {
	c := ownClient(t)
	prefix := uniquePrefix(t, c)
	h, err := protocol.New(protocol.Config{
		Keys:   []string{storetest.Key},
		Store:  newStore(t, c, redisstore.Options{Prefix: prefix}),
		Logger: slog.New(slog.DiscardHandler),
		Tools: []*protocol.Tool{protocol.NewTool("lookup_order", protocol.RiskLow, "Looks an order up.",
			func(ctx context.Context, call protocol.ToolCall[struct {
				OrderID string `json:"orderId"`
			}]) (map[string]string, error) {
				return map[string]string{"orderId": call.Input.OrderID, "status": "shipped"}, nil
			})},
	})
	require.NoError(t, err)
	key, err := protocol.ParseKey(storetest.Key)
	require.NoError(t, err)
	ctx := context.Background()
	var answer []byte
	serve := func(id string) {
		body := fmt.Appendf(nil, `{"tool":"lookup_order","toolCallId":%q,"input":{"orderId":"A-1001"},`+
			`"context":{"conversationId":"conv_1","risk":"low","visitor":{"verified":false}}}`, id)
		resp := h.Serve(ctx, protocol.Request{Method: http.MethodPost, Signature: key.Sign(time.Now(), body), BodyBytes: body, ContentLength: int64(len(body))})
		require.Equal(t, http.StatusOK, resp.Status, "%s", resp.Body)
		answer = resp.Body
	}
	serve("call_warm_up") // loads both scripts on the server (EVALSHA, then EVAL)

	const n = 1000
	counter := &redistest.RoundTrips{}
	c.AddHook(counter)
	// Each loop's round trips are counted between the INFO readings.
	before := readStats(t, c)
	t0 := counter.Load()
	for i := range n {
		serve(fmt.Sprintf("call_%024d", i))
	}
	newTrips := counter.Load() - t0
	afterNew := readStats(t, c)
	t0 = counter.Load()
	for i := range n {
		serve(fmt.Sprintf("call_%024d", i))
	}
	repeatTrips := counter.Load() - t0
	afterRepeat := readStats(t, c)

	per := func(a, b serverStats, name string) float64 { return float64(b.calls[name]-a.calls[name]) / n }
	info := 1.0 / n // the INFO between the two readings
	usec := func(a, b serverStats) float64 { return float64(b.usec["evalsha"]-a.usec["evalsha"]) / n }
	t.Logf("new call: %.2f round trips; server commands per call: evalsha %.2f, get %.2f, set %.2f; %.0f bytes in, %.0f bytes out; %.1f µs of server time in the scripts, %.1f µs of the server's CPU in all",
		float64(newTrips)/n, per(before, afterNew, "evalsha"), per(before, afterNew, "get"), per(before, afterNew, "set"),
		float64(afterNew.in-before.in)/n, float64(afterNew.out-before.out)/n, usec(before, afterNew), (afterNew.cpu-before.cpu)*1e6/n)
	t.Logf("repeat: %.2f round trips; server commands per call: evalsha %.2f, get %.2f, set %.2f; %.0f bytes in, %.0f bytes out; %.1f µs of server time in the scripts, %.1f µs of the server's CPU in all",
		float64(repeatTrips)/n, per(afterNew, afterRepeat, "evalsha"), per(afterNew, afterRepeat, "get"), per(afterNew, afterRepeat, "set"),
		float64(afterRepeat.in-afterNew.in)/n, float64(afterRepeat.out-afterNew.out)/n, usec(afterNew, afterRepeat), (afterRepeat.cpu-afterNew.cpu)*1e6/n)
	require.Equal(t, int64(2*n), newTrips, "a new call costs two round trips: the claim and the save")
	require.Equal(t, int64(n), repeatTrips, "a repeat costs one round trip: the claim that finds the answer")
	require.InDelta(t, 1, per(afterNew, afterRepeat, "evalsha"), info+0.001, "one script per repeat")
	require.Zero(t, per(afterNew, afterRepeat, "set"), "a repeat writes nothing")

	// Memory per kept answer: MEMORY USAGE of every key (it counts the key,
	// the value and Redis's own bookkeeping for them).
	keys, err := c.Keys(ctx, prefix+"*").Result()
	require.NoError(t, err)
	require.Len(t, keys, n+1)
	var total int64
	for _, k := range keys {
		usage, err := c.MemoryUsage(ctx, k).Result()
		require.NoError(t, err)
		total += usage
	}
	perKey := float64(total) / float64(len(keys))
	t.Logf("Redis memory per kept answer: %.0f bytes by MEMORY USAGE, %.0f by used_memory (with the index and expiry entries); key %d bytes, answer %d bytes",
		perKey, float64(afterNew.memory-before.memory)/n, len(keys[0]), len(answer))
	require.Less(t, perKey, 400.0, "a small answer's key costs Redis about 300 bytes")
}
