package pgstore_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/median-go/median/internal/testonly/testsupport"
	"github.com/median-go/median/protocol"
	"github.com/median-go/median/protocol/pgstore"
	"github.com/median-go/median/protocol/storetest"
)

// An instance is this test binary run again as a server: TestMain sees
// instanceEnv and serves one Handler on a loopback port instead of running
// the tests, so that a test can kill it with SIGKILL like a crashed
// service.
const (
	instanceEnv      = "PGSTORE_TEST_INSTANCE" // the database URL
	instanceTableEnv = "PGSTORE_TEST_TABLE"    // the store's table, in the schema median_test
	listening        = "listening on "         // what the instance prints, then its address
	inTransaction    = "in the transaction"    // what its tool prints after its write
)

// instanceMain serves an instance when the process is one, and reports
// whether it was (it returns only when serving failed).
func instanceMain() bool {
	url := os.Getenv(instanceEnv)
	if url == "" {
		return false
	}
	if err := serveInstance(url, os.Getenv(instanceTableEnv)); err != nil {
		fmt.Fprintln(os.Stderr, "instance:", err)
		os.Exit(1)
	}
	return true
}

// serveInstance serves a Handler whose cancel_order tool writes inside the
// call's transaction, prints inTransaction and then blocks forever: the
// test kills it there.
func serveInstance(url, table string) error {
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, url)
	if err != nil {
		return err
	}
	store, err := pgstore.New(pool, pgstore.Options{Schema: "median_test", Table: table})
	if err != nil {
		return err
	}
	h, err := protocol.New(protocol.Config{
		Keys:   []string{storetest.Key},
		Store:  store,
		Logger: slog.New(slog.NewTextHandler(os.Stderr, nil)),
		Tools: []*protocol.Tool{protocol.NewTool("cancel_order", protocol.RiskLow, "Cancels an order.",
			func(ctx context.Context, call protocol.ToolCall[cancelInput]) (string, error) {
				tx, _ := pgstore.Tx(ctx)
				if _, err := tx.Exec(ctx, "INSERT INTO cancellations VALUES ($1, $2)", call.Input.OrderID, call.ToolCallID); err != nil {
					return "", err
				}
				fmt.Println(inTransaction)
				select {} // killed here
			})},
	})
	if err != nil {
		return err
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	fmt.Println(listening + l.Addr().String())
	return http.Serve(l, h)
}

func TestInstanceKilledInsideTheTransaction(t *testing.T) {
	b := newBench(t)
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), instanceEnv+"="+b.srv.URL, instanceTableEnv+"="+b.opts.Table)
	stderr := &testsupport.Buffer{} // written by exec's copying goroutine
	cmd.Stderr = stderr
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	lines := make(chan string, 4)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	next := func(what string) string {
		select {
		case l, ok := <-lines:
			require.True(t, ok, "the instance exited before %s; its log:\n%s", what, stderr.String())
			return l
		case <-time.After(20 * time.Second):
			t.Fatalf("the instance did not report %s within 20s; its log:\n%s", what, stderr.String())
		}
		return ""
	}
	addr := strings.TrimPrefix(next("its address"), listening)

	id := storetest.NewID()
	req := signed(t, "cancel_order", id, cancelInput{OrderID: "A-1001"})
	go func() {
		hr, _ := http.NewRequest(http.MethodPost, "http://"+addr+"/", bytes.NewReader(req.BodyBytes))
		hr.Header.Set("Median-Signature", req.Signature)
		if resp, err := http.DefaultClient.Do(hr); err == nil {
			_ = resp.Body.Close()
		}
	}()
	require.Equal(t, inTransaction, next("its write"))
	require.Zero(t, b.cancellations(t, id), "the write is not visible before the commit")

	killed := time.Now()
	require.NoError(t, cmd.Process.Kill()) // SIGKILL
	_ = cmd.Wait()

	// The server ends the dead client's transaction once it sees the
	// connection closed.
	var gone time.Duration
	deadline := time.Now().Add(10 * time.Second)
	for {
		var held int
		require.NoError(t, b.pool.QueryRow(context.Background(),
			"SELECT count(*) FROM pg_stat_activity WHERE state LIKE 'idle in transaction%'").Scan(&held))
		if held == 0 {
			gone = time.Since(killed)
			break
		}
		require.True(t, time.Now().Before(deadline), "the killed instance's transaction was still open after 10s")
		time.Sleep(10 * time.Millisecond)
	}
	require.Zero(t, b.cancellations(t, id), "the killed instance's write is not there")
	require.Zero(t, rows(t, b.pool, b.opts, "answer IS NOT NULL OR expires_at > now()"), "nor an answer, nor a claim that holds copies")

	h := b.handler(t)
	start := time.Now()
	resp := serve(h, req)
	took := time.Since(start)
	require.Contains(t, string(resp.Body), `"status":"cancelled"`, "the next copy runs: %s", resp.Body)
	require.Equal(t, int64(1), b.runs.Load(), "it runs the tool once")
	require.Equal(t, 1, b.cancellations(t, id), "and commits its write")
	require.Equal(t, string(resp.Body), string(serve(b.handler(t), req).Body), "later copies get its answer")
	require.Equal(t, int64(1), b.runs.Load())
	t.Logf("SIGKILL inside the transaction: the server dropped the transaction %s after the kill; the next copy ran and committed in %s", gone.Round(time.Millisecond), took.Round(time.Millisecond))
}
