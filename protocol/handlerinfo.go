package protocol

import "github.com/median-go/median/internal/adapt/handlerinfo"

// The adapters read a Handler's configuration through handlerinfo.Of.
func init() {
	handlerinfo.Of = func(v any) handlerinfo.Info {
		h := v.(*Handler)
		_, mem := h.cfg.Store.(memoryStore)
		return handlerinfo.Info{Logger: h.cfg.Logger, MaxBodyBytes: h.cfg.MaxBodyBytes, MemoryStore: mem, StoreTimeout: h.cfg.StoreTimeout}
	}
}
