package bench

import (
	"encoding/json"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/gpucc/gpucc"
)

// TestColdIsCold: a cold run finds nothing in any cache, even on a second
// bench in the same environment, where the wasm and native modules of the
// first are on disk.
func TestColdIsCold(t *testing.T) {
	t.Setenv("GPUCC_CACHE_DIR", t.TempDir()) // shared by both benches, as a user's cache dir is
	var backends []string
	for _, be := range []string{"wasm", "native"} {
		if slices.Contains(gpucc.Backends(), be) {
			backends = append(backends, be)
		}
	}
	cfg := Config{Quick: true, Backends: append(backends, "cpu"), Workloads: tinySuite()[:1]}
	for i := range 2 {
		r, err := Run(cfg)
		if err != nil {
			t.Fatal(err)
		}
		measured := map[string]bool{}
		for _, c := range r.Cases {
			if c.Error != "" {
				continue
			}
			measured[c.Backend] = true
			for k, hit := range c.Cold.Cache {
				if hit {
					t.Errorf("bench %d: %s %d %s: the cold run hit %s", i+1, c.Workload, c.Size, c.Backend, k)
				}
			}
		}
		for _, be := range []string{"wasm", "native"} {
			if !measured[be] && os.Getenv("GPUCC_REQUIRE_"+strings.ToUpper(be)) != "" {
				t.Errorf("%s measured nothing: %v", be, r.Skipped)
			}
		}
	}
}

// TestCrossoversBestCPU: webgpu is compared with the fastest CPU backend
// at each size, not only with cpuref.
func TestCrossoversBestCPU(t *testing.T) {
	mk := func(be string, size int, ms float64) Case {
		return Case{Workload: "matmul", Unit: "n", Backend: be, Size: size, Warm: Stage{}.with(ms)}
	}
	tests := []struct {
		name  string
		cases []Case
		want  int
		note  string
	}{
		{"native beats webgpu everywhere", []Case{
			mk("cpu", 64, 50), mk("native", 64, 0.5), mk("webgpu", 64, 7),
			mk("cpu", 128, 400), mk("native", 128, 3), mk("webgpu", 128, 8)}, 0, "native 3.000 ms (1 run), webgpu 8.000 ms (1 run): native is 2.7× faster"},
		{"webgpu wins from 128, against wasm", []Case{
			mk("cpu", 64, 50), mk("wasm", 64, 2), mk("webgpu", 64, 7),
			mk("cpu", 128, 400), mk("wasm", 128, 16), mk("webgpu", 128, 8)}, 128, "at n=64 wasm 2.000 ms (1 run)"},
		{"cpuref alone", []Case{mk("cpu", 64, 50), mk("webgpu", 64, 7)}, 64, "cpu 50.0 ms"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			x := Crossovers(tt.cases)
			if len(x) != 1 || x[0].Size != tt.want || !strings.Contains(x[0].Note, tt.note) {
				t.Errorf("crossovers = %+v, want size %d and a note with %q", x, tt.want, tt.note)
			}
		})
	}
}

// TestReportDeterministic: the same report renders to the same bytes.
func TestReportDeterministic(t *testing.T) {
	r := &Report{Adapters: map[string]*gpucc.Adapter{}, Cases: []Case{
		{Workload: "w", Unit: "n", Size: 10, Backend: "cpu", Cold: Stage{Cache: map[string]bool{"a": true, "b": true, "c": false}}.with(2), Warm: Stage{}.with(1)},
		{Workload: "w", Unit: "n", Size: 100, Backend: "webgpu", Cold: Stage{}.with(20), Warm: Stage{}.with(3)},
	}}
	for _, be := range []string{"webgpu", "wasm", "native", "cpu", "webgl2"} {
		r.Adapters[be] = &gpucc.Adapter{Name: be + " adapter"}
	}
	r.Crossovers = Crossovers(r.Cases)
	md, page := r.Markdown(), r.HTML()
	for range 20 {
		if r.Markdown() != md || r.HTML() != page {
			t.Fatal("two renders of one report differ")
		}
	}
	if i, j := strings.Index(md, "cpu adapter"), strings.Index(md, "webgpu adapter"); i < 0 || i > j {
		t.Errorf("adapters are not listed by name:\n%s", md)
	}
	if !strings.Contains(md, "| passes+codegen |") || !strings.Contains(page, "<td>a b</td>") {
		t.Errorf("the column is not labelled passes+codegen, or the cache hits are not shown per case")
	}
}

// TestAxesEndAtData: the chart's plot area spans exactly the data, so that
// the first and last points sit on its edges.
func TestAxesEndAtData(t *testing.T) {
	r := &Report{Cases: []Case{
		{Workload: "w", Unit: "n", Size: 300, Backend: "cpu", Cold: Stage{}.with(4), Warm: Stage{}.with(2)},
		{Workload: "w", Unit: "n", Size: 3000, Backend: "cpu", Cold: Stage{}.with(40), Warm: Stage{}.with(25)},
	}}
	svg := r.lineChart("w")
	var xs, ys []float64
	for _, m := range regexp.MustCompile(`<circle cx="([0-9.]+)" cy="([0-9.]+)"`).FindAllStringSubmatch(svg, -1) {
		x, _ := strconv.ParseFloat(m[1], 64)
		y, _ := strconv.ParseFloat(m[2], 64)
		xs, ys = append(xs, x), append(ys, y)
	}
	if len(xs) != 4 {
		t.Fatalf("%d points, want 4:\n%s", len(xs), svg)
	}
	const L, T, right, bottom = 60, 10, 640 - 150, 300 - 40
	if slices.Min(xs) != L || slices.Max(xs) != right || slices.Min(ys) != T || slices.Max(ys) != bottom {
		t.Errorf("points span x %v..%v, y %v..%v; the plot area is x %d..%d, y %d..%d",
			slices.Min(xs), slices.Max(xs), slices.Min(ys), slices.Max(ys), L, right, T, bottom)
	}
}

// TestStageJSON: a stage's JSON holds its camelCase timings, rounded to
// the microsecond, and its cache hits, and reads back.
func TestStageJSON(t *testing.T) {
	s := Stage{Cache: map[string]bool{"pipeline": true}}
	s.TotalMs, s.DispatchMs = 1.23456789, 0.0004
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"totalMs":1.235`, `"dispatchMs":0,`, `"cache":{"pipeline":true}`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("%s lacks %s", b, want)
		}
	}
	var back Stage
	if err := json.Unmarshal(b, &back); err != nil || back.TotalMs != 1.235 || !back.Cache["pipeline"] {
		t.Errorf("read back %+v, %v", back, err)
	}
}
