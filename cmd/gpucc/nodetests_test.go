package main

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gpucc/gpucc/internal/nodetests"
	"github.com/gpucc/gpucc/internal/npy"
	"github.com/gpucc/gpucc/ir"
	"github.com/gpucc/gpucc/onnx"
)

// npyDTypes are the .npy dtypes of the ONNX element types that have one.
var npyDTypes = map[onnx.DataType]string{onnx.Float32: "float32", onnx.Float16: "float16", onnx.Float64: "float64",
	onnx.Int32: "int32", onnx.Int64: "int64", onnx.Uint8: "uint8", onnx.Int8: "int8", onnx.Uint32: "uint32", onnx.Bool: "bool",
	onnx.Int16: "int16", onnx.Uint16: "uint16", onnx.Uint64: "uint64"}

// TestNodeTestsCLI runs onnx 1.12's node tests as a user with their own
// data does, through the installed binary: each test's input_k.pb written
// as a .npy file, then gpucc run --backend cpu model.onnx --input
// NAME=FILE.npy … --output-dir DIR, each DIR/NAME.npy compared with the
// reference (integers and bools exactly, floats within rtol 1e-3 and atol
// 1e-7, as onnx's TestNodeTestsTypedInputs). Nothing is fixed at import
// but what decides a shape (onnx.Model.SpecializeValues). Each test that
// passes runs on native, wasm and webgpu too (GPUCC_TYPED_NODE_BACKENDS
// chooses them), where each output's .npy file must hold cpu's bytes or
// the run be refused by name (unsupported), and the tests that pass on all
// four must be onnx/testdata/node_tests_union.txt's: issue 32's bar, from
// the CLI. A bfloat16 input (onnx 1.12's data holds its bits as uint16) is
// given as float32 values, as numpy, which has no bfloat16, would. It fails
// on a wrong answer or an exit code other than unsupported, limit_exceeded
// and integer_fault; set GPUCC_TYPED_NODE_TESTS to run it (v logs every
// refusal), GPUCC_NODE_TESTS_ONLY (a regexp) to run some tests only.
func TestNodeTestsCLI(t *testing.T) {
	if os.Getenv("GPUCC_TYPED_NODE_TESTS") == "" {
		t.Skip("set GPUCC_TYPED_NODE_TESTS to run the node tests through gpucc run")
	}
	py := "/usr/bin/python3" // Debian's, with python3-onnx (as onnx's harness)
	if _, err := os.Stat(py); err != nil {
		py = "python3"
	}
	if err := exec.Command(py, "-c", "import onnx, numpy").Run(); err != nil {
		t.Skipf("python3-onnx is not installed: %v", err)
	}
	dir := t.TempDir()
	gen, err := filepath.Abs(filepath.Join("..", "..", "onnx", "testdata", "gen_node_tests.py"))
	if err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(py, gen, dir).CombinedOutput(); err != nil {
		t.Fatalf("generating the node tests: %v\n%s", err, out)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	backends := []string{"native", "wasm", "webgpu"}
	if e := os.Getenv("GPUCC_TYPED_NODE_BACKENDS"); e != "" {
		backends = strings.Split(e, ",")
	}
	only := regexp.MustCompile(os.Getenv("GPUCC_NODE_TESTS_ONLY")) // a subset, to look at a few
	passed, refused := 0, 0
	var union []string // passing on cpu and giving its bits on every backend
	for _, e := range entries {
		if !only.MatchString(e.Name()) {
			continue
		}
		why, on := cliNodeTest(t, filepath.Join(dir, e.Name()), backends)
		if why == "" && !slices.ContainsFunc(backends, func(b string) bool { return on[b] != "same" }) {
			union = append(union, e.Name())
		}
		for _, b := range backends {
			if v := on[b]; v != "same" && os.Getenv("GPUCC_TYPED_NODE_TESTS") == "v" {
				t.Logf("%s on %s: %s", e.Name(), b, v)
			}
		}
		switch {
		case why == "":
			passed++
		case strings.HasPrefix(why, "refused"):
			refused++
			if os.Getenv("GPUCC_TYPED_NODE_TESTS") == "v" {
				t.Logf("%s: %s", e.Name(), why)
			}
		default:
			t.Errorf("%s: %s", e.Name(), why)
		}
	}
	t.Logf("node tests through gpucc run on cpu: %d of %d pass, %d refused by name; %d of them give cpu's bits (the .npy files' bytes) on %v", passed, len(entries), refused, len(union), backends)
	// The CLI's union is the library's (onnx's TestNodeTestsUnion), test
	// for test, when it runs on the same backends.
	if !slices.Equal(backends, []string{"native", "wasm", "webgpu"}) || only.String() != "" {
		return
	}
	b, err := os.ReadFile(filepath.Join("..", "..", "onnx", "testdata", "node_tests_union.txt"))
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, line := range strings.Split(string(b), "\n") {
		if name, ok := strings.CutSuffix(line, " in"); ok {
			want = append(want, name)
		}
	}
	slices.Sort(want)
	slices.Sort(union)
	if !slices.Equal(want, union) {
		t.Errorf("the node tests passing through gpucc run on cpu and giving its bits on %v are not onnx/testdata/node_tests_union.txt's (-library +CLI):\n%s", backends, cmp.Diff(want, union))
	}
}

// cliNodeTest runs one node test through gpucc run and returns "" when it
// passes, else why (a refusal starts with "refused"); when it passes, it
// runs it on each of backends too and says, by backend, "same" (every
// output's .npy file holds cpu's bytes) or "refused: " and the refusal (an
// exit of code unsupported); another answer fails the test.
func cliNodeTest(t *testing.T, dir string, backends []string) (string, map[string]string) {
	why, inputs := cliNodeTestCPU(t, dir)
	if why != "" {
		return why, nil
	}
	on := map[string]string{}
	name := filepath.Base(dir)
	for _, b := range backends {
		out := filepath.Join(dir, "out-"+b)
		args := append([]string{"run", "--backend", b, "--allow-software", filepath.Join(dir, "model.onnx")}, inputs...)
		stdout, v, code := gpucc(t, "", append(args, "--output-dir", out)...)
		if code != 0 {
			if c := errorCode(v); c == "unsupported" {
				on[b] = "refused: " + strings.TrimSpace(stdout)
				continue
			}
			t.Errorf("%s on %s: gpucc run exits %d (%s): %s", name, b, code, errorCode(v), stdout)
			on[b] = "fails"
			continue
		}
		on[b] = "same"
		files, err := os.ReadDir(filepath.Join(dir, "out"))
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range files {
			want, err := os.ReadFile(filepath.Join(dir, "out", f.Name()))
			if err != nil {
				t.Fatal(err)
			}
			got, err := os.ReadFile(filepath.Join(out, f.Name()))
			if err != nil || !bytes.Equal(got, want) {
				t.Errorf("%s on %s: %s is not cpu's (%v)", name, b, f.Name(), err)
				on[b] = "differs"
				break
			}
		}
	}
	return "", on
}

// cliNodeTestCPU runs one node test through gpucc run on cpu and returns
// "" when it passes, else why (a refusal starts with "refused"), and the
// --input flags it gave.
func cliNodeTestCPU(t *testing.T, dir string) (string, []string) {
	ds := filepath.Join(dir, "test_data_set_0")
	args := []string{"run", "--backend", "cpu", filepath.Join(dir, "model.onnx")}
	declared := map[string]string{} // the model's input types
	if f, err := os.Open(filepath.Join(dir, "model.onnx")); err == nil {
		if sig, err := onnx.ReadSignature(f, ir.Limits{}); err == nil {
			for _, p := range sig.Inputs {
				declared[p.Name] = p.Type
			}
		}
		f.Close()
	}
	for k := 0; ; k++ {
		in, err := readPB(filepath.Join(ds, fmt.Sprintf("input_%d.pb", k)))
		if errors.Is(err, os.ErrNotExist) {
			break
		}
		if err != nil {
			return "refused: the test's input cannot be read: " + err.Error(), nil
		}
		if in.Type == onnx.Uint16 && declared[in.Name] == "bfloat16" {
			// onnx 1.12's data holds bfloat16 as uint16 bits; numpy has
			// no bfloat16, so a user gives float32 values, each exact.
			bits := in.Int64
			in = &onnx.Tensor{Name: in.Name, Type: onnx.Float32, Shape: in.Shape, Float32: make([]float32, len(bits))}
			for j, b := range bits {
				in.Float32[j] = ir.BF16Float(uint16(b))
			}
		}
		dt, ok := npyDTypes[in.Type]
		if !ok {
			return fmt.Sprintf("refused: input %s is %v, which has no .npy form gpucc reads", in.Name, in.Type), nil
		}
		a := &npy.Array{DType: dt, Shape: in.Shape, Float32: in.Float32, Float64: in.Float64, Int64: in.Int64}
		var buf bytes.Buffer
		if err := npy.Write(&buf, a); err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dir, fmt.Sprintf("in%d.npy", k))
		if err := os.WriteFile(p, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		args = append(args, "--input", in.Name+"="+p)
	}
	out := filepath.Join(dir, "out")
	stdout, v, code := gpucc(t, "", append(args, "--output-dir", out)...)
	if code != 0 {
		switch c := errorCode(v); c {
		case "unsupported", "limit_exceeded", "integer_fault":
			return "refused: " + strings.TrimSpace(stdout), nil
		case "invalid_input": // as onnx's TestNodeTestsTypedInputs refuses it
			return "refused: the test's data does not fit its model: " + strings.TrimSpace(stdout), nil
		default:
			return fmt.Sprintf("gpucc run exits %d (%s): %s", code, c, stdout), nil
		}
	}
	for k := 0; ; k++ {
		want, err := readPB(filepath.Join(ds, fmt.Sprintf("output_%d.pb", k)))
		if errors.Is(err, os.ErrNotExist) {
			break
		}
		if err != nil {
			return "refused: the test's reference output cannot be read: " + err.Error(), nil
		}
		f, err := os.Open(filepath.Join(out, want.Name+".npy"))
		if err != nil {
			return fmt.Sprintf("no output %s: %v", want.Name, err), nil
		}
		got, err := npy.Read(f, 1<<30)
		f.Close()
		if err != nil {
			return fmt.Sprintf("output %s: %v", want.Name, err), nil
		}
		if why := compareOutput(got, want); why != "" {
			if r, known := referenceDiffers[filepath.Base(dir)]; known {
				return "refused: " + r, nil
			}
			return "output " + want.Name + ": " + why, nil
		}
	}
	return "", args[4:]
}

// referenceDiffers are the tests whose reference gpucc does not follow,
// and why (as onnx's TestNodeTestsTypedInputs says).
var referenceDiffers = nodetests.ReferenceDiffers

func readPB(path string) (*onnx.Tensor, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return onnx.ReadTensor(f, ir.Limits{})
}

// compareOutput compares an output gpucc wrote with the reference: an
// integer or bool exactly and in its own dtype, a float within the
// tolerance (NaN where the reference has NaN).
func compareOutput(got *npy.Array, want *onnx.Tensor) string {
	if !slices.Equal(got.Shape, want.Shape) {
		return fmt.Sprintf("shape %v, the reference's %v", got.Shape, want.Shape)
	}
	if want.Float32 == nil && want.Float64 == nil {
		if got.DType != npyDTypes[want.Type] || !slices.Equal(got.Int64, want.Int64) {
			return fmt.Sprintf("%s %v, the reference's %v %v", got.DType, got.Int64, want.Type, want.Int64)
		}
		return ""
	}
	if len(got.Float32) != len(want.Float32) {
		return fmt.Sprintf("%s of %d floats, the reference's %v of %d", got.DType, len(got.Float32), want.Type, len(want.Float32))
	}
	for i, w := range want.Float32 {
		g := got.Float32[i]
		if d := math.Abs(float64(g) - float64(w)); g != w && !(d <= 1e-7+1e-3*math.Abs(float64(w))) && !(g != g && w != w) { // ±Inf equal to itself too
			return fmt.Sprintf("element %d is %v, the reference's %v", i, g, w)
		}
	}
	return ""
}
