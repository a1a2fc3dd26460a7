//go:build cgo && !js

package webgpu

import (
	"context"
	"errors"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gpucc/gpucc/codegen/cache"
	"github.com/gpucc/gpucc/codegen/wgsl"
	"github.com/gpucc/gpucc/ir"
	"github.com/gpucc/gpucc/runtime/backend"
)

// TestFastProbe runs the fast-path probe on the device as a device open
// under GPUCC_FAST_PATHS=on runs it (every float32 inside each interval on
// hardware, sampledSpans on a software adapter) for the bodies its kernels
// would take: they are proven over every float32 on the CPU, so a driver
// that gives other bits with them took a liberty that a kernel must
// defeat, as the table's opaque constants defeat lavapipe's.
func TestFastProbe(t *testing.T) {
	d := openDevice(t)
	fused := d.fused()
	p, err := probeOn(d.dev, wgsl.FastProbeOptions{Paths: ir.FastPaths(), Fused: fused}, d.adapter.Software)
	if err != nil {
		t.Fatalf("the probe did not run: %v", err)
	}
	t.Logf("%s: %v", d.adapter, p)
	if !p.Passed() {
		t.Errorf("%s: the fast paths give other bits than the table's: %v", d.adapter, p)
	}
	for _, f := range p.Funcs {
		fp := ir.FastPaths()[f.Name]
		inside := uint64(math.Float32bits(fp.Hi)) + uint64(math.Float32bits(fp.Lo)&0x7fffffff)
		if p.Exhaustive && f.Checked < 2*inside || f.Checked < 4*sampledN {
			t.Errorf("%s: %d inputs compared, want every one inside its interval (%d) in both forms", f.Name, f.Checked, inside)
		}
	}
}

// TestFastProbeBudget: the exhaustive probe stops once its first
// submission says every input would take longer than fastProbeBudget
// (one span of one function: what a GPU far slower than an H100 would
// see), and a hardware device then keeps the sample's verdict, saying so;
// a probe that had seen an input differ before its cut keeps that verdict.
func TestFastProbeBudget(t *testing.T) {
	d := openDevice(t)
	fused := d.fused()
	defer func(b time.Duration) { fastProbeBudget = b }(fastProbeBudget)
	fastProbeBudget = time.Millisecond
	o := wgsl.FastProbeOptions{Paths: ir.FastPaths(), Fused: fused}
	part, err := runFastProbe(d.dev, o, exhaustiveSpans, fastProbeBudget)
	var cut *probeCut
	if !errors.As(err, &cut) || cut.estimate <= fastProbeBudget {
		t.Fatalf("the exhaustive probe under a budget of %v: %v, want it cut", fastProbeBudget, err)
	}
	var checked []uint64
	for _, f := range part.Funcs {
		checked = append(checked, f.Checked)
	}
	if want := []uint64{uint64(exhaustiveSpans(o.Paths[part.Funcs[0].Name])[0].Count), 0, 0}; !slices.Equal(checked, want) {
		t.Errorf("the cut probe compared %v inputs, want one span: %v", checked, want)
	}
	p, err := probeOn(d.dev, o, false) // as on hardware
	if err != nil || p.Exhaustive || p.Cut <= fastProbeBudget || !p.Passed() {
		t.Fatalf("a hardware probe past its budget: %v (%v), want the sample's verdict and the estimate", p, err)
	}
	t.Logf("cut: %v", p)
	sample, err := runFastProbe(d.dev, o, sampledSpans, 0)
	if err != nil {
		t.Fatal(err)
	}
	for i, f := range p.Funcs {
		if f.Checked != sample.Funcs[i].Checked {
			t.Errorf("%s: %d inputs compared, want the sample's %d", f.Name, f.Checked, sample.Funcs[i].Checked)
		}
	}
	if s := p.String(); !strings.Contains(s, "past the budget") {
		t.Errorf("the verdict %q does not say the exhaustive probe was cut", s)
	}
	first := part.Funcs[0].Name
	o.Paths = perturbed(first, func(x *ir.X) *ir.X { return x.UEq(ir.U(0x0100_0000)) }) // inside its first span
	if p, err := probeOn(d.dev, o, false); err != nil || p.Passed() || p.Funcs[0].Differ != 1 || p.Cut == 0 {
		t.Errorf("a probe cut after an input of %s differed: %v (%v), want that verdict", first, p, err)
	}
}

// perturbed returns the fast paths with path name's body one ulp off
// where its operand's bits satisfy at.
func perturbed(name string, at func(x *ir.X) *ir.X) map[string]ir.FastPath {
	paths := ir.FastPaths()
	fp := paths[name]
	off := func(b *ir.X) *ir.X {
		if b == nil {
			return nil
		}
		return ir.If(at(ir.Arg(0).AsBits()), b.AsBits().UAdd(ir.U(1)).AsFloat(), b)
	}
	fp.Body, fp.Fused = off(fp.Body), off(fp.Fused)
	paths[name] = fp
	return paths
}

// TestFastProbeRejects: the probe rejects a body that gives other bits,
// down to one input one ulp off, in the form the device's kernels take
// (a probe that cannot fail proves nothing): a needle at each end and
// the middle of an exhaustive span is found, each in both forms, at its
// input; bodies one ulp off on one input in 65536 (its low 16 bits
// 0x1234) fail the sampled probe, each function; on lavapipe, the
// fast bodies with literal constants (which its compiler reassociated),
// and on a device whose fma rounds twice, the fused bodies.
func TestFastProbeRejects(t *testing.T) {
	d := openDevice(t)
	fused := d.fused()
	run := func(o wgsl.FastProbeOptions, spans spanner) fastProbe {
		t.Helper()
		p, err := runFastProbe(d.dev, o, spans, 0)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	t.Run("needles", func(t *testing.T) {
		const first, n = 0x3f9e0000, 1 << 20 // around 1.234: exp's fast body; tanh's large branch
		needles := []uint32{first, first + n/2 + 7, first + n - 1}
		for _, name := range []string{"exp", "tanh"} {
			paths := perturbed(name, func(x *ir.X) *ir.X {
				c := x.UEq(ir.U(needles[0]))
				for _, b := range needles[1:] {
					c = ir.If(c, c, x.UEq(ir.U(b)))
				}
				return c
			})
			// the window as one span, one submission, and as 16 in
			// submissions of 1, 2, 4, 8 and 1 (runFastProbe's batches)
			window := func(fp ir.FastPath) []wgsl.FastSpan { return []wgsl.FastSpan{{First: first, Count: n, Stride: 1}} }
			pieces := func(fp ir.FastPath) []wgsl.FastSpan {
				var out []wgsl.FastSpan
				for k := uint32(0); k < 16; k++ {
					out = append(out, wgsl.FastSpan{First: first + k*n/16, Count: n / 16, Stride: 1})
				}
				return out
			}
			for _, spans := range []spanner{window, pieces} {
				p := run(wgsl.FastProbeOptions{Paths: paths, Fused: fused}, spans)
				var hit []uint32
				for _, f := range p.Funcs {
					if f.Name != name && f.Differ != 0 || f.Checked != 2*n {
						t.Errorf("%s perturbed: %s %d of %d differ", name, f.Name, f.Differ, f.Checked)
					}
					if f.Name == name {
						for _, l := range f.Log {
							hit = append(hit, l[0])
						}
						if f.Differ != 2*uint64(len(needles)) {
							t.Errorf("%s: %d of %d differ, want each of %d needles in both forms", name, f.Differ, f.Checked, len(needles))
						}
					}
				}
				slices.Sort(hit)
				if want := []uint32{needles[0], needles[0], needles[1], needles[1], needles[2], needles[2]}; !slices.Equal(hit, want) {
					t.Errorf("%s: the probe logged inputs %#x, want %#x", name, hit, want)
				}
				if p.Passed() {
					t.Errorf("%s perturbed at %d inputs: the probe passed", name, len(needles))
				}
			}
		}
	})
	t.Run("sparse", func(t *testing.T) {
		paths := ir.FastPaths()
		for _, name := range wgsl.FastProbeFuncs(paths) {
			paths[name] = perturbed(name, func(x *ir.X) *ir.X { return x.And(ir.U(0xffff)).UEq(ir.U(0x1234)) })[name]
		}
		p := run(wgsl.FastProbeOptions{Paths: paths, Fused: fused}, sampledSpans)
		for _, f := range p.Funcs {
			if f.Differ == 0 {
				t.Errorf("%s off on one input in 65536: %d of %d differ", f.Name, f.Differ, f.Checked)
			}
		}
		if p.Passed() {
			t.Error("every path off on one input in 65536: the sampled probe passed")
		}
	})
	t.Run("literal", func(t *testing.T) {
		p := run(wgsl.FastProbeOptions{Paths: ir.FastPaths(), Fused: fused, LiteralConstant: true}, sampledSpans)
		t.Logf("%s, literal constants: %v", d.adapter, p)
		if strings.Contains(d.adapter.Name, "llvmpipe") && p.Passed() {
			t.Errorf("lavapipe reassociated exp's fast body with literal constants (5485 of TestXMathPairs' inputs 1 ulp off, 192b439): the probe passed it")
		}
	})
	t.Run("fused", func(t *testing.T) {
		if d.fmaErr != nil || d.fma.FMAFused {
			t.Skipf("fma rounds once here (%v): the fused bodies are the device's own", d.fma)
		}
		p := run(wgsl.FastProbeOptions{Paths: ir.FastPaths(), Fused: true}, sampledSpans)
		t.Logf("%s, fused bodies, fma rounded twice: %v", d.adapter, p)
		if p.Passed() {
			t.Errorf("the fused bodies on a device whose fma rounds twice (%v): the probe passed", d.fma)
		}
	})
}

// TestFastPathsChoice: a device's kernels take the fast paths only where
// the process allows them (wgsl.FastPaths, GPUCC_FAST_PATHS=on) and the
// device's probe passed: on lavapipe under on, they do (the probe runs at
// the first compile that calls exp, tanh or sigmoid); under off, or with a probe that saw one input
// differ or that did not run, they do not, and the caches keep the two
// kernels apart.
func TestFastPathsChoice(t *testing.T) {
	d := openDevice(t)
	defer func(old bool) { wgsl.FastPaths = old }(wgsl.FastPaths)
	b := ir.NewBuilder()
	x := b.Input(ir.Shape{4, 256}, make([]float32, 1024))
	b.Output("y", x.Softmax(1).Add(x.Tanh()))
	g, err := b.Build(ir.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	fast := func() bool {
		t.Helper()
		e, err := d.Compile(context.Background(), program(t, g), &backend.Stats{})
		if err != nil {
			t.Fatal(err)
		}
		defer e.Release()
		var n int
		for _, s := range e.(*executable).shaders {
			if strings.Contains(s.Source, "_fast(") {
				n++
			}
		}
		return n > 0
	}
	wgsl.FastPaths = false
	if fast() {
		t.Error("fast paths taken under GPUCC_FAST_PATHS=off")
	}
	wgsl.FastPaths = true
	fused := d.fused()
	key := fastKeyOf(d.adapter, fused)
	if old, ok := fastProbes.Load(key); ok {
		defer fastProbes.Store(key, old)
	}
	fastProbes.Delete(key)
	// a program without exp, tanh or sigmoid asks for no probe
	plain := ir.NewBuilder()
	y := plain.Input(ir.Shape{4, 256}, make([]float32, 1024))
	plain.Output("y", y.Mul(y).SumAxes(false, 1).Sqrt())
	pg, err := plain.Build(ir.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	runs := fastRuns.Load()
	e, err := d.Compile(context.Background(), program(t, pg), &backend.Stats{})
	if err != nil {
		t.Fatal(err)
	}
	e.Release()
	if _, ok := fastProbes.Load(key); ok || fastRuns.Load() != runs || callsFastPath(program(t, pg).IR.Program()) {
		t.Errorf("a program without a fast path's function probed the device")
	}
	if !callsFastPath(program(t, g).IR.Program()) {
		t.Errorf("softmax and tanh call no function with a fast path")
	}
	got := fast()
	p := probeFast(d.dev, d.cache.Cache, fused)
	if p.Err != nil {
		t.Fatal(p.Err)
	}
	t.Logf("%s: %v", d.adapter, p)
	if got != p.Passed() {
		t.Errorf("fast paths taken %v under on, where the probe passed %v", got, p.Passed())
	}
	if strings.Contains(d.adapter.Name, "llvmpipe") && !got {
		t.Errorf("lavapipe under on: no fast paths (probe %v)", p)
	}
	failed := p
	failed.Funcs = slices.Clone(p.Funcs)
	failed.Funcs[0].Differ = 1
	fastProbes.Store(key, failed)
	if fast() {
		t.Errorf("fast paths taken where the probe saw one input differ: %v", failed)
	}
	// a probe that did not run to its end: here a path of no op, whose
	// shader the generator refuses
	paths := ir.FastPaths()
	paths["nosuchop"] = paths["exp"]
	broken, err := runFastProbe(d.dev, wgsl.FastProbeOptions{Paths: paths, Fused: fused}, sampledSpans, 0)
	if err == nil {
		t.Fatalf("a probe of a path of no op ran: %v", broken)
	}
	broken.Err = err
	fastProbes.Store(key, broken)
	if fast() || broken.Passed() {
		t.Errorf("fast paths taken where the probe did not run: %v", broken)
	}
}

// TestProbeSpans: the exhaustive spans of each path cover every float32
// inside its interval once, in spans a dispatch can take; the sampled
// ones take every binade of each half and every residue of the low 16
// bits; both take the edges (the interval's ends, the tails' bounds, ±0,
// ±Inf, the first NaNs, the quiet NaN).
func TestProbeSpans(t *testing.T) {
	for name, fp := range ir.FastPaths() {
		ex := exhaustiveSpans(fp)
		var got [][2]uint64
		for _, s := range ex {
			if s.Stride != 1 || s.Count > chunk || s.Groups(false) > 65535 {
				t.Errorf("%s: span %+v", name, s)
			}
			got = append(got, [2]uint64{uint64(s.First), uint64(s.First) + uint64(s.Count)})
		}
		edges := edgeSpans(fp)
		got = got[:len(got)-len(edges)]
		slices.SortFunc(got, func(a, b [2]uint64) int { return int(a[0]>>1) - int(b[0]>>1) })
		want := [][2]uint64{{0, uint64(math.Float32bits(fp.Hi))}, {0x80000000, uint64(math.Float32bits(fp.Lo))}}
		for i := 0; i+1 < len(got); i++ {
			if got[i][1] == got[i+1][0] { // contiguous: merge
				got[i+1][0] = got[i][0]
				got = slices.Delete(got, i, i+1)
				i--
			}
		}
		if !slices.Equal(got, want) {
			t.Errorf("%s: exhaustive spans cover %#x, want %#x", name, got, want)
		}
		for _, s := range []func(ir.FastPath) []wgsl.FastSpan{exhaustiveSpans, sampledSpans} {
			spans := s(fp)
			if tail := spans[len(spans)-len(edges):]; !slices.Equal(tail, edges) {
				t.Errorf("%s: the spans end with %+v, want the edges %+v", name, tail, edges)
			}
		}
		for _, e := range []uint32{math.Float32bits(fp.Hi) - 1, math.Float32bits(fp.Hi), math.Float32bits(fp.Below.At), math.Float32bits(fp.Above.At), 0, 1, 0x80000001, 0x7f7fffff, 0x7f800000, 0x7fc00000, 0xff800000, 0xffc00001} {
			if !slices.ContainsFunc(edges, func(s wgsl.FastSpan) bool { return e-s.First < s.Count }) {
				t.Errorf("%s: no edge span takes %#08x", name, e)
			}
		}
		for _, s := range sampledSpans(fp)[:2] {
			binades, low := map[uint32]bool{}, map[uint32]bool{}
			for e := range s.Count {
				b := s.First + e*s.Stride
				binades[b>>23], low[b&0xffff] = true, true
			}
			top := math.Float32bits(fp.Hi) >> 23
			if len(binades) != int(top)+1 || len(low) != 1<<16 || s.Count < sampledN-sampledN/64 {
				t.Errorf("%s: the sample from %#08x takes %d inputs, %d binades (want %d), %d low residues", name, s.First, s.Count, len(binades), top+1, len(low))
			}
		}
	}
}

// TestFastProbeDiskCache: a process finds the verdict an earlier one
// stored in the cache directory and runs no probe; another directory, or
// the other fused bodies, run it; the key changes with the adapter, the
// bodies and the extent.
func TestFastProbeDiskCache(t *testing.T) {
	d := openDevice(t)
	fused := d.fused()
	key := fastKeyOf(d.adapter, fused)
	if old, ok := fastProbes.Load(key); ok {
		defer fastProbes.Store(key, old)
	}
	dir := t.TempDir()
	probe := func(dir string) (fastProbe, int64) {
		t.Helper()
		fastProbes.Delete(key) // a new process
		c, err := cache.Open(cache.Options{Dir: dir})
		if err != nil {
			t.Fatal(err)
		}
		runs, start := fastRuns.Load(), time.Now()
		p := probeFast(d.dev, c, fused)
		t.Logf("probeFast: %.1f ms", time.Since(start).Seconds()*1e3)
		return p, fastRuns.Load() - runs
	}
	first, runs := probe(dir)
	if runs != 1 || first.Cached || first.Err != nil {
		t.Fatalf("first probe: %d runs, %v", runs, first)
	}
	again, runs := probe(dir)
	t.Logf("%s: %v, then %v", d.adapter, first, again)
	if runs != 0 || !again.Cached || again.Passed() != first.Passed() || again.String() == "" {
		t.Errorf("the second process: %d runs, %v, want the first's verdict from disk: %v", runs, again, first)
	}
	first.Cached = true
	if again.String() != first.String() {
		t.Errorf("from disk: %v, want %v", again, first)
	}
	if _, runs := probe(t.TempDir()); runs != 1 {
		t.Errorf("another cache directory: %d runs, want 1", runs)
	}
	o := wgsl.FastProbeOptions{Paths: ir.FastPaths(), Fused: fused}
	base := fastDiskKey(key, o, false)
	other := key
	other.adapter += "x"
	fusedKey := key
	fusedKey.fused = !fused
	perturbedOpts := o
	perturbedOpts.Paths = perturbed("exp", func(x *ir.X) *ir.X { return x.UEq(ir.U(0x3f800000)) })
	for name, k := range map[string]cache.Key{
		"another driver": fastDiskKey(other, o, false), "the other fused": fastDiskKey(fusedKey, o, false),
		"another body": fastDiskKey(key, perturbedOpts, false), "exhaustive": fastDiskKey(key, o, true)} {
		if k == base {
			t.Errorf("%s: the same disk key", name)
		}
	}
	if fastDiskKey(key, o, false) != base {
		t.Error("the disk key changes from call to call")
	}
}

// TestExportNoFastPaths: the shaders gpucc build exports run on devices
// that no probe has seen, so they never take the fast paths, even under
// GPUCC_FAST_PATHS=on (where, before the probe, a plan built so carried
// them to every device).
func TestExportNoFastPaths(t *testing.T) {
	defer func(old bool) { wgsl.FastPaths = old }(wgsl.FastPaths)
	wgsl.FastPaths = true
	b := ir.NewBuilder()
	x := b.Input(ir.Shape{4, 256}, make([]float32, 1024))
	b.Output("y", x.Softmax(1).Add(x.Tanh()).Add(x.Apply(ir.OpSigmoid)))
	g, err := b.Build(ir.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	ex, err := exporter{}.Export(context.Background(), program(t, g).IR)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range ex.Kernels {
		if strings.Contains(string(k.Source), "_fast(") {
			t.Errorf("%s takes a fast path", k.File)
		}
	}
	if len(ex.Kernels) == 0 {
		t.Error("nothing exported")
	}
}
