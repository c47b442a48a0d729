package protocol

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fastBodies are ToolCall bodies the fast decoder must take, as Median sends
// them (and with the variations the contract allows).
var fastBodies = []string{
	toolCall("echo", "call_0123456789abcdef0123456789abcdef", `{"orderId":1001,"note":"gift wrap"}`),
	`{"tool":"lookup_order","toolCallId":"test_6f1c","input":{},"context":{"conversationId":"test_6f1c","risk":"high","visitor":{"verified":false},"approvedBy":"A test from the CLI"}}`,
	"{\n  \"input\" : {\"a\": [1, {\"b\": \"}\"}], \"c\": null},\n  \"tool\": \"t\", \"toolCallId\": \"x\",\n  \"context\": {\"visitor\": {\"name\": \"Zoë\", \"verified\": true, \"externalId\": \"u1\"}, \"risk\": \"reviewed\", \"conversationId\": \"c\", \"future\": {\"x\": [true]}},\n  \"addedLater\": 3.5e2\n}\n",
	`{"tool":"t","toolCallId":"x","input":{"s":"quote \" and \\ inside"},"context":{"conversationId":"","risk":"medium","visitor":{"verified":true,"externalId":"","email":"a@b.c"}}}`,
}

// TestDecodeFastPathTaken: the usual bodies never pay for encoding/json,
// and decode exactly as encoding/json does.
func TestDecodeFastPathTaken(t *testing.T) {
	for _, body := range fastBodies {
		fast, ok := decodeCallFast([]byte(body))
		require.True(t, ok, "fast path refused %s", body)
		requireSameAsSlow(t, []byte(body), fast)
	}
}

// TestDecodeFastPathDeclines: bodies the fast decoder leaves to
// encoding/json, each for its own reason.
func TestDecodeFastPathDeclines(t *testing.T) {
	valid := `"toolCallId":"x","input":{},"context":{"conversationId":"c","risk":"low","visitor":{"verified":true}}`
	for name, body := range map[string]string{
		"escape in a string":    `{"tool":"t\u0041",` + valid + `}`,
		"op":                    `{"op":"diagnostics"}`,
		"case-folded key":       `{"Tool":"t",` + valid + `}`,
		"duplicate key":         `{"tool":"t","tool":"u",` + valid + `}`,
		"trailing data":         `{"tool":"t",` + valid + `}x`,
		"missing field":         `{` + valid + `}`,
		"empty tool":            `{"tool":"",` + valid + `}`,
		"bad risk":              `{"tool":"t","toolCallId":"x","input":{},"context":{"conversationId":"c","risk":"LOW","visitor":{"verified":true}}}`,
		"null email":            `{"tool":"t","toolCallId":"x","input":{},"context":{"conversationId":"c","risk":"low","visitor":{"verified":true,"email":null}}}`,
		"input not an object":   `{"tool":"t","toolCallId":"x","input":[],"context":{"conversationId":"c","risk":"low","visitor":{"verified":true}}}`,
		"invalid unknown value": `{"tool":"t","extra":{"a":},` + valid + `}`,
		"invalid UTF-8":         "{\"tool\":\"t\xff\"," + valid + "}",
		"deeper than the cap":   `{"tool":"t","deep":` + strings.Repeat("[", maxFastDepth+1) + strings.Repeat("]", maxFastDepth+1) + `,` + valid + `}`,
	} {
		_, ok := decodeCallFast([]byte(body))
		assert.False(t, ok, name)
	}
}

// FuzzDecodeBodyFast: whatever the fast decoder accepts, encoding/json
// accepts and decodes to the same call.
func FuzzDecodeBodyFast(f *testing.F) {
	for _, b := range fastBodies {
		f.Add([]byte(b))
	}
	// The bodies FuzzDecodeBody and FuzzServe found interesting.
	for _, dir := range []string{"FuzzDecodeBody", "FuzzServe"} {
		files, _ := filepath.Glob(filepath.Join("testdata", "fuzz", dir, "*"))
		for _, file := range files {
			data, err := os.ReadFile(file)
			if err != nil {
				continue
			}
			// A corpus file holds one Go literal a line; take the []byte ones.
			for line := range strings.SplitSeq(string(data), "\n") {
				if q, ok := strings.CutPrefix(line, "[]byte("); ok {
					if b, err := strconv.Unquote(strings.TrimSuffix(q, ")")); err == nil {
						f.Add([]byte(b))
					}
				}
			}
		}
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		fast, ok := decodeCallFast(body)
		if !ok {
			return
		}
		requireSameAsSlow(t, body, fast)
	})
}

// requireSameAsSlow checks that encoding/json decodes body to fast.
func requireSameAsSlow(t *testing.T, body []byte, fast *Call) {
	t.Helper()
	op, slow, err := decodeBodySlow(body)
	require.NoError(t, err, "fast accepted what encoding/json refuses: %q", body)
	require.Empty(t, op)
	require.Equal(t, slow.Tool, fast.Tool)
	require.Equal(t, slow.ToolCallID, fast.ToolCallID)
	require.Equal(t, slow.ConversationID, fast.ConversationID)
	require.Equal(t, slow.Risk, fast.Risk)
	require.Equal(t, slow.ApprovedBy, fast.ApprovedBy)
	require.Equal(t, slow.Visitor, fast.Visitor)
	require.True(t, bytes.Equal(slow.RawInput, fast.RawInput), "input %q vs %q", slow.RawInput, fast.RawInput)
	require.True(t, bytes.Equal(slow.Body, fast.Body))
}

// TestDecodeFastDepthAsSlow: a body nested past encoding/json's limit is
// refused like encoding/json refuses it, not decoded by the fast path.
func TestDecodeFastDepthAsSlow(t *testing.T) {
	deep := strings.Repeat("[", 9999) + strings.Repeat("]", 9999)
	body := `{"tool":"t","toolCallId":"x","input":{"a":` + deep + `},"context":{"conversationId":"c","risk":"low","visitor":{"verified":true}}}`
	_, _, err := decodeBody([]byte(body))
	require.Error(t, err)
	assert.Equal(t, CodeInvalidBody, errorCode(err))
}

// TestDecodeFastInputIsCapped: appending to RawInput never writes into Body.
func TestDecodeFastInputIsCapped(t *testing.T) {
	body := []byte(fastBodies[0])
	orig := string(body)
	call, ok := decodeCallFast(body)
	require.True(t, ok)
	_ = append(call.RawInput, "XXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXX"...)
	assert.Equal(t, orig, string(call.Body))
}
