package protocol

import (
	"errors"
	"fmt"
	"net/http"
)

// Code is one of the contract's error codes (PROTOCOL.md §7). It is also an
// error, so a caller can test what went wrong with errors.Is:
//
//	if errors.Is(err, protocol.CodeMissingSecret) { … }
//
// works for the errors of [New], [VerifySignature] and [Call.BindInput].
type Code string

// CodeExecutionFailed is answered 200: the tool returned an error or
// panicked. The codes and their statuses are PROTOCOL.md §7.
const CodeExecutionFailed Code = "execution_failed"

// CodeDiagnosticsUnsupported is answered 200: the operator turned the
// diagnostics report off (Config.DiagnosticsOff).
const CodeDiagnosticsUnsupported Code = "diagnostics_unsupported"

// CodeInvalidBody is answered 400 (413 when too large, 409 on a reused toolCallId).
const CodeInvalidBody Code = "invalid_body"

// CodeUnknownOp is answered 400: "op" is not "diagnostics".
const CodeUnknownOp Code = "unknown_op"

// CodeInvalidInput is answered 400: the input does not fit the tool's schema.
const CodeInvalidInput Code = "invalid_input"

// CodeMissingSignature is answered 401: no median-signature header.
const CodeMissingSignature Code = "missing_signature"

// CodeMalformedSignature is answered 401: the header is not t=<ms>,v1=<hex>.
const CodeMalformedSignature Code = "malformed_signature"

// CodeStaleTimestamp is answered 401: t is more than the tolerance away from now.
const CodeStaleTimestamp Code = "stale_timestamp"

// CodeInvalidSignature is answered 401: no v1 matches any configured key.
const CodeInvalidSignature Code = "invalid_signature"

// CodeUnknownTool is answered 404: no registered tool has that name.
const CodeUnknownTool Code = "unknown_tool"

// CodeMethodNotAllowed is answered 405: a method other than GET or POST.
const CodeMethodNotAllowed Code = "method_not_allowed"

// CodeMissingSecret is answered 500: no MEDIAN_KEY configured.
const CodeMissingSecret Code = "missing_secret"

// CodeInvalidMedianKey is answered 500: the configured key is not usable.
const CodeInvalidMedianKey Code = "invalid_median_key"

// Error returns the code itself, so a Code can be compared with errors.Is.
func (c Code) Error() string { return string(c) }

// status is the HTTP status the code is answered with.
func (c Code) status() int {
	switch c {
	case CodeExecutionFailed, CodeDiagnosticsUnsupported:
		return http.StatusOK
	case CodeInvalidBody, CodeUnknownOp, CodeInvalidInput:
		return http.StatusBadRequest
	case CodeMissingSignature, CodeMalformedSignature, CodeStaleTimestamp, CodeInvalidSignature:
		return http.StatusUnauthorized
	case CodeUnknownTool:
		return http.StatusNotFound
	case CodeMethodNotAllowed:
		return http.StatusMethodNotAllowed
	default:
		return http.StatusInternalServerError
	}
}

// Error is an answer the contract defines: an HTTP status, a code and a
// message written for whoever has to fix the problem. It never carries a
// key, a secret, a computed signature or transport details.
//
// errors.Is(err, code) reports whether err is an *Error with that [Code].
type Error struct {
	Status  int    // the HTTP status of the answer
	Code    Code   // the contract's error code
	Message string // one sentence for whoever has to fix it
}

// Error returns "<code>: <message>".
func (e *Error) Error() string { return string(e.Code) + ": " + e.Message }

// Unwrap returns the error's Code, so errors.Is(err, CodeInvalidInput) works.
func (e *Error) Unwrap() error { return e.Code }

// newError returns an *Error with the code's usual status.
func newError(code Code, message string) *Error {
	return &Error{Status: code.status(), Code: code, Message: message}
}

// errorf is newError with a format.
func errorf(code Code, format string, args ...any) *Error {
	return newError(code, fmt.Sprintf(format, args...))
}

// unknownTool is the 404 unknown_tool error for a tool this server does not
// offer. A middleware handler that dispatches tools itself answers
// [CodeUnknownTool] as the error for a name it does not know, and gets this.
func unknownTool(name string) *Error {
	return errorf(CodeUnknownTool, "no tool named %q is registered on this server; sync the tool list in Median or register the tool", truncate(name, 64))
}

// asError returns err as an *Error; an error without a code becomes
// execution_failed with its message.
func asError(err error) *Error {
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	return newError(CodeExecutionFailed, err.Error())
}
