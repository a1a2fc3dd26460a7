package ir

import (
	"fmt"
	"strings"
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
)

// Error is a graph or runtime error with a stable Code and enough context to
// act on: which node, which field, which limit.
type Error struct {
	Code  Code
	Node  int    // offending node id, or -1
	Field string // offending field ("shape", "b", "outputs[2].name"), if any
	Msg   string
}

// Errorf returns an *Error for node (or -1) and field (or "").
func Errorf(code Code, node int, field, format string, args ...any) *Error {
	return &Error{Code: code, Node: node, Field: field, Msg: fmt.Sprintf(format, args...)}
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
	return b.String()
}

// ErrorCode returns the error's stable code.
func (e *Error) ErrorCode() Code { return e.Code }
