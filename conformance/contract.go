package conformance

import (
	"net/http"
	"time"

	"github.com/median-go/median/protocol"
)

// The wire constants of the contract (docs/PROTOCOL.md), kept here so the
// suite states what it checks without borrowing them from the
// implementation it checks.
const (
	// signatureHeader is the request header of §1.1.
	signatureHeader = "median-signature"
	// window is how far a signature's t may be from the server's clock (§1.1).
	window = 5 * time.Minute
	// checkHeader marks a request as a check's, and checkTokenHeader
	// carries the token its answer gives (§10, "Checks are not traffic").
	checkHeader      = "median-check"
	checkTokenHeader = "median-check-token"
)

// codeStatuses is the table of §1 to §4 and §7: each code of the contract
// and the statuses it may come with. invalid_body is 400, or 413 for a body
// over the limit and 409 for a reused toolCallId (§2, §8).
var codeStatuses = map[protocol.Code][]int{
	protocol.CodeExecutionFailed:        {http.StatusOK},
	protocol.CodeDiagnosticsUnsupported: {http.StatusOK},
	protocol.CodeInvalidBody:            {http.StatusBadRequest, http.StatusRequestEntityTooLarge, http.StatusConflict},
	protocol.CodeUnknownOp:              {http.StatusBadRequest},
	protocol.CodeInvalidInput:           {http.StatusBadRequest},
	protocol.CodeMissingSignature:       {http.StatusUnauthorized},
	protocol.CodeMalformedSignature:     {http.StatusUnauthorized},
	protocol.CodeStaleTimestamp:         {http.StatusUnauthorized},
	protocol.CodeInvalidSignature:       {http.StatusUnauthorized},
	protocol.CodeUnknownTool:            {http.StatusNotFound},
	protocol.CodeMethodNotAllowed:       {http.StatusMethodNotAllowed},
	protocol.CodeMissingSecret:          {http.StatusInternalServerError},
	protocol.CodeInvalidMedianKey:       {http.StatusInternalServerError},
}

// riskRank orders the four risks of §2 for the floor of §9; a risk that is
// not one of them has no rank.
func riskRank(risk string) (int, bool) {
	switch risk {
	case "low":
		return 0, true
	case "medium":
		return 1, true
	case "reviewed":
		return 2, true
	case "high":
		return 3, true
	}
	return 0, false
}

// risks lists the four risks by rank.
var risks = [...]string{"low", "medium", "reviewed", "high"}
