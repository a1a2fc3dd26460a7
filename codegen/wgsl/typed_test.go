package wgsl

import (
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/gpucc/gpucc/cpuref"
	"github.com/gpucc/gpucc/ir"
	"github.com/gpucc/gpucc/ir/irtest"
)

// TestPackTypedRoundTrip: every dtype's extremes (odd counts, so packed
// words end part full) come back from their storage bit for bit, in
// TypedWords words, and a float16 or bfloat16 value is stored as its own
// bits.
func TestPackTypedRoundTrip(t *testing.T) {
	for _, dt := range ir.AllDTypes() {
		if !ir.DeviceDTypes.Has(dt) { // float64 and uint64: the reference's only
			continue
		}
		for _, n := range []int{0, 1, 3, 5, 67} {
			v := cpuref.Value{DType: dt}
			if dt.IsFloat() {
				v.F = irtest.FloatExtremes(dt, uint64(n), n)
			} else {
				v.I = irtest.IntExtremes(dt, uint64(n), n)
			}
			b := PackTyped(v)
			if len(b) != 4*TypedWords(dt, n) || len(b) < 4 {
				t.Fatalf("%v ×%d: %d bytes, want %d", dt, n, len(b), 4*TypedWords(dt, n))
			}
			got := UnpackTyped(dt, n, b)
			for k := range n {
				if dt.IsFloat() && math.Float32bits(got.F[k]) != math.Float32bits(v.F[k]) || !dt.IsFloat() && got.I[k] != v.I[k] {
					t.Fatalf("%v ×%d, element %d: %v %v back, stored %v %v", dt, n, k, got.F, got.I, v.F, v.I)
				}
			}
		}
	}
	if b := PackTyped(cpuref.Value{DType: ir.F16, F: []float32{ir.F16Float(0x8001), ir.F16Float(0x7bff)}}); b[0] != 0x01 || b[1] != 0x80 || b[2] != 0xff || b[3] != 0x7b {
		t.Fatalf("float16 storage % x", b)
	}
}

// TestTypedNodeRefuses: an op the WGSL typed path does not hold is
// refused with unsupported naming the node, never emitted.
func TestTypedNodeRefuses(t *testing.T) {
	b := ir.NewBuilder()
	x := b.Input(ir.Shape{2, 2}, []float32{1, 2, 3, 4})
	b.Output("y", x.MatMul(x).Cast(ir.I32))
	g, err := b.Build(ir.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = TypedNode(g, 1, FaultPerNode)
	var e *ir.Error
	if !errors.As(err, &e) || e.Code != ir.CodeUnsupported || e.Node != 1 {
		t.Fatalf("got %v, want unsupported at node 1", err)
	}
}

// TestTypedFloatRowsExact: the typed kernels' float arithmetic is
// codegen.Exact's (subnormal operands and results kept on a GPU that
// flushes them, as NVIDIA's does): a float32 or bfloat16 mul, add_scalar
// and erf call exact_mul / exact_add, a comparison reads the bits, a
// bfloat16 sum combines with exact_add, and no plain product, sum or float
// comparison of the row's values is left outside those functions.
func TestTypedFloatRowsExact(t *testing.T) {
	for _, dt := range []ir.DType{ir.F32, ir.BF16, ir.F16} {
		b := ir.NewBuilder()
		x := b.TypedInput("x", dt, ir.Shape{3}, []float32{1, 2, 3}, nil)
		y := b.TypedInput("y", dt, ir.Shape{3}, []float32{1, 2, 3}, nil)
		b.Output("mul", x.Mul(y))
		b.Output("adds", x.AddScalar(0.5))
		b.Output("erf", x.Apply(ir.OpErf))
		b.Output("gt", x.Apply(ir.OpGreater, y))
		b.Output("sum", x.ApplyShaped(ir.OpSum, ir.Shape{}))
		g, err := b.Build(ir.Limits{})
		if err != nil {
			t.Fatal(err)
		}
		want := map[string]string{"mul": "prim_exact_mul(", "adds": "prim_exact_add(", "erf": "prim_erf_exact(", "sum": "prim_exact_add("}
		for _, o := range g.Outputs {
			s, err := TypedNode(g, int(o.ID), FaultPerNode)
			if err != nil {
				t.Fatal(err)
			}
			value := s.Source[strings.Index(s.Source, "fn value("):]
			value = value[:strings.Index(value, "\n}\n")]
			if w, ok := want[o.Name]; ok && !strings.Contains(s.Source, w) {
				t.Errorf("%v %s: no call of %s in\n%s", dt, o.Name, w, s.Source)
			}
			for _, plain := range []string{" * params.one", " > ", " >= ", " == a", " + b"} {
				if strings.Contains(value, plain) {
					t.Errorf("%v %s: value() computes %q outside the exact functions:\n%s", dt, o.Name, plain, value)
				}
			}
		}
	}
}
