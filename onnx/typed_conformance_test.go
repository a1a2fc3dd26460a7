package onnx_test

import (
	"context"
	"math"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/gpucc/gpucc"
	"github.com/gpucc/gpucc/ir"
	"github.com/gpucc/gpucc/onnx"
)

// TestNodeTestsTypedInputs measures the node tests as a user with run-time
// data runs them: every input given at run time with its own dtype,
// nothing fixed at import (Resize's scales aside, which decide a shape),
// on the cpu backend (the one that computes typed graphs so far). It
// counts the tests whose outputs match the reference (integers and bools
// exactly, floats within the tolerance) and logs the count; it fails only
// on a graph that imports but then errs with a code other than
// unsupported or integer_fault. Set GPUCC_TYPED_NODE_TESTS to run it.
func TestNodeTestsTypedInputs(t *testing.T) {
	if os.Getenv("GPUCC_TYPED_NODE_TESTS") == "" {
		t.Skip("set GPUCC_TYPED_NODE_TESTS to measure the node tests with typed run-time inputs")
	}
	dir := nodeTests(t)
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	passed, refused, failed := 0, 0, 0
	for _, e := range entries {
		nt := readNodeTest(t, dir, e.Name())
		ok, why := runTyped(t, nt)
		switch {
		case ok:
			passed++
		case strings.HasPrefix(why, "refused"):
			refused++
			if os.Getenv("GPUCC_TYPED_NODE_TESTS") == "v" {
				t.Logf("%s: %s", nt.name, why)
			}
		default:
			failed++
			t.Logf("%s: %s", nt.name, why)
		}
	}
	t.Logf("node tests with typed run-time inputs on cpu: %d of %d pass, %d refused, %d give another answer", passed, len(entries), refused, failed)
}

// runTyped imports and runs one node test with its inputs at run time.
func runTyped(t *testing.T, nt nodeTest) (bool, string) {
	consts := map[string]*onnx.Tensor{}
	for _, in := range nt.inputs {
		if in == nil {
			return false, "refused: an input gpucc cannot read"
		}
		if in.Name == "scales" && strings.HasPrefix(nt.name, "test_resize_") {
			consts[in.Name] = in
		}
	}
	f, err := os.Open(nt.model)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	g, err := onnx.Load(f, onnx.Options{Constants: consts})
	if err != nil {
		if c := gpucc.CodeOf(err); c != ir.CodeUnsupported && c != ir.CodeLimitExceeded {
			t.Errorf("%s: a valid model refused with %s, not unsupported: %v", nt.name, c, err)
		}
		return false, "refused: " + err.Error()
	}
	for _, in := range nt.inputs {
		if consts[in.Name] != nil {
			continue
		}
		id := g.Input(in.Name)
		if id < 0 {
			return false, "refused: no input " + in.Name
		}
		n := &g.Nodes[id]
		switch {
		case n.DType.IsFloat() && in.Type == onnx.Float32:
			n.Data = in.Float32
		case !n.DType.IsFloat() && len(in.Int64) == n.Shape.Len():
			n.Ints = in.Int64
		default:
			return false, "refused: input " + in.Name + " of " + in.Type.String()
		}
	}
	if err := ir.Validate(g, ir.Limits{}); err != nil {
		return false, "refused: " + err.Error()
	}
	if typedGraphSeen != nil { // TestNodeTestsTypedBackends runs it elsewhere too
		typedGraphSeen(g)
	}
	res, err := gpucc.Run(context.Background(), g, gpucc.Options{Backend: "cpu"})
	if err != nil {
		if c := gpucc.CodeOf(err); c == ir.CodeUnsupported || c == ir.CodeLimitExceeded {
			return false, "refused: " + err.Error()
		}
		return false, "run: " + err.Error()
	}
	for _, want := range nt.outputs {
		if want == nil {
			return false, "refused: an output gpucc cannot read"
		}
		o, ok := res.Outputs[want.Name]
		if !ok {
			return false, "no output " + want.Name
		}
		var got []float64
		if o.DType.IsFloat() {
			for _, v := range o.Data {
				got = append(got, float64(v))
			}
		} else {
			for _, v := range o.Ints {
				got = append(got, float64(v))
			}
		}
		var w []float64
		exact := isInt(want.Type)
		switch {
		case exact:
			for _, v := range want.Int64 {
				w = append(w, float64(v))
			}
			if !o.DType.IsFloat() && slices.Equal(o.Ints, want.Int64) {
				continue
			}
		case want.Type == onnx.Float32:
			for _, v := range want.Float32 {
				w = append(w, float64(v))
			}
		default:
			return false, "refused: a reference output of " + want.Type.String()
		}
		if len(got) != len(w) {
			return false, "output " + want.Name + ": a wrong length"
		}
		for i := range w {
			d := math.Abs(got[i] - w[i])
			if exact && d != 0 || !exact && !(d <= atol+rtol*math.Abs(w[i])) && !(got[i] != got[i] && w[i] != w[i]) {
				return false, "output " + want.Name + " differs"
			}
		}
	}
	return true, ""
}
