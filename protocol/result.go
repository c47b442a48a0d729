package protocol

import (
	"encoding/json"

	"github.com/median-go/median/protocol/internal/budget"
)

// FitResult encodes v as JSON of at most maxChars characters (0 or less:
// 4,000, what the agent reads of a result; PROTOCOL.md §3.3). A result that
// fits is returned as encoded. A longer one is trimmed as valid JSON: whole
// list items are dropped from the end of the longest lists first, and the
// object holding each list says how many it left out, for example
// {"orders":[…],"omitted":37}; a list at the top becomes
// {"items":[…],"omitted":37}. When nothing can make it fit (one long string,
// no list to shorten), the error says why and what to return instead.
//
// Return its result from a tool to answer a long list; [WithResultBudget]
// applies it to every result of a tool.
func FitResult(v any, maxChars int) (json.RawMessage, error) {
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	if maxChars <= 0 {
		maxChars = maxResultChars
	}
	return fitResult(raw, maxChars)
}

// fitResult trims an encoded result to maxChars characters.
func fitResult(raw []byte, maxChars int) ([]byte, error) {
	return budget.Fit(raw, maxChars)
}
