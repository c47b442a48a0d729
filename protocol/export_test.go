package protocol

import "time"

// MemoryStoreForTest returns the default in-memory store, with a budget of
// maxBytes (0 for the default), for tests outside the package; its Claim
// and Save read clock now (nil for time.Now), which a Handler given the
// store ignores (see newMemoryStore).
func MemoryStoreForTest(maxBytes int64, now func() time.Time) Store {
	return newMemoryStore(maxBytes, now)
}

// MemoryStoreBytes returns what h's in-memory store charges against its
// budget, or -1 when h uses another store.
func MemoryStoreBytes(h *Handler) int64 {
	m, ok := h.cfg.Store.(memoryStore)
	if !ok {
		return -1
	}
	return m.s.Bytes()
}
