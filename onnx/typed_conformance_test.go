package onnx_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gpucc/gpucc"
	"github.com/gpucc/gpucc/internal/nodetests"
	"github.com/gpucc/gpucc/ir"
	"github.com/gpucc/gpucc/onnx"
)

// TestNodeTestsTypedInputs measures the node tests as a user with run-time
// data runs them: every input given at run time with its own dtype,
// nothing fixed at import (Resize's scales aside, which decide a shape),
// on the cpu backend (the one that computes typed graphs so far). It
// counts the tests whose outputs match the reference (integers and bools
// exactly, floats within the tolerance) and logs the count; it fails only
// on a wrong answer or a graph that imports but then errs with a code
// other than unsupported or integer_fault, and when the list of results
// and refusals (testdata/node_tests_runtime.txt, -update rewrites it)
// changes. Set GPUCC_TYPED_NODE_TESTS to run it.
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
	var lines []string
	for _, e := range entries {
		nt := readNodeTest(t, dir, e.Name())
		ok, why := runTyped(t, nt)
		if r, known := referenceDiffers[nt.name]; known && !ok && strings.HasPrefix(why, "output") {
			ok, why = false, "refused: "+r
		}
		switch {
		case ok:
			passed++
			lines = append(lines, "pass "+nt.name)
		case strings.HasPrefix(why, "refused"):
			refused++
			lines = append(lines, "refused "+nt.name+": "+strings.ReplaceAll(strings.TrimPrefix(why, "refused: "), "\n", " "))
			if os.Getenv("GPUCC_TYPED_NODE_TESTS") == "v" {
				t.Logf("%s: %s", nt.name, why)
			}
		default:
			failed++
			t.Errorf("%s: %s", nt.name, why)
		}
	}
	summary := fmt.Sprintf("node tests with typed run-time inputs on cpu: %d of %d pass, %d refused, %d give another answer", passed, len(entries), refused, failed)
	t.Log(summary)
	slices.Sort(lines)
	got := "# " + summary + " (TestNodeTestsTypedInputs: every input given at run time in its own dtype, as gpucc run --input does; only the inputs that decide a shape are read at specialization, onnx.Model.SpecializeValues; tolerance as node_tests.txt's)\n" + strings.Join(lines, "\n") + "\n"
	golden := "testdata/node_tests_runtime.txt"
	if *update {
		if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run with -update to write it)", err)
	}
	if diff := cmp.Diff(strings.Split(string(want), "\n"), strings.Split(got, "\n")); diff != "" {
		t.Errorf("node test results changed (-want +got; -update rewrites %s):\n%s", golden, diff)
	}
}

// referenceDiffers are the tests whose reference gpucc does not follow,
// and why.
var referenceDiffers = nodetests.ReferenceDiffers

// onnxDTypes are the ONNX element types a graph input of gpucc's dtypes
// takes.
var onnxDTypes = nodetests.DTypes

// runTyped imports and runs one node test with its inputs at run time:
// the model parsed and specialized to its data (nodetests.Bind), which
// reads only the inputs whose values decide a shape.
func runTyped(t *testing.T, nt nodeTest) (bool, string) {
	g, err := nodetests.Bind(nodetests.Test{Name: nt.name, Model: nt.model, Inputs: nt.inputs, Unread: nt.unread})
	var refusal *nodetests.Refusal
	switch {
	case errors.As(err, &refusal):
		return false, "refused: " + refusal.Why
	case err != nil:
		if c := gpucc.CodeOf(err); c == ir.CodeInvalidInput {
			return false, "refused: the test's data does not fit its model: " + err.Error()
		} else if c != ir.CodeUnsupported && c != ir.CodeLimitExceeded {
			t.Errorf("%s: a valid model refused with %s, not unsupported: %v", nt.name, c, err)
		}
		return false, "refused: " + err.Error()
	}
	lim := nodetests.Limits
	if typedGraphSeen != nil { // TestNodeTestsUnion runs it elsewhere too
		typedGraphSeen(g)
	}
	res, err := gpucc.Run(context.Background(), g, gpucc.Options{Backend: "cpu", Limits: lim})
	if err != nil {
		if c := gpucc.CodeOf(err); c == ir.CodeUnsupported || c == ir.CodeLimitExceeded {
			return false, "refused: " + err.Error()
		}
		return false, "run: " + err.Error()
	}
	for _, want := range nt.outputs {
		if want == nil {
			return false, "refused: the test's reference output is of a type gpucc does not read (a string, float64 or 16-bit integer)"
		}
		o, ok := res.Outputs[want.Name]
		if !ok {
			return false, "no output " + want.Name
		}
		var got []float64
		switch {
		case o.DType.IsFloat():
			for _, v := range o.Data {
				got = append(got, float64(v))
			}
		case o.DType == ir.F64:
			for _, v := range o.Ints {
				got = append(got, ir.F64Value(v))
			}
		default:
			for _, v := range o.Ints {
				got = append(got, float64(v))
			}
		}
		var w []float64
		exact := isInt(want.Type)
		switch {
		case (want.Type == onnx.Float64) != (o.DType == ir.F64):
			return false, fmt.Sprintf("output %s is %v, the reference's %v", want.Name, o.DType, want.Type)
		case exact && o.DType != onnxDTypes[want.Type]:
			return false, fmt.Sprintf("output %s is %v, the reference's %v", want.Name, o.DType, want.Type)
		case exact:
			for _, v := range want.Int64 {
				w = append(w, float64(v))
			}
			if !o.DType.IsFloat() && slices.Equal(o.Ints, want.Int64) {
				continue
			}
		case want.Type == onnx.Float32 || want.Type == onnx.Float16 || want.Type == onnx.BFloat16:
			for _, v := range want.Float32 {
				w = append(w, float64(v))
			}
		case want.Type == onnx.Float64 && o.DType == ir.F64:
			w = want.Float64
		default:
			return false, "refused: a reference output of " + want.Type.String()
		}
		if len(got) != len(w) {
			return false, "output " + want.Name + ": a wrong length"
		}
		for i := range w {
			d := math.Abs(got[i] - w[i])
			if exact && d != 0 || !exact && got[i] != w[i] && !(d <= atol+rtol*math.Abs(w[i])) && !(got[i] != got[i] && w[i] != w[i]) {
				return false, "output " + want.Name + " differs"
			}
		}
	}
	return true, ""
}
