package web

import (
	"context"
	"fmt"
	"math"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/gpucc/gpucc"
	"github.com/gpucc/gpucc/cpuref"
	"github.com/gpucc/gpucc/internal/nodetests"
	"github.com/gpucc/gpucc/ir"
)

// webgl2Golden is webgl2's column of issue 32's table: one row per node
// test of the union (../onnx/testdata/node_tests_union.txt's "in" rows).
const webgl2Golden = "../onnx/testdata/node_tests_webgl2.txt"

// webgl2ShortEvery: under -short every webgl2ShortEvery-th test of the
// union runs (SwiftShader compiles each graph's shaders, about a second a
// graph under load); the full tier runs them all.
const webgl2ShortEvery = 16

// TestNodeTestsWebGL2 is webgl2's column of issue 32's bar: each node test
// of the union (it passes on cpu with its own inputs at run time and gives
// cpu's bits on native, wasm and webgpu: onnx's TestNodeTestsUnion), bound
// to its inputs as there (internal/nodetests), sent to the page as
// protocol v1 (ir.Encode, an int64 output also as its two int32 words) and
// run by gpucc.run on WebGL2 in Chromium. Each gives cpu's bits (every
// output's dtype and values), or flushes float32 subnormals to zero (GLSL
// ES 3.00 lets highp do so; recorded as flushed, with the count), or the
// page refuses it by name: its error's code and message (a dtype protocol
// v1 does not name, a value its host does not take: non-finite data or
// outputs, the page's limits). Anything else (another value, an internal
// error) fails the test. The rows are ../onnx/testdata/node_tests_webgl2.txt
// (-update rewrites it, without -short); -short runs every
// webgl2ShortEvery-th test and checks its row.
func TestNodeTestsWebGL2(t *testing.T) {
	if err := nodetests.Available(); err != nil {
		if os.Getenv("GPUCC_REQUIRE_ONNX") != "" {
			t.Fatalf("GPUCC_REQUIRE_ONNX is set but python3-onnx cannot be imported: %v", err)
		}
		t.Skipf("python3-onnx is not installed (%v); set GPUCC_REQUIRE_ONNX to fail instead", err)
	}
	update := *updateScreenshot // the package's -update flag
	union, err := os.ReadFile("../onnx/testdata/node_tests_union.txt")
	if err != nil {
		t.Fatal(err)
	}
	var tests []string
	for _, line := range strings.Split(string(union), "\n") {
		if name, ok := strings.CutSuffix(line, " in"); ok {
			tests = append(tests, name)
		}
	}
	total := len(tests)
	sample := testing.Short() && !update
	if sample {
		var some []string
		for k := 0; k < len(tests); k += webgl2ShortEvery {
			some = append(some, tests[k])
		}
		tests = some
	}
	dir := t.TempDir()
	if _, err := nodetests.Generate("../onnx/testdata/gen_node_tests.py", dir); err != nil {
		t.Fatal(err)
	}
	cpu, err := gpucc.Open(context.Background(), gpucc.Options{Backend: "cpu", Limits: nodetests.Limits})
	if err != nil {
		t.Fatal(err)
	}
	defer cpu.Close()
	ctx := page(t, "?life=0", time.Duration(len(tests))*10*time.Second+pageDeadline)
	start := time.Now()
	rows := map[string]string{}
	for _, name := range tests {
		rows[name] = webgl2Row(t, ctx, cpu, dir, name)
	}
	same, flushed := 0, 0
	var lines []string
	for _, name := range tests {
		switch r := rows[name]; {
		case r == "same":
			same++
		case strings.HasPrefix(r, "flushed"):
			flushed++
		}
		lines = append(lines, name+" "+rows[name])
	}
	t.Logf("webgl2: %d of %d node tests of the union give cpu's bits, %d flush float32 subnormals, %d refused by name (%.0f s)",
		same, len(tests), flushed, len(tests)-same-flushed, time.Since(start).Seconds())
	if update {
		got := fmt.Sprintf("# %d of the union's %d node tests give cpu's bits on webgl2 (in the page, Chromium's SwiftShader), %d more but for float32 subnormals flushed to ±0 (GLSL ES 3.00 lets highp flush them), %d are refused by name. TestNodeTestsWebGL2 (web): each test bound to its own inputs as in TestNodeTestsUnion, sent as protocol v1 and run by gpucc.run on webgl2\n",
			same, total, flushed, total-same-flushed) + strings.Join(lines, "\n") + "\n"
		if err := os.WriteFile(webgl2Golden, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	b, err := os.ReadFile(webgl2Golden)
	if err != nil {
		t.Fatalf("%v (go test -run TestNodeTestsWebGL2 -update ./web/, without -short, writes it)", err)
	}
	want := map[string]string{}
	var wantNames []string
	for _, line := range strings.Split(string(b), "\n") {
		if name, row, ok := strings.Cut(line, " "); ok && strings.HasPrefix(name, "test_") {
			want[name] = row
			wantNames = append(wantNames, name)
		}
	}
	if !sample && !slices.Equal(wantNames, tests) {
		t.Errorf("%s's tests are not the union's (-update rewrites it):\n%s", webgl2Golden, cmp.Diff(wantNames, tests))
	}
	for _, name := range tests {
		if want[name] != rows[name] {
			t.Errorf("%s on webgl2 changed (-update rewrites %s):\n-%s\n+%s", name, webgl2Golden, want[name], rows[name])
		}
	}
}

// webgl2Row runs node test name on the page's WebGL2 and returns its row:
// same, flushed (and how many values), or refused and the page's error.
func webgl2Row(t *testing.T, ctx context.Context, cpu *gpucc.Runtime, dir, name string) string {
	nt, err := nodetests.Read(dir, name)
	if err != nil {
		t.Fatal(err)
	}
	g, err := nodetests.Bind(nt)
	if err != nil {
		t.Errorf("%s: a test of the union does not bind: %v", name, err)
		return "fails: " + oneLine(err.Error())
	}
	if why := nonFiniteData(g); why != "" {
		return "refused: protocol v1 holds finite numbers only: " + why
	}
	g = splitInt64(g)
	res, err := cpu.Run(context.Background(), g)
	if err != nil {
		t.Errorf("%s: cpu: %v", name, err)
		return "fails: cpu: " + oneLine(err.Error())
	}
	r := runTyped(t, ctx, name, g, map[string]any{"backend": "webgl2", "allowSoftware": true})
	if r.Error != nil {
		switch r.Error.Code {
		case "unsupported", "limit_exceeded", "non_finite_output", "invalid_graph", "invalid_input":
		default:
			t.Errorf("%s on webgl2: %s: %s", name, r.Error.Code, r.Error.Message)
		}
		msg := oneLine(r.Error.Message)
		if !strings.HasPrefix(msg, r.Error.Code) {
			msg = r.Error.Code + ": " + msg
		}
		return "refused: " + msg
	}
	if r.Backend != "webgl2" {
		t.Fatalf("%s: ran on %q, want webgl2", name, r.Backend)
	}
	flushed := 0
	for _, o := range g.Outputs {
		w := res.Outputs[o.Name]
		v := cpuref.Value{DType: w.DType, F: w.Data, I: w.Ints}
		got, ok := r.Outputs[o.Name]
		if !ok || len(got.Data) != v.Len() {
			t.Errorf("%s on webgl2: output %s: %d values, cpu %d", name, o.Name, len(got.Data), v.Len())
			return "differs: output " + o.Name
		}
		for k := range got.Data {
			gb := pageBits(v.DType, got.Data[k])
			if v.DType.IsFloat() {
				gb = fmt.Sprint(got.Bits[k])
			}
			if v.DType.IsFloat() && flushedTo(got.Bits[k], v.F[k]) {
				flushed++
				continue
			}
			if wb := typedBits(v, k); gb != wb {
				t.Errorf("%s on webgl2: output %s (%v) element %d: page %s (%s), cpu %s", name, o.Name, v.DType, k, gb, got.Data[k], wb)
				return fmt.Sprintf("differs: output %s element %d", o.Name, k)
			}
		}
	}
	if flushed > 0 {
		return fmt.Sprintf("flushed: %d float32 subnormals to ±0", flushed)
	}
	return "same"
}

func oneLine(s string) string { return strings.ReplaceAll(s, "\n", " ") }

// nonFiniteData names the first input or full node of g holding a float
// that is not finite (NaN, ±Inf: JSON has no number for it, so gpucc.run's
// protocol v1 cannot carry it), or "".
func nonFiniteData(g *ir.Graph) string {
	for i, n := range g.Nodes {
		vals := n.Data
		if n.Op == ir.OpFull {
			vals = []float32{n.Scalar}
		}
		if n.Op != ir.OpInput && n.Op != ir.OpFull || !n.DType.IsFloat() {
			continue
		}
		for k, v := range vals {
			if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
				return fmt.Sprintf("node %d (%v %s) holds %v at element %d", i, n.Op, ir.Quote(n.Name), v, k)
			}
		}
	}
	return ""
}
