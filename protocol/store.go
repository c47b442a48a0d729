package protocol

import (
	"context"
	"time"
)

// Store remembers tool-call answers by toolCallId, so a repeated call gets
// the first answer back byte for byte and the tool runs once (replay
// protection and idempotency). The core uses it only after the signature is
// verified and the input validated, and only for tool calls.
//
// The default is an in-memory store for one process; use a shared store
// (protocol/redisstore) when several instances serve the same endpoint.
// Implementations must be safe for concurrent use.
type Store interface {
	// Claim atomically claims id for a caller whose body hashes to
	// fingerprint, for at most lease. It returns:
	//   - ClaimAcquired: the caller must run the tool, then call Save;
	//   - ClaimDone: the answer is stored; Answer holds its bytes;
	//   - ClaimConflict: id was used with a different body, whether that
	//     call is still running or already answered.
	// While another caller holds a live claim with the same fingerprint,
	// Claim waits for its answer, until ctx is done (then it returns
	// ctx.Err() promptly, leaving nothing behind) or the lease ends (then
	// the caller takes the claim over: the tool may run a second time,
	// which is what a crashed instance costs).
	Claim(ctx context.Context, id, fingerprint string, lease time.Duration) (ClaimResult, error)
	// Save stores the answer for id, keeps it for ttl and wakes the callers
	// waiting on it. It stores the answer even when the claim's lease has
	// ended and nobody took it over. It keeps what is there when id already
	// holds an answer (the first answer wins, so every repeat gets the same
	// bytes) or a live claim of a different fingerprint.
	Save(ctx context.Context, id, fingerprint string, answer []byte, ttl time.Duration) error
}

// ClaimStatus is the outcome of [Store.Claim].
type ClaimStatus int

// The outcomes of [Store.Claim].
const (
	ClaimAcquired ClaimStatus = iota + 1 // run the tool, then Save
	ClaimDone                            // answer stored: send it again
	ClaimConflict                        // id already used with another body
)

// ClaimResult is what [Store.Claim] returns.
type ClaimResult struct {
	Status ClaimStatus
	Answer []byte // the stored answer, when Status is ClaimDone; the caller owns it
}

// claim is the claim a Call holds between the store's Claim and Save.
type claim struct {
	store       Store
	fingerprint string
}
