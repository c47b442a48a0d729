package protocol

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
)

// AgentError is a tool's error whose message Median's agent may read
// (PROTOCOL.md §3). The agent talks to an unauthenticated customer and can
// be talked into repeating what it read, so a tool's error reaches it only
// when the tool's author says so: return an *AgentError (build it with
// [AgentErrorf], or as a literal to keep a cause), or wrap one with %w, and
// the call is answered execution_failed with its Message. Any other error
// is answered execution_failed with a message that names the tool and a
// short reference, such as
//
//	tool lookup_order failed (reference 7f3a9c2e); the server's log has the details
//
// and its full text goes to [Config.Logger] under that reference (the
// errorRef attribute). A panic is answered as before, "tool <name> failed
// unexpectedly". [Config.ErrorMessage], when set, decides before this
// rule.
//
// Write Message for the customer's conversation: what failed in words the
// agent can pass on, no addresses, credentials, queries or file paths.
// When AgentErrors are wrapped, the agent reads the Message of the first
// one in the chain (as [errors.As] finds it), never the wrapping text. An
// error type of your own whose message is written for the customer is
// shown as &AgentError{Message: err.Error(), Err: err}, which errors.As
// still finds it in.
type AgentError struct {
	// Message is what the agent reads: one line it can use in its reply.
	// An AgentError without one is answered as any other error.
	Message string
	// Err, when set, is the cause: it goes to the server's log with the
	// call, never to the agent. errors.Is and errors.As see it.
	Err error
}

// AgentErrorf returns an *AgentError whose Message is formatted as
// fmt.Sprintf formats it. It has no cause: set Err on the result, or write
// the literal, to keep one for the log. (It does not take %w: wrapping an
// error into Message would show its text to the agent.)
func AgentErrorf(format string, args ...any) *AgentError {
	return &AgentError{Message: fmt.Sprintf(format, args...)}
}

// Error returns the Message, followed by the cause's text when it says
// something else: the error's full text, for logs.
func (e *AgentError) Error() string {
	if e == nil {
		return "<nil>"
	}
	if e.Err == nil {
		return e.Message
	}
	cause := e.Err.Error()
	if e.Message == "" || cause == e.Message {
		return cause
	}
	return e.Message + ": " + cause
}

// Unwrap returns the cause, Err.
func (e *AgentError) Unwrap() error {
	if e == nil {
		return nil
	}
	return e.Err
}

// agentMessage is the message of the first *AgentError in err's chain;
// ok is false when there is none, or it is nil or has no Message.
func agentMessage(err error) (msg string, ok bool) {
	var ae *AgentError
	if errors.As(err, &ae) && ae != nil && ae.Message != "" {
		return ae.Message, true
	}
	return "", false
}

// newErrorRef returns a reference for an error the agent is not shown: 8
// hex digits, random, found again in the log line that holds the error.
// It identifies one failure among a server's recent ones, and says
// nothing about the error or the call.
func newErrorRef() string {
	return fmt.Sprintf("%08x", rand.Uint32())
}

// hiddenErrorMessage is the message answered for an error the agent is not
// shown (see [AgentError]): the tool and the reference, nothing of the
// error.
func hiddenErrorMessage(tool, ref string) string { return hiddenFailure("tool "+tool, ref) }

// hiddenFailure is the message that says what failed and the reference of
// the log line that holds the error, nothing of the error itself: a
// tool's (hiddenErrorMessage), or Config.DiagnosticsReplace's.
func hiddenFailure(what, ref string) string {
	return what + " failed (reference " + ref + "); the server's log has the details"
}

// errorRefOf is the reference in body when body is the answer
// hiddenErrorMessage wrote for tool; "" otherwise. It is read back from
// the answer, as the report reads a failure's message, so that the answer
// to a repeated toolCallId carries its first answer's reference.
func errorRefOf(tool string, body []byte) string {
	const refLen = 8
	// "#" stands for the reference: neither a tool's name nor the message
	// around it holds one.
	shape := errorResponse(newError(CodeExecutionFailed, hiddenErrorMessage(tool, "#"))).Body
	prefix, suffix, _ := bytes.Cut(shape, []byte("#"))
	if len(body) != len(prefix)+refLen+len(suffix) || !bytes.HasPrefix(body, prefix) || !bytes.HasSuffix(body, suffix) {
		return ""
	}
	ref := body[len(prefix) : len(prefix)+refLen]
	for _, c := range ref {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return ""
		}
	}
	return string(ref)
}
