package dynamostore_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"hash/crc32"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/median-go/median/internal/testonly/testsupport"
	"github.com/median-go/median/protocol"
	"github.com/median-go/median/protocol/storetest"
)

// handler is a Handler on a store with two tools that count their runs:
// cancel_order, and the read-only lookup_order.
type handler struct {
	h       *protocol.Handler
	cancels atomic.Int64
	looks   atomic.Int64
	logs    *testsupport.Buffer
}

type orderInput struct {
	OrderID string `json:"orderId"`
}

// newHandler builds a handler on store; cfg may set StoreTimeout, Tools
// (added to the two) and Observer.
func newHandler(t testing.TB, store protocol.Store, cfg protocol.Config) *handler {
	t.Helper()
	h := &handler{logs: &testsupport.Buffer{}}
	cfg.Keys = []string{storetest.Key}
	cfg.Store = store
	cfg.Logger = slog.New(slog.NewTextHandler(h.logs, nil))
	cfg.Tools = append(cfg.Tools,
		protocol.NewTool("cancel_order", protocol.RiskLow, "Cancels an order.",
			func(ctx context.Context, call protocol.ToolCall[orderInput]) (map[string]any, error) {
				n := h.cancels.Add(1)
				return map[string]any{"orderId": call.Input.OrderID, "status": "cancelled", "run": n}, nil
			}),
		protocol.NewTool("lookup_order", protocol.RiskLow, "Looks an order up.",
			func(ctx context.Context, call protocol.ToolCall[orderInput]) (string, error) {
				h.looks.Add(1)
				return "processing", nil
			}, protocol.ReadOnly()))
	var err error
	h.h, err = protocol.New(cfg)
	require.NoError(t, err)
	return h
}

// signedCall returns a signed POST of a low-risk call of tool.
func signedCall(t testing.TB, tool, id, orderID string) protocol.Request {
	t.Helper()
	body := fmt.Appendf(nil, `{"tool":%q,"toolCallId":%q,"input":{"orderId":%q},`+
		`"context":{"conversationId":"conv_1","risk":"low","visitor":{"verified":false}}}`, tool, id, orderID)
	key, err := protocol.ParseKey(storetest.Key)
	require.NoError(t, err)
	return protocol.Request{Method: http.MethodPost, Signature: key.Sign(time.Now(), body), BodyBytes: body, ContentLength: int64(len(body))}
}

// serve answers req on h; the 30 s bound only keeps a broken build from
// hanging.
func serve(h *protocol.Handler, req protocol.Request) protocol.Response {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return h.Serve(ctx, req)
}

// codeOf returns the error code an answer carries, or "" for a result.
func codeOf(resp protocol.Response) protocol.Code {
	var a struct {
		Error *struct {
			Code protocol.Code `json:"code"`
		} `json:"error"`
	}
	if json.Unmarshal(resp.Body, &a) != nil || a.Error == nil {
		return ""
	}
	return a.Error.Code
}

// returnItemOnConditionFailure serves the DynamoDB API of upstream (a
// dynalite) as DynamoDB itself answers a PutItem whose condition fails
// when asked for ReturnValuesOnConditionCheckFailure ALL_OLD: with the
// item in the error. dynalite accepts the parameter and returns no item;
// this fills it in with a consistent GetItem of the item's key (attribute
// "call"). It returns its URL; it stops when t ends.
func returnItemOnConditionFailure(t testing.TB, upstream string) string {
	t.Helper()
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	client := &http.Client{Transport: tr}
	forward := func(header http.Header, body []byte) (int, http.Header, []byte, error) {
		req, err := http.NewRequest(http.MethodPost, upstream+"/", bytes.NewReader(body))
		if err != nil {
			return 0, nil, nil, err
		}
		for _, h := range []string{"Content-Type", "X-Amz-Target", "X-Amz-Date", "Authorization"} {
			req.Header.Set(h, header.Get(h))
		}
		resp, err := client.Do(req)
		if err != nil {
			return 0, nil, nil, err
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		return resp.StatusCode, resp.Header, b, err
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		status, header, out, err := forward(r.Header, body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		var in struct {
			TableName                           string
			Item                                map[string]json.RawMessage
			ReturnValuesOnConditionCheckFailure string
		}
		var failure map[string]json.RawMessage
		if r.Header.Get("X-Amz-Target") == "DynamoDB_20120810.PutItem" && status == http.StatusBadRequest &&
			json.Unmarshal(body, &in) == nil && in.ReturnValuesOnConditionCheckFailure == "ALL_OLD" &&
			json.Unmarshal(out, &failure) == nil && bytes.Contains(failure["__type"], []byte("ConditionalCheckFailedException")) {
			get, _ := json.Marshal(map[string]any{"TableName": in.TableName, "ConsistentRead": true,
				"Key": map[string]json.RawMessage{"call": in.Item["call"]}})
			getHeader := r.Header.Clone()
			getHeader.Set("X-Amz-Target", "DynamoDB_20120810.GetItem")
			_, _, got, err := forward(getHeader, get)
			var item struct{ Item json.RawMessage }
			if err == nil && json.Unmarshal(got, &item) == nil && item.Item != nil {
				failure["Item"] = item.Item
				out, _ = json.Marshal(failure)
			}
		}
		w.Header().Set("Content-Type", header.Get("Content-Type"))
		w.Header().Set("X-Amz-Crc32", strconv.FormatUint(uint64(crc32.ChecksumIEEE(out)), 10))
		w.WriteHeader(status)
		_, _ = w.Write(out)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}
