package conformance

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"sync"
	"time"
)

// session holds what the cases of one run share.
type session struct {
	ctx     context.Context
	t       Target
	timeout time.Duration
	signer  signer // Target.Key, parsed once
	checks  checkTokens

	leakMu sync.Mutex
	leak   *roundTrip // the first answer of the running case that carried its request's MAC

	manifestOnce sync.Once
	manifest     map[string]manifestTool // by name; nil when it could not be read
	manifestErr  error

	reportOnce sync.Once
	reportNA   string // why the target has no §10 report; "" when it has one
}

// newID returns prefix followed by n random bytes in hex.
func newID(prefix string, n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return prefix + hex.EncodeToString(b)
}

// now is the clock the cases sign with.
func (s *session) now() time.Time { return s.t.Now() }

// runnable returns the samples whose tool may run and whose expectation is
// one of want.
func (s *session) runnable(want ...string) (list []ToolSample, held int) {
	for _, smp := range s.t.Tools {
		ok := false
		for _, w := range want {
			ok = ok || smp.expect() == w
		}
		if !ok {
			continue
		}
		if smp.SideEffects && !s.t.AllowSideEffects {
			held++
			continue
		}
		list = append(list, smp)
	}
	return list, held
}

// noSample explains how to supply a sample for a skipped case.
func noSample(what string, held int) finding {
	msg := "no tool sample " + what + ": add a ToolSample entry to Target.Tools (mediancheck: -samples FILE.json)"
	if held > 0 {
		msg += fmt.Sprintf("; %d matching sample(s) are marked SideEffects and run only with Target.AllowSideEffects (mediancheck: -side-effects)", held)
	}
	return skip(msg)
}
