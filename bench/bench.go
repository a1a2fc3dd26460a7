// Package bench measures gpucc end to end: it runs a suite of workloads
// (elementwise chains, matmul, sum, Life, and graphs of growing size for
// compile time) on every backend, cold and warm, and writes a report
// (results.json, results.md, report.html) that puts transfer cost beside
// compile cost and shows, per workload, the size above which webgpu beats
// the best CPU backend (cpu, wasm or native) end to end.
//
// "Cold" is the first run on a fresh Runtime with no cache at all: its
// artifact cache (generated code, wasm modules, shared objects) is a new,
// memory-only one, so nothing comes from disk (a new process on a new
// machine); "warm" is a later run of the same
// graph on the same Runtime (every cache hit). Warm figures are the run of
// median total among at least Config.WarmRuns runs, more while the case's
// share of Config.WarmBudget lasts, with their least and greatest totals
// (Spread); a comparison whose spreads overlap concludes nothing.
package bench

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	goruntime "runtime"
	"slices"
	"strings"
	"time"

	"github.com/gpucc/gpucc"
	"github.com/gpucc/gpucc/codegen/cache"
	"github.com/gpucc/gpucc/ir"
	_ "github.com/gpucc/gpucc/runtime/all" // every backend this build supports
)

// Config chooses what Run measures.
type Config struct {
	Quick         bool     // small sizes only: under a minute on a CPU
	Backends      []string // default: every backend built in
	AllowSoftware bool     // accept software adapters (lavapipe)
	// Budget stops starting new cases once spent (0: none). Cases left out
	// are listed in Report.Skipped.
	Budget time.Duration
	// MaxCaseMs skips the larger sizes of a workload on a backend once one
	// of its runs took longer than this (0: 10 s; quick: 3 s).
	MaxCaseMs float64
	// WarmRuns is the least number of warm runs per case (0: 5); runs go
	// on while WarmBudget lasts (0: 1 s; quick: 250 ms), at most
	// MaxWarmRuns, and stop after a run longer than MaxCaseMs.
	WarmRuns   int
	WarmBudget time.Duration
	Progress   io.Writer // progress bar, or nil
	// Workloads replaces the suite (nil: Workloads()).
	Workloads []Workload
	// Upload and UploadChunk pass through to gpucc.Options.
	Upload      string
	UploadChunk uint64
}

// Workload is one family of graphs, parameterised by size.
type Workload struct {
	Name  string
	Unit  string // what Size counts: "elements", "n" (matmul n×n×n), "nodes"
	Sizes []int
	Quick []int
	Build func(size int) *ir.Graph
	// Work is the relative amount of work at size (default: size); Run uses
	// it to predict whether the next size would exceed MaxCaseMs.
	Work func(size int) float64
}

func (w Workload) work(size int) float64 {
	if w.Work != nil {
		return w.Work(size)
	}
	return float64(size)
}

// Workloads returns the suite.
func Workloads() []Workload {
	return []Workload{
		{Name: "relu(a*b+c)", Unit: "elements", Build: ReluMulAdd,
			Sizes: []int{1 << 10, 1 << 14, 1 << 18, 1 << 22, 1 << 26}, Quick: []int{1 << 10, 1 << 14, 1 << 18, 1 << 20}},
		{Name: "chain16", Unit: "elements", Build: func(n int) *ir.Graph { return Chain(n, 16) },
			Sizes: []int{1 << 10, 1 << 14, 1 << 18, 1 << 22, 1 << 26}, Quick: []int{1 << 10, 1 << 16}},
		{Name: "matmul", Unit: "n", Build: Matmul, Work: func(n int) float64 { return math.Pow(float64(n), 3) },
			Sizes: []int{64, 256, 1024, 2048, 4096}, Quick: []int{64, 128}},
		{Name: "sum", Unit: "elements", Build: Sum,
			Sizes: []int{1 << 10, 1 << 14, 1 << 18, 1 << 22, 1 << 26}, Quick: []int{1 << 10, 1 << 16}},
		{Name: "life", Unit: "elements", Build: Life,
			Sizes: []int{1 << 10, 1 << 14, 1 << 18, 1 << 22, 1 << 26}, Quick: []int{1 << 10, 1 << 16}},
		{Name: "compile", Unit: "nodes", Build: func(n int) *ir.Graph { return Chain(1024, n) },
			Sizes: []int{1, 8, 64, 256, 512}, Quick: []int{1, 16, 128}},
	}
}

// Stage is one run's measurements.
type Stage struct {
	gpucc.Timings
	Cache map[string]bool `json:"cache,omitempty"`
}

// MarshalJSON writes the timings' fields (rounded as gpucc.Timings rounds
// them) and cache side by side; without it the embedded Timings'
// MarshalJSON would be promoted and drop Cache.
func (s Stage) MarshalJSON() ([]byte, error) {
	t, err := json.Marshal(s.Timings)
	if err != nil || len(s.Cache) == 0 {
		return t, err
	}
	c, err := json.Marshal(s.Cache)
	if err != nil {
		return nil, err
	}
	return append(append(append(t[:len(t)-1], `,"cache":`...), c...), '}'), nil
}

// Case is one workload at one size on one backend.
type Case struct {
	Workload string `json:"workload"`
	Unit     string `json:"unit"`
	Size     int    `json:"size"`
	Backend  string `json:"backend"`
	Kernels  int    `json:"kernels"`
	Cold     Stage  `json:"cold"`
	Warm     Stage  `json:"warm"` // the run of median total
	// ColdSpread and WarmSpread are the totals' least, median and greatest
	// over the runs (the built-in bench's cold is one run).
	ColdSpread Spread `json:"coldSpread"`
	WarmSpread Spread `json:"warmSpread"`
	// ProcessSpread is, for `gpucc bench GRAPH`, the wall time of the
	// fresh processes that made the cold runs, exec to exit.
	ProcessSpread *Spread `json:"processSpread,omitempty"`
	Error         string  `json:"error,omitempty"`
	Flops         float64 `json:"flops,omitempty"` // matmul: 2n³
	// KernelTimes is, for `gpucc bench GRAPH` on a backend that times
	// kernels one at a time (webgpu), each kernel of one more warm run
	// submitted and timed alone (RunOptions.KernelTimes).
	KernelTimes []gpucc.KernelTime `json:"kernelTimes,omitempty"`
}

// Report is what Run produces and Write saves.
type Report struct {
	Date       string                    `json:"date"`
	Host       string                    `json:"host"`
	Quick      bool                      `json:"quick"`
	Adapters   map[string]*gpucc.Adapter `json:"adapters"`
	Cases      []Case                    `json:"cases"`
	Skipped    []string                  `json:"skipped,omitempty"`
	Crossovers []Crossover               `json:"crossovers"`
	Torch      *Torch                    `json:"torch,omitempty"`
	WallS      float64                   `json:"wallSeconds"`
	// Graph is the user's graph or model that `gpucc bench GRAPH` timed
	// (one case per backend), with its Verdicts; empty for the suite.
	Graph    string    `json:"graph,omitempty"`
	Verdicts []Verdict `json:"verdicts,omitempty"`
}

// Limits are the host limits for bench graphs: 64M-element tensors and
// 4096³ matmuls are beyond the defaults, which are for untrusted graphs.
func Limits() ir.Limits {
	return ir.Limits{MaxNodes: 1024, MaxElements: 1 << 27, MaxStorageBytes: 8 << 30,
		MaxOps: 1 << 40, MaxOutputs: 16}
}

// withDefaults fills in cfg's zero fields.
func (cfg Config) withDefaults() Config {
	if cfg.Backends == nil {
		cfg.Backends = gpucc.Backends()
	}
	if cfg.Workloads == nil {
		cfg.Workloads = Workloads()
	}
	if cfg.WarmRuns <= 0 {
		cfg.WarmRuns = 5
	}
	if cfg.WarmBudget <= 0 {
		cfg.WarmBudget = time.Second
		if cfg.Quick {
			cfg.WarmBudget = 250 * time.Millisecond
		}
	}
	if cfg.MaxCaseMs <= 0 {
		cfg.MaxCaseMs = 10000
		if cfg.Quick {
			cfg.MaxCaseMs = 3000
		}
	}
	return cfg
}

// job is one case to measure.
type job struct {
	w    Workload
	size int
	be   string
}

// jobs lists the cases in the order Run measures them: by workload, then
// size (ascending, so that a size's time predicts the next one's), then
// backend.
func (cfg Config) jobs() []job {
	var jobs []job
	for _, w := range cfg.Workloads {
		sizes := w.Sizes
		if cfg.Quick {
			sizes = w.Quick
		}
		for _, s := range sizes {
			for _, be := range cfg.Backends {
				jobs = append(jobs, job{w, s, be})
			}
		}
	}
	return jobs
}

// Run measures the suite. It fails when no case could be measured: no
// backend started (an unknown name, say) or every run failed.
func Run(cfg Config) (*Report, error) {
	start := time.Now()
	cfg = cfg.withDefaults()
	host, _ := os.Hostname()
	r := &Report{Date: time.Now().UTC().Format(time.RFC3339), Host: fmt.Sprintf("%s (%s/%s, %d CPUs)", host, goruntime.GOOS, goruntime.GOARCH, goruntime.NumCPU()),
		Quick: cfg.Quick, Adapters: map[string]*gpucc.Adapter{}}
	jobs := cfg.jobs()
	bar := newProgress(cfg.Progress, len(jobs))
	last := map[string]float64{} // workload/backend: the last case's warm ms per unit of work
	unavailable := map[string]bool{}
	var firstErr error // of a backend that did not start or a failed case
	for i, j := range jobs {
		label := fmt.Sprintf("%s %s=%d %s", j.w.Name, j.w.Unit, j.size, j.be)
		bar.update(i, label)
		wb := j.w.Name + "/" + j.be
		switch {
		case unavailable[j.be]:
			continue
		case last[wb]*j.w.work(j.size) > cfg.MaxCaseMs:
			r.Skipped = append(r.Skipped, fmt.Sprintf("%s: predicted %.0f ms per run > %.0f ms", label, last[wb]*j.w.work(j.size), cfg.MaxCaseMs))
			continue
		case cfg.Budget > 0 && time.Since(start) > cfg.Budget:
			r.Skipped = append(r.Skipped, label+": time budget spent")
			continue
		}
		g := j.w.Build(j.size)
		c, adapter, err := measure(cfg, j.be, g)
		if adapter == nil && err != nil {
			unavailable[j.be] = true
			firstErr = cmp.Or(firstErr, err)
			r.Skipped = append(r.Skipped, fmt.Sprintf("backend %s: %v", j.be, err))
			continue
		}
		if r.Adapters[j.be] == nil || err == nil {
			r.Adapters[j.be] = adapter // a failed run's adapter is only a name
		}
		c.Workload, c.Unit, c.Size, c.Backend = j.w.Name, j.w.Unit, j.size, j.be
		if j.w.Name == "matmul" {
			c.Flops = 2 * math.Pow(float64(j.size), 3)
		}
		if err != nil {
			c.Error = err.Error()
			firstErr = cmp.Or(firstErr, err)
		}
		r.Cases = append(r.Cases, c)
		// Predict from warm runs: cold ones carry a fixed compile cost
		// that does not grow with size.
		last[wb] = c.Warm.TotalMs / j.w.work(j.size)
	}
	bar.done()
	if !slices.ContainsFunc(r.Cases, func(c Case) bool { return c.Error == "" }) {
		if firstErr == nil {
			return nil, fmt.Errorf("bench: nothing was measured: all %d cases were skipped (time budget or case limit)", len(r.Skipped))
		}
		return nil, fmt.Errorf("bench: nothing was measured (%d cases failed, %d skipped); the first error: %w", len(r.Cases), len(r.Skipped), firstErr)
	}
	r.Crossovers = Crossovers(r.Cases)
	r.WallS = time.Since(start).Seconds()
	return r, nil
}

// measure runs g cold (fresh runtime, no cache at all: compile and a first
// run) and warm (runs of the compiled executable, host data in and out:
// nothing is compiled again). adapter is nil when the backend could not
// start.
func measure(cfg Config, backend string, g *ir.Graph) (Case, *gpucc.Adapter, error) {
	var c Case
	mem, _ := cache.Open(cache.Options{}) // memory only, and new: cold means no cache at all (TestColdIsCold)
	ctx := context.Background()
	rt, err := gpucc.Open(ctx, gpucc.Options{Backend: backend, AllowSoftware: cfg.AllowSoftware, Limits: Limits(),
		Cache: mem, Upload: cfg.Upload, UploadChunk: cfg.UploadChunk})
	if err != nil {
		return c, nil, err
	}
	defer rt.Close()
	exe, err := rt.Compile(ctx, g)
	if err != nil {
		return c, &gpucc.Adapter{Name: backend}, err
	}
	defer exe.Release()
	res, err := exe.Run(ctx, nil)
	if err != nil {
		return c, &gpucc.Adapter{Name: backend}, err
	}
	adapter := res.Adapter
	c.Kernels = res.Kernels
	compiled, hits := exe.CompileTimings()
	c.Cold = Stage{res.Timings, res.Cache}
	c.Cold.PassesMs, c.Cold.CodegenMs, c.Cold.CompileMs = compiled.PassesMs, compiled.CodegenMs, compiled.CompileMs
	c.Cold.TotalMs += compiled.TotalMs
	for k, v := range hits {
		if c.Cold.Cache == nil {
			c.Cold.Cache = map[string]bool{}
		}
		c.Cold.Cache[k] = v
	}
	warm, err := WarmRuns(ctx, exe, nil, cfg.WarmRuns, cfg.WarmBudget, cfg.MaxCaseMs)
	if err != nil {
		return c, adapter, err
	}
	c.Warm, c.WarmSpread = median(warm), SpreadOf(warm)
	c.ColdSpread = SpreadOf([]Stage{c.Cold})
	return c, adapter, nil
}

// MaxWarmRuns bounds the warm runs of one case.
const MaxWarmRuns = 1000

// WarmRuns runs exe with in at least least times, then on until budget is
// spent or MaxWarmRuns ran, stopping early after a run longer than
// maxRunMs (a case too slow for more than one), and returns each run's
// stages.
func WarmRuns(ctx context.Context, exe *gpucc.Executable, in gpucc.Inputs, least int, budget time.Duration, maxRunMs float64) ([]Stage, error) {
	var runs []Stage
	start := time.Now()
	for len(runs) < MaxWarmRuns && (len(runs) < least || time.Since(start) < budget) {
		res, err := exe.Run(ctx, in)
		if err != nil {
			return nil, err
		}
		runs = append(runs, Stage{res.Timings, res.Cache})
		if maxRunMs > 0 && res.Timings.TotalMs > maxRunMs {
			break
		}
	}
	return runs, nil
}

// Spread is how a case's run totals spread: the number of runs and the
// least, median and greatest total in ms.
type Spread struct {
	Runs     int     `json:"runs"`
	MinMs    float64 `json:"minMs"`
	MedianMs float64 `json:"medianMs"`
	MaxMs    float64 `json:"maxMs"`
}

// MarshalJSON writes s with its times rounded to the microsecond, as
// gpucc.Timings writes a run's.
func (s Spread) MarshalJSON() ([]byte, error) {
	type plain Spread // without this method
	p := plain(s)
	for _, f := range []*float64{&p.MinMs, &p.MedianMs, &p.MaxMs} {
		*f = math.Round(*f*1e3) / 1e3
	}
	return json.Marshal(p)
}

// SpreadOf is the spread of runs' totals (the median of an even count is
// the mean of the middle two, as median's).
func SpreadOf(runs []Stage) Spread {
	if len(runs) == 0 {
		return Spread{}
	}
	t := make([]float64, len(runs))
	for i, r := range runs {
		t[i] = r.TotalMs
	}
	slices.Sort(t)
	return Spread{Runs: len(t), MinMs: t[0], MedianMs: median(runs).TotalMs, MaxMs: t[len(t)-1]}
}

// pointSpread is the spread of a case that recorded only its median (a
// report written before spreads, a test's case): one point.
func pointSpread(s Spread, total float64) Spread {
	if s.Runs > 0 {
		return s
	}
	return Spread{Runs: 1, MinMs: total, MedianMs: total, MaxMs: total}
}

// Order compares two spreads: -1 when a is faster (its greatest total
// under b's least), 1 when b is, and 0 when they overlap, where the runs
// do not say which is faster.
func Order(a, b Spread) int {
	switch {
	case a.MaxMs < b.MinMs:
		return -1
	case b.MaxMs < a.MinMs:
		return 1
	}
	return 0
}

// String writes s as "median ms (min–max, N runs)".
func (s Spread) String() string {
	if s.Runs <= 1 {
		return fmt.Sprintf("%s ms (1 run)", f3(s.MedianMs))
	}
	return fmt.Sprintf("%s ms (%s–%s, %d runs)", f3(s.MedianMs), f3(s.MinMs), f3(s.MaxMs), s.Runs)
}

// Median is median, for a caller that times runs itself.
func Median(runs []Stage) Stage { return median(runs) }

// median returns the run of median total time; for an even count, the
// mean of the two middle runs (every timing averaged, so that the stages
// still add up to the total), with the cache flags of the faster one.
func median(runs []Stage) Stage {
	runs = slices.Clone(runs)
	slices.SortFunc(runs, func(a, b Stage) int { return cmp.Compare(a.TotalMs, b.TotalMs) })
	m := runs[len(runs)/2]
	if len(runs)%2 == 1 {
		return m
	}
	lo := runs[len(runs)/2-1]
	mean := func(a, b float64) float64 { return (a + b) / 2 }
	s := lo
	s.PassesMs, s.CodegenMs, s.CompileMs = mean(lo.PassesMs, m.PassesMs), mean(lo.CodegenMs, m.CodegenMs), mean(lo.CompileMs, m.CompileMs)
	s.UploadMs, s.FirstDispatchMs, s.DispatchMs = mean(lo.UploadMs, m.UploadMs), mean(lo.FirstDispatchMs, m.FirstDispatchMs), mean(lo.DispatchMs, m.DispatchMs)
	s.ReadbackMs, s.TotalMs = mean(lo.ReadbackMs, m.ReadbackMs), mean(lo.TotalMs, m.TotalMs)
	return s
}

// Crossover is, for one workload, the smallest measured size from which on
// webgpu's warm end-to-end time beats the best CPU backend's (the fastest
// of cpu, wasm and native at that size, by median) at every larger
// measured size. Beating means every warm run of webgpu was faster than
// every warm run of that backend: where the spreads overlap, neither is
// faster.
type Crossover struct {
	Workload string `json:"workload"`
	Unit     string `json:"unit"`
	Size     int    `json:"size"` // 0: webgpu never wins in the measured range
	Note     string `json:"note"`
}

// cpuBackends are the backends that run on the CPU, which webgpu must beat.
var cpuBackends = []string{"cpu", "wasm", "native"}

// Crossovers computes the crossover of webgpu against the best CPU backend
// present, for every workload measured on webgpu and on a CPU backend.
func Crossovers(cases []Case) []Crossover {
	type point struct {
		gpu, cpu Spread // warm totals; cpu is the best CPU backend's
		best     string // that backend
	}
	by := map[string]map[int]*point{}
	units := map[string]string{}
	var order []string
	for _, c := range cases {
		if c.Error != "" || (c.Backend != "webgpu" && !slices.Contains(cpuBackends, c.Backend)) || c.Warm.TotalMs <= 0 {
			continue
		}
		if by[c.Workload] == nil {
			by[c.Workload] = map[int]*point{}
			order = append(order, c.Workload)
		}
		units[c.Workload] = c.Unit
		p := by[c.Workload][c.Size]
		if p == nil {
			p = &point{}
			by[c.Workload][c.Size] = p
		}
		sp := pointSpread(c.WarmSpread, c.Warm.TotalMs)
		switch {
		case c.Backend == "webgpu":
			p.gpu = sp
		case p.cpu.Runs == 0 || sp.MedianMs < p.cpu.MedianMs:
			p.cpu, p.best = sp, c.Backend
		}
	}
	var out []Crossover
	for _, w := range order {
		var sizes []int
		for s, p := range by[w] {
			if p.gpu.Runs > 0 && p.cpu.Runs > 0 {
				sizes = append(sizes, s)
			}
		}
		if len(sizes) == 0 {
			continue
		}
		slices.Sort(sizes)
		x := Crossover{Workload: w, Unit: units[w]}
		for i := len(sizes) - 1; i >= 0; i-- {
			if p := by[w][sizes[i]]; Order(p.gpu, p.cpu) >= 0 {
				break
			}
			x.Size = sizes[i]
		}
		last := sizes[len(sizes)-1]
		at := func(s int) string { p := by[w][s]; return versus(p.gpu, p.cpu, p.best) }
		switch {
		case x.Size == 0 && Order(by[w][last].gpu, by[w][last].cpu) == 0:
			x.Note = fmt.Sprintf("webgpu is not faster than the CPU up to %s=%d, the largest size measured on both (there %s)", x.Unit, last, at(last))
		case x.Size == 0:
			x.Note = fmt.Sprintf("the CPU is faster up to %s=%d, the largest size measured on both (there %s)", x.Unit, last, at(last))
		case x.Size == sizes[0]:
			x.Note = fmt.Sprintf("webgpu is faster than the best CPU backend at every size measured, from %s=%d (there %s)", x.Unit, x.Size, at(x.Size))
		default:
			i := slices.Index(sizes, x.Size) - 1
			x.Note = fmt.Sprintf("webgpu is faster than the best CPU backend from %s=%d on; at %s=%d %s", x.Unit, x.Size, x.Unit, sizes[i], at(sizes[i]))
		}
		out = append(out, x)
	}
	return out
}

// versus says how webgpu's warm runs compare with the best CPU backend's:
// which is faster and by how much, or that the spreads overlap.
func versus(gpu, cpu Spread, best string) string {
	g, c := "webgpu "+gpu.String(), best+" "+cpu.String()
	switch Order(gpu, cpu) {
	case -1:
		return fmt.Sprintf("%s, %s: webgpu is %.1f× faster", g, c, cpu.MedianMs/gpu.MedianMs)
	case 1:
		return fmt.Sprintf("%s, %s: %s is %.1f× faster", c, g, best, gpu.MedianMs/cpu.MedianMs)
	}
	return fmt.Sprintf("%s, %s: no difference (the spreads overlap)", c, g)
}

// progress draws a one-line bar; with a nil writer it does nothing.
type progress struct {
	w     io.Writer
	total int
	start time.Time
}

func newProgress(w io.Writer, total int) *progress {
	return &progress{w: w, total: total, start: time.Now()}
}

func (p *progress) update(i int, label string) {
	if p.w == nil {
		return
	}
	const width = 30
	fill := width * i / max(p.total, 1)
	fmt.Fprintf(p.w, "\r\033[K[%s%s] %d/%d %5.1fs %s", strings.Repeat("#", fill), strings.Repeat(".", width-fill),
		i, p.total, time.Since(p.start).Seconds(), label)
}

func (p *progress) done() {
	if p.w != nil {
		p.update(p.total, "done")
		fmt.Fprintln(p.w)
	}
}

// IsTerminal reports whether f is a character device, for deciding whether
// to draw progress: a terminal, or /dev/null where drawing is harmless;
// never a pipe or a file.
func IsTerminal(f *os.File) bool {
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}
