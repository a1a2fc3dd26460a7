package bench

import (
	"encoding/json"
	"fmt"
	"html"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/gpucc/gpucc/ir"
)

// Write saves the report into dir as results.json, results.md and
// report.html (self-contained: inline SVG and CSS, no scripts).
func (r *Report) Write(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return ir.Errorf(ir.CodeIO, -1, "", "bench: report directory: %v", err)
	}
	j, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return fmt.Errorf("bench: encode results: %w", err)
	}
	files := map[string][]byte{
		"results.json": append(j, '\n'),
		"results.md":   []byte(r.Markdown()),
		"report.html":  []byte(r.HTML()),
	}
	for name, b := range files {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			return ir.Errorf(ir.CodeIO, -1, "", "bench: write %s: %v", name, err)
		}
	}
	return nil
}

// stages are the parts of a run, in order, with their chart colours.
var stages = []struct {
	name, color string
	ms          func(s Stage) float64
}{
	{"passes+codegen", "#8e6bbf", func(s Stage) float64 { return s.PassesMs + s.CodegenMs }},
	{"compile", "#d9534f", func(s Stage) float64 { return s.CompileMs }},
	{"upload", "#f0ad4e", func(s Stage) float64 { return s.UploadMs }},
	// A run's dispatch is one or the other: FirstDispatchMs, when set, is
	// the wall time of the same dispatch DispatchMs measures (gpucc.Timings).
	{"first dispatch", "#9fd39f", func(s Stage) float64 { return s.FirstDispatchMs }},
	{"dispatch", "#3c9d3c", func(s Stage) float64 {
		if s.FirstDispatchMs > 0 {
			return 0
		}
		return s.DispatchMs
	}},
	{"readback", "#5bc0de", func(s Stage) float64 { return s.ReadbackMs }},
}

// other is the part of the total no stage accounts for (validation,
// buffer setup, output checks).
func other(s Stage) float64 {
	sum := 0.0
	for _, st := range stages {
		sum += st.ms(s)
	}
	return max(0, s.TotalMs-sum)
}

func gbps(bytes int64, ms float64) string {
	if ms <= 0 || bytes == 0 {
		return "–"
	}
	return fmt.Sprintf("%.2f", float64(bytes)/ms/1e6)
}

func f3(v float64) string {
	switch {
	case v == 0:
		return "0"
	case v < 0.01:
		return fmt.Sprintf("%.4f", v)
	case v < 10:
		return fmt.Sprintf("%.3f", v)
	}
	return fmt.Sprintf("%.1f", v)
}

func hits(m map[string]bool) string {
	var on []string
	for k, v := range m {
		if v {
			on = append(on, k)
		}
	}
	slices.Sort(on)
	if len(on) == 0 {
		return "none"
	}
	return strings.Join(on, " ")
}

// cell makes s safe inside a Markdown table cell or list item: one line,
// with its pipes escaped.
func cell(s string) string {
	return strings.NewReplacer("|", `\|`, "\r\n", " ", "\n", " ", "\r", " ").Replace(s)
}

// Markdown renders the results as tables.
func (r *Report) Markdown() string {
	var b strings.Builder
	fmt.Fprintf(&b, "# gpucc bench\n\n%s, %s, quick=%v, %.1f s\n\n", r.Date, r.Host, r.Quick, r.WallS)
	for _, be := range r.adapterOrder() {
		a := r.Adapters[be]
		fmt.Fprintf(&b, "- %s: %s %s (software=%v)\n", be, a.Name, a.Driver, a.Software)
	}
	if r.Graph != "" {
		b.WriteString("\n" + r.userMarkdown())
	}
	cold := "cold is a fresh runtime with a new, empty, memory-only cache"
	if r.Graph != "" {
		cold = "cold is the cold run of median total, in its fresh process"
	}
	fmt.Fprintf(&b, "\nTimes in ms. Upload/readback in GB/s. Warm is the run of median total among the warm runs; %s. \"passes+codegen\" is the IR passes plus code generation. min, median and max are the totals over the runs; where two backends' spreads overlap, neither is called faster.\n\n", cold)
	b.WriteString("| workload | size | backend | run | passes+codegen | compile | upload | GB/s | first dispatch | dispatch | clock | readback | GB/s | total | runs | min | median | max | cache hits |\n")
	b.WriteString("|---|---:|---|---|---:|---:|---:|---:|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---|\n")
	for _, c := range r.Cases {
		if c.Error != "" {
			fmt.Fprintf(&b, "| %s | %d | %s | error | %s |||||||||||||||\n", cell(c.Workload), c.Size, cell(c.Backend), cell(c.Error))
			continue
		}
		for _, run := range c.runs() {
			s, sp := run.s, run.spread
			fmt.Fprintf(&b, "| %s | %d | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %d | %s | %s | %s | %s |\n",
				cell(c.Workload), c.Size, cell(c.Backend), run.name, f3(s.PassesMs+s.CodegenMs), f3(s.CompileMs), f3(s.UploadMs), gbps(s.UploadBytes, s.UploadMs),
				f3(s.FirstDispatchMs), f3(s.DispatchMs), s.DispatchClock, f3(s.ReadbackMs), gbps(s.ReadbackBytes, s.ReadbackMs), f3(s.TotalMs),
				sp.Runs, f3(sp.MinMs), f3(sp.MedianMs), f3(sp.MaxMs), hits(s.Cache))
		}
	}
	if r.Graph == "" { // the user's graph has its verdicts instead
		b.WriteString("\n## Crossover (warm end to end, webgpu vs the best CPU backend: cpu, wasm or native)\n\n")
	}
	for _, x := range r.Crossovers {
		fmt.Fprintf(&b, "- %s: %s\n", x.Workload, x.Note)
	}
	if cmp := r.Compare(); len(cmp) > 0 {
		fmt.Fprintf(&b, "\n## Against PyTorch (%s, torch %s)\n\n| what | gpucc | torch | unit | gpucc slowdown |\n|---|---:|---:|---|---:|\n", r.Torch.Device, r.Torch.Version)
		for _, x := range cmp {
			fmt.Fprintf(&b, "| %s | %s | %s | %s | %.2f× |\n", x.What, f3(x.Gpucc), f3(x.Torch), x.Unit, x.Ratio)
		}
	}
	if len(r.Skipped) > 0 {
		b.WriteString("\n## Skipped\n\n")
		for _, s := range r.Skipped {
			fmt.Fprintf(&b, "- %s\n", cell(s))
		}
	}
	return b.String()
}

// caseRun is one of a case's two stages with its spread.
type caseRun struct {
	name   string
	s      Stage
	spread Spread
}

// runs returns c's cold and warm stages with their spreads (a case
// without a recorded spread has its median as its one point).
func (c Case) runs() []caseRun {
	return []caseRun{{"cold", c.Cold, pointSpread(c.ColdSpread, c.Cold.TotalMs)}, {"warm", c.Warm, pointSpread(c.WarmSpread, c.Warm.TotalMs)}}
}

// adapterOrder lists the backends of r.Adapters sorted, so that a report
// renders the same every time.
func (r *Report) adapterOrder() []string {
	return slices.Sorted(maps.Keys(r.Adapters))
}

// workloadOrder lists the report's workloads in first-seen order.
func (r *Report) workloadOrder() []string {
	var ws []string
	for _, c := range r.Cases {
		if !slices.Contains(ws, c.Workload) {
			ws = append(ws, c.Workload)
		}
	}
	return ws
}

// HTML renders the self-contained report page.
func (r *Report) HTML() string {
	var b strings.Builder
	b.WriteString(`<!doctype html><html><head><meta charset="utf-8"><title>gpucc bench</title><style>
body{font:14px system-ui,sans-serif;margin:24px;color:#222;max-width:1100px}
h2{margin-top:32px;border-bottom:1px solid #ddd}
table{border-collapse:collapse;font-size:12px}td,th{border:1px solid #ddd;padding:2px 6px;text-align:right}
th:first-child,td:first-child{text-align:left}.legend span{display:inline-block;margin-right:12px}
.legend i{display:inline-block;width:12px;height:12px;margin-right:4px;vertical-align:middle}
svg text{font:11px system-ui,sans-serif}
</style></head><body>`)
	fmt.Fprintf(&b, "<h1>gpucc bench</h1><p>%s · %s · quick=%v · %.1f s</p><ul>", html.EscapeString(r.Date), html.EscapeString(r.Host), r.Quick, r.WallS)
	for _, be := range r.adapterOrder() {
		a := r.Adapters[be]
		fmt.Fprintf(&b, "<li>%s: %s %s (software=%v)</li>", html.EscapeString(be), html.EscapeString(a.Name), html.EscapeString(a.Driver), a.Software)
	}
	b.WriteString("</ul>")
	if r.Graph != "" {
		b.WriteString(r.userHTML())
	}
	if r.Graph == "" {
		b.WriteString("<h2>Crossover (webgpu vs the best CPU backend: cpu, wasm or native)</h2>")
	}
	b.WriteString("<ul>")
	for _, x := range r.Crossovers {
		fmt.Fprintf(&b, "<li><b>%s</b>: %s</li>", html.EscapeString(x.Workload), html.EscapeString(x.Note))
	}
	b.WriteString("</ul>")
	if cmp := r.Compare(); len(cmp) > 0 {
		fmt.Fprintf(&b, "<h2>Against PyTorch (%s)</h2><table><tr><th>what</th><th>gpucc</th><th>torch</th><th>unit</th><th>gpucc slowdown</th></tr>", html.EscapeString(r.Torch.Device))
		for _, x := range cmp {
			fmt.Fprintf(&b, "<tr><td>%s</td><td>%s</td><td>%s</td><td>%s</td><td>%.2f×</td></tr>", html.EscapeString(x.What), f3(x.Gpucc), f3(x.Torch), x.Unit, x.Ratio)
		}
		b.WriteString("</table>")
	}
	b.WriteString(`<div class="legend">`)
	for _, st := range stages {
		fmt.Fprintf(&b, `<span><i style="background:%s"></i>%s</span>`, st.color, st.name)
	}
	b.WriteString(`<span><i style="background:#ccc"></i>other</span></div>`)
	for _, w := range r.workloadOrder() {
		fmt.Fprintf(&b, "<h2>%s</h2>", html.EscapeString(w))
		b.WriteString(r.lineChart(w))
		b.WriteString(r.stackedBars(w))
		b.WriteString(r.cacheTable(w))
	}
	var missing []string
	for _, c := range r.Cases {
		if c.Error != "" {
			missing = append(missing, fmt.Sprintf("%s %s=%d %s: %s", c.Workload, c.Unit, c.Size, c.Backend, c.Error))
		}
	}
	if missing = append(missing, r.Skipped...); len(missing) > 0 {
		b.WriteString("<h2>Failed and skipped</h2><ul>")
		for _, m := range missing {
			fmt.Fprintf(&b, "<li>%s</li>", html.EscapeString(m))
		}
		b.WriteString("</ul>")
	}
	b.WriteString("</body></html>\n")
	return b.String()
}

// cacheTable lists, per case and run, the total and which caches hit.
func (r *Report) cacheTable(w string) string {
	var b strings.Builder
	b.WriteString("<table><tr><th>case</th><th>run</th><th>total ms</th><th>runs</th><th>min</th><th>median</th><th>max</th><th>cache hits</th></tr>")
	for _, c := range r.Cases {
		if c.Workload != w || c.Error != "" {
			continue
		}
		for _, run := range c.runs() {
			sp := run.spread
			fmt.Fprintf(&b, "<tr><td>%s=%d %s</td><td>%s</td><td>%s</td><td>%d</td><td>%s</td><td>%s</td><td>%s</td><td>%s</td></tr>", html.EscapeString(c.Unit), c.Size,
				html.EscapeString(c.Backend), run.name, f3(run.s.TotalMs), sp.Runs, f3(sp.MinMs), f3(sp.MedianMs), f3(sp.MaxMs), html.EscapeString(hits(run.s.Cache)))
		}
	}
	b.WriteString("</table>")
	return b.String()
}

// stackedBars draws one bar per case and run, split into stages, each bar
// scaled to its own total (the label gives the total): where the time goes.
func (r *Report) stackedBars(w string) string {
	type row struct {
		label string
		s     Stage
	}
	var rows []row
	for _, c := range r.Cases {
		if c.Workload != w || c.Error != "" {
			continue
		}
		rows = append(rows, row{fmt.Sprintf("%s=%d %s cold", c.Unit, c.Size, c.Backend), c.Cold},
			row{fmt.Sprintf("%s=%d %s warm", c.Unit, c.Size, c.Backend), c.Warm})
	}
	const left, width, rowH = 210, 620, 16
	h := len(rows)*rowH + 10
	var b strings.Builder
	fmt.Fprintf(&b, `<svg class="bars" width="%d" height="%d" role="img" aria-label="stage breakdown of %s">`, left+width+90, h, html.EscapeString(w))
	for i, rw := range rows {
		y := 5 + i*rowH
		fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="end">%s</text>`, left-6, y+11, html.EscapeString(rw.label))
		total := rw.s.TotalMs
		if total <= 0 {
			continue
		}
		x := float64(left)
		seg := func(ms float64, color, name string) {
			wd := ms / total * width
			if wd <= 0 {
				return
			}
			fmt.Fprintf(&b, `<rect x="%.1f" y="%d" width="%.1f" height="%d" fill="%s"><title>%s %s ms</title></rect>`, x, y, wd, rowH-3, color, name, f3(ms))
			x += wd
		}
		for _, st := range stages {
			seg(st.ms(rw.s), st.color, st.name)
		}
		seg(other(rw.s), "#ccc", "other")
		fmt.Fprintf(&b, `<text x="%d" y="%d">%s ms</text>`, left+width+6, y+11, f3(total))
	}
	b.WriteString("</svg>")
	return b.String()
}

// lineChart plots end-to-end time against size on log axes: one line per
// backend and run (warm solid, cold dashed), and the crossover.
func (r *Report) lineChart(w string) string {
	type pt struct{ x, y, lo, hi float64 } // lo and hi: the runs' least and greatest total
	series := map[string][]pt{}
	var names []string
	unit := ""
	xmin, xmax, ymin, ymax := math.Inf(1), math.Inf(-1), math.Inf(1), math.Inf(-1)
	for _, c := range r.Cases {
		if c.Workload != w || c.Error != "" {
			continue
		}
		unit = c.Unit
		for _, run := range c.runs() {
			name, sp := c.Backend+" "+run.name, run.spread
			if run.s.TotalMs <= 0 || sp.MinMs <= 0 {
				continue
			}
			if !slices.Contains(names, name) {
				names = append(names, name)
			}
			x, y := math.Log10(float64(c.Size)), math.Log10(run.s.TotalMs)
			lo, hi := math.Log10(sp.MinMs), math.Log10(sp.MaxMs)
			series[name] = append(series[name], pt{x, y, lo, hi})
			xmin, xmax, ymin, ymax = min(xmin, x), max(xmax, x), min(ymin, lo), max(ymax, hi)
		}
	}
	if len(names) == 0 || xmax-xmin < 1e-9 && r.Graph != "" {
		return "" // the user's graph has one size: the bars and tables say it all
	}
	// The axes end at the data; a single value gets half a decade each side.
	if xmax-xmin < 1e-9 {
		xmin, xmax = xmin-0.5, xmax+0.5
	}
	if ymax-ymin < 1e-9 {
		ymin, ymax = ymin-0.5, ymax+0.5
	}
	const W, H, L, T, R, B = 640, 300, 60, 10, 150, 40
	px := func(x float64) float64 { return L + (x-xmin)/(xmax-xmin)*(W-L-R) }
	py := func(y float64) float64 { return H - B - (y-ymin)/(ymax-ymin)*(H-T-B) }
	var b strings.Builder
	fmt.Fprintf(&b, `<svg class="lines" width="%d" height="%d" role="img" aria-label="time vs size for %s">`, W, H, html.EscapeString(w))
	fmt.Fprintf(&b, `<rect x="%d" y="%d" width="%d" height="%d" fill="#fafafa" stroke="#999"/>`, L, T, W-L-R, H-T-B)
	for _, e := range ticks(xmin, xmax) {
		fmt.Fprintf(&b, `<path d="M%.1f %d V%d" stroke="#e3e3e3"/><text x="%.1f" y="%d" text-anchor="middle">%s</text>`, px(e), T, H-B, px(e), H-B+14, tickLabel(e))
	}
	for _, e := range ticks(ymin, ymax) {
		fmt.Fprintf(&b, `<path d="M%d %.1f H%d" stroke="#e3e3e3"/><text x="%d" y="%.1f" text-anchor="end">%s</text>`, L, py(e), W-R, L-4, py(e)+4, tickLabel(e))
	}
	fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="middle">%s (log)</text><text x="12" y="%d" transform="rotate(-90 12 %d)" text-anchor="middle">end-to-end ms (log)</text>`,
		(W-R+L)/2, H-6, html.EscapeString(unit), H/2, H/2)
	palette := map[string]string{"webgpu": "#3c9d3c", "cpu": "#d9534f", "wasm": "#337ab7", "webgl2": "#8e6bbf", "native": "#e08a1e"}
	for i, n := range names {
		be, run, _ := strings.Cut(n, " ")
		color := palette[be]
		if color == "" {
			color = "#555"
		}
		dash := ""
		if run == "cold" {
			dash = ` stroke-dasharray="5 3"`
		}
		pts := series[n]
		slices.SortFunc(pts, func(a, b pt) int { return int(math.Copysign(1, a.x-b.x)) })
		var d strings.Builder
		for k, p := range pts {
			cmd := "L"
			if k == 0 {
				cmd = "M"
			}
			fmt.Fprintf(&d, "%s%.1f %.1f ", cmd, px(p.x), py(p.y))
		}
		fmt.Fprintf(&b, `<path d="%s" fill="none" stroke="%s" stroke-width="2"%s><title>%s</title></path>`, d.String(), color, dash, html.EscapeString(n))
		for _, p := range pts {
			fmt.Fprintf(&b, `<circle cx="%.1f" cy="%.1f" r="3" fill="%s"/>`, px(p.x), py(p.y), color)
			if p.hi > p.lo {
				fmt.Fprintf(&b, `<path d="M%.1f %.1f V%.1f" stroke="%s"><title>%s min–max</title></path>`, px(p.x), py(p.lo), py(p.hi), color, html.EscapeString(n))
			}
		}
		fmt.Fprintf(&b, `<path d="M%d %d h18" stroke="%s" stroke-width="2"%s/><text x="%d" y="%d">%s</text>`, W-R+8, T+10+16*i, color, dash, W-R+30, T+14+16*i, html.EscapeString(n))
	}
	for _, x := range r.Crossovers {
		if x.Workload == w && x.Size > 0 {
			xx := px(math.Log10(float64(x.Size)))
			fmt.Fprintf(&b, `<path d="M%.1f %d V%d" stroke="#000" stroke-dasharray="2 2"/><text x="%.1f" y="%d">crossover</text>`, xx, T, H-B, xx+3, T+12)
		}
	}
	b.WriteString("</svg>")
	return b.String()
}

// ticks returns the log-axis ticks in [lo, hi]: every decade inside, or
// the two ends when the range holds fewer than two decades.
func ticks(lo, hi float64) []float64 {
	var t []float64
	for e := math.Ceil(lo - 1e-9); e <= hi+1e-9; e++ {
		t = append(t, e)
	}
	if len(t) < 2 {
		return []float64{lo, hi}
	}
	return t
}

// tickLabel labels log10 value e: 1e3 for a decade, else the value.
func tickLabel(e float64) string {
	if math.Abs(e-math.Round(e)) < 1e-9 {
		return fmt.Sprintf("1e%d", int(math.Round(e)))
	}
	return strconv.FormatFloat(math.Pow(10, e), 'g', 3, 64)
}
