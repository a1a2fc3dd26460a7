package onnx_test

import (
	"context"
	"flag"
	"fmt"
	"math"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/gpucc/gpucc"
	"github.com/gpucc/gpucc/cpuref"
	"github.com/gpucc/gpucc/internal/gpucctest"
	"github.com/gpucc/gpucc/internal/nodetests"
	"github.com/gpucc/gpucc/ir"
	"github.com/gpucc/gpucc/onnx"
	_ "github.com/gpucc/gpucc/runtime/all"
)

var update = flag.Bool("update", false, "rewrite testdata/node_tests.txt")

// The tolerance against the ONNX reference outputs: ONNX's own runner's
// (onnx/backend/test/runner: rtol 1e-3, atol 1e-7). Across gpucc's
// backends the bits must be identical. An integer or bool output (which
// gpucc returns as float32 values) must equal the reference exactly.
const (
	rtol = 1e-3
	atol = 1e-7
)

// nodeTests generates the ONNX backend node tests with Debian's
// python3-onnx (testdata/gen_node_tests.py) into a temporary directory,
// or skips when it is not installed and GPUCC_REQUIRE_ONNX is unset.
func nodeTests(t *testing.T) string {
	t.Helper()
	if err := nodetests.Available(); err != nil {
		if os.Getenv("GPUCC_REQUIRE_ONNX") != "" {
			t.Fatalf("GPUCC_REQUIRE_ONNX is set but python3-onnx cannot be imported: %v", err)
		}
		t.Skipf("python3-onnx is not installed (%v); set GPUCC_REQUIRE_ONNX to fail instead", err)
	}
	dir := t.TempDir()
	out, err := nodetests.Generate("testdata/gen_node_tests.py", dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%s", out)
	return dir
}

// nodeTest is one generated test: its model, inputs and reference outputs.
type nodeTest struct {
	name    string
	model   string
	inputs  []*onnx.Tensor
	outputs []*onnx.Tensor
	unread  []string // the inputs ReadTensor refused, and why
}

func readNodeTest(t *testing.T, dir, name string) nodeTest {
	t.Helper()
	nt, err := nodetests.Read(dir, name)
	if err != nil {
		t.Fatal(err)
	}
	return nodeTest{name: nt.Name, model: nt.Model, inputs: nt.Inputs, outputs: nt.Outputs, unread: nt.Unread}
}

// load imports the test's model, fixing every input that is not float32
// (indices, shapes, masks) as a constant, and binds the float32 inputs.
func (nt nodeTest) load() (*ir.Graph, error) {
	consts := map[string]*onnx.Tensor{}
	for _, in := range nt.inputs {
		if in == nil {
			return nil, ir.Errorf(ir.CodeUnsupported, -1, "", "the test's %s", strings.Join(nt.unread, "; "))
		}
		// Integer and bool inputs are fixed at import (shapes, indices),
		// and so are Resize's float32 scales, which the Resize tests pass
		// as a graph input where a model has an initializer: the output's
		// shape depends on them; and Pad's constant_value, which the
		// constant pad test passes as one.
		if in.Type != onnx.Float32 || in.Name == "scales" && strings.HasPrefix(nt.name, "test_resize_") ||
			in.Name == "value" && strings.HasPrefix(nt.name, "test_constant_pad") {
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
		if in.Type == onnx.Float32 && consts[in.Name] == nil {
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
	var ran []ranTest
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
		line, bits := checkReference(t, backends["cpu"], nt, g)
		lines = append(lines, line)
		if bits != nil {
			ran = append(ran, ranTest{name: name, g: g, bits: bits})
			passed++
			if strings.HasSuffix(line, " 0 ulp") {
				exact++
			}
		}
	}
	for _, b := range gpucctest.Backends {
		if rt := backends[b]; rt != nil && b != "cpu" {
			checkBackend(t, rt, ran)
		}
	}
	summary := fmt.Sprintf("# %d of %d node tests pass, with identical bits on every backend (%d bit-exact against the reference); tolerance against the reference rtol %g, atol %g", passed, len(tests), exact, rtol, atol)
	t.Logf("%s; backends run: %v", summary, names(backends))
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
		rt, err := gpucc.Open(context.Background(), gpucc.Options{Backend: b, AllowSoftware: true, Limits: limits})
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

// ranTest is a test that passed on cpu: its graph and cpu's output bits.
type ranTest struct {
	name string
	g    *ir.Graph
	bits map[string][]uint32
}

// limits are the runtimes' limits: a batch of merged tests is larger than
// the default graph.
var limits = ir.Limits{MaxNodes: 1 << 16, MaxOutputs: 1 << 12, MaxStorageBytes: 1 << 28, MaxOps: 1 << 36}

// checkReference runs g on cpu and checks every output against the ONNX
// reference within rtol and atol. It returns the test's line and, when it
// passed, cpu's output bits.
func checkReference(t *testing.T, cpu *gpucc.Runtime, nt nodeTest, g *ir.Graph) (string, map[string][]uint32) {
	res, err := cpu.Run(context.Background(), g)
	if err != nil {
		return fmt.Sprintf("refused %s: at run time: %v", nt.name, oneLine(err)), nil
	}
	bits := map[string][]uint32{}
	for name, o := range res.Outputs {
		bits[name] = outputBits(o)
	}
	worst := uint64(0)
	for _, want := range nt.outputs {
		if o, ok := res.Outputs[want.Name]; ok && want != nil && isInt(want.Type) && !o.DType.IsFloat() {
			// a typed output (a run-time integer's own dtype): exactly the reference's
			if !slices.Equal(o.Ints, want.Int64) {
				t.Errorf("%s: output %s = %v, reference %v", nt.name, want.Name, o.Ints, want.Int64)
				return fmt.Sprintf("failed %s: output %s", nt.name, want.Name), nil
			}
			continue
		}
		// gpucc returns a bool as 1 or 0 and an integer as its float32
		// value; they must equal the reference, with no tolerance.
		exact := want != nil && isInt(want.Type)
		if exact {
			f := &onnx.Tensor{Name: want.Name, Type: onnx.Float32, Shape: want.Shape}
			for _, b := range want.Int64 {
				f.Float32 = append(f.Float32, float32(b))
			}
			want = f
		}
		if want == nil || want.Type != onnx.Float32 { // the float path compares float32 (TestNodeTestsTypedInputs the others)
			return fmt.Sprintf("refused %s: a reference output that is not float32", nt.name), nil
		}
		if r, known := referenceDiffers[nt.name]; known {
			return fmt.Sprintf("refused %s: %s", nt.name, r), nil
		}
		got, ok := bits[want.Name]
		if !ok || len(got) != len(want.Float32) {
			t.Errorf("%s: output %s: got %d values, want %d", nt.name, want.Name, len(got), len(want.Float32))
			return fmt.Sprintf("failed %s: output %s", nt.name, want.Name), nil
		}
		for i, w := range want.Float32 {
			v := math.Float32frombits(got[i])
			if d := math.Abs(float64(v) - float64(w)); exact && d != 0 || !(d <= atol+rtol*math.Abs(float64(w))) && !(v != v && w != w) {
				t.Errorf("%s: output %s[%d] = %v, reference %v: outside rtol %g, atol %g", nt.name, want.Name, i, v, w, rtol, atol)
				return fmt.Sprintf("failed %s: output %s[%d] = %v, reference %v", nt.name, want.Name, i, v, w), nil
			}
			worst = max(worst, ulps(v, w))
		}
	}
	return fmt.Sprintf("pass %s: %d ulp", nt.name, worst), bits
}

// isInt reports whether dt is an integer type or bool (held in
// Tensor.Int64).
func isInt(dt onnx.DataType) bool {
	switch dt {
	case onnx.Bool, onnx.Uint8, onnx.Int8, onnx.Uint16, onnx.Int16, onnx.Int32, onnx.Int64, onnx.Uint32, onnx.Uint64:
		return true
	}
	return false
}

// checkBackend runs the tests on rt, merged into graphs of up to batch
// tests (one compilation each), and checks every output's bits against
// cpu's. On webgpu a value may be cpuref.EvalFlushed's instead (a GPU may
// flush subnormals, the one liberty WGSL grants). A batch that fails runs
// again test by test, to name the test.
func checkBackend(t *testing.T, rt *gpucc.Runtime, ran []ranTest) {
	const batch = 32
	for lo := 0; lo < len(ran); lo += batch {
		part := ran[lo:min(lo+batch, len(ran))]
		if err := runBatch(t, rt, part); err != nil {
			for _, r := range part {
				if err := runBatch(t, rt, []ranTest{r}); err != nil {
					t.Errorf("%s on %s: %v", r.name, rt.Backend(), err)
				}
			}
		}
	}
}

// runBatch runs the tests merged into one graph and compares each output
// with cpu's bits.
func runBatch(t *testing.T, rt *gpucc.Runtime, part []ranTest) error {
	m := &ir.Graph{}
	want := map[string][]uint32{}
	for k, r := range part {
		off := ir.NodeID(len(m.Nodes))
		for _, n := range r.g.Nodes {
			args := make([]ir.NodeID, len(n.Args))
			for j, a := range n.Args {
				args[j] = a + off
			}
			n.Args = args
			if n.Name != "" {
				n.Name = fmt.Sprintf("t%d/%s", k, n.Name)
			}
			m.Nodes = append(m.Nodes, n)
		}
		for _, o := range r.g.Outputs {
			name := r.name + "/" + o.Name
			m.Outputs = append(m.Outputs, ir.Output{Name: name, ID: o.ID + off})
			want[name] = slices.Clone(r.bits[o.Name]) // webgpu may accept flushed values below
		}
	}
	res, err := rt.Run(context.Background(), m)
	if err != nil {
		return err
	}
	got := map[string][]uint32{}
	for name, o := range res.Outputs {
		got[name] = outputBits(o)
	}
	if rt.Backend() == "webgpu" && !gpucc.Typed(m) { // typed graphs: EvalTyped has no flushed form
		flushed := cpuref.EvalFlushed(m)
		for _, o := range m.Outputs {
			for i, v := range got[o.Name] {
				if i < len(want[o.Name]) && v != want[o.Name][i] && v == math.Float32bits(flushed[o.ID][i]) {
					want[o.Name][i] = v
				}
			}
		}
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("%s differs from cpu in IEEE bits (-cpu +%s):\n%s", rt.Backend(), rt.Backend(), diff)
	}
	return nil
}

// outputBits is a float output's bits, or an integer output's values as
// two 32-bit words each (exact), for comparing backends.
func outputBits(o gpucc.Tensor) []uint32 {
	if o.DType.IsFloat() {
		return gpucctest.BitsOf(o.Data)
	}
	bs := make([]uint32, 0, 2*len(o.Ints))
	for _, v := range o.Ints {
		bs = append(bs, uint32(v), uint32(uint64(v)>>32))
	}
	return bs
}
