package protocol

import (
	"errors"
	"net/http"
)

// Code is one of the error codes of the Median contract (PROTOCOL.md §7). It
// travels in the "code" field of every error answer.
type Code string

// The error codes of the contract. Each has a fixed HTTP status; see
// [Code.Status].
const (
	CodeExecutionFailed        Code = "execution_failed"        // 200: the tool returned an error or panicked
	CodeDiagnosticsUnsupported Code = "diagnostics_unsupported" // 200: no diagnostics function is configured
	CodeInvalidBody            Code = "invalid_body"            // 400 (413 when too large, 409 on a reused toolCallId)
	CodeUnknownOp              Code = "unknown_op"              // 400: "op" is not "diagnostics"
	CodeInvalidInput           Code = "invalid_input"           // 400: the input does not fit the tool's schema
	CodeMissingSignature       Code = "missing_signature"       // 401: no median-signature header
	CodeMalformedSignature     Code = "malformed_signature"     // 401: the header is not t=<ms>,v1=<hex>
	CodeStaleTimestamp         Code = "stale_timestamp"         // 401: t is more than the tolerance away from now
	CodeInvalidSignature       Code = "invalid_signature"       // 401: no v1 matches any configured key
	CodeUnknownTool            Code = "unknown_tool"            // 404: no registered tool has that name
	CodeMethodNotAllowed       Code = "method_not_allowed"      // 405: a method other than GET or POST
	CodeMissingSecret          Code = "missing_secret"          // 500: no MEDIAN_KEY configured
	CodeInvalidMedianKey       Code = "invalid_median_key"      // 500: the configured key is not usable
)

// Codes lists every code of the contract, in the order PROTOCOL.md §7 gives.
func Codes() []Code {
	return []Code{
		CodeExecutionFailed, CodeDiagnosticsUnsupported, CodeInvalidBody,
		CodeUnknownOp, CodeInvalidInput, CodeMissingSignature,
		CodeMalformedSignature, CodeStaleTimestamp, CodeInvalidSignature,
		CodeUnknownTool, CodeMethodNotAllowed, CodeMissingSecret,
		CodeInvalidMedianKey,
	}
}

// Status returns the HTTP status the contract gives code in the usual case.
// CodeInvalidBody is 400 here; a too-large body (413) and a reused
// toolCallId (409) are the two exceptions, carried by [Error.Status].
func (c Code) Status() int {
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

// Error is a refusal or failure the contract answers with
// {"error": {"code": Code, "message": Message}} and Status.
// Use [errors.As] to read it from errors this package returns.
type Error struct {
	Status  int    // the HTTP status of the answer
	Code    Code   // the contract's error code
	Message string // one sentence for whoever has to fix it; never a secret
	err     error
}

// Error returns "code: message".
func (e *Error) Error() string { return string(e.Code) + ": " + e.Message }

// Unwrap returns the sentinel error behind e, if any, so that
// errors.Is(err, ErrStaleTimestamp) and the like work.
func (e *Error) Unwrap() error { return e.err }

// newError builds an *Error with the status the code usually has.
func newError(code Code, message string) *Error {
	return &Error{Status: code.Status(), Code: code, Message: message}
}

// Sentinel errors for the signature and key checks. Every error returned by
// [ParseSignature], [Signature.CheckTime], [Signature.Verify] and [ParseKey] wraps
// exactly one of them, so callers can branch with errors.Is; [ErrorCode] maps
// each to its contract code.
var (
	ErrMissingSignature   = errors.New("median: missing median-signature header")
	ErrMalformedSignature = errors.New("median: malformed median-signature header")
	ErrStaleTimestamp     = errors.New("median: signature timestamp outside the tolerance window")
	ErrInvalidSignature   = errors.New("median: signature does not match")
	ErrMissingKey         = errors.New("median: no MEDIAN_KEY configured")
	ErrInvalidKey         = errors.New("median: MEDIAN_KEY is not usable")
)

// ErrorCode returns the contract code for an error returned by this package:
// the Code of an *Error, or the code matching one of the sentinel errors.
// It returns "" for any other error.
func ErrorCode(err error) Code {
	var e *Error
	switch {
	case err == nil:
		return ""
	case errors.As(err, &e):
		return e.Code
	case errors.Is(err, ErrMissingSignature):
		return CodeMissingSignature
	case errors.Is(err, ErrMalformedSignature):
		return CodeMalformedSignature
	case errors.Is(err, ErrStaleTimestamp):
		return CodeStaleTimestamp
	case errors.Is(err, ErrInvalidSignature):
		return CodeInvalidSignature
	case errors.Is(err, ErrMissingKey):
		return CodeMissingSecret
	case errors.Is(err, ErrInvalidKey):
		return CodeInvalidMedianKey
	}
	return ""
}

// asError turns a sentinel-wrapping error into the *Error the contract answers.
func asError(err error) *Error {
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	code := ErrorCode(err)
	if code == "" {
		code = CodeExecutionFailed
	}
	return &Error{Status: code.Status(), Code: code, Message: err.Error(), err: err}
}
