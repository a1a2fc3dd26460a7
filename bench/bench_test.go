package bench

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/gpucc/gpucc"
	"github.com/gpucc/gpucc/ir"
)

// tinySuite is two small workloads over two sizes: enough for every chart.
func tinySuite() []Workload {
	return []Workload{
		{Name: "relu(a*b+c)", Unit: "elements", Build: ReluMulAdd, Quick: []int{256, 4096}},
		{Name: "matmul", Unit: "n", Build: Matmul, Quick: []int{16, 32}},
	}
}

func runTiny(t *testing.T) (*Report, string) {
	t.Helper()
	var progress bytes.Buffer
	r, err := Run(Config{Quick: true, AllowSoftware: true, Workloads: tinySuite(), Progress: &progress})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(progress.String(), "done") {
		t.Errorf("progress never finished: %q", progress.String())
	}
	r.Torch = &Torch{Device: "test", ReluMulAddN: 4096, ReluMulAddMs: 0.01, UploadGBps: 5}
	dir := t.TempDir()
	if err := r.Write(dir); err != nil {
		t.Fatal(err)
	}
	return r, dir
}

func TestTinyBench(t *testing.T) {
	r, dir := runTiny(t)
	if len(r.Cases) < 4 {
		t.Fatalf("%d cases, want at least 4 (2 workloads × 2 sizes × cpu)", len(r.Cases))
	}
	for _, c := range r.Cases {
		if c.Error != "" {
			t.Errorf("%s %d %s: %s", c.Workload, c.Size, c.Backend, c.Error)
		}
		if c.Warm.TotalMs <= 0 || c.Cold.TotalMs <= 0 || c.Warm.DispatchClock == "" {
			t.Errorf("%s %d %s: unmeasured: %+v", c.Workload, c.Size, c.Backend, c)
		}
		if w := c.WarmSpread; w.Runs < 5 || !(w.MinMs <= w.MedianMs && w.MedianMs <= w.MaxMs) || w.MedianMs != c.Warm.TotalMs {
			t.Errorf("%s %d %s: warm spread %+v: want at least 5 runs, min ≤ median ≤ max, the median the warm run's total %v", c.Workload, c.Size, c.Backend, w, c.Warm.TotalMs)
		}
		if c.ColdSpread.Runs != 1 || c.ColdSpread.MedianMs != c.Cold.TotalMs {
			t.Errorf("%s %d %s: cold spread %+v, want the one cold run", c.Workload, c.Size, c.Backend, c.ColdSpread)
		}
		// A warm run is a run of the compiled executable: it compiles
		// nothing and takes every buffer from the pool.
		_, compiled := c.Warm.Cache["pipeline"]
		if c.Backend == "webgpu" && (compiled || !c.Warm.Cache["bufferPool"] || c.Warm.CodegenMs != 0 || c.Warm.CompileMs != 0) {
			t.Errorf("%s %d: warm run compiled or allocated: %+v", c.Workload, c.Size, c.Warm)
		}
	}
	var back Report
	b, err := os.ReadFile(filepath.Join(dir, "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &back); err != nil || len(back.Cases) != len(r.Cases) {
		t.Errorf("results.json does not round-trip: %v", err)
	}
	for file, want := range map[string][]string{
		"results.md":  {"| workload |", "relu(a*b+c)", "## Crossover", "| runs | min | median | max |"},
		"report.html": {"<svg", "<rect", "<path", "Crossover", "<th>min</th><th>median</th><th>max</th>"},
	} {
		b, err := os.ReadFile(filepath.Join(dir, file))
		if err != nil {
			t.Fatal(err)
		}
		for _, w := range want {
			if !strings.Contains(string(b), w) {
				t.Errorf("%s lacks %q", file, w)
			}
		}
	}
}

func TestCrossovers(t *testing.T) {
	mk := func(be string, size int, ms float64) Case {
		return Case{Workload: "w", Unit: "n", Backend: be, Size: size, Warm: Stage{}.with(ms)}
	}
	cases := []struct {
		name  string
		cases []Case
		want  int
	}{
		{"gpu wins from 100", []Case{mk("cpu", 10, 1), mk("webgpu", 10, 5), mk("cpu", 100, 10), mk("webgpu", 100, 6), mk("cpu", 1000, 100), mk("webgpu", 1000, 9)}, 100},
		{"gpu never wins", []Case{mk("cpu", 10, 1), mk("webgpu", 10, 5)}, 0},
		{"win then loss is no crossover", []Case{mk("cpu", 10, 9), mk("webgpu", 10, 5), mk("cpu", 100, 1), mk("webgpu", 100, 6)}, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			x := Crossovers(c.cases)
			if len(x) != 1 || x[0].Size != c.want {
				t.Errorf("crossovers = %+v, want size %d", x, c.want)
			}
		})
	}
}

func (s Stage) with(total float64) Stage { s.TotalMs = total; return s }

// TestCrossoverSpreads: webgpu is faster only where every one of its warm
// runs beat every run of the best CPU backend; where the spreads overlap
// the note says "no difference" and there is no crossover, however the
// medians fall (--quick's "webgpu is faster" from noise, issue 36).
func TestCrossoverSpreads(t *testing.T) {
	mk := func(be string, size int, lo, med, hi float64) Case {
		return Case{Workload: "w", Unit: "n", Backend: be, Size: size, Warm: Stage{}.with(med),
			WarmSpread: Spread{Runs: 5, MinMs: lo, MedianMs: med, MaxMs: hi}}
	}
	tests := []struct {
		name  string
		cases []Case
		size  int
		note  string
	}{
		{"overlap, webgpu's median lower", []Case{mk("cpu", 10, 1.0, 1.3, 2.0), mk("webgpu", 10, 0.9, 1.1, 1.4)}, 0,
			"cpu 1.300 ms (1.000–2.000, 5 runs), webgpu 1.100 ms (0.900–1.400, 5 runs): no difference (the spreads overlap)"},
		{"overlap, the CPU's median lower", []Case{mk("native", 10, 1.0, 1.1, 2.0), mk("webgpu", 10, 1.5, 1.6, 1.7)}, 0, "no difference"},
		{"apart", []Case{mk("cpu", 10, 2.1, 2.2, 3.0), mk("webgpu", 10, 0.9, 1.1, 2.0)}, 10, "webgpu is 2.0× faster"},
		{"apart, then overlapping at the largest", []Case{mk("cpu", 10, 2.1, 2.2, 3.0), mk("webgpu", 10, 0.9, 1.1, 2.0),
			mk("cpu", 20, 2.1, 2.2, 3.0), mk("webgpu", 20, 0.9, 1.1, 2.1)}, 0, "webgpu is not faster than the CPU up to n=20"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			x := Crossovers(tt.cases)
			if len(x) != 1 || x[0].Size != tt.size || !strings.Contains(x[0].Note, tt.note) {
				t.Errorf("crossovers = %+v, want size %d and a note with %q", x, tt.size, tt.note)
			}
			if tt.size == 0 && strings.Contains(x[0].Note, "webgpu is") && !strings.Contains(x[0].Note, "not faster") {
				t.Errorf("note concludes from overlapping spreads: %s", x[0].Note)
			}
		})
	}
}

// TestSpreadOf: the least, median (of an even count the mean of the
// middle two) and greatest total.
func TestSpreadOf(t *testing.T) {
	runs := []Stage{Stage{}.with(4), Stage{}.with(1), Stage{}.with(9), Stage{}.with(2)}
	if got, want := SpreadOf(runs), (Spread{Runs: 4, MinMs: 1, MedianMs: 3, MaxMs: 9}); got != want {
		t.Errorf("SpreadOf = %+v, want %+v", got, want)
	}
	if got := SpreadOf(nil); got != (Spread{}) {
		t.Errorf("SpreadOf(nil) = %+v", got)
	}
}

// tooManyNodes is a graph over Limits().MaxNodes: every run of it fails.
func tooManyNodes(int) *ir.Graph {
	b := ir.NewBuilder()
	v := b.Input(ir.Shape{4}, Values(1, 4))
	for range Limits().MaxNodes {
		v = v.Relu()
	}
	b.Output("out", v)
	g, err := b.Build(ir.Limits{MaxNodes: 2 * Limits().MaxNodes})
	if err != nil {
		panic(err)
	}
	return g
}

// TestFailedCaseKeepsAdapter: a case that fails does not replace the
// adapter an earlier case recorded with a bare name.
func TestFailedCaseKeepsAdapter(t *testing.T) {
	r, err := Run(Config{Quick: true, Backends: []string{"cpu"}, Workloads: []Workload{
		{Name: "ok", Unit: "elements", Build: ReluMulAdd, Quick: []int{16}},
		{Name: "fails", Unit: "nodes", Build: tooManyNodes, Quick: []int{1}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Cases) != 2 || r.Cases[1].Error == "" {
		t.Fatalf("want the second case to fail: %+v", r.Cases)
	}
	if a := r.Adapters["cpu"]; a == nil || a.Type != "cpu" {
		t.Errorf("cpu adapter = %+v, want the one the first run reported", a)
	}
}

// TestNothingMeasured: a run that measured nothing is an error, not an
// empty report.
func TestNothingMeasured(t *testing.T) {
	tests := []struct {
		name string
		cfg  Config
		code ir.Code // of the first failure, for the CLI's error object
	}{
		{"unknown backend", Config{Quick: true, Backends: []string{"nope"}, Workloads: tinySuite()}, ir.CodeBackendUnavailable},
		{"every run fails", Config{Quick: true, Backends: []string{"cpu"}, Workloads: []Workload{{Name: "fails", Build: tooManyNodes, Quick: []int{1}}}}, ir.CodeLimitExceeded},
		{"every case skipped", Config{Quick: true, Backends: []string{"cpu"}, Workloads: tinySuite(), Budget: time.Nanosecond}, ir.CodeInternal},
	}
	for _, tt := range tests {
		r, err := Run(tt.cfg)
		if err == nil {
			t.Errorf("%s: no error; report %+v", tt.name, r)
		} else if code := gpucc.CodeOf(err); code != tt.code {
			t.Errorf("%s: error code %s, want %s: %v", tt.name, code, tt.code, err)
		}
	}
}

// TestMedian: an even number of runs gives the mean of the middle two,
// stage by stage, not the slower of them.
func TestMedian(t *testing.T) {
	run := func(total, dispatch float64) Stage {
		s := Stage{}.with(total)
		s.DispatchMs = dispatch
		return s
	}
	tests := []struct {
		runs                []Stage
		total, dispatchWant float64
	}{
		{[]Stage{run(5, 1)}, 5, 1},
		{[]Stage{run(9, 3), run(1, 1), run(5, 2)}, 5, 2},
		{[]Stage{run(4, 2), run(2, 1)}, 3, 1.5},
		{[]Stage{run(8, 0), run(1, 0), run(2, 4), run(4, 2)}, 3, 3},
	}
	for _, tt := range tests {
		m := median(tt.runs)
		if m.TotalMs != tt.total || m.DispatchMs != tt.dispatchWant {
			t.Errorf("median of %v = total %v dispatch %v, want %v and %v", tt.runs, m.TotalMs, m.DispatchMs, tt.total, tt.dispatchWant)
		}
	}
}

// TestReadTorchError: torch_bench.py's error object is not read as a
// comparison with nothing in it.
func TestReadTorchError(t *testing.T) {
	path := filepath.Join(t.TempDir(), "torch.json")
	if err := os.WriteFile(path, []byte(`{"error": "torch has no CUDA device", "torch": "2.5"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if tr, err := ReadTorch(path); err == nil || !strings.Contains(err.Error(), "no CUDA device") {
		t.Errorf("ReadTorch = %+v, %v; want the script's error", tr, err)
	}
}

// TestCompareClocks: a gpucc figure is set beside PyTorch's only as what
// its clock measured: gpu-timestamp dispatch is kernel time (PyTorch's
// CUDA events), wall-clock dispatch is launch and wait (PyTorch's tiny
// kernel figure).
func TestCompareClocks(t *testing.T) {
	relu := func(size int, clock string) Case {
		c := Case{Workload: "relu(a*b+c)", Size: size, Backend: "webgpu"}
		c.Warm.DispatchMs, c.Warm.DispatchClock = 0.5, clock
		return c
	}
	torch := &Torch{ReluMulAddN: 1 << 20, ReluMulAddMs: 0.25, TinyDispatchUs: 20}
	tests := []struct {
		clock string
		want  []string
	}{
		{"gpu-timestamp", []string{"relu(a*b+c) over 1048576, kernel"}},
		{"wall", []string{"relu(a*b+c) over 1048576, dispatch (gpucc: wall clock; torch: kernel)", "tiny kernel (gpucc: 1K elements, torch: 64), launch and wait"}},
	}
	for _, tt := range tests {
		r := &Report{Torch: torch, Cases: []Case{relu(1<<20, tt.clock), relu(1<<10, tt.clock)}}
		var got []string
		for _, x := range r.Compare() {
			got = append(got, x.What)
		}
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("%s clock (-want +got):\n%s", tt.clock, diff)
		}
	}
}

// TestMarkdownOddText: names and errors with pipes and newlines stay in
// their table cell.
func TestMarkdownOddText(t *testing.T) {
	r := &Report{Cases: []Case{
		{Workload: "a|b", Size: 1, Backend: "cpu", Error: "compile failed:\nline 2 | col 3"},
		{Workload: "a|b", Size: 1, Backend: "webgpu"},
	}, Skipped: []string{"x: a\nb"}}
	pipes := func(line string) int { return strings.Count(line, "|") - strings.Count(line, `\|`) }
	lines := strings.Split(r.Markdown(), "\n")
	header := -1
	for i, l := range lines {
		if strings.HasPrefix(l, "| workload |") {
			header = i
		}
	}
	if header < 0 {
		t.Fatal("no table")
	}
	want := pipes(lines[header])
	for _, l := range lines[header+1:] {
		if l == "" {
			break
		}
		if pipes(l) != want {
			t.Errorf("row has %d cell borders, header %d: %q", pipes(l), want, l)
		}
	}
	if slices.Contains(lines, "b") || slices.ContainsFunc(lines, func(l string) bool { return strings.HasPrefix(l, "line 2") }) {
		t.Errorf("a newline escaped its cell:\n%s", r.Markdown())
	}
}

// TestHTMLOddText: the page says which cases failed or were skipped, with
// any markup in names and errors escaped.
func TestHTMLOddText(t *testing.T) {
	r := &Report{Adapters: map[string]*gpucc.Adapter{"webgpu": {Name: "<b>gpu</b>"}},
		Cases: []Case{
			{Workload: "<w>", Unit: "n", Size: 1, Backend: "cpu", Error: "bad <script>alert(1)</script> & worse"},
			{Workload: "<w>", Unit: "n", Size: 1, Backend: "webgpu", Warm: Stage{}.with(1), Cold: Stage{}.with(2)},
		},
		Crossovers: []Crossover{{Workload: "<w>", Note: `"quoted" <note>`}},
		Skipped:    []string{"x=1 cpu: </li></ul><h1>"},
	}
	page := r.HTML()
	for _, bad := range []string{"<script>", "<w>", "<b>gpu", "<note>", "</ul><h1>"} {
		if strings.Contains(page, bad) {
			t.Errorf("page contains unescaped %q", bad)
		}
	}
	for _, want := range []string{"bad &lt;script&gt;", "x=1 cpu: &lt;/li&gt;"} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q", want)
		}
	}
}

// TestStagesCountDispatchOnce: a cold run's first dispatch and dispatch
// are the same dispatch, so the bar shows it once and the stages add up
// to no more than the total (they once passed 100% on cold webgpu runs).
func TestStagesCountDispatchOnce(t *testing.T) {
	for _, tt := range []struct {
		name       string
		s          Stage
		sum, other float64
	}{
		{"cold", Stage{Timings: gpucc.Timings{UploadMs: 1, FirstDispatchMs: 40, DispatchMs: 40, ReadbackMs: 2, TotalMs: 50}}, 43, 7},
		{"cold, gpu timestamps", Stage{Timings: gpucc.Timings{FirstDispatchMs: 40, DispatchMs: 3, TotalMs: 41}}, 40, 1},
		{"warm", Stage{Timings: gpucc.Timings{UploadMs: 1, DispatchMs: 4, TotalMs: 6}}, 5, 1},
	} {
		sum := 0.0
		for _, st := range stages {
			sum += st.ms(tt.s)
		}
		if sum != tt.sum || other(tt.s) != tt.other {
			t.Errorf("%s: stages sum to %v and other is %v; want %v and %v", tt.name, sum, other(tt.s), tt.sum, tt.other)
		}
	}
}
