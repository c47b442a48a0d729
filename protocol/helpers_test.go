package protocol

import (
	"encoding/json"
	"errors"
)

// mustParseKey parses a key the tests know to be usable.
func mustParseKey(key string) Key {
	k, err := ParseKey(key)
	if err != nil {
		panic(err)
	}
	return k
}

// errorCode returns the contract code of err, or "".
func errorCode(err error) Code {
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return ""
}

// notSignedIn is the refusal the tests use most.
func notSignedIn(detail string) *Refusal { return Refuse("not_signed_in", detail) }

// jsonUnmarshal is json.Unmarshal, for tests that decode answers.
func jsonUnmarshal(b []byte, v any) error { return json.Unmarshal(b, v) }
