package wirereport

import (
	"encoding/json"
	"testing"
)

// TestAbsentIsNotZero: an absent or null field decodes to nil, not to a
// zero a reader would take for a measurement, and a timestamp that is not
// RFC 3339 does not fail the report.
func TestAbsentIsNotZero(t *testing.T) {
	var r Report
	raw := `{"service":{"now":"yesterday"},"clock":{},"refused":{"stale_timestamp":{"count":1}},
		"store":{"kind":"custom","reachable":null},"tools":{"t":{"calls":1}}}`
	if err := json.Unmarshal([]byte(raw), &r); err != nil {
		t.Fatalf("decoding %s: %v", raw, err)
	}
	if r.Clock.SkewMs != nil || r.Refused["stale_timestamp"].MaxSkewMs != nil || r.Store.Reachable != nil || r.Tools["t"].LastFailure != nil {
		t.Errorf("absent or null fields must stay nil: %+v", r)
	}
	if r.Service.Now != "yesterday" {
		t.Errorf("service.now: got %q, want the string as sent", r.Service.Now)
	}
	var zero Report
	if err := json.Unmarshal([]byte(`{"clock":{"skewMs":0},"store":{"reachable":false}}`), &zero); err != nil {
		t.Fatal(err)
	}
	if zero.Clock.SkewMs == nil || *zero.Clock.SkewMs != 0 || zero.Store.Reachable == nil || *zero.Store.Reachable {
		t.Errorf("a sent 0 or false must be kept: %+v", zero)
	}
}
