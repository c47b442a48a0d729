package catalogtest

import (
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/median-go/median/conformance"
	"github.com/median-go/median/examples/catalog"
	"github.com/median-go/median/protocol"
)

// Run checks, black-box through target (its Do and URL; requests are signed
// with Key), that the endpoint serves the demo catalog: refusal, failure,
// result with its widget link, cancel once, replay with identical bytes,
// the risk floor, diagnostics without the key, the manifest and the
// contract's 405, on the mount path and with a trailing slash. It
// changes the order state (it cancels A-1001 and R-2002): give it a fresh
// app.
func Run(t *testing.T, target conformance.Target) {
	post := func(t *testing.T, body []byte) Answer {
		return Send(t, target.Do, http.MethodPost, target.URL, body, true)
	}
	result := func(t *testing.T, a Answer) map[string]any {
		t.Helper()
		require.Equal(t, http.StatusOK, a.Status, "body: %s", a.Body)
		assert.Equal(t, ContentType, a.Header.Get("Content-Type"))
		v, ok := a.JSON(t)["result"].(map[string]any)
		require.True(t, ok, "want {\"result\": {...}}, got %s", a.Body)
		return v
	}
	failure := func(t *testing.T, a Answer) string {
		t.Helper()
		require.Equal(t, http.StatusOK, a.Status, "body: %s", a.Body)
		e, ok := a.JSON(t)["error"].(map[string]any)
		require.True(t, ok, "want {\"error\": {...}}, got %s", a.Body)
		assert.Equal(t, string(protocol.CodeExecutionFailed), e["code"])
		msg, _ := e["message"].(string)
		return msg
	}
	order := func(id string) map[string]string { return map[string]string{"orderId": id} }
	// Unique ids, so a replay store shared across runs (Redis) never answers
	// from an earlier run.
	run := strconv.FormatInt(time.Now().UnixNano(), 36)
	id := func(name string) string { return "call_" + name + "_" + run }

	t.Run("lookup_order/not signed in", func(t *testing.T) {
		got := result(t, post(t, ToolCall(catalog.LookupOrderTool, id("anon"), order("A-1001"), Visitor{}, protocol.RiskLow)))
		assert.Equal(t, map[string]any{"ok": false, "allowed": false, "outcome": "blocked",
			"reason": "not_signed_in", "detail": "Sign in to see orders."}, got)
	})
	t.Run("lookup_order/missing", func(t *testing.T) {
		msg := failure(t, post(t, ToolCall(catalog.LookupOrderTool, id("missing"), order("missing"), Verified, protocol.RiskLow)))
		assert.Equal(t, "order missing not found", msg)
	})
	t.Run("lookup_order/verified", func(t *testing.T) {
		got := result(t, post(t, ToolCall(catalog.LookupOrderTool, id("lookup"), order("A-1001"), Verified, protocol.RiskLow)))
		assert.Equal(t, map[string]any{"orderId": "A-1001", "status": catalog.StatusProcessing,
			"medianNavigateTo": "/orders/A-1001"}, got)
	})
	t.Run("lookup_order/invalid input", func(t *testing.T) {
		a := post(t, ToolCall(catalog.LookupOrderTool, id("bad_input"), map[string]any{}, Verified, protocol.RiskLow))
		require.Equal(t, http.StatusBadRequest, a.Status, "body: %s", a.Body)
		e, _ := a.JSON(t)["error"].(map[string]any)
		assert.Equal(t, string(protocol.CodeInvalidInput), e["code"])
		assert.Contains(t, e["message"], "orderId")
	})
	t.Run("cancel_order/twice", func(t *testing.T) {
		got := result(t, post(t, ToolCall(catalog.CancelOrderTool, id("cancel_1"), order("A-1001"), Verified, protocol.RiskHigh)))
		assert.Equal(t, map[string]any{"orderId": "A-1001", "cancelled": true}, got)
		msg := failure(t, post(t, ToolCall(catalog.CancelOrderTool, id("cancel_2"), order("A-1001"), Verified, protocol.RiskHigh)))
		assert.Equal(t, "order A-1001 is already cancelled", msg)
		got = result(t, post(t, ToolCall(catalog.LookupOrderTool, id("lookup_2"), order("A-1001"), Verified, protocol.RiskLow)))
		assert.Equal(t, catalog.StatusCancelled, got["status"])
	})
	t.Run("cancel_order/replayed", func(t *testing.T) {
		captured := ToolCall(catalog.CancelOrderTool, id("replay"), order("R-2002"), Verified, protocol.RiskHigh)
		first := post(t, captured)
		assert.Equal(t, map[string]any{"orderId": "R-2002", "cancelled": true}, result(t, first))
		// The same call again, re-signed: the stored answer, byte for byte.
		again := post(t, captured)
		assert.Equal(t, first.Status, again.Status)
		assert.Equal(t, string(first.Body), string(again.Body))
		// Had the replay run the tool, this would be its second cancel;
		// a new call is the second and is refused as such.
		msg := failure(t, post(t, ToolCall(catalog.CancelOrderTool, id("replay_new"), order("R-2002"), Verified, protocol.RiskHigh)))
		assert.Equal(t, "order R-2002 is already cancelled", msg)
	})
	t.Run("cancel_order/not approved", func(t *testing.T) {
		body := ToolCall(catalog.CancelOrderTool, id("unapproved"), order("N-4004"), Verified, protocol.RiskLow)
		got := result(t, post(t, body))
		assert.Equal(t, false, got["allowed"])
		assert.Equal(t, "approval_required", got["reason"])
		got = result(t, post(t, ToolCall(catalog.LookupOrderTool, id("lookup_unapproved"), order("N-4004"), Verified, protocol.RiskLow)))
		assert.Equal(t, catalog.StatusProcessing, got["status"], "the refused call did not cancel the order")
	})
	t.Run("trailing slash", func(t *testing.T) {
		slash := strings.TrimSuffix(target.URL, "/") + "/"
		a := Send(t, target.Do, http.MethodPost, slash, ToolCall(catalog.LookupOrderTool, id("slash"), order("S-5005"), Verified, protocol.RiskLow), true)
		require.Equal(t, http.StatusOK, a.Status, "body: %s", a.Body)
		assert.Equal(t, "S-5005", a.JSON(t)["result"].(map[string]any)["orderId"])
		a = Send(t, target.Do, http.MethodGet, slash, nil, true)
		require.Equal(t, http.StatusOK, a.Status, "body: %s", a.Body)
		assert.Len(t, a.JSON(t)["tools"], 2)
		a = Send(t, target.Do, http.MethodDelete, slash, nil, true)
		assert.Equal(t, http.StatusMethodNotAllowed, a.Status)
		assert.Equal(t, AllowHeader, a.Header.Get("Allow"))
	})
	t.Run("unknown tool", func(t *testing.T) {
		a := post(t, ToolCall("refund_order", id("unknown"), order("A-1001"), Verified, protocol.RiskLow))
		require.Equal(t, http.StatusNotFound, a.Status, "body: %s", a.Body)
		e, _ := a.JSON(t)["error"].(map[string]any)
		assert.Equal(t, string(protocol.CodeUnknownTool), e["code"])
	})
	t.Run("diagnostics", func(t *testing.T) {
		a := post(t, []byte(`{"op":"diagnostics"}`))
		got := result(t, a)
		keys, _ := got["keys"].([]any)
		require.NotEmpty(t, keys, "the report lists the keys in force: %s", a.Body)
		assert.Equal(t, MustKey(Key).Fingerprint(), keys[0].(map[string]any)["fingerprint"])
		manifest, _ := got["manifest"].(map[string]any)
		assert.EqualValues(t, 2, manifest["tools"])
		app, _ := got["app"].(map[string]any)
		assert.Contains(t, app, "cancelledOrders", "the demo's own entry: %s", a.Body)
		assert.NotContains(t, string(a.Body), Key)
	})
	t.Run("manifest", func(t *testing.T) {
		a := Send(t, target.Do, http.MethodGet, target.URL, nil, true)
		require.Equal(t, http.StatusOK, a.Status, "body: %s", a.Body)
		tools, _ := a.JSON(t)["tools"].([]any)
		risks := map[string]any{}
		for _, tool := range tools {
			m, _ := tool.(map[string]any)
			risks[m["name"].(string)] = m["risk"]
			schema, _ := m["inputSchema"].(map[string]any)
			assert.Equal(t, []any{"orderId"}, schema["required"], "tool %v", m["name"])
		}
		assert.Equal(t, map[string]any{"lookup_order": "low", "cancel_order": "high"}, risks)
	})
	t.Run("unsigned", func(t *testing.T) {
		a := Send(t, target.Do, http.MethodPost, target.URL, ToolCall(catalog.CancelOrderTool, id("unsigned"), order("U-1"), Verified, protocol.RiskHigh), false)
		assert.Equal(t, http.StatusUnauthorized, a.Status)
		assert.Contains(t, string(a.Body), string(protocol.CodeMissingSignature))
	})
	for _, method := range []string{http.MethodPut, http.MethodDelete, http.MethodPatch, http.MethodHead, http.MethodOptions} {
		t.Run("method/"+method, func(t *testing.T) {
			a := Send(t, target.Do, method, target.URL, nil, true)
			assert.Equal(t, http.StatusMethodNotAllowed, a.Status)
			assert.Equal(t, AllowHeader, a.Header.Get("Allow"))
			assert.Equal(t, ContentType, a.Header.Get("Content-Type"))
			if method != http.MethodHead {
				assert.Contains(t, string(a.Body), string(protocol.CodeMethodNotAllowed))
			}
		})
	}
}

// RunRoutes checks the ordinary routes every example serves beside Median:
// GET /healthz, and GET /api/orders/{id}, which reads the same order state
// as the tools. base is the app's address without a path, e.g.
// "http://example.test".
func RunRoutes(t *testing.T, do func(*http.Request) (*http.Response, error), base string) {
	base = strings.TrimSuffix(base, "/")
	t.Run("healthz", func(t *testing.T) {
		a := Send(t, do, http.MethodGet, base+"/healthz", nil, false)
		require.Equal(t, http.StatusOK, a.Status, "body: %s", a.Body)
		assert.Equal(t, "ok", a.JSON(t)["status"])
	})
	t.Run("orders/found", func(t *testing.T) {
		a := Send(t, do, http.MethodGet, base+"/api/orders/B-7", nil, false)
		require.Equal(t, http.StatusOK, a.Status, "body: %s", a.Body)
		assert.Equal(t, map[string]any{"orderId": "B-7", "status": catalog.StatusProcessing}, a.JSON(t))
	})
	t.Run("orders/missing", func(t *testing.T) {
		a := Send(t, do, http.MethodGet, base+"/api/orders/missing", nil, false)
		assert.Equal(t, http.StatusNotFound, a.Status, "body: %s", a.Body)
		assert.Equal(t, "order missing not found", a.JSON(t)["error"])
	})
}
