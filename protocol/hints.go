package protocol

import (
	"errors"
	"fmt"
	"unicode/utf8"
)

// Widget hint limits of PROTOCOL.md §3.2.
const (
	maxNavigateToLength = 2048
	maxHighlightLength  = 256
)

// Hints are the widget hints a result object may carry (PROTOCOL.md §3.2).
// Median removes them before the agent reads the result and turns them into
// a button and a highlight in the chat widget. Embed Hints in your result
// struct:
//
//	type OrderResult struct {
//		OrderID string `json:"orderId"`
//		protocol.Hints
//	}
//
// NavigateTo must be a path on your site starting with a single "/" (at
// most 2,048 characters); Highlight a CSS selector of at most 256
// characters. The core removes an invalid hint from the result, with a
// warning in the log, before answering.
type Hints struct {
	NavigateTo string `json:"medianNavigateTo,omitempty"` // a path on your site, starting with a single "/"
	Highlight  string `json:"medianHighlight,omitempty"`  // a CSS selector to highlight
}

// checkNavigateTo reports whether path is a valid medianNavigateTo.
func checkNavigateTo(path string) error {
	switch n := utf8.RuneCountInString(path); {
	case n > maxNavigateToLength:
		return fmt.Errorf("medianNavigateTo: at most %d characters, got %d", maxNavigateToLength, n)
	case len(path) == 0 || path[0] != '/':
		return errors.New(`medianNavigateTo: must be a path on your site starting with "/"`)
	case len(path) > 1 && (path[1] == '/' || path[1] == '\\'):
		return errors.New(`medianNavigateTo: must start with a single "/" ("//" would leave your site)`)
	}
	return nil
}

// checkHighlight reports whether selector is a valid medianHighlight.
func checkHighlight(selector string) error {
	switch n := utf8.RuneCountInString(selector); {
	case n == 0:
		return errors.New("medianHighlight: must not be empty")
	case n > maxHighlightLength:
		return fmt.Errorf("medianHighlight: at most %d characters, got %d", maxHighlightLength, n)
	}
	return nil
}
