package catalog_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/median-go/median/examples/catalog"
	"github.com/median-go/median/examples/catalog/catalogtest"
	"github.com/median-go/median/internal/testonly/errorleak"
	"github.com/median-go/median/internal/testonly/pgtest"
	"github.com/median-go/median/internal/testonly/testsupport"
	"github.com/median-go/median/protocol"
)

// TestPgxErrorsReachOnlyTheLog: the error pgx gives a query when its
// pool cannot connect (a closed port, a password in the connection
// string), plain and wrapped as tableStatus wraps it, leaves the server
// only by its log: not in the answer, the report, the Event, a span or a
// metric (errorleak.Check). It lives here because only the examples and
// protocol/pgstore import pgx.
func TestPgxErrorsReachOnlyTheLog(t *testing.T) {
	const user, password, database = "leak_user_q7", "leak-pass-Z9x", "leak_db_q7"
	port := strconv.Itoa(errorleak.ClosedPort(t))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	pool, err := pgxpool.New(ctx, "postgres://"+user+":"+password+"@127.0.0.1:"+port+"/"+database+"?sslmode=disable&connect_timeout=5")
	require.NoError(t, err, "pgxpool.New connects lazily")
	defer pool.Close()
	var status string
	pgErr := pool.QueryRow(ctx, "SELECT status FROM orders WHERE order_id = $1", "A-1").Scan(&status)
	require.Error(t, pgErr)
	secrets := []string{user, database, "127.0.0.1", port}
	if strings.Contains(pgErr.Error(), password) { // pgx leaves it out today
		secrets = append(secrets, password)
	}
	errorleak.Check(t, []errorleak.Leak{
		{Tool: "pg_down", Err: pgErr, Secrets: secrets},
		{Tool: "pg_down_wrapped", Err: fmt.Errorf("could not read order A-1: %w", pgErr), Secrets: secrets},
	})
}

// TestPostgresDownShowsTheAgentNothing: with PostgreSQL gone, the
// read-only lookup_order still runs and fails on its query; the agent and
// the diagnostics report read the tool's name and a reference, never the
// database's user, password, address or name, which the log has under
// that reference. The demo's own errors are still shown.
func TestPostgresDownShowsTheAgentNothing(t *testing.T) {
	srv := pgtest.Start(t)
	const password = "demo-secret-pw-7"
	dsn := strings.Replace(srv.URL, "postgres://postgres@", "postgres://postgres:"+password+"@", 1)
	require.Contains(t, dsn, password)
	var logs testsupport.Buffer
	d, err := catalog.New(catalog.Options{Key: catalogtest.Key, DatabaseURL: dsn, Logger: slog.New(slog.NewJSONHandler(&logs, nil))})
	require.NoError(t, err)
	defer d.Close()
	// Sent as Median sends them (signed, not marked as a check's), so the
	// report counts them as the deployment's own calls (§10).
	do := func(r *http.Request) (*http.Response, error) {
		w := httptest.NewRecorder()
		d.Handler.ServeHTTP(w, r)
		return w.Result(), nil
	}
	calls := 0
	type reply struct {
		Error *struct {
			Code    string `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
		Raw []byte `json:"-"`
	}
	lookup := func(id string) reply {
		calls++
		body := catalogtest.ToolCall(catalog.LookupOrderTool, fmt.Sprintf("call_%032d", calls), map[string]string{"orderId": id}, catalogtest.Verified, protocol.RiskLow)
		a := catalogtest.Send(t, do, http.MethodPost, "http://example.test"+catalogtest.MountPath, body, true)
		var r reply
		require.NoError(t, json.Unmarshal(a.Body, &r), "%s", a.Body)
		r.Raw = a.Body
		return r
	}
	r := lookup(catalog.MissingOrderID)
	require.NotNil(t, r.Error, "%s", r.Raw)
	assert.Equal(t, "order missing not found", r.Error.Message, "the demo's own error is meant for the agent")

	srv.Kill()
	r = lookup("A-1001")
	require.NotNil(t, r.Error, "the query fails with the server gone: %s", r.Raw)
	m := regexp.MustCompile(`^tool lookup_order failed \(reference ([0-9a-f]{8})\); the server's log has the details$`).FindStringSubmatch(r.Error.Message)
	require.NotNil(t, m, "the agent reads the tool's name and a reference: %s", r.Raw)
	ref := m[1]

	_, report := requestDiagnostics(t, d.Handler)
	assert.Contains(t, report, r.Error.Message, "the report's lastFailure is the answered message")
	secrets := []string{password, "127.0.0.1", strconv.Itoa(srv.Port), "user=", "database="}
	for _, s := range secrets {
		assert.NotContains(t, string(r.Raw), s, "the answer")
		assert.NotContains(t, report, s, "the report")
	}

	var found bool
	for line := range strings.Lines(logs.String()) {
		var l map[string]any
		require.NoError(t, json.Unmarshal([]byte(line), &l))
		if l["errorRef"] == ref {
			found = true
			assert.Contains(t, l["error"], strconv.Itoa(srv.Port), "the log has the database's error: %v", l["error"])
		}
	}
	assert.True(t, found, "the log has a line under reference %s:\n%s", ref, logs.String())
}
