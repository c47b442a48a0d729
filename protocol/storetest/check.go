package storetest

import (
	"fmt"
	"strings"
	"testing"
)

// The cases check with these few helpers of the standard testing package,
// so a Store's tests that run them need nothing beyond it. msg, when
// given, is a format and its arguments naming what was checked.

// mustNoError stops the test when err is not nil.
func mustNoError(t testing.TB, err error, msg ...any) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: unexpected error: %v", describe(msg), err)
	}
}

// mustTrue stops the test when ok is false.
func mustTrue(t testing.TB, ok bool, msg ...any) {
	t.Helper()
	if !ok {
		t.Fatal(describe(msg))
	}
}

// mustEqual stops the test when got is not want.
func mustEqual[T comparable](t testing.TB, want, got T, msg ...any) {
	t.Helper()
	if got != want {
		t.Fatalf("%s\n\tgot:  %v\n\twant: %v", describe(msg), got, want)
	}
}

// expectEqual marks the test failed when got is not want, and goes on.
func expectEqual[T comparable](t testing.TB, want, got T, msg ...any) {
	t.Helper()
	if got != want {
		t.Errorf("%s\n\tgot:  %v\n\twant: %v", describe(msg), got, want)
	}
}

// mustContain stops the test when s does not contain sub.
func mustContain(t testing.TB, s, sub string, msg ...any) {
	t.Helper()
	if !strings.Contains(s, sub) {
		t.Fatalf("%s\n\t%q\n\tdoes not contain %q", describe(msg), s, sub)
	}
}

// describe formats msg, a format and its arguments; "check failed" when
// there is none.
func describe(msg []any) string {
	if len(msg) == 0 {
		return "check failed"
	}
	format, ok := msg[0].(string)
	if !ok {
		return fmt.Sprint(msg...)
	}
	return fmt.Sprintf(format, msg[1:]...)
}
