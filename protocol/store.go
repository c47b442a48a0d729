package protocol

import (
	"context"
	"time"

	"github.com/median-go/median/protocol/internal/memstore"
)

// Store remembers tool-call answers by toolCallId, so a repeated call gets
// the first answer back byte for byte and the tool runs once (replay
// protection and idempotency, PROTOCOL.md §8). The core uses it only after
// the signature is verified and the input validated, and only for tool
// calls.
//
// The default is an in-memory store for one process, bounded in bytes
// (Config.ReplayMaxBytes); use a shared store (protocol/redisstore,
// protocol/pgstore) when several instances serve the same endpoint. Check
// an implementation with protocol/storetest. Implementations must be safe for concurrent use.
//
// Every call runs under a deadline (Config.StoreTimeout, default 1 s): a
// store must honour ctx, or a store that hangs holds each request with it.
// When Claim fails or runs out of time, the tool is not run and the call is
// answered execution_failed (unless the tool is [ReadOnly]: it then runs,
// and its answer is sent, not kept); when Save does, the answer still goes
// out and the failure is logged.
//
// A Store may also offer these methods, which the core finds by type
// assertion:
//
//	Kind() string               // "memory", "redis", "postgres"; diagnostics show it
//	Probe(ctx context.Context) error // one cheap round trip, for diagnostics
//	RunClaimed(ctx context.Context, key, fingerprint string, lease, ttl, timeout time.Duration,
//		run func(ctx context.Context) (answer []byte, commit bool)) (ClaimStatus, []byte, error)
//
// RunClaimed is for a store kept in the application's own database, so
// that the tool's writes and its answer commit together (PROTOCOL.md
// §8.1): the core calls it instead of Claim and Save for the tools a
// Handler runs itself. It claims key as Claim does, inside a transaction,
// and returns what Claim would when the call is not acquired. When it is,
// it calls run once with a context that carries the transaction (the
// store's own function gives it to the tool, e.g. pgstore.Tx), keeps the
// answer run returns for ttl in the same transaction and commits: with the
// tool's writes when commit is true, without them otherwise. An error after
// run means nothing was committed. Each of its own steps runs under
// timeout (Config.StoreTimeout); run is bounded by the tool's timeout.
// Calls answered through [Handler.Middleware] use Claim and Save.
type Store interface {
	// Claim atomically claims key for a caller whose body hashes to
	// fingerprint, for at most lease, in one step: it never waits for another
	// caller. key is a fixed-size digest of the toolCallId computed by the
	// core (64 hex chars), so stores never see a long id.
	//   ClaimAcquired: run the tool, then Save.
	//   ClaimRunning:  another caller holds a live claim with the same
	//                  fingerprint; the core asks again shortly.
	//   ClaimDone:     answer holds the stored answer (the caller owns it).
	//   ClaimConflict: key was used with a different fingerprint.
	// A claim whose lease ended without an answer is handed to the caller
	// (ClaimAcquired): that is what a crashed instance costs.
	// Claim must return promptly when ctx is done.
	Claim(ctx context.Context, key, fingerprint string, lease time.Duration) (status ClaimStatus, answer []byte, err error)
	// Save stores answer for key for ttl and returns how many other answers
	// the store dropped before their TTL to make room (0 for stores that never
	// do). The first answer wins; a live claim of another fingerprint is kept.
	// An answer the store cannot keep at all (larger than its whole budget)
	// counts as dropped too, since its toolCallId could then run again.
	// answer is the body about to be sent: read it, never write into it,
	// and keep a copy of it rather than the slice (storetest checks that).
	Save(ctx context.Context, key, fingerprint string, answer []byte, ttl time.Duration) (evicted int, err error)
	// Renew extends the claim on key held with fingerprint so that it lasts
	// lease from now; the core calls it while the claim's tool runs (and
	// while a failed Save is retried), every lease/3 or so. It never
	// touches a saved answer or a claim of another fingerprint: there is
	// then nothing to extend and it returns nil. It must return promptly
	// when ctx is done.
	Renew(ctx context.Context, key, fingerprint string, lease time.Duration) error
}

// ClaimStatus is the outcome of [Store.Claim].
type ClaimStatus int

// ClaimAcquired is an outcome of [Store.Claim]: run the tool, then Save.
const ClaimAcquired ClaimStatus = 1

// ClaimRunning: the same call is running elsewhere: ask again shortly.
const ClaimRunning ClaimStatus = 2

// ClaimDone: answer stored: send it again.
const ClaimDone ClaimStatus = 3

// ClaimConflict: key already used with another body.
const ClaimConflict ClaimStatus = 4

// claim is the claim a call holds between the store's Claim and Save.
type claim struct {
	store       Store  // nil when no claim is held
	key         string // the toolCallId's digest (hex SHA-256), for a Store
	fingerprint string // the body's (hex SHA-256), for a Store
	// The built-in memory store's digests of the same, used instead of key
	// and fingerprint when store is a memoryStore.
	memKey, memFingerprint memstore.Digest
	memTicket              memstore.Ticket // the memory store's claim, for its Save
	saved                  bool            // Save was called: a claim is saved once
}
