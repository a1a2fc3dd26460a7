package web

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/gpucc/gpucc"
	"github.com/gpucc/gpucc/cpuref"
	"github.com/gpucc/gpucc/ir"
	"github.com/gpucc/gpucc/ir/irtest"
)

// runTyped runs g through gpucc.run in the page with options opts: a
// float output's values come back as their float32 bits too (Bits), since
// JSON.stringify writes -0 as 0; "Infinity" and "NaN" are read by Number.
func runTyped(t *testing.T, ctx context.Context, name string, g *ir.Graph, opts map[string]any) typedResult {
	t.Helper()
	o, _ := json.Marshal(opts)
	expr := fmt.Sprintf(`gpucc.run(%s, %s).then(r => {
		for (const o of Object.values(r.outputs)) {
			if (!o.dtype || o.dtype.includes("float")) { o.bits = Array.from(new Uint32Array(new Float32Array(o.data.map(Number)).buffer)); o.data = o.bits.map(() => 0); }
		}
		return JSON.stringify(r);
	}, e => JSON.stringify({error: e}))`, jsString(ir.Encode(g)), o)
	s, err := chromedp.Run(ctx, chromedp.Evaluate[string](expr, chromedp.EvalAwaitPromise))
	if err != nil {
		t.Fatal(err)
	}
	var r typedResult
	if err := json.Unmarshal([]byte(s), &r); err != nil {
		t.Fatalf("%s: %v: %s", name, err, s)
	}
	return r
}

// typedResult is gpucc.run's answer to a typed graph: each output's dtype
// and values as JSON numbers (booleans for bool), or the error.
type typedResult struct {
	Backend string `json:"backend"`
	Outputs map[string]struct {
		DType string            `json:"dtype"`
		Data  []json.RawMessage `json:"data"`
		Bits  []uint32          `json:"bits"` // a float dtype's, for Data`
	} `json:"outputs"`
	Error *struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// splitInt64 returns g with each int64 output also given as its two
// int32 words (lo: the output cast to int32, which wraps; hi: (x - lo) /
// 2^32): JavaScript's numbers hold integers up to 2^53 only, so the words
// are what the page can return exactly.
func splitInt64(g *ir.Graph) *ir.Graph {
	g = g.Clone()
	for _, o := range g.Outputs {
		if len(g.Outputs) > 14 { // within the page's 16 outputs
			break
		}
		n := g.Nodes[o.ID]
		if n.DType != ir.I64 {
			continue
		}
		add := func(node ir.Node) ir.NodeID {
			g.Nodes = append(g.Nodes, node)
			return ir.NodeID(len(g.Nodes) - 1)
		}
		lo := add(ir.Node{Op: ir.OpCast, Args: []ir.NodeID{o.ID}, Shape: n.Shape, DType: ir.I32})
		lo64 := add(ir.Node{Op: ir.OpCast, Args: []ir.NodeID{lo}, Shape: n.Shape, DType: ir.I64})
		diff := add(ir.Node{Op: ir.OpSub, Args: []ir.NodeID{o.ID, lo64}, Shape: n.Shape, DType: ir.I64})
		word := add(ir.Node{Op: ir.OpFull, Shape: n.Shape, DType: ir.I64, Ints: []int64{1 << 32}})
		hi := add(ir.Node{Op: ir.OpCast, Args: []ir.NodeID{add(ir.Node{Op: ir.OpDiv, Args: []ir.NodeID{diff, word}, Shape: n.Shape, DType: ir.I64})}, Shape: n.Shape, DType: ir.I32})
		g.Outputs = append(g.Outputs, ir.Output{Name: o.Name + ".lo", ID: lo}, ir.Output{Name: o.Name + ".hi", ID: hi})
	}
	return g
}

// typedBits renders element k of v as the page's JSON has it: a float's
// float32 bits, an integer within ±2^53 (an int64 beyond is "big", read
// from its words instead), a bool as 0 or 1.
func typedBits(v cpuref.Value, k int) string {
	switch {
	case v.DType.IsFloat():
		return fmt.Sprint(math.Float32bits(v.F[k]))
	case v.DType == ir.I64 && (v.I[k] > 1<<53 || v.I[k] < -(1<<53)):
		return "big"
	}
	return fmt.Sprint(v.I[k])
}

// pageBits is typedBits of one JSON value of the page's output of dtype t.
func pageBits(t ir.DType, raw json.RawMessage) string {
	switch {
	case t == ir.Bool:
		if string(raw) == "true" {
			return "1"
		}
		return "0"
	case t.IsFloat():
		var f float64
		if err := json.Unmarshal(raw, &f); err != nil {
			return "bad " + string(raw)
		}
		return fmt.Sprint(math.Float32bits(float32(f)))
	}
	var f float64
	if err := json.Unmarshal(raw, &f); err != nil {
		return "bad " + string(raw)
	}
	if f > 1<<53 || f < -(1<<53) {
		return "big"
	}
	return fmt.Sprint(int64(f))
}

// flushedTo reports whether got is want, a float32 subnormal, flushed to
// the zero of its sign: WGSL lets a device flush subnormals, and Chromium
// on SwiftShader does (see flushes); float16 values are never float32
// subnormals, bfloat16 and float32 ones can be.
func flushedTo(got uint32, want float32) bool {
	b := math.Float32bits(want)
	return b&0x7f800000 == 0 && b&0x7fffff != 0 && got == b&0x80000000
}

// TestTypedOnPage runs typed graphs through gpucc.run in the page on its
// WebGPU (typed WGSL kernels and float32 islands, as natively) and its
// WebGL2 (typed GLSL passes, node by node) and checks
// them against cpuref.EvalTyped: each output's dtype and values (an int64
// through its two int32 words, which a page's number holds exactly), or
// the same error code: irtest's limits (wrap-around at ±2^31 and ±2^63,
// MIN / -1, float16 and bfloat16 edges), its runs with no answer, every
// op over every dtype, and random typed graphs.
func TestTypedOnPage(t *testing.T) {
	for _, backend := range []string{"webgpu", "webgl2"} {
		t.Run(backend, func(t *testing.T) { typedOnPage(t, backend) })
	}
}

func typedOnPage(t *testing.T, backend string) {
	casesOnPage(t, backend, typedPageCases(t, backend, testing.Short()))
}

// casesOnPage runs typed cases in the page on backend, each against
// cpuref.EvalTyped (typedOnPage's check).
func casesOnPage(t *testing.T, backend string, cases []irtest.Case) {
	start := time.Now()
	// A hang guard, not a speed bound: the typed kernels' subnormal-exact
	// arithmetic (bddd3d0) and webgl2's kept sums (f75ce46) made the
	// shaders larger, and SwiftShader compiles each node's: webgl2 took
	// 217 s at load 8 and 596 s at load 12 here (2026-12-04).
	ctx := page(t, "?life=0", 5*pageDeadline)
	ran, faults, flushed, lifted := 0, 0, 0, 0
	// The time of each group of cases (limits, fault, typed/DTYPE, random,
	// islands), logged at the end: what to shrink when the suite is slow.
	spent, name, mark := map[string]time.Duration{}, "", time.Now()
	tick := func(next string) {
		if d := time.Since(mark); name != "" {
			spent[caseGroup(name)] += d
			if d > 20*time.Second {
				t.Logf("%s: %s took %.0f s", backend, name, d.Seconds())
			}
		}
		name, mark = next, time.Now()
	}
	defer func() {
		tick("")
		var parts []string
		for k, d := range spent {
			parts = append(parts, fmt.Sprintf("%s %.0f s", k, d.Seconds()))
		}
		slices.Sort(parts)
		t.Logf("%s: time by group: %s", backend, strings.Join(parts, ", "))
	}()
	for _, c := range cases {
		tick(c.Name)
		g := splitInt64(c.Graph)
		runPage := func(nonFinite bool) typedResult {
			return runTyped(t, ctx, c.Name, g, map[string]any{"backend": backend, "allowSoftware": true, "nonFinite": nonFinite})
		}
		r := runPage(false)
		want, werr := cpuref.EvalTyped(g)
		var code ir.Code
		if e, ok := werr.(*ir.Error); ok {
			code = e.Code
		}
		if werr == nil && !finiteOutputs(g, want) { // the page's host allows finite outputs only
			code = ir.CodeNonFiniteOutput
		}
		if c.Name == "islands" && code != "" {
			t.Fatalf("islands: cpuref fails (%v): the case would prove nothing", werr)
		}
		if code != "" || r.Error != nil {
			if r.Error == nil || string(code) != r.Error.Code {
				t.Errorf("%s: page %+v, cpuref %v", c.Name, r.Error, werr)
			}
			faults++
			if werr != nil || r.Error == nil || string(code) != r.Error.Code {
				continue
			}
			// refused for its non-finite outputs, as the policy says: then
			// its values, with the policy lifted
			lifted++
			if r = runPage(true); r.Error != nil {
				t.Errorf("%s, nonFinite: page %+v", c.Name, r.Error)
				continue
			}
		}
		if r.Backend != backend {
			t.Fatalf("%s: ran on %q, want %s", c.Name, r.Backend, backend)
		}
		ran++
		// a device that flushes subnormals flushes them where the
		// arithmetic makes them too (erf's x + x·P(x²) of the least normal
		// x is x there): cpuref.EvalTypedFlushed's value
		wantFlushed, _ := cpuref.EvalTypedFlushed(g)
		for _, o := range g.Outputs {
			w := want[o.ID]
			got, ok := r.Outputs[o.Name]
			if !ok || len(got.Data) != w.Len() {
				t.Errorf("%s: output %s: %d values, cpuref %d", c.Name, o.Name, len(got.Data), w.Len())
				continue
			}
			for k := range got.Data {
				gb := pageBits(w.DType, got.Data[k])
				if w.DType.IsFloat() {
					gb = fmt.Sprint(got.Bits[k])
				}
				wb := typedBits(w, k)
				if gb == wb || w.DType.IsFloat() && w.F[k] != w.F[k] && got.Bits[k] == gpucc.QuietNaN { // every NaN a run returns is the canonical one
					continue
				}
				if w.DType.IsFloat() && (flushedTo(got.Bits[k], w.F[k]) || wantFlushed != nil && got.Bits[k] == math.Float32bits(wantFlushed[o.ID].F[k])) {
					flushed++
					continue
				}
				if gb != wb {
					t.Errorf("%s: output %s (%v) element %d: page %s (%s), cpuref %s", c.Name, o.Name, w.DType, k, gb, got.Data[k], wb)
					break
				}
			}
		}
	}
	t.Logf("%s: %d typed graphs gave cpuref's values in the page (%d float32 values cpuref.EvalTypedFlushed's), %d refused as cpuref does, %d of them for non-finite outputs and then compared with nonFinite (%.0f s)",
		backend, ran, flushed, faults, lifted, time.Since(start).Seconds())
}

// typedPageCases are the graphs typedOnPage runs on backend: irtest's
// limits (wrap-around, MIN / -1, float16 and bfloat16 edges) and faults,
// every op over every dtype (irtest.Typed), 8 random typed graphs and the
// islands graph. Under short (make test) both backends run the limits,
// the faults, the islands and 2 random graphs, and every op over each
// dtype but those of typedShortOut. The narrow floats' every-op graphs
// are what SwiftShader compiles slowly (their exact rounding after every
// op): at load 14-17 (2026-12-04) float16's took webgl2 333 s of its
// 477 s and bfloat16's webgpu 242 s of its 354 s, and at load 12-20
// float16's webgpu 102 s of its 148 s; every integer dtype's 1-8 s.
// make test-all and make test-web-full run them all on both.
func typedPageCases(t *testing.T, backend string, short bool) []irtest.Case {
	cases := append(irtest.TypedLimits(), irtest.TypedFaults()...)
	for _, c := range irtest.Typed() {
		if !short || !slices.ContainsFunc(typedShortOut[backend], func(d ir.DType) bool { return caseGroup(c.Name) == "typed/"+d.String() }) {
			cases = append(cases, c)
		}
	}
	seeds := 8
	if short {
		seeds = 2
	}
	for seed := range seeds {
		cases = append(cases, irtest.Case{Name: fmt.Sprintf("random/%d", seed), Graph: irtest.RandomTyped(uint64(seed), 12)})
	}
	return append(cases, irtest.Case{Name: "islands", Graph: islandsGraph(t)})
}

// typedShortOut are the dtypes whose every-op graphs (irtest.Typed) a
// backend leaves out under -short: the narrow floats', whose edges
// (subnormals, the largest finite values, -0, rounding casts) the limits
// still run on both.
var typedShortOut = map[string][]ir.DType{
	"webgpu": {ir.F16, ir.BF16},
	"webgl2": {ir.F16, ir.BF16},
}

// caseGroup is the group of a typed case's name: its first part
// ("limits", "fault", "random", "islands"), or typed/DTYPE.
func caseGroup(name string) string {
	group, rest, _ := strings.Cut(name, "/")
	if group == "typed" {
		d, _, _ := strings.Cut(rest, "/")
		return group + "/" + d
	}
	return group
}

// TestTypedShortShare: under -short, TestTypedOnPage still runs every op
// over every dtype but the narrow floats on both browser backends, and
// the narrow floats' limits on both.
func TestTypedShortShare(t *testing.T) {
	for _, d := range ir.DTypes() {
		on := 0
		for _, backend := range []string{"webgpu", "webgl2"} {
			n := 0
			for _, c := range typedPageCases(t, backend, true) {
				if caseGroup(c.Name) == "typed/"+d.String() {
					n++
				}
			}
			if n > 0 {
				on++
			}
		}
		if narrow := d == ir.F16 || d == ir.BF16; on != 2 && !narrow {
			t.Errorf("%d of 2 backends run irtest.Typed's %v graphs under -short", on, d)
		}
	}
	for _, want := range []string{"limits/float16-edges", "limits/bfloat16-edges"} {
		for _, backend := range []string{"webgpu", "webgl2"} {
			if !slices.ContainsFunc(typedPageCases(t, backend, true), func(c irtest.Case) bool { return c.Name == want }) {
				t.Errorf("%s does not run %s under -short", backend, want)
			}
		}
	}
}

// finiteOutputs reports whether every float output of g in vals is
// finite.
func finiteOutputs(g *ir.Graph, vals []cpuref.Value) bool {
	for _, o := range g.Outputs {
		for _, v := range vals[o.ID].F {
			if math.IsInf(float64(v), 0) || v != v {
				return false
			}
		}
	}
	return true
}

// islandsGraph is a typed graph with float32 stretches between its typed
// nodes (runtime/internal/typedplan's islands): a gather feeding a matmul
// and a softmax-like chain, an island read by a cast and a gather, a cast
// feeding a matmul, and a folded constant.
func islandsGraph(t *testing.T) *ir.Graph {
	b := ir.NewBuilder()
	ids := b.TypedInput("ids", ir.I64, ir.Shape{5}, nil, []int64{3, -1, 0, 7, -10})
	table := b.TypedInput("table", ir.F32, ir.Shape{10, 8}, irtest.Values(1, 80, 2), nil)
	w := b.TypedInput("w", ir.F32, ir.Shape{8, 6}, irtest.Values(2, 48, 1), nil)
	h := table.Gather(ids, 0).MatMul(w).Add(b.Full(ir.Shape{5, 6}, 0.5)).Relu()
	e := h.Sub(h.ApplyShaped(ir.OpMax, ir.Shape{5, 1}).Broadcast(ir.Shape{5, 6})).Exp()
	b.Output("soft", e.Div(e.ApplyShaped(ir.OpSum, ir.Shape{5, 1}).Broadcast(ir.Shape{5, 6})))
	b.Output("q", h.Mul(b.Full(ir.Shape{5, 6}, 3)).Cast(ir.I32))
	b.Output("back", h.Gather(b.TypedInput("", ir.I32, ir.Shape{2}, nil, []int64{4, -5}), 0))
	f := ids.Cast(ir.F32).Reshape(ir.Shape{5, 1})
	b.Output("mix", f.MatMul(b.Full(ir.Shape{1, 4}, 2)).Add(f.Broadcast(ir.Shape{5, 4})))
	b.Output("const", b.Full(ir.Shape{3}, 2).Exp())
	g, err := b.Build(ir.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	return g
}
