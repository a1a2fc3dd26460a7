package onnx_test

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/gpucc/gpucc"
	"github.com/gpucc/gpucc/internal/gpucctest"
	"github.com/gpucc/gpucc/ir"
	"github.com/gpucc/gpucc/onnx"
	_ "github.com/gpucc/gpucc/runtime/all"
)

var update = flag.Bool("update", false, "rewrite testdata/node_tests.txt")

// The tolerance against the ONNX reference outputs: ONNX's own runner's
// (onnx/backend/test/runner: rtol 1e-3, atol 1e-7). Across gpucc's
// backends the bits must be identical.
const (
	rtol = 1e-3
	atol = 1e-7
)

// nodeTests generates the ONNX backend node tests with Debian's
// python3-onnx (testdata/gen_node_tests.py) into a temporary directory,
// or skips when it is not installed and GPUCC_REQUIRE_ONNX is unset.
func nodeTests(t *testing.T) string {
	t.Helper()
	py := "/usr/bin/python3"
	if _, err := os.Stat(py); err != nil {
		py = "python3"
	}
	if err := exec.Command(py, "-c", "import onnx, numpy").Run(); err != nil {
		if os.Getenv("GPUCC_REQUIRE_ONNX") != "" {
			t.Fatalf("GPUCC_REQUIRE_ONNX is set but python3-onnx cannot be imported: %v", err)
		}
		t.Skipf("python3-onnx is not installed (%v); set GPUCC_REQUIRE_ONNX to fail instead", err)
	}
	dir := t.TempDir()
	out, err := exec.Command(py, "testdata/gen_node_tests.py", dir).CombinedOutput()
	if err != nil {
		t.Fatalf("generating the node tests: %v\n%s", err, out)
	}
	t.Logf("%s", strings.TrimSpace(string(out)))
	return dir
}

// nodeTest is one generated test: its model, inputs and reference outputs.
type nodeTest struct {
	name    string
	model   string
	inputs  []*onnx.Tensor
	outputs []*onnx.Tensor
}

func readNodeTest(t *testing.T, dir, name string) nodeTest {
	t.Helper()
	nt := nodeTest{name: name, model: filepath.Join(dir, name, "model.onnx")}
	ds := filepath.Join(dir, name, "test_data_set_0")
	for _, kind := range []string{"input", "output"} {
		for j := 0; ; j++ {
			f, err := os.Open(filepath.Join(ds, fmt.Sprintf("%s_%d.pb", kind, j)))
			if errors.Is(err, os.ErrNotExist) {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			tt, err := onnx.ReadTensor(f, ir.Limits{})
			f.Close()
			if err != nil {
				tt = nil // a type gpucc does not read: the model is refused anyway
			}
			if kind == "input" {
				nt.inputs = append(nt.inputs, tt)
			} else {
				nt.outputs = append(nt.outputs, tt)
			}
		}
	}
	return nt
}

// load imports the test's model, fixing every input that is not float32
// (indices, shapes, masks) as a constant, and binds the float32 inputs.
func (nt nodeTest) load() (*ir.Graph, error) {
	consts := map[string]*onnx.Tensor{}
	for _, in := range nt.inputs {
		if in == nil {
			return nil, ir.Errorf(ir.CodeUnsupported, -1, "", "an input of a type gpucc does not read")
		}
		if in.Type != onnx.Float32 {
			consts[in.Name] = in
		}
	}
	f, err := os.Open(nt.model)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	g, err := onnx.Load(f, onnx.Options{Constants: consts})
	if err != nil {
		return nil, err
	}
	for _, in := range nt.inputs {
		if in.Type == onnx.Float32 {
			if err := g.SetInput(in.Name, in.Float32); err != nil {
				return nil, ir.Errorf(ir.CodeUnsupported, -1, "", "the test's data does not fit its model: %v", err)
			}
		}
	}
	return g, nil
}

// ulps returns the distance in units in the last place between float32
// values (0 for equal bits, both NaN, or ±0).
func ulps(a, b float32) uint64 {
	if a == b || a != a && b != b {
		return 0
	}
	key := func(x float32) int64 {
		u := int64(math.Float32bits(x))
		if u&(1<<31) != 0 {
			return -(u &^ (1 << 31))
		}
		return u
	}
	d := key(a) - key(b)
	if d < 0 {
		d = -d
	}
	return uint64(d)
}

// TestNodeTests runs every ONNX backend node test of Debian's python3-onnx
// through Load on every backend. A test either passes (every backend's
// bits equal cpu's, and cpu is within rtol/atol of the reference) or is
// refused with a stable code; the list, with each passing test's largest
// ULP distance from the reference, is testdata/node_tests.txt (-update
// rewrites it).
func TestNodeTests(t *testing.T) {
	dir := nodeTests(t)
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var tests []string
	for _, e := range entries {
		tests = append(tests, e.Name())
	}
	slices.Sort(tests)
	backends := openBackends(t)
	var lines []string
	passed, exact := 0, 0
	for _, name := range tests {
		nt := readNodeTest(t, dir, name)
		g, err := nt.load()
		if err != nil {
			code := gpucc.CodeOf(err)
			if code != ir.CodeUnsupported {
				t.Errorf("%s: refused with %s, not unsupported: %v", name, code, err)
			}
			lines = append(lines, fmt.Sprintf("refused %s: %v", name, oneLine(err)))
			continue
		}
		line, ok := runNodeTest(t, backends, nt, g)
		lines = append(lines, line)
		if ok {
			passed++
			if strings.HasSuffix(line, " 0 ulp") {
				exact++
			}
		}
	}
	summary := fmt.Sprintf("# %d of %d node tests pass on every backend (%d bit-exact against the reference); tolerance rtol %g, atol %g; backends %v", passed, len(tests), exact, rtol, atol, names(backends))
	t.Log(summary)
	got := summary + "\n" + strings.Join(lines, "\n") + "\n"
	golden := "testdata/node_tests.txt"
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

// openBackends opens every backend that can start here (each required
// one must: GPUCC_REQUIRE_WEBGPU and the others, as gpucctest.Open).
// GPUCC_ONNX_CPU_ONLY limits the run to cpu, for a quick look.
func openBackends(t *testing.T) map[string]*gpucc.Runtime {
	rts := map[string]*gpucc.Runtime{}
	for _, b := range gpucctest.Backends {
		if b != "cpu" && os.Getenv("GPUCC_ONNX_CPU_ONLY") != "" {
			continue
		}
		env := "GPUCC_REQUIRE_" + strings.ToUpper(b)
		rt, err := gpucc.Open(context.Background(), gpucc.Options{Backend: b, AllowSoftware: true})
		if err != nil {
			if b == "cpu" || os.Getenv(env) != "" {
				t.Fatalf("backend %s: %v", b, err)
			}
			t.Logf("backend %s unavailable, not run: %v", b, err)
			continue
		}
		t.Cleanup(rt.Close)
		rts[b] = rt
	}
	return rts
}

// names returns the backends that ran, in gpucctest.Backends' order.
func names(rts map[string]*gpucc.Runtime) []string {
	var bs []string
	for _, b := range gpucctest.Backends {
		if rts[b] != nil {
			bs = append(bs, b)
		}
	}
	return bs
}

func oneLine(err error) string {
	return strings.ReplaceAll(err.Error(), "\n", " ")
}

// runNodeTest runs g on every backend, checks that their bits agree with
// cpu's and that cpu is within the tolerance of the reference, and
// returns the test's line.
func runNodeTest(t *testing.T, backends map[string]*gpucc.Runtime, nt nodeTest, g *ir.Graph) (string, bool) {
	ctx := context.Background()
	var ref map[string][]uint32
	for _, b := range append([]string{"cpu"}, gpucctest.Backends...) {
		rt := backends[b]
		if rt == nil || b == "cpu" && ref != nil {
			continue
		}
		res, err := rt.Run(ctx, g)
		if err != nil {
			if b == "cpu" {
				return fmt.Sprintf("refused %s: at run time: %v", nt.name, oneLine(err)), false
			}
			t.Errorf("%s on %s: %v", nt.name, b, err)
			continue
		}
		bits := map[string][]uint32{}
		for name, o := range res.Outputs {
			bits[name] = gpucctest.BitsOf(o.Data)
		}
		if ref == nil {
			ref = bits
			continue
		}
		if diff := cmp.Diff(ref, bits); diff != "" {
			t.Errorf("%s: %s differs from cpu in IEEE bits (-cpu +%s):\n%s", nt.name, b, b, diff)
		}
	}
	if ref == nil {
		return fmt.Sprintf("refused %s: no backend ran it", nt.name), false
	}
	worst := uint64(0)
	for _, want := range nt.outputs {
		if want == nil || want.Type != onnx.Float32 {
			t.Errorf("%s: a reference output that is not float32", nt.name)
			return fmt.Sprintf("failed %s", nt.name), false
		}
		got, ok := ref[want.Name]
		if !ok || len(got) != len(want.Float32) {
			t.Errorf("%s: output %s: got %d values, want %d", nt.name, want.Name, len(got), len(want.Float32))
			return fmt.Sprintf("failed %s", nt.name), false
		}
		for i, w := range want.Float32 {
			v := math.Float32frombits(got[i])
			if d := math.Abs(float64(v) - float64(w)); !(d <= atol+rtol*math.Abs(float64(w))) && !(v != v && w != w) {
				t.Errorf("%s: output %s[%d] = %v, reference %v: outside rtol %g, atol %g", nt.name, want.Name, i, v, w, rtol, atol)
				return fmt.Sprintf("failed %s", nt.name), false
			}
			worst = max(worst, ulps(v, w))
		}
	}
	return fmt.Sprintf("pass %s: %d ulp", nt.name, worst), true
}
