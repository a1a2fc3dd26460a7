package onnx_test

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"testing"

	"github.com/gpucc/gpucc/cpuref"
	"github.com/gpucc/gpucc/ir"
	"github.com/gpucc/gpucc/onnx"
)

// TestCastFoldRange: a Cast of a constant to an integer type folds at
// import to the value the run time's Cast gives (ir.Convert), or is
// refused where the run time faults (integer_fault: NaN, ±Inf or a
// truncation outside the target's range, a uint64 without an int64
// carrier), never to a wrapped value: the fold checked int64's range
// alone and wrapped to the narrower type, so Cast(3e9) to int32 gave
// -1294967296, 300 to uint8 44 and -2.5 to uint8 254 with exit 0, where
// the same Casts of a run-time input fail. Each value is cast both ways, the constant's fold and a run-time
// input's Cast, each added to a zero input of the target type (typed Add).
func TestCastFoldRange(t *testing.T) {
	floatsIn := []float64{3e9, -3e9, 300, 256, 255.9, -2.5, -0.5, -1, 128, -129, 65536, 2147483647, 2147483648, -2147483649, 1e19, -1e19, 9.2e18, 4294967296, math.Inf(1), math.NaN()}
	intsIn := []float64{-1, 300, -129, 1 << 40, -1 << 62, 65535}
	for _, to := range []struct {
		et int64
		dt ir.DType
	}{{6, ir.I32}, {2, ir.U8}, {3, ir.I8}, {4, ir.U16}, {5, ir.I16}, {12, ir.U32}, {13, ir.U64}, {7, ir.I64}} {
		for _, from := range []int64{1, 11, 7} {
			values := floatsIn
			if from == 7 {
				values = intsIn
			}
			for _, v := range values {
				if from == 1 && float64(float32(v)) != v && !math.IsNaN(v) {
					continue
				}
				name := fmt.Sprintf("%v of type %d to %v", v, from, to.dt)
				c := floats("c", []int64{1}, float32(v))
				switch from {
				case 11:
					c = doubles("c", []int64{1}, v)
				case 7:
					c = int64s("c", []int64{1}, int64(v))
				}
				fold := model(13, graph([]msg{node("Cast", "k", []string{"c"}, []string{"i"}, attrInt("to", to.et)), node("Add", "a", []string{"z", "i"}, []string{"y"})},
					[]msg{c}, []msg{typedValueInfo("z", to.et, 1)}, []msg{typedValueInfo("y", to.et, 1)}))
				run := model(13, graph([]msg{node("Cast", "k", []string{"x"}, []string{"i"}, attrInt("to", to.et)), node("Add", "a", []string{"z", "i"}, []string{"y"})},
					nil, []msg{typedValueInfo("z", to.et, 1), typedValueInfo("x", from, 1)}, []msg{typedValueInfo("y", to.et, 1)}))
				lim := ir.Limits{NonFinite: true}
				rg, err := onnx.Load(bytes.NewReader(run), onnx.Options{Limits: lim})
				if err != nil {
					t.Fatalf("%s: the run-time model: %v", name, err)
				}
				x := &rg.Nodes[rg.Input("x")]
				switch from {
				case 11:
					x.Ints = []int64{ir.F64Bits(v)}
				case 7:
					x.Ints = []int64{int64(v)}
				default:
					x.Data = []float32{float32(v)}
				}
				rv, rerr := cpuref.EvalTyped(rg)
				fg, ferr := onnx.Load(bytes.NewReader(fold), onnx.Options{Limits: lim})
				var fv []cpuref.Value
				if ferr == nil {
					fv, ferr = cpuref.EvalTyped(fg)
				}
				switch {
				case rerr != nil && ferr != nil:
					var e *ir.Error
					if !errors.As(ferr, &e) || e.Code == ir.CodeInternal {
						t.Errorf("%s: the fold: %v", name, ferr)
					}
				case rerr != nil:
					t.Errorf("%s: the run time fails (%v); the fold gives %v", name, rerr, fv[fg.Outputs[0].ID].I)
				case ferr != nil:
					t.Errorf("%s: the run time gives %v; the fold fails (%v)", name, rv[rg.Outputs[0].ID].I, ferr)
				case rv[rg.Outputs[0].ID].I[0] != fv[fg.Outputs[0].ID].I[0]:
					t.Errorf("%s: the run time gives %v; the fold %v", name, rv[rg.Outputs[0].ID].I, fv[fg.Outputs[0].ID].I)
				}
			}
		}
	}
}
