package budget

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/median-go/median/internal/base/chars"
)

// ErrTooLarge is wrapped by the error Fit returns when no shortening its
// rules allow brings a result within the budget.
var ErrTooLarge = errors.New("result does not fit the budget")

// ErrBadInput is wrapped by the error Fit returns for input that is not one
// JSON value or a budget below 1.
var ErrBadInput = errors.New("bad input to budget.Fit")

// errMoreThanOne is the reason given for input with a second value.
var errMoreThanOne = errors.New("more than one value")

// Fit returns raw, one JSON value, shortened to at most maxChars characters
// by the rules of the package doc: whole items dropped from the end of the
// longest lists, and a count of them added. A raw that already fits is
// returned as it is. The error wraps ErrTooLarge when the result cannot be
// made to fit and ErrBadInput when raw is not JSON or maxChars < 1; its
// message says what the tool can do.
func Fit(raw []byte, maxChars int) ([]byte, error) {
	if maxChars < 1 {
		return nil, &fitError{ErrBadInput, fmt.Sprintf("the budget must be at least 1 character, got %d", maxChars)}
	}
	chars := countChars(raw)
	if chars <= maxChars {
		if !jsontext.Value(raw).IsValid(decodeOptions...) {
			_, err := readShape(raw, chars) // for the reason
			return nil, notJSON(err)
		}
		return raw, nil
	}
	s, err := readShape(raw, chars)
	if err != nil {
		return nil, notJSON(err)
	}
	nameCounts(s)
	if size := trim(s, maxChars); size > maxChars {
		return nil, tooLarge(s, size, maxChars)
	}
	return render(s, maxChars), nil
}

// fitError is an error with a message for the tool's author and a kind for
// errors.Is.
type fitError struct {
	kind error
	msg  string
}

func (e *fitError) Error() string { return e.msg }
func (e *fitError) Unwrap() error { return e.kind }

// notJSON is the error for input that is not one JSON value.
func notJSON(err error) error {
	if err == nil { // IsValid and readShape disagree; say so rather than guess
		err = errors.New("the JSON reader refused it")
	}
	return &fitError{ErrBadInput, "result is not one valid JSON value: " + err.Error()}
}

// tooLarge is the error for a result that cannot fit: size is its length
// with every list cut to its first item.
func tooLarge(s *shape, size, maxChars int) error {
	var first *list
	for _, l := range s.lists {
		if len(l.items) > 0 && (first == nil || l.items[0].chars > first.items[0].chars) {
			first = l
		}
	}
	if first == nil {
		return &fitError{ErrTooLarge, fmt.Sprintf(
			"result is %s characters, over the limit of %s, and has no list to shorten; return fewer fields or a summary",
			chars.Group(s.chars), chars.Group(maxChars))}
	}
	return &fitError{ErrTooLarge, fmt.Sprintf(
		"result is %s characters, over the limit of %s, and still %s with every list cut to its first item "+
			"(the longest first item is %s, in %s); return fewer or shorter fields, or a summary",
		chars.Group(s.chars), chars.Group(maxChars), chars.Group(size), characters(first.items[0].chars), where(s, first))}
}

// where names l for a message: the top-level list, or its JSON Pointer.
func where(s *shape, l *list) string {
	if l.holder.top {
		return "the top-level list"
	}
	path := pointerPart(s, l.name)
	for h := l.holder; h.parent != nil; h = h.parent {
		path = pointerPart(s, h.name) + path
	}
	if len(path) > maxPath {
		path = strings.ToValidUTF8(path[:maxPath], "") + "…"
	}
	return strconv.Quote(path)
}

// maxPath is the most bytes of a list's path an error message shows.
const maxPath = 200

// characters is "1 character" or "n characters".
func characters(n int) string {
	if n == 1 {
		return "1 character"
	}
	return chars.Group(n) + " characters"
}

// pointerPart is "/name" with ~ and / escaped as in a JSON Pointer.
func pointerPart(s *shape, name span) string {
	n := unquote(s.raw[name.start:name.end])
	return "/" + strings.NewReplacer("~", "~0", "/", "~1").Replace(n)
}
