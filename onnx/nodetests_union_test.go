package onnx_test

import (
	"context"
	"flag"
	"fmt"
	"math"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gpucc/gpucc"
	"github.com/gpucc/gpucc/ir"
)

// unionBackends are the compiled backends of issue 32's bar, besides cpu:
// a node test counts when it passes on cpu with its inputs at run time
// and gives cpu's bits on each of them.
var unionBackends = []string{"native", "wasm", "webgpu"}

// unionGolden is the bar's table: one row per node test, the cpu column
// (pass, or refused and why) and one column per backend of unionBackends
// (same: cpu's bits; refused: unsupported by name, and why).
const unionGolden = "testdata/node_tests_union.txt"

// unionBar is issue 32's first bar: node tests passing on cpu with their
// own inputs at run time and giving cpu's bits on native, wasm and webgpu.
const unionBar = 800

// unionFloor is the count the table must hold at least: the count landed
// (at least unionBar).
const unionFloor = 804

// unionShortEvery: under -short the test runs every unionShortEvery-th
// node test (in name order) on every backend and checks its row of the
// golden, and checks the golden's count against the bar; the full tier
// (make test-all) runs every test and rewrites nothing but compares the
// whole table.
const unionShortEvery = 12

// TestNodeTestsUnion counts issue 32's first bar: the node tests that pass
// on cpu as a user with run-time data runs them (runTyped: every input
// given at run time in its own dtype, only what decides a shape read at
// specialization) and give cpu's outputs bit for bit (dtype, shape, every
// value's bits) on native, wasm and webgpu (lavapipe). Each test's row in
// testdata/node_tests_union.txt says, per backend, same or refused and
// why (an error of code unsupported); a backend that gives another answer
// or fails otherwise fails the test. -update rewrites the table (run it
// without -short). Under -short a sample of the tests runs (every
// unionShortEvery-th), each checked against its row, and the table's own
// count is checked against the bar; webgl2's column is web's
// TestNodeTestsWebGL2 (testdata/node_tests_webgl2.txt).
func TestNodeTestsUnion(t *testing.T) {
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
	sample := !*update && testing.Short() || *unionOnly != ""
	if *unionOnly != "" { // these rows alone, checked against the table or merged into it
		re, err := regexp.Compile(*unionOnly)
		if err != nil {
			t.Fatal(err)
		}
		tests = slices.DeleteFunc(tests, func(name string) bool { return !re.MatchString(name) })
	}
	if sample && *unionOnly == "" {
		var some []string
		for k := 0; k < len(tests); k += unionShortEvery {
			some = append(some, tests[k])
		}
		tests = some
	}
	rows := unionRows(t, dir, tests)
	got := unionTable(rows, len(entries))
	if *update && *unionOnly != "" {
		got = unionMerge(t, rows, len(entries))
	}
	if *update {
		if err := os.WriteFile(unionGolden, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	b, err := os.ReadFile(unionGolden)
	if err != nil {
		t.Fatalf("%v (run go test -run TestNodeTestsUnion -update ./onnx/, without -short, to write it)", err)
	}
	want := string(b)
	if n, total := unionCount(t, want); n < max(unionFloor, unionBar) {
		t.Errorf("%s: %d of %d node tests are in the union (pass on cpu and give its bits on %v), under the %d landed (issue 32's bar is %d)", unionGolden, n, total, unionBackends, unionFloor, unionBar)
	}
	if sample {
		wantRows := map[string]string{}
		for _, line := range strings.Split(want, "\n") {
			if name, _, ok := strings.Cut(line, " "); ok && strings.HasPrefix(name, "test_") {
				wantRows[name] = line
			}
		}
		for _, r := range rows {
			if w := wantRows[r.name]; w != r.line() {
				t.Errorf("%s's row changed (-update rewrites %s):\n-%s\n+%s", r.name, unionGolden, w, r.line())
			}
		}
		return
	}
	if diff := cmp.Diff(strings.Split(want, "\n"), strings.Split(got, "\n")); diff != "" {
		t.Errorf("the union's table changed (-want +got; -update rewrites %s):\n%s", unionGolden, diff)
	}
}

// unionOnly restricts TestNodeTestsUnion to the node tests it matches:
// their rows are checked against the table, or with -update merged into it
// (the count recomputed from every row), so that a change to a few rows
// need not run all 922 tests on four backends.
var unionOnly = flag.String("union.only", "", "TestNodeTestsUnion: run the node tests matching this regexp only (-update: rewrite their rows of "+unionGolden+")")

// unionMerge returns the table with rows in place of its rows of the same
// names.
func unionMerge(t *testing.T, rows []unionRow, total int) string {
	b, err := os.ReadFile(unionGolden)
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]string{}
	for _, r := range rows {
		byName[r.name] = r.line()
	}
	var lines []string
	for _, l := range strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")[1:] {
		name, _, _ := strings.Cut(l, " ")
		if r, ok := byName[name]; ok {
			l = r
		}
		lines = append(lines, l)
	}
	return unionTableOf(lines, total)
}

// unionRow is one node test's row: cpu's verdict and each backend's.
type unionRow struct {
	name string
	cpu  string            // "pass", or "refused: why"
	on   map[string]string // backend: "same", "refused: why" or "differs: how"
}

// inUnion reports whether the row passes on cpu and gives its bits on
// every backend of unionBackends.
func (r unionRow) inUnion() bool {
	if r.cpu != "pass" {
		return false
	}
	for _, b := range unionBackends {
		if r.on[b] != "same" {
			return false
		}
	}
	return true
}

// cOnly reports whether the row passes on cpu and gives its bits on the
// C targets (native, wasm) while webgpu refuses it by name: float64,
// which C computes as double and WGSL has no type for. It is not in the
// union (the bar needs webgpu), and has its own state in the table.
func (r unionRow) cOnly() bool {
	return r.cpu == "pass" && r.on["native"] == "same" && r.on["wasm"] == "same" && strings.HasPrefix(r.on["webgpu"], "refused: ")
}

// line renders the row: "NAME in" for a test in the union, "NAME
// native+wasm: webgpu refused: why" for one that only webgpu refuses
// (cOnly), else "NAME out" and the columns that keep it out.
func (r unionRow) line() string {
	if r.inUnion() {
		return r.name + " in"
	}
	if r.cpu != "pass" {
		return r.name + " out: cpu " + r.cpu
	}
	if r.cOnly() {
		return r.name + " native+wasm: webgpu " + strings.ReplaceAll(r.on["webgpu"], "the webgpu backend", "the backend")
	}
	// The backends that keep it out, those with one reason (their names
	// aside) together: "native, wasm, webgpu refused: …".
	var reasons []string
	who := map[string][]string{}
	for _, b := range unionBackends {
		if v := r.on[b]; v != "same" {
			v = strings.ReplaceAll(v, "the "+b+" backend", "the backend")
			if who[v] == nil {
				reasons = append(reasons, v)
			}
			who[v] = append(who[v], b)
		}
	}
	cols := make([]string, len(reasons))
	for k, v := range reasons {
		cols[k] = strings.Join(who[v], ", ") + " " + v
	}
	return r.name + " out: " + strings.Join(cols, "; ")
}

var unionHeader = regexp.MustCompile(`^# (\d+) of (\d+) node tests`)

// unionCount reads the table's count and total from its first line,
// checking the count against its rows.
func unionCount(t *testing.T, table string) (int, int) {
	t.Helper()
	first, _, _ := strings.Cut(table, "\n")
	m := unionHeader.FindStringSubmatch(first)
	if m == nil {
		t.Fatalf("%s: no count in its first line %q", unionGolden, first)
	}
	n, _ := strconv.Atoi(m[1])
	total, _ := strconv.Atoi(m[2])
	if in := strings.Count(table, " in\n"); in != n {
		t.Errorf("%s: its first line counts %d, its rows %d", unionGolden, n, in)
	}
	return n, total
}

// unionTable renders the rows under their count.
func unionTable(rows []unionRow, total int) string {
	lines := make([]string, len(rows))
	for k, r := range rows {
		lines[k] = r.line()
	}
	return unionTableOf(lines, total)
}

// unionTableOf renders rows' lines (unionRow.line) under their count,
// which it reads from the lines themselves, so that rows merged into the
// table (-union.only) count as rows run together do.
func unionTableOf(lines []string, total int) string {
	in, cpu, c := 0, 0, 0
	for _, l := range lines {
		switch {
		case strings.HasSuffix(l, " in"):
			in++
		case strings.Contains(l, " native+wasm: webgpu refused: "):
			c++
		}
		if !strings.Contains(l, " out: cpu ") {
			cpu++
		}
	}
	return fmt.Sprintf("# %d of %d node tests pass on cpu and give cpu's bits on %s (%d pass on cpu; %d more give them on native and wasm and are refused by name on webgpu, rows \"native+wasm\": float64, which WGSL has no type for): issue 32's bar is %d. TestNodeTestsUnion: every input given at run time in its own dtype (as gpucc run --input does; only the inputs that decide a shape read at specialization); a row is in, native+wasm, or out with each column that keeps it out (cpu's refusal, or a backend's, by name)\n",
		in, total, strings.Join(unionBackends, ", "), cpu, c, unionBar) + strings.Join(lines, "\n") + "\n"
}

// unionCase is a test that passed on cpu: its graph, inputs bound.
type unionCase struct {
	row *unionRow
	g   *ir.Graph
}

// unionRows runs the named tests on cpu (runTyped) and each that passes
// on every backend of unionBackends, merged into batches of graphs of one
// kind (typed or float32 only, as each alone would run) and test by test
// where a batch fails, to name the test.
func unionRows(t *testing.T, dir string, tests []string) []unionRow {
	ctx := context.Background()
	lim := limits
	lim.NonFinite = true // as runTyped's
	rts := map[string]*gpucc.Runtime{}
	for _, name := range append([]string{"cpu"}, unionBackends...) {
		rt, err := gpucc.Open(ctx, gpucc.Options{Backend: name, AllowSoftware: true, Limits: lim})
		if err != nil {
			if env := "GPUCC_REQUIRE_" + strings.ToUpper(name); name == "cpu" || os.Getenv(env) != "" {
				t.Fatalf("%s: %v", name, err)
			}
			t.Skipf("backend %s cannot start here, and the table needs every backend (set GPUCC_REQUIRE_%s to fail instead): %v", name, strings.ToUpper(name), err)
		}
		t.Cleanup(rt.Close)
		rts[name] = rt
	}
	defer func() { typedGraphSeen = nil }()
	rows := make([]unionRow, len(tests))
	var typed, float []unionCase
	for k, name := range tests {
		nt := readNodeTest(t, dir, name)
		var g *ir.Graph
		typedGraphSeen = func(seen *ir.Graph) { g = seen.Clone() }
		rows[k] = unionRow{name: name, cpu: "pass", on: map[string]string{}}
		ok, why := runTyped(t, nt)
		if r, known := referenceDiffers[nt.name]; known && !ok && strings.HasPrefix(why, "output") {
			ok, why = false, "refused: "+r
		}
		switch {
		case ok && g != nil:
			c := unionCase{row: &rows[k], g: g}
			if gpucc.Typed(g) {
				typed = append(typed, c)
			} else {
				float = append(float, c)
			}
		case ok:
			t.Fatalf("%s: passed on cpu without a graph", name)
		case strings.HasPrefix(why, "refused"):
			rows[k].cpu = oneLineString(why)
		default:
			t.Errorf("%s on cpu: %s", name, why)
			rows[k].cpu = "fails: " + oneLineString(why)
		}
	}
	for _, b := range unionBackends {
		for _, cases := range [][]unionCase{float, typed} {
			for lo := 0; lo < len(cases); lo += 24 {
				part := cases[lo:min(lo+24, len(cases))]
				if !unionBatch(t, rts["cpu"], rts[b], part, false) {
					for _, c := range part {
						unionBatch(t, rts["cpu"], rts[b], []unionCase{c}, true)
					}
				}
			}
		}
	}
	return rows
}

// unionBatch runs the cases merged into one graph on cpu and on rt and
// records each case's verdict on rt. With alone false, an error of the
// merged run records nothing and returns false (run them one by one).
func unionBatch(t *testing.T, cpu, rt *gpucc.Runtime, part []unionCase, alone bool) bool {
	ctx := context.Background()
	m := &ir.Graph{}
	owner := map[string]*unionRow{}
	for k, c := range part {
		off := ir.NodeID(len(m.Nodes))
		for _, n := range c.g.Nodes {
			args := make([]ir.NodeID, len(n.Args))
			for j, a := range n.Args {
				args[j] = a + off
			}
			n.Args = args
			if n.Name != "" && !alone {
				n.Name = fmt.Sprintf("t%d/%s", k, n.Name)
			}
			m.Nodes = append(m.Nodes, n)
		}
		for _, o := range c.g.Outputs {
			name := o.Name
			if !alone {
				name = c.row.name + "/" + o.Name
			}
			m.Outputs = append(m.Outputs, ir.Output{Name: name, ID: o.ID + off})
			owner[name] = c.row
		}
	}
	want, err := cpu.Run(ctx, m)
	if err != nil {
		if alone {
			t.Errorf("%s: cpu fails on the graph it passed: %v", part[0].row.name, err)
			part[0].row.on[rt.Backend()] = "fails: " + oneLine(err)
		}
		return false
	}
	got, err := rt.Run(ctx, m)
	switch {
	case err != nil && !alone:
		return false
	case gpucc.CodeOf(err) == ir.CodeUnsupported:
		part[0].row.on[rt.Backend()] = "refused: " + oneLine(err)
		return true
	case err != nil:
		t.Errorf("%s on %s: %v", part[0].row.name, rt.Backend(), err)
		part[0].row.on[rt.Backend()] = "fails: " + oneLine(err)
		return true
	}
	for _, c := range part {
		c.row.on[rt.Backend()] = "same"
	}
	for name, w := range want.Outputs {
		if why := sameTensor(w, got.Outputs[name]); why != "" {
			r := owner[name]
			if r.on[rt.Backend()] == "same" {
				t.Errorf("%s on %s: output %s %s", r.name, rt.Backend(), name, why)
				r.on[rt.Backend()] = "differs: output " + name + " " + why
			}
		}
	}
	return true
}

// sameTensor returns "" when o holds w's dtype, shape and bits, else the
// first difference.
func sameTensor(w, o gpucc.Tensor) string {
	switch {
	case o.DType != w.DType:
		return fmt.Sprintf("is %v, cpu's %v", o.DType, w.DType)
	case !slices.Equal(o.Shape, w.Shape):
		return fmt.Sprintf("has shape %v, cpu's %v", o.Shape, w.Shape)
	case len(o.Ints) != len(w.Ints) || len(o.Data) != len(w.Data):
		return fmt.Sprintf("has %d+%d values, cpu's %d+%d", len(o.Data), len(o.Ints), len(w.Data), len(w.Ints))
	}
	for i := range w.Ints {
		if o.Ints[i] != w.Ints[i] {
			return fmt.Sprintf("element %d is %d, cpu's %d", i, o.Ints[i], w.Ints[i])
		}
	}
	for i := range w.Data {
		if math.Float32bits(o.Data[i]) != math.Float32bits(w.Data[i]) {
			return fmt.Sprintf("element %d is %v (%#08x), cpu's %v (%#08x)", i, o.Data[i], math.Float32bits(o.Data[i]), w.Data[i], math.Float32bits(w.Data[i]))
		}
	}
	return ""
}

func oneLineString(s string) string { return strings.ReplaceAll(s, "\n", " ") }
