package bench

import (
	"cmp"
	"fmt"
	"html"
	"math"
	"slices"
	"strings"

	"github.com/gpucc/gpucc"
)

// Verdict is what `gpucc bench GRAPH` concludes about one backend's runs
// of the user's graph: where the cold and the warm run's time goes, which
// stage dominates (the seed's question: transfer or compilation), and,
// against the reference backend (cpu), after how many runs in one process
// its start-up and compile are paid back.
type Verdict struct {
	Backend string `json:"backend"`
	// Dominant is the cold run's largest stage: startup, compile
	// (passes, codegen and the backend's compile), transfer (upload and
	// readback) or dispatch; WarmDominant a warm run's.
	Dominant     string `json:"dominant"`
	WarmDominant string `json:"warmDominant"`
	Cold         string `json:"cold"` // the cold run's stages in words
	Warm         string `json:"warm"` // a warm run's
	// BreakEvenRuns is the number of runs in one process from which on
	// this backend has cost less in all than the reference (1: from the
	// first run), counting one cold run and then warm ones; 0 when it
	// never does or the runs cannot tell (the spreads overlap).
	BreakEvenRuns int    `json:"breakEvenRuns"`
	Versus        string `json:"versus,omitempty"` // the comparison with the reference, in words
}

// part is one stage of a run, for the verdict's sentences.
type part struct {
	name string
	ms   float64
}

// parts splits a run into the verdict's four stages.
func parts(s Stage) []part {
	dispatch := s.DispatchMs
	if s.FirstDispatchMs > 0 {
		dispatch = s.FirstDispatchMs // the same dispatch's wall time (Timings)
	}
	return []part{{"startup", s.StartupMs}, {"compile", s.PassesMs + s.CodegenMs + s.CompileMs},
		{"transfer", s.UploadMs + s.ReadbackMs}, {"dispatch", dispatch}}
}

// describe says a run's total and stages, and which stage dominates.
func describe(what string, s Stage, sp Spread) (string, string) {
	ps := parts(s)
	top := ps[0]
	var words []string
	for _, p := range ps {
		if p.ms > top.ms {
			top = p
		}
		if p.ms > 0 || p.name == "transfer" {
			words = append(words, fmt.Sprintf("%s %s", p.name, f3(p.ms)))
		}
	}
	return top.name, fmt.Sprintf("%s %s; the median run: %s ms: %s dominates", what, sp, strings.Join(words, ", "), top.name)
}

// Verdicts reads the user bench's cases (one per backend, cold and warm
// spreads measured) against the reference backend ref.
func Verdicts(cases []Case, ref string) []Verdict {
	var r *Case
	for i := range cases {
		if cases[i].Backend == ref && cases[i].Error == "" {
			r = &cases[i]
		}
	}
	var out []Verdict
	for _, c := range cases {
		if c.Error != "" {
			continue
		}
		v := Verdict{Backend: c.Backend}
		cs, ws := pointSpread(c.ColdSpread, c.Cold.TotalMs), pointSpread(c.WarmSpread, c.Warm.TotalMs)
		v.Dominant, v.Cold = describe("cold", c.Cold, cs)
		v.WarmDominant, v.Warm = describe("warm", c.Warm, ws)
		if compile, transfer := parts(c.Cold)[1].ms, parts(c.Warm)[2].ms; compile > 0 && transfer > 0 {
			v.Cold += fmt.Sprintf("; its compile is %.0f warm runs' transfer", compile/transfer)
		}
		switch {
		case c.Backend == ref:
		case r == nil:
			v.Versus = fmt.Sprintf("%s was not measured: no break-even", ref)
		default:
			v.BreakEvenRuns, v.Versus = breakEven(c, *r)
		}
		out = append(out, v)
	}
	return out
}

// breakEven compares c with the reference r over n runs in one process:
// a cold run, then warm ones. Warm runs decide only where their spreads
// do not overlap; the cold runs' medians then set when the faster one
// has paid its start.
func breakEven(c, r Case) (int, string) {
	be, ref := c.Backend, r.Backend
	cw, rw := pointSpread(c.WarmSpread, c.Warm.TotalMs), pointSpread(r.WarmSpread, r.Warm.TotalMs)
	cc, rc := pointSpread(c.ColdSpread, c.Cold.TotalMs), pointSpread(r.ColdSpread, r.Cold.TotalMs)
	warm := fmt.Sprintf("warm %s %s, %s %s", be, cw, ref, rw)
	cold := fmt.Sprintf("cold %s %s, %s %s", be, cc, ref, rc)
	switch Order(cw, rw) {
	case -1:
		if cc.MedianMs <= rc.MedianMs {
			return 1, fmt.Sprintf("%s is cheaper than %s from the first run (%s; %s)", be, ref, cold, warm)
		}
		// n runs cost cc + (n-1)·cw against rc + (n-1)·rw: the first n
		// where the first is strictly less.
		n := 2 + int(math.Floor((cc.MedianMs-rc.MedianMs)/(rw.MedianMs-cw.MedianMs)))
		return n, fmt.Sprintf("%s's start costs %s ms more than %s's and each warm run saves %s ms: it is cheaper from run %d on (%s; %s)",
			be, f3(cc.MedianMs-rc.MedianMs), ref, f3(rw.MedianMs-cw.MedianMs), n, cold, warm)
	case 1:
		if cc.MedianMs < rc.MedianMs {
			k := int(math.Ceil((rc.MedianMs - cc.MedianMs) / (cw.MedianMs - rw.MedianMs))) // the last n still strictly cheaper
			return 0, fmt.Sprintf("%s is cheaper for the first %d runs only: %s's warm runs are faster (%s; %s)", be, k, ref, cold, warm)
		}
		return 0, fmt.Sprintf("%s is cheaper from the first run: its cold and warm runs are faster (%s; %s)", ref, cold, warm)
	}
	switch Order(cc, rc) {
	case -1:
		return 1, fmt.Sprintf("warm runs: no difference (the spreads overlap); %s's cold start is cheaper by %s ms (%s; %s)", be, f3(rc.MedianMs-cc.MedianMs), cold, warm)
	case 1:
		return 0, fmt.Sprintf("warm runs: no difference (the spreads overlap); %s's cold start is cheaper by %s ms (%s; %s)", ref, f3(cc.MedianMs-rc.MedianMs), cold, warm)
	}
	return 0, fmt.Sprintf("no difference: the cold and the warm runs' spreads overlap (%s; %s)", cold, warm)
}

// userMarkdown is the user bench's summary: a row per backend and the
// verdicts.
func (r *Report) userMarkdown() string {
	var b strings.Builder
	fmt.Fprintf(&b, "## %s\n\n", cell(r.Graph))
	b.WriteString("Cold is one run in a fresh process: start-up (opening the backend), compile with a new, empty cache, upload, first dispatch and readback; process is that process's wall time, exec to exit, which adds the program's start and reading (importing) the graph. Warm runs reuse the compiled executable with the inputs resident on the device. Times in ms: median (min–max, runs). Kernels is how many the plan has; where a backend times each kernel alone (webgpu), the heaviest follow the verdicts.\n\n")
	b.WriteString("| backend | kernels | cold | process | warm |\n|---|---:|---|---|---|\n")
	for _, c := range r.Cases {
		if c.Error != "" {
			fmt.Fprintf(&b, "| %s | error: %s ||||\n", cell(c.Backend), cell(c.Error))
			continue
		}
		proc := "–"
		if c.ProcessSpread != nil {
			proc = c.ProcessSpread.String()
		}
		fmt.Fprintf(&b, "| %s | %d | %s | %s | %s |\n", cell(c.Backend), c.Kernels, pointSpread(c.ColdSpread, c.Cold.TotalMs), proc, pointSpread(c.WarmSpread, c.Warm.TotalMs))
	}
	b.WriteString("\n### Verdicts\n\n")
	for _, v := range r.Verdicts {
		fmt.Fprintf(&b, "- %s: %s. %s.", cell(v.Backend), cell(v.Cold), cell(v.Warm))
		if v.Versus != "" {
			fmt.Fprintf(&b, " %s.", cell(v.Versus))
		}
		b.WriteString("\n")
	}
	b.WriteString("\n")
	for _, c := range r.Cases {
		kts, sum := heaviest(c.KernelTimes)
		if len(kts) == 0 {
			continue
		}
		fmt.Fprintf(&b, "### The heaviest kernels on %s\n\nOne more warm run, each kernel submitted and timed alone (%s): %d kernels, %.4f ms in all. Each ran alone, in a submission of its own: their sum is not a run's dispatch time.\n\n", cell(c.Backend), kts[0].Clock, len(c.KernelTimes), sum)
		b.WriteString("| kernel | kind | ms | share |\n|---|---|---:|---:|\n")
		for _, kt := range kts {
			fmt.Fprintf(&b, "| %s | %s | %.4f | %.0f%% |\n", cell(kt.Kernel), cell(kt.Kind), kt.Ms, 100*kt.Ms/sum)
		}
		b.WriteString("\n")
	}
	return b.String()
}

// heaviestKernels is how many kernels the report lists a backend's times of.
const heaviestKernels = 10

// heaviest returns the heaviest kernels of kts, at most heaviestKernels,
// heaviest first, and the sum of all of kts' times.
func heaviest(kts []gpucc.KernelTime) ([]gpucc.KernelTime, float64) {
	var sum float64
	for _, kt := range kts {
		sum += kt.Ms
	}
	top := slices.Clone(kts)
	slices.SortStableFunc(top, func(a, b gpucc.KernelTime) int { return cmp.Compare(b.Ms, a.Ms) })
	return top[:min(len(top), heaviestKernels)], sum
}

// userHTML is userMarkdown's section of report.html.
func (r *Report) userHTML() string {
	var b strings.Builder
	fmt.Fprintf(&b, "<h2>%s</h2><p>Cold is one run in a fresh process: start-up, compile with a new, empty cache, upload, first dispatch and readback; process is that process's wall time, exec to exit, which adds the program's start and reading the graph. Warm runs reuse the compiled executable with the inputs resident. Times in ms: median (min–max, runs). Where a backend times each kernel alone (webgpu), the heaviest follow the verdicts.</p>", html.EscapeString(r.Graph))
	b.WriteString("<table><tr><th>backend</th><th>kernels</th><th>cold</th><th>process</th><th>warm</th></tr>")
	for _, c := range r.Cases {
		if c.Error != "" {
			fmt.Fprintf(&b, "<tr><td>%s</td><td colspan=4>error: %s</td></tr>", html.EscapeString(c.Backend), html.EscapeString(c.Error))
			continue
		}
		proc := "–"
		if c.ProcessSpread != nil {
			proc = c.ProcessSpread.String()
		}
		fmt.Fprintf(&b, "<tr><td>%s</td><td>%d</td><td>%s</td><td>%s</td><td>%s</td></tr>", html.EscapeString(c.Backend), c.Kernels,
			html.EscapeString(pointSpread(c.ColdSpread, c.Cold.TotalMs).String()), html.EscapeString(proc), html.EscapeString(pointSpread(c.WarmSpread, c.Warm.TotalMs).String()))
	}
	b.WriteString("</table><h3>Verdicts</h3><ul>")
	for _, v := range r.Verdicts {
		fmt.Fprintf(&b, "<li><b>%s</b>: %s. %s.", html.EscapeString(v.Backend), html.EscapeString(v.Cold), html.EscapeString(v.Warm))
		if v.Versus != "" {
			fmt.Fprintf(&b, " %s.", html.EscapeString(v.Versus))
		}
		b.WriteString("</li>")
	}
	b.WriteString("</ul>")
	for _, c := range r.Cases {
		kts, sum := heaviest(c.KernelTimes)
		if len(kts) == 0 {
			continue
		}
		fmt.Fprintf(&b, "<h3>The heaviest kernels on %s</h3><p>One more warm run, each kernel submitted and timed alone (%s): %d kernels, %.4f ms in all.</p><table><tr><th>kernel</th><th>kind</th><th>ms</th><th>share</th></tr>",
			html.EscapeString(c.Backend), html.EscapeString(kts[0].Clock), len(c.KernelTimes), sum)
		for _, kt := range kts {
			fmt.Fprintf(&b, "<tr><td>%s</td><td>%s</td><td>%.4f</td><td>%.0f%%</td></tr>", html.EscapeString(kt.Kernel), html.EscapeString(kt.Kind), kt.Ms, 100*kt.Ms/sum)
		}
		b.WriteString("</table>")
	}
	return b.String()
}
