package protocol

import (
	"errors"
	"fmt"
)

// Widget hint limits of PROTOCOL.md §3.2.
const (
	MaxNavigateToLength = 2048
	MaxHighlightLength  = 256
)

// Hints are the widget hints a result object may carry (PROTOCOL.md §3.2).
// Median removes them before the agent reads the result and turns them into
// a button and a highlight in the chat widget. Embed Hints in your result
// struct and set them with [Hints.SetNavigateTo] and [Hints.SetHighlight],
// which enforce the contract's rules:
//
//	type OrderResult struct {
//		OrderID string `json:"orderId"`
//		protocol.Hints
//	}
//
// Setting the fields directly skips the checks; the core still removes an
// invalid hint from the result (with a warning) before answering.
type Hints struct {
	NavigateTo string `json:"medianNavigateTo,omitempty"` // a path on your site, starting with a single "/"
	Highlight  string `json:"medianHighlight,omitempty"`  // a CSS selector to highlight
}

// SetNavigateTo sets the path the widget offers to open. It must start with
// a single "/" (a path on your own site, not another origin) and be at most
// 2,048 characters.
func (h *Hints) SetNavigateTo(path string) error {
	if err := CheckNavigateTo(path); err != nil {
		return err
	}
	h.NavigateTo = path
	return nil
}

// SetHighlight sets the CSS selector the widget highlights; at most 256
// characters.
func (h *Hints) SetHighlight(selector string) error {
	if err := CheckHighlight(selector); err != nil {
		return err
	}
	h.Highlight = selector
	return nil
}

// CheckNavigateTo reports whether path is a valid medianNavigateTo.
func CheckNavigateTo(path string) error {
	switch {
	case len([]rune(path)) > MaxNavigateToLength:
		return fmt.Errorf("medianNavigateTo: at most %d characters, got %d", MaxNavigateToLength, len([]rune(path)))
	case len(path) == 0 || path[0] != '/':
		return errors.New(`medianNavigateTo: must be a path on your site starting with "/"`)
	case len(path) > 1 && (path[1] == '/' || path[1] == '\\'):
		return errors.New(`medianNavigateTo: must start with a single "/" ("//" would leave your site)`)
	}
	return nil
}

// CheckHighlight reports whether selector is a valid medianHighlight.
func CheckHighlight(selector string) error {
	switch n := len([]rune(selector)); {
	case n == 0:
		return errors.New("medianHighlight: must not be empty")
	case n > MaxHighlightLength:
		return fmt.Errorf("medianHighlight: at most %d characters, got %d", MaxHighlightLength, n)
	}
	return nil
}
