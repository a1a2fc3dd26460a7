package ir

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Code is a stable, machine-readable error class. Codes never change meaning.
type Code string

// The error codes gpucc reports.
const (
	CodeInvalidGraph       Code = "invalid_graph"       // malformed JSON or a graph that breaks an invariant
	CodeLimitExceeded      Code = "limit_exceeded"      // a host-policy limit (Limits) is exceeded
	CodeBackendUnavailable Code = "backend_unavailable" // the requested backend cannot run here
	CodeExecutionFailed    Code = "execution_failed"    // the backend failed while running a valid graph
	CodeNonFiniteOutput    Code = "non_finite_output"   // an output holds ±Inf or NaN
	CodeInternal           Code = "internal"            // a bug in gpucc
	CodeUsage              Code = "usage"               // a bad command line: unknown flag, impossible value, missing argument
	CodeIO                 Code = "io"                  // a file or socket operation failed: a missing file, an unwritable directory, a busy port
	CodeInvalidInput       Code = "invalid_input"       // a run's inputs do not match the graph (name, shape, non-finite data)
	CodeInvalidTensor      Code = "invalid_tensor"      // a device tensor used after Release or Close, or on another runtime
	CodeUnsupported        Code = "unsupported"         // a valid imported model (ONNX) uses an op, attribute or type gpucc cannot run exactly
	CodeIntegerFault       Code = "integer_fault"       // a run has no right answer: an integer division or modulo by zero, a cast of NaN, ±Inf or an out-of-range float to an integer
	// The server's codes (package server and gpucc serve's execute API).
	CodeNotGranted Code = "not_granted" // the client was not granted execution
	CodeBusy       Code = "busy"        // the client's cap on pending requests is reached; retry later
	CodeDisposed   Code = "disposed"    // the client or host was disposed before the result was delivered
	CodeTimeout    Code = "timeout"     // the request's context was cancelled or its deadline passed
)

// Error implements error, so that a Code is its own sentinel:
// errors.Is(err, ir.CodeLimitExceeded) reports whether err, or an error it
// wraps, has that code.
func (c Code) Error() string { return string(c) }

// The codes as sentinel errors, for errors.Is. Each is the Code itself.
var (
	ErrInvalidGraph       error = CodeInvalidGraph
	ErrLimitExceeded      error = CodeLimitExceeded
	ErrBackendUnavailable error = CodeBackendUnavailable
	ErrExecutionFailed    error = CodeExecutionFailed
	ErrNonFiniteOutput    error = CodeNonFiniteOutput
	ErrInternal           error = CodeInternal
	ErrUsage              error = CodeUsage
	ErrIO                 error = CodeIO
	ErrNotGranted         error = CodeNotGranted
	ErrBusy               error = CodeBusy
	ErrDisposed           error = CodeDisposed
	ErrTimeout            error = CodeTimeout
	ErrInvalidInput       error = CodeInvalidInput
	ErrInvalidTensor      error = CodeInvalidTensor
	ErrUnsupported        error = CodeUnsupported
	ErrIntegerFault       error = CodeIntegerFault
)

// Error is a graph or runtime error with a stable Code and enough context to
// act on: which node, which field, which limit.
type Error struct {
	Code  Code
	Node  int    // offending node id, or -1
	Field string // offending field ("shape", "b", "outputs[2].name"), if any
	Msg   string
	// Limit is the Limits field a limit_exceeded error hit ("MaxNodes"),
	// set by LimitErrorf; Error then says how to raise it.
	Limit string
}

// Errorf returns an *Error for node (or -1) and field (or ""). A message
// longer than maxMessage bytes is cut short: quote what an attacker
// supplied with Quote, and this is the backstop.
func Errorf(code Code, node int, field, format string, args ...any) *Error {
	return &Error{Code: code, Node: node, Field: truncate(field, quoteMax), Msg: truncate(fmt.Sprintf(format, args...), maxMessage)}
}

// quoteMax is how much of a quoted string an error shows; maxMessage
// bounds a whole message.
const (
	quoteMax   = 64
	maxMessage = 1024
)

// Quote returns s Go-quoted for an error message, cut to its first 64
// bytes (on a rune boundary) with its full length said, so an error never
// grows with what a graph supplied.
func Quote(s string) string {
	if len(s) <= quoteMax {
		return strconv.Quote(s)
	}
	return strconv.Quote(cut(s, quoteMax)) + "… (" + strconv.Itoa(len(s)) + " bytes)"
}

// QuoteBytes is Quote for a byte slice (a number literal, say).
func QuoteBytes(b []byte) string {
	if len(b) <= quoteMax {
		return strconv.Quote(string(b))
	}
	return strconv.Quote(cut(string(b[:min(len(b), quoteMax+utf8.UTFMax)]), quoteMax)) + "… (" + strconv.Itoa(len(b)) + " bytes)"
}

// truncate cuts s to at most max bytes, on a rune boundary, marking the cut.
func truncate(s string, max int) string {
	if len(s) <= max {
		return s
	}
	return cut(s, max) + "…"
}

// cut returns the longest prefix of s of at most max bytes that ends on a
// rune boundary.
func cut(s string, max int) string {
	if len(s) <= max {
		return s
	}
	for max > 0 && !utf8.RuneStart(s[max]) {
		max--
	}
	return s[:max]
}
func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(string(e.Code))
	b.WriteString(": ")
	if e.Node >= 0 {
		fmt.Fprintf(&b, "node %d: ", e.Node)
	}
	if e.Field != "" {
		fmt.Fprintf(&b, "field %s: ", e.Field)
	}
	b.WriteString(e.Msg)
	if e.Limit != "" {
		b.WriteString("; ")
		b.WriteString(raiseHint(e.Limit))
	}
	return b.String()
}

// ErrorCode returns the error's stable code.
func (e *Error) ErrorCode() Code { return e.Code }

// Is reports whether target is e's Code, so that errors.Is(err,
// ir.ErrLimitExceeded) finds an *Error of that code anywhere in err's chain.
func (e *Error) Is(target error) bool {
	c, ok := target.(Code)
	return ok && c == e.Code
}
