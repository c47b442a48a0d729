package protocol

import (
	"slices"
	"time"
)

// keyring is the set of keys in force: the keys a request verifies under
// when it arrives, or, when there is none, the reason (answered 500). The
// Handler holds it behind an atomic pointer: a request reads it once, and a
// new read of the keys builds a new keyring and swaps it in, so swapping
// never blocks or races a request. A keyring is never changed once it is
// in force; only the counts of its keys move.
type keyring struct {
	keys []Key
	// names[i] says where keys[i] came from ("MEDIAN_KEY",
	// "MEDIAN_KEY_PREVIOUS_FILE", "Config.Keys[1]"), for the log and diagnostics.
	names []string
	// err is set when no usable key is in force: every request is answered
	// 500 with it.
	err *Error
	// readErr is set when the newest read of the keys gave no usable key
	// while keys stayed in force, or dropped a key being retired that was
	// not usable: from readSource (the key's own name when dropped) at
	// readAt; cleared by the next good read.
	readErr    *Error
	readSource string
	readAt     time.Time
}

// noKeys is the keyring of a Handler not built by New: it verifies
// nothing, so every signed request is invalid_signature.
var noKeys = &keyring{}

// newKeyring returns a keyring holding keys. A key already in prev (same
// fingerprint) is kept as it is, with what it counted: the count of a key
// being retired keeps growing only while Median still signs with it.
func newKeyring(keys []Key, names []string, prev *keyring) *keyring {
	if prev != nil {
		for i, k := range keys {
			for _, old := range prev.keys {
				if old.st.fingerprint == k.st.fingerprint {
					keys[i] = old
					break
				}
			}
		}
	}
	return &keyring{keys: keys, names: names}
}

// failedKeyring returns the keyring for a read of source at now that gave
// no usable key: when prev holds keys they stay in force, with err as the
// read's failure; otherwise every request is answered err.
func failedKeyring(err *Error, source string, now time.Time, prev *keyring) *keyring {
	if prev == nil || prev.err != nil || len(prev.keys) == 0 {
		return &keyring{err: err}
	}
	kept := *prev
	kept.readErr, kept.readSource, kept.readAt = err, source, now
	return &kept
}

// retireAllBut keeps, of r's keys being retired (all but the first, the
// current key), only those among still; r must not be in force yet.
func (r *keyring) retireAllBut(still []Key) {
	keys, names := r.keys[:1:1], r.names[:1:1] // new arrays: r's may be those of the keyring in force
	for i := 1; i < len(r.keys); i++ {
		if slices.ContainsFunc(still, func(k Key) bool { return k.st.fingerprint == r.keys[i].st.fingerprint }) {
			keys, names = append(keys, r.keys[i]), append(names, r.names[i])
		}
	}
	r.keys, r.names = keys, names
}

// keyring returns the keys in force.
func (h *Handler) keyring() *keyring {
	if r := h.keys.Load(); r != nil {
		return r
	}
	return noKeys
}
