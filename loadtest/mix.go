package loadtest

import (
	"fmt"
	"net/http"
	"time"

	"github.com/median-go/median/protocol"
)

// Kind is one kind of request in the load mix.
type Kind string

// The kinds of request the load run sends, and the status each must get.
const (
	KindValid        Kind = "valid"         // signed lookup_order, verified visitor, unique toolCallId: 200 result
	KindUnverified   Kind = "unverified"    // signed lookup_order, unverified visitor: 200 not_signed_in refusal
	KindReplay       Kind = "replay"        // a valid call sent again, same id and signature: 200 stored answer
	KindBadSignature Kind = "bad_signature" // signed with a key the server does not hold: 401
	KindStale        Kind = "stale"         // signed ten minutes ago: 401
	KindBadJSON      Kind = "bad_json"      // signed body that is not JSON: 400
	KindUnknownTool  Kind = "unknown_tool"  // signed call for a tool nobody registered: 404
	KindMethod       Kind = "method"        // PUT: 405
	KindManifest     Kind = "manifest"      // signed GET: 200 manifest
)

// mix is the order in which a worker cycles through the kinds: half valid
// calls, the rest refusals and junk.
var mix = []Kind{
	KindValid, KindUnverified, KindValid, KindBadSignature, KindValid,
	KindBadJSON, KindValid, KindReplay, KindValid, KindUnknownTool,
	KindValid, KindMethod, KindValid, KindUnverified, KindValid,
	KindStale, KindValid, KindManifest, KindValid, KindReplay,
}

// Kinds lists every kind in the order reports show them.
func Kinds() []Kind {
	return []Kind{KindValid, KindUnverified, KindReplay, KindBadSignature, KindStale, KindBadJSON, KindUnknownTool, KindMethod, KindManifest}
}

// expectedStatus is the status the contract gives each kind.
var expectedStatus = map[Kind]int{
	KindValid:        http.StatusOK,
	KindUnverified:   http.StatusOK,
	KindReplay:       http.StatusOK,
	KindBadSignature: http.StatusUnauthorized,
	KindStale:        http.StatusUnauthorized,
	KindBadJSON:      http.StatusBadRequest,
	KindUnknownTool:  http.StatusNotFound,
	KindMethod:       http.StatusMethodNotAllowed,
	KindManifest:     http.StatusOK,
}

// wrongKey signs the bad-signature requests; no server holds it.
var wrongKey = mustParseKey("medianload-wrong-key-0000000000000000000000")

// mustParseKey parses a key this program knows to be usable.
func mustParseKey(key string) protocol.Key {
	k, err := protocol.ParseKey(key)
	if err != nil {
		panic(err)
	}
	return k
}

// request is one request ready to send.
type request struct {
	kind   Kind
	method string
	body   []byte
	sig    string
}

// builder makes the requests of one worker.
type builder struct {
	key    protocol.Key
	prefix string // unique per run and worker
	n      int
	last   *request // the worker's last valid call, for replays
}

func (b *builder) call(tool string, verified bool) []byte {
	b.n++
	visitor := `{"verified":false,"email":"visitor@example.com"}`
	if verified {
		visitor = `{"verified":true,"externalId":"user_7","email":"ada@example.com","name":"Ada"}`
	}
	// Ten calls per conversation, as a real agent makes a few: the
	// examples cap lookup_order at 20 calls per conversation per minute.
	return fmt.Appendf(nil, `{"tool":%q,"toolCallId":"%s_%d","input":{"orderId":"A-%d"},"context":{"conversationId":"conv_%s_%d","risk":"low","visitor":%s}}`,
		tool, b.prefix, b.n, 1000+b.n%9000, b.prefix, b.n/10, visitor)
}

// next builds the request of kind k, signed now.
func (b *builder) next(k Kind, now time.Time) request {
	r := request{kind: k, method: http.MethodPost}
	switch k {
	case KindValid:
		r.body = b.call("lookup_order", true)
	case KindUnverified:
		r.body = b.call("lookup_order", false)
	case KindReplay:
		if b.last != nil {
			return request{kind: k, method: b.last.method, body: b.last.body, sig: b.last.sig}
		}
		r.body = b.call("lookup_order", true)
	case KindBadSignature:
		r.body = b.call("lookup_order", true)
		r.sig = wrongKey.Sign(now, r.body)
		return r
	case KindStale:
		r.body = b.call("lookup_order", true)
		r.sig = b.key.Sign(now.Add(-10*time.Minute), r.body)
		return r
	case KindBadJSON:
		r.body = []byte(`{"tool":"lookup_order","toolCallId":`)
	case KindUnknownTool:
		r.body = b.call("drop_all_orders", true)
	case KindMethod:
		r.method = http.MethodPut
		r.body = []byte(`{}`)
	case KindManifest:
		r.method = http.MethodGet
	}
	r.sig = b.key.Sign(now, r.body)
	if k == KindValid || k == KindReplay {
		last := r
		b.last = &last
	}
	return r
}
