package onnx_test

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/gpucc/gpucc/ir"
	"github.com/gpucc/gpucc/onnx"
)

// TestBoolArithmetic: an arithmetic op of bool operands, which ONNX's
// type constraints do not allow (ONNX Runtime refuses the model), is
// invalid_graph, of constants and of run-time values alike. Before,
// Add(c, c) of the bool constant [false, false, true] folded to [0, 0, 1]
// (a bool's wrap), and the same Add of a run-time bool input computed
// [0, 0, 2] (the importer's 1 and 0), each with exit 0 (FuzzFoldRunTime
// found it in 135 s). Equal, And, Where, Cast, Not of bools still import.
func TestBoolArithmetic(t *testing.T) {
	for _, op := range []string{"Add", "Sub", "Mul", "Div", "Max", "Min", "Sum", "Mean", "Pow", "Mod", "Neg", "Abs", "Sign", "Sqrt", "Relu", "BitwiseAnd", "CumSum"} {
		for _, konst := range []bool{true, false} {
			ins := []string{"b", "b"}
			switch op {
			case "Neg", "Abs", "Sign", "Sqrt", "Relu":
				ins = ins[:1]
			case "CumSum":
				ins = []string{"b", "ax"}
			}
			var inits, inputs []msg
			inits = append(inits, int64s("ax", nil, 0))
			if konst {
				inits = append(inits, bools("b", []int64{3}, false, false, true))
			} else {
				inputs = append(inputs, typedValueInfo("b", 9, 3))
			}
			m := model(18, graph([]msg{node(op, "op", ins, []string{"y"})}, inits, inputs, []msg{msg(nil).str(1, "y")}))
			_, err := onnx.Load(bytes.NewReader(m), onnx.Options{})
			var e *ir.Error
			if !errors.As(err, &e) || e.Code != ir.CodeInvalidGraph || !strings.Contains(err.Error(), "bool") {
				t.Errorf("%s of bools (constant %v): %v, want invalid_graph naming bool", op, konst, err)
			}
		}
	}
	for _, op := range []string{"Equal", "And", "Not", "Identity"} {
		ins := []string{"b", "b"}
		if op == "Not" || op == "Identity" {
			ins = ins[:1]
		}
		m := model(18, graph([]msg{node(op, "op", ins, []string{"y"})}, nil, []msg{typedValueInfo("b", 9, 3)}, []msg{msg(nil).str(1, "y")}))
		if _, err := onnx.Load(bytes.NewReader(m), onnx.Options{}); err != nil {
			t.Errorf("%s of bools: %v", op, err)
		}
	}
}
