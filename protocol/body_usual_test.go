package protocol

import (
	"bytes"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"
	"weak"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// usualBase is a usual call with every known field, each at a place
// where a case below can put something else.
const usualBase = `{"tool":"t","toolCallId":"c","input":{"a":1},"context":{"conversationId":"conv","risk":"low","visitor":{"verified":true,"externalId":"u","email":"e","name":"n"},"approvedBy":"A"}}`

// checkUsualAgrees holds decodeUsual to decodeAny for body: when the fast
// decoder takes it, the slow one must take it too with the same fields.
// It reports whether decodeUsual took body.
func checkUsualAgrees(t *testing.T, body []byte) (took bool) {
	t.Helper()
	var usual, slow bodyFields
	took = decodeUsual(body, &usual)
	slowErr := decodeAny(body, &slow)
	if took {
		require.Nil(t, slowErr, "decodeUsual took %q, decodeAny refuses it", body)
		require.Equal(t, slow, usual, "%q", body)
	}
	return took
}

// usualBodies are tool calls decodeUsual reads itself, without handing
// them to the slower decodeAny.
var usualBodies = []string{
	fullCall,
	`{"tool":"t","toolCallId":"c","input":{},"context":{"conversationId":"","risk":"low","visitor":{"verified":false}}}`,
	`{"extra":[1,{"a":null}],"tool":"t","toolCallId":"c\u00e9\n","input":{"a":[1,2,{"b":"c"}]},"context":{"more":{},"conversationId":"conv","risk":"high","visitor":{"verified":true,"externalId":"u","other":1},"approvedBy":"A teammate"}}` + " \n",
	`{"tool":"t","toolCallId":"c","input":{},"context":{"conversationId":"c","risk":"extreme","visitor":{"verified":true}}}`,
	`{"toolCallId":"c","input":{},"context":{}}`,
}

// TestDecodeUsualReadsTheUsualCall: the calls Median sends take the fast
// path, and the fast path hands everything else to decodeAny.
func TestDecodeUsualReadsTheUsualCall(t *testing.T) {
	for _, body := range usualBodies {
		require.True(t, checkUsualAgrees(t, []byte(body)), "decodeUsual reads %q itself", body)
	}
	// Each of these goes to decodeAny, which decodes or explains it.
	for _, body := range []string{
		`{"op":"diagnostics"}`,
		`{"tool":null,"toolCallId":"c","input":{},"context":{"conversationId":"c","risk":"low","visitor":{"verified":true}}}`,
		`{"tool":1}`,
		`{"to\u006fl":"t"}`,
		`{"tool":"a","tool":"b"}`,
		`{"input":{"a":1,"a":2}}`,
		`{"context":{"visitor":{"verified":"yes"}}}`,
		`{"input":[]}`,
		`{} {}`,
		`{"tool":"a"`,
		"{\"tool\":\"\xff\"}",
		`[]`,
	} {
		var f bodyFields
		assert.False(t, decodeUsual([]byte(body), &f), body)
	}
}

func TestDecodeUsualVariants(t *testing.T) {
	repl := func(old, new string) string {
		require.Contains(t, usualBase, old)
		return strings.Replace(usualBase, old, new, 1)
	}
	deep := strings.Repeat(`[`, 9990) + strings.Repeat(`]`, 9990)
	long := strings.Repeat("x", 5000)
	cases := []string{
		usualBase,
		// escaped names, at every depth, known and unknown
		repl(`"tool"`, `"to\u006fl"`),
		repl(`"toolCallId"`, `"toolCall\u0049d"`),
		repl(`"input"`, `"\u0069nput"`),
		repl(`"context"`, `"c\u006fntext"`),
		repl(`"risk"`, `"r\u0069sk"`),
		repl(`"visitor"`, `"v\u0069sitor"`),
		repl(`"verified"`, `"verif\u0069ed"`),
		repl(`"externalId"`, `"externalI\u0064"`),
		repl(`"email"`, `"emai\u006c"`),
		repl(`"name"`, `"nam\u0065"`),
		repl(`"approvedBy"`, `"approved\u0042y"`),
		repl(`"a":1`, `"\u0061":1`),
		repl(`"tool":"t"`, `"x\u0041":1,"tool":"t"`),
		repl(`"tool":"t"`, `"op\u0000":1,"tool":"t"`),
		repl(`"tool":"t"`, `"\u006fp":"diagnostics","tool":"t"`),
		// an escaped spelling of a name given plainly too
		repl(`"tool":"t"`, `"tool":"t","to\u006fl":"t"`),
		repl(`"risk":"low"`, `"risk":"low","ris\u006b":"low"`),
		// case variants
		repl(`"tool"`, `"Tool"`),
		repl(`"tool"`, `"TOOL"`),
		repl(`"toolCallId"`, `"toolcallid"`),
		repl(`"context"`, `"Context"`),
		repl(`"visitor"`, `"Visitor"`),
		repl(`"verified"`, `"Verified"`),
		repl(`"email"`, `"EMAIL"`),
		repl(`"approvedBy"`, `"approvedby"`),
		repl(`"tool":"t"`, `"OP":"x","tool":"t"`),
		// names given twice, at every depth
		repl(`"tool":"t"`, `"tool":"t","tool":"t"`),
		repl(`"a":1`, `"a":1,"a":1`),
		repl(`"a":1`, `"a":{"b":1,"b":2}`),
		repl(`"tool":"t"`, `"x":{"b":1,"b":2},"tool":"t"`),
		repl(`"tool":"t"`, `"x":1,"x":2,"tool":"t"`),
		repl(`"tool":"t"`, `"x":[{"b":1,"b":2}],"tool":"t"`),
		repl(`"risk":"low"`, `"risk":"low","more":{"q":1,"q":1}`),
		repl(`"name":"n"`, `"name":"n","name":"n"`),
		repl(`"name":"n"`, `"name":"n","o":1,"o":1`),
		repl(`"verified":true`, `"verified":true,"verified":false`),
		repl(`"approvedBy":"A"`, `"approvedBy":"A","visitor":{}`),
		repl(`"tool":"t"`, `"":1,"":2,"tool":"t"`),
		// empty keys, empty strings
		repl(`"tool":"t"`, `"":1,"tool":"t"`),
		repl(`"a":1`, `"":1`),
		repl(`"email":"e"`, `"email":""`),
		repl(`"conversationId":"conv"`, `"conversationId":""`),
		// nulls
		repl(`"tool":"t"`, `"tool":null`),
		repl(`"input":{"a":1}`, `"input":null`),
		repl(`"email":"e"`, `"email":null`),
		repl(`"approvedBy":"A"`, `"approvedBy":null`),
		repl(`"verified":true`, `"verified":null`),
		repl(`"a":1`, `"a":null`),
		repl(`"tool":"t"`, `"x":null,"tool":"t"`),
		repl(`"tool":"t"`, `"op":null,"tool":"t"`),
		// other kinds
		repl(`"tool":"t"`, `"tool":1`),
		repl(`"verified":true`, `"verified":"true"`),
		repl(`"verified":true`, `"verified":1`),
		repl(`"input":{"a":1}`, `"input":[1]`),
		repl(`"input":{"a":1}`, `"input":"{}"`),
		repl(`"visitor":{`, `"visitor":[],"v":{`),
		// an op, of any kind
		repl(`"tool":"t"`, `"op":"diagnostics","tool":"t"`),
		repl(`"tool":"t"`, `"op":"x","tool":"t"`),
		repl(`"tool":"t"`, `"op":1,"tool":"t"`),
		`{"op":"diagnostics"}`,
		// white space, BOM, trailing data
		" \t\r\n" + usualBase + " \t\r\n",
		"\ufeff" + usualBase,
		usualBase + "\ufeff",
		usualBase + "\x00",
		usualBase + " {}",
		usualBase + "{}",
		usualBase + " 1",
		usualBase + `"x"`,
		usualBase + "]",
		usualBase + "}",
		usualBase + ",",
		usualBase[:len(usualBase)-1],
		usualBase + "\u00a0",
		strings.ReplaceAll(usualBase, ",", " ,\n "),
		strings.ReplaceAll(usualBase, ":", " :\t"),
		// invalid UTF-8 and surrogates
		repl(`"t"`, "\"\xff\""),
		repl(`"t"`, "\"\xc0\xaf\""),
		repl(`"t"`, "\"\xed\xa0\x80\""),
		repl(`"e"`, "\"a\xffb\""),
		repl(`"a":1`, "\"\xff\":1"),
		repl(`"a":1`, "\"a\":\"\xff\""),
		repl(`"tool":"t"`, "\"\xff\":1,\"tool\":\"t\""),
		repl(`"t"`, `"\ud800"`),
		repl(`"t"`, `"\udc00"`),
		repl(`"t"`, `"\ud83d\ude00"`),
		repl(`"t"`, `"\ud83d\u0041"`),
		repl(`"t"`, `"\ud83dx"`),
		repl(`"e"`, `"\u0000"`),
		repl(`"e"`, `"\"\\\/\b\f\n\r\t"`),
		repl(`"e"`, `"\u00e9\u20ac"`),
		repl(`"e"`, "\"\u00e9\u20ac\U0001F600\""),
		repl(`"t"`, "\"a\tb\""),
		repl(`"t"`, "\"a\x7fb\""),
		repl(`"t"`, `"\x"`),
		repl(`"t"`, `"\u12"`),
		repl(`"a":1`, `"a":"\ud800"`),
		// numbers
		repl(`"a":1`, `"a":1e999`),
		repl(`"a":1`, `"a":-0`),
		repl(`"a":1`, `"a":01`),
		repl(`"a":1`, `"a":1.`),
		repl(`"a":1`, `"a":.5`),
		repl(`"a":1`, `"a":+1`),
		repl(`"a":1`, `"a":123456789012345678901234567890`),
		repl(`"tool":"t"`, `"x":1e-999,"tool":"t"`),
		repl(`"tool":"t"`, `"x":NaN,"tool":"t"`),
		// nesting
		repl(`"a":1`, `"a":`+deep),
		repl(`"a":1`, `"a":`+strings.Repeat(`[`, 10001)+strings.Repeat(`]`, 10001)),
		repl(`"tool":"t"`, `"x":`+deep+`,"tool":"t"`),
		// long strings (past the pooled scratch's 4 KiB)
		repl(`"t"`, `"`+long+`"`),
		repl(`"e"`, `"`+long+`\n"`),
		repl(`"a":1`, `"a":"`+long+`"`),
		// not an object
		`[]`, `"x"`, `null`, `1`, ``, ` `, `{`, `}`, `{}`, `{"tool"}`, `{"tool":}`, `{,}`,
		`{"tool":"t",}`, `{"tool":"t" "toolCallId":"c"}`,
	}
	took := 0
	for _, body := range cases {
		if checkUsualAgrees(t, []byte(body)) {
			took++
		}
		// and the whole decode through both paths at once
		checkDecodeBodyIsDecodeAny(t, []byte(body))
	}
	t.Logf("decodeUsual took %d of %d", took, len(cases))
}

// checkDecodeBodyIsDecodeAny compares decodeBody with what decodeAny
// alone would answer.
func checkDecodeBodyIsDecodeAny(t *testing.T, body []byte) {
	t.Helper()
	op, call, err := decodeBody(body)
	var f bodyFields
	var wantOp string
	var wantCall *Call
	var wantErr error
	if e := decodeAny(body, &f); e != nil {
		wantErr = e
	} else {
		wantOp, wantCall, wantErr = f.call(body)
	}
	require.Equal(t, wantOp, op, "%q", body)
	require.Equal(t, fmt.Sprint(wantErr), fmt.Sprint(err), "%q", body)
	require.Equal(t, wantCall, call, "%q", body)
}

// TestDecodeUsualStringsStay: a call's strings do not change when
// the body's bytes change afterwards or when more calls are decoded, on
// the same goroutine (the same pooled decoder) or on others.
func TestDecodeUsualStringsStay(t *testing.T) {
	body := []byte(strings.Replace(usualBase, `"e"`, `"e\u00e9"`, 1))
	_, call, err := decodeBody(body)
	require.NoError(t, err)
	for i := range body {
		if body[i] >= 'a' && body[i] <= 'z' {
			body[i] = 'Z'
		}
	}
	for i := range 100 {
		other := strings.NewReplacer(`"t"`, fmt.Sprintf(`"tool%d"`, i), `"c"`, fmt.Sprintf(`"%s"`, strings.Repeat("q", i*100+1)), `"e"`, `"x"`).Replace(usualBase)
		_, c2, err := decodeBody([]byte(other))
		require.NoError(t, err)
		require.Equal(t, fmt.Sprintf("tool%d", i), c2.Tool)
	}
	assert.Equal(t, "t", call.Tool)
	assert.Equal(t, "c", call.ToolCallID)
	assert.Equal(t, "conv", call.ConversationID)
	assert.Equal(t, Risk("low"), call.Risk)
	assert.Equal(t, "A", call.ApprovedBy)
	assert.Equal(t, "eé", call.Visitor.UnverifiedEmail)
	assert.Equal(t, "n", call.Visitor.UnverifiedName)
	assert.Equal(t, "u", call.Visitor.externalID)
}

// TestDecodeUsualParallel decodes different calls on many goroutines
// at once (run with -race): each gets its own strings.
func TestDecodeUsualParallel(t *testing.T) {
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 500 {
				tool := fmt.Sprintf("tool_%d_%d", g, i)
				email := strings.Repeat("m", (g*31+i)%6000)
				body := strings.NewReplacer(`"t"`, `"`+tool+`"`, `"e"`, `"`+email+`"`).Replace(usualBase)
				if i%7 == 0 {
					body = strings.Replace(body, `"tool"`, `"to\u006fl"`, 1) // the slow path
				}
				_, call, err := decodeBody([]byte(body))
				if !assert.NoError(t, err) {
					return
				}
				runtime.Gosched()
				if !assert.Equal(t, tool, call.Tool) || !assert.Equal(t, email, call.Visitor.UnverifiedEmail) {
					return
				}
			}
		})
	}
	wg.Wait()
}

// TestDecodeUsualKeepsNoBody: the pooled decoder does not keep a
// large body alive once its call is dropped.
func TestDecodeUsualKeepsNoBody(t *testing.T) {
	const size = 1 << 20
	for _, mk := range []func(*[size]byte) []byte{
		func(arr *[size]byte) []byte { // a usual call with a large input
			head := `{"tool":"t","toolCallId":"c","context":{"conversationId":"c","risk":"low","visitor":{"verified":false}},"input":{"a":"`
			n := copy(arr[:], head)
			for i := n; i < size-3; i++ {
				arr[i] = 'x'
			}
			copy(arr[size-3:], `"}}`)
			return arr[:]
		},
		func(arr *[size]byte) []byte { // a refused one, many names
			var b bytes.Buffer
			b.WriteString(`{"tool":"t","x":{`)
			for i := 0; b.Len() < size-100; i++ {
				fmt.Fprintf(&b, `"n%d":1,`, i)
			}
			b.WriteString(`"z":1},"z":1,"z":1}`)
			return arr[:copy(arr[:], b.Bytes())]
		},
	} {
		arr := new([size]byte)
		body := mk(arr)
		var f bodyFields
		decodeUsual(body, &f)
		wp := weak.Make(arr)
		arr, body, f = nil, nil, bodyFields{}
		// One collection: a pool keeps what it holds through the first
		// (in its victim cache), so a body the pooled decoder still
		// pointed to would survive it.
		runtime.GC()
		assert.Nil(t, wp.Value(), "the body is still reachable after its decode")
	}
}
