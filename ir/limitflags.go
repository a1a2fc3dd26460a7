package ir

import (
	"fmt"
	"reflect"
)

// LimitFlag is one row of LimitFlags: a Limits field, the gpucc flag that
// sets it, what the flag says, and the least value the flag accepts (0
// where zero means "follow another limit").
type LimitFlag struct {
	Field string // the Limits field ("MaxNodes")
	Flag  string // the command-line flag, without dashes ("max-nodes")
	Usage string
	Min   int64
}

// LimitFlags is the table of every numeric Limits field (a bound; the
// bool NonFinite is a policy) and its flag: the gpucc
// commands define their limit flags from it (cmd/gpucc), and a
// limit_exceeded error names the row of the limit it hit (LimitErrorf).
// TestLimitFlagsCoverLimits fails on a field without a row.
var LimitFlags = []LimitFlag{
	{"MaxNodes", "max-nodes", "host limit: nodes per graph", 1},
	{"MaxElements", "max-elements", "host limit: elements per tensor", 1},
	{"MaxStorageBytes", "max-storage", "host limit: summed storage in bytes", 1},
	{"MaxOps", "max-ops", "host limit: estimated operations", 1},
	{"MaxOutputs", "max-outputs", "host limit: outputs", 1},
	{"MaxKernelOps", "max-kernel-ops", "host limit: operations of code per kernel, calls inlined", 1},
	{"MaxOutputBytes", "max-output-bytes", "host limit: summed output bytes, each element its dtype's size (0: the storage limit)", 0},
	{"MaxGraphBytes", "max-graph-bytes", "host limit: bytes of graph JSON or ONNX model (0: 8 × the storage limit)", 0},
	{"MaxAttrValues", "max-attr-values", "host limit: integer attribute values per node", 1},
}

// LimitFlagOf returns the row of Limits field name.
func LimitFlagOf(name string) (LimitFlag, bool) {
	for _, r := range LimitFlags {
		if r.Field == name {
			return r, true
		}
	}
	return LimitFlag{}, false
}

// Of returns a pointer to r's field of l (an *int or *int64).
func (r LimitFlag) Of(l *Limits) any {
	return reflect.ValueOf(l).Elem().FieldByName(r.Field).Addr().Interface()
}

// LimitErrorf is Errorf for limit_exceeded of the Limits field limit
// ("MaxNodes"): the error's Limit names it, and its message says how to
// raise it (Error).
func LimitErrorf(limit string, node int, field, format string, args ...any) *Error {
	if _, ok := LimitFlagOf(limit); !ok {
		panic(fmt.Sprintf("ir: LimitErrorf of %q, not a Limits field with a flag", limit))
	}
	e := Errorf(CodeLimitExceeded, node, field, format, args...)
	e.Limit = limit
	return e
}

// raiseHint is what an error of limit says to do: the Go field and the
// gpucc flag that raise it.
func raiseHint(limit string) string {
	r, _ := LimitFlagOf(limit)
	return fmt.Sprintf("raise Limits.%s (gpucc --%s)", limit, r.Flag)
}
