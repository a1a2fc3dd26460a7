package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/gpucc/gpucc/bench"
	"github.com/gpucc/gpucc/internal/npy"
)

// benchGraphCLI runs gpucc bench on a graph and returns the summary it
// printed, the results.json it wrote and its results.md.
func benchGraphCLI(t *testing.T, args ...string) (map[string]any, *bench.Report, string) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "out")
	stdout, stderr, code := gpuccStderr(t, "", append([]string{"bench", "-o", dir, "--cold-runs", "2", "--warm-budget", "50ms"}, args...)...)
	if code != 0 {
		t.Fatalf("gpucc bench %v: exit %d: %s\n%s", args, code, stdout, stderr)
	}
	var v map[string]any
	if err := json.Unmarshal([]byte(stdout), &v); err != nil {
		t.Fatalf("stdout is not one JSON object: %v\n%s", err, stdout)
	}
	if !strings.Contains(stderr, "cold run 2 of 2 (a fresh process)") {
		t.Errorf("stderr shows no progress of the cold runs:\n%s", stderr)
	}
	raw, err := os.ReadFile(filepath.Join(dir, "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	var r bench.Report
	if err := json.Unmarshal(raw, &r); err != nil {
		t.Fatal(err)
	}
	md, err := os.ReadFile(filepath.Join(dir, "results.md"))
	if err != nil {
		t.Fatal(err)
	}
	page, err := os.ReadFile(filepath.Join(dir, "report.html"))
	if err != nil || !bytes.Contains(page, []byte("<h3>Verdicts</h3>")) || !bytes.Contains(page, []byte("<svg")) {
		t.Errorf("report.html lacks the verdicts or the stage bars (%v)", err)
	}
	return v, &r, string(md)
}

// checkCases checks what every measured case must hold: the cold runs
// asked for, each in a process at least as long as the run it made, at
// least 5 warm runs, and min ≤ median ≤ max throughout.
func checkCases(t *testing.T, r *bench.Report) {
	t.Helper()
	for _, c := range r.Cases {
		if c.Error != "" {
			t.Errorf("%s: %s", c.Backend, c.Error)
			continue
		}
		ordered := func(s bench.Spread) bool { return s.MinMs <= s.MedianMs && s.MedianMs <= s.MaxMs && s.MinMs > 0 }
		if c.ColdSpread.Runs != 2 || c.ProcessSpread == nil || c.ProcessSpread.Runs != 2 || c.WarmSpread.Runs < 5 {
			t.Errorf("%s: runs: cold %d, process %v, warm %d; want 2, 2 and at least 5", c.Backend, c.ColdSpread.Runs, c.ProcessSpread, c.WarmSpread.Runs)
			continue
		}
		if !ordered(c.ColdSpread) || !ordered(c.WarmSpread) || !ordered(*c.ProcessSpread) {
			t.Errorf("%s: spreads out of order: cold %+v warm %+v process %+v", c.Backend, c.ColdSpread, c.WarmSpread, *c.ProcessSpread)
		}
		// A process holds its cold run; the cold run holds a compile and
		// a first run, which a warm run repeats without the compile.
		if c.ProcessSpread.MinMs < c.ColdSpread.MinMs || c.Cold.CompileMs+c.Cold.PassesMs+c.Cold.CodegenMs <= 0 || c.Warm.PassesMs+c.Warm.CompileMs != 0 {
			t.Errorf("%s: process %+v under its cold run %+v, or the cold run compiled nothing, or a warm one compiled: %+v", c.Backend, *c.ProcessSpread, c.ColdSpread, c.Warm)
		}
		if c.Kernels < 1 {
			t.Errorf("%s: %d kernels", c.Backend, c.Kernels)
		}
	}
	if len(r.Verdicts) != len(r.Cases) {
		t.Errorf("%d verdicts for %d cases", len(r.Verdicts), len(r.Cases))
	}
}

// stableMarkdown is results.md with what changes from run to run masked:
// numbers, the date line, the adapters, the cache hits, and each verdict
// after its first words.
func stableMarkdown(md string) string {
	var out []string
	for _, l := range strings.Split(md, "\n") {
		switch {
		case strings.HasPrefix(l, "20"), strings.HasPrefix(l, "- ") && strings.Contains(l, "software="):
			continue
		case strings.HasPrefix(l, "- ") && strings.Contains(l, ": cold "):
			l = l[:strings.Index(l, ": cold ")+len(": cold ")] + "…"
		case !strings.HasPrefix(l, "| backend") && (strings.Contains(l, " | cold | ") || strings.Contains(l, " | warm | ")):
			l = l[:strings.LastIndex(strings.TrimSuffix(l, " |"), "| ")] + "| HITS |"
			l = strings.ReplaceAll(l, "| – |", "| N |") // a throughput of a stage too short to time
		}
		out = append(out, regexp.MustCompile(`\d+(\.\d+)?`).ReplaceAllString(l, "N"))
	}
	return strings.Join(out, "\n")
}

// TestBenchGraph: gpucc bench GRAPH.json times the user's graph, cold in
// fresh processes and warm on resident inputs, with min, median and max,
// and writes the report; results.md's stable parts are a golden file
// (-update rewrites it).
func TestBenchGraph(t *testing.T) {
	v, r, md := benchGraphCLI(t, "--backends", "cpu", example("mlp.json"))
	if r.Graph != "mlp.json" || len(r.Cases) != 1 || r.Cases[0].Backend != "cpu" {
		t.Fatalf("report: graph %q, cases %+v", r.Graph, r.Cases)
	}
	checkCases(t, r)
	if notes, _ := v["notes"].([]any); len(notes) != 1 || !strings.Contains(notes[0].(string), "dominates") {
		t.Errorf("the summary's notes = %v, want cpu's verdict", v["notes"])
	}
	golden := filepath.Join("testdata", "bench", "mlp.md")
	got := stableMarkdown(md)
	if *update {
		os.MkdirAll(filepath.Dir(golden), 0o755)
		if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(string(want), got); diff != "" {
		t.Errorf("results.md (-%s +got):\n%s", golden, diff)
	}
}

// TestBenchGraphKernelTimes: on webgpu, gpucc bench GRAPH adds each
// kernel of one more warm run timed alone, and results.md lists the
// heaviest; cpu, which cannot time its kernels so, has none.
func TestBenchGraphKernelTimes(t *testing.T) {
	if _, v, _ := gpucc(t, "", "info"); !strings.Contains(fmtAny(v["backends"]), "webgpu") {
		t.Skip("no webgpu in this build")
	}
	_, r, md := benchGraphCLI(t, "--backends", "cpu,webgpu", "--allow-software", example("row_stats.json"))
	for _, c := range r.Cases {
		switch {
		case c.Error != "":
			if os.Getenv("GPUCC_REQUIRE_WEBGPU") == "" && strings.Contains(c.Error, "backend_unavailable") {
				t.Skipf("%s: %s", c.Backend, c.Error)
			}
			t.Fatalf("%s: %s", c.Backend, c.Error)
		case c.Backend == "cpu" && c.KernelTimes != nil:
			t.Errorf("cpu has kernel times: %+v", c.KernelTimes)
		case c.Backend == "webgpu" && (len(c.KernelTimes) != c.Kernels || c.Kernels < 2):
			t.Errorf("webgpu: %d kernel times, %d kernels: %+v", len(c.KernelTimes), c.Kernels, c.KernelTimes)
		}
	}
	if !strings.Contains(md, "### The heaviest kernels on webgpu") || strings.Contains(md, "heaviest kernels on cpu") {
		t.Errorf("results.md's kernel times:\n%s", md)
	}
}

// TestBenchModel: gpucc bench MODEL.onnx --input x=FILE.npy times the
// model on that data (bound by the model's own input name; a wrong one
// is refused as run refuses it), and compares every other backend with
// cpu.
func TestBenchModel(t *testing.T) {
	model, err := filepath.Abs(filepath.Join("testdata", "mlp2.onnx"))
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := npy.Write(&buf, &npy.Array{DType: "float32", Shape: []int{2, 3}, Float32: []float32{1, -2, 0.5, 4, 5.25, -6}}); err != nil {
		t.Fatal(err)
	}
	x := filepath.Join(t.TempDir(), "x.npy")
	if err := os.WriteFile(x, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	backends := "cpu"
	if _, v, _ := gpucc(t, "", "info"); strings.Contains(fmtAny(v["backends"]), "native") {
		backends = "cpu,native"
	}
	_, r, md := benchGraphCLI(t, "--backends", backends, "--input", "x="+x, model)
	checkCases(t, r)
	if !strings.Contains(md, "## mlp2.onnx") || !strings.Contains(md, "### Verdicts") {
		t.Errorf("results.md lacks the model's section:\n%s", md)
	}
	for _, vd := range r.Verdicts {
		if vd.Backend != "cpu" && vd.Versus == "" {
			t.Errorf("%s: no comparison with cpu: %+v", vd.Backend, vd)
		}
	}
	// A backend that cannot start in the cold child fails the bench with
	// the child's error, its code said once.
	if _, v, code := gpucc(t, "", "bench", "--backends", "webgpu", "--cold-runs", "1", "-o", filepath.Join(t.TempDir(), "o"), model); code != 0 {
		if msg := fmtAny(v); errorCode(v) != "backend_unavailable" || strings.Contains(msg, "backend_unavailable: backend_unavailable") {
			t.Errorf("webgpu without --allow-software: %s", msg)
		}
	}
	for _, c := range []struct {
		name string
		args []string
		code string
	}{
		{"unknown input", []string{"--input", "input1=" + x, model}, "invalid_input"},
		{"wrong shape", []string{"--input", "x=[[1,2],[3,4],[5,6]]", model}, "invalid_input"},
		{"shape against --input-shape", []string{"--input", "x=[[1,2],[3,4],[5,6]]", "--input-shape", "x=2,3", model}, "usage"},
		{"suite flag", []string{"--quick", model}, "usage"},
		{"two graphs", []string{model, model}, "usage"},
	} {
		dir := filepath.Join(t.TempDir(), "out")
		_, v, code := gpucc(t, "", append([]string{"bench", "--backends", "cpu", "-o", dir}, c.args...)...)
		if code == 0 || errorCode(v) != c.code {
			t.Errorf("%s: exit %d, %v; want code %s", c.name, code, v, c.code)
		}
		if _, err := os.Stat(dir); err == nil {
			t.Errorf("%s: a failed bench wrote %s", c.name, dir)
		}
	}
}

func fmtAny(v any) string { b, _ := json.Marshal(v); return string(b) }
