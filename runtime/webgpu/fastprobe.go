//go:build cgo && !js

package webgpu

import (
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gpucc/gpucc/codegen"
	"github.com/gpucc/gpucc/codegen/cache"
	"github.com/gpucc/gpucc/codegen/wgsl"
	"github.com/gpucc/gpucc/ir"
	"github.com/gpucc/gpucc/runtime/gpu"
)

// fastProbe is what the fast-path probe (wgsl.FastProbe) saw on a device:
// for each function with a fast path, how many inputs it compared, in the
// scalar and the vec4 form the kernels render, and which gave other bits
// than the table's body on the same device. Kernels take the fast paths
// (wgsl.Target.FastPaths) only where every one agreed.
type fastProbe struct {
	Exhaustive bool // every float32 inside each interval; else a sample (sampledSpans)
	// Cut, on hardware, is how long the exhaustive probe's first
	// submissions said every input would take, where that was past
	// fastProbeBudget: the verdict is the sample's.
	Cut    time.Duration `json:",omitempty"`
	Fused  bool          // the fused bodies (the device's Target.Fused)
	Funcs  []fastResult
	Took   time.Duration
	Err    error `json:"-"` // why the probe did not run to its end (then no fast paths)
	Cached bool  `json:"-"` // read from the disk cache, not run in this process
}

// fastResult is one function's part of a probe.
type fastResult struct {
	Name    string
	Checked uint64      // inputs compared, both forms
	Differ  uint64      // of which gave other bits
	Log     [][2]uint32 // the first of them: the input's bits, the result's
}

// Passed reports whether every input probed gave the table's bits.
func (p fastProbe) Passed() bool {
	if p.Err != nil {
		return false
	}
	for _, f := range p.Funcs {
		if f.Differ != 0 {
			return false
		}
	}
	return len(p.Funcs) > 0
}

func (p fastProbe) String() string {
	how := "sampled"
	if p.Exhaustive {
		how = "exhaustive"
	}
	if p.Cut > 0 {
		how = fmt.Sprintf("sampled (every input would take %.1f s, past the budget of %v)", p.Cut.Seconds(), fastProbeBudget)
	}
	var parts []string
	for _, f := range p.Funcs {
		s := fmt.Sprintf("%s %d of %d differ", f.Name, f.Differ, f.Checked)
		for _, l := range f.Log[:min(len(f.Log), 2)] {
			s += fmt.Sprintf(" (x %#08x gave %#08x)", l[0], l[1])
		}
		parts = append(parts, s)
	}
	if p.Err != nil {
		parts = append(parts, fmt.Sprintf("error: %v", p.Err))
	}
	took := fmt.Sprintf("%.0f ms", p.Took.Seconds()*1e3)
	if p.Cached {
		took = "from the disk cache (" + took + " when it ran)"
	}
	return fmt.Sprintf("%s, fused %v, %s, %s", how, p.Fused, strings.Join(parts, ", "), took)
}

// fastProbes holds each adapter's probe by key and fused, run once a
// process (see probes); fastMu keeps two opens of one adapter from
// running it twice.
var (
	fastProbes sync.Map // fastKey -> fastProbe
	fastMu     sync.Mutex
)

type fastKey struct {
	adapter string
	fused   bool
}

// fastPaths reports whether p's kernels on d take the fast paths: only
// where the process allows them (wgsl.FastPaths), a kernel calls a
// function that has one (else they would change the caches' key, not a
// kernel), d is not on GL (gpu.BackendGL) and d's probe, run on first use,
// passed. A probe that fails to run leaves them off.
func (d *device) fastPaths(p *ir.Program, fused bool) bool {
	return wgsl.FastPaths && d.adapter.Backend != gpu.BackendGL && callsFastPath(p) && probeFast(d.dev, d.cache.Cache, fused).Passed()
}

// callsFastPath reports whether a kernel of p calls a function with a fast
// path, directly or through another function.
func callsFastPath(p *ir.Program) bool {
	paths := ir.FastPaths()
	for i := range p.Kernels {
		for _, f := range codegen.FuncsOf(&p.Kernels[i]) {
			if _, ok := paths[f.Name]; ok {
				return true
			}
		}
	}
	return false
}

// fastProbeKind is the disk cache's namespace of probe verdicts.
const fastProbeKind cache.Kind = "fastprobe"

// probeFast returns the fast-path probe of dev's adapter for fused: from
// this process's earlier probe, else from c (a verdict an earlier process
// stored for the same adapter and driver, probe and binary: fastDiskKey),
// else run now (runs counts them) and stored in both. It runs over every
// float32 inside each interval on a hardware adapter, over sampledSpans on
// a software one, where the exhaustive probe would take minutes. A probe
// that failed to run is kept for the process (its Err), not on disk: a
// compile does not pay for it again.
func probeFast(dev *gpu.Device, c *cache.Cache, fused bool) fastProbe {
	info := dev.Info()
	key := fastKeyOf(info, fused)
	if p, ok := fastProbes.Load(key); ok {
		return p.(fastProbe)
	}
	fastMu.Lock()
	defer fastMu.Unlock()
	if p, ok := fastProbes.Load(key); ok {
		return p.(fastProbe)
	}
	o := wgsl.FastProbeOptions{Paths: ir.FastPaths(), Fused: fused}
	dk := fastDiskKey(key, o, !info.Software)
	var p fastProbe
	disk := binaryID() != "unknown" && driverID() != "" // else a verdict might outlive its build or driver
	if b, src := c.Get(fastProbeKind, dk); disk && src != cache.Miss && json.Unmarshal(b, &p) == nil && len(p.Funcs) > 0 {
		p.Cached = true
	} else {
		fastRuns.Add(1)
		var err error
		p, err = probeOn(dev, o, info.Software)
		p.Err = err
		if err == nil && disk {
			if b, err := json.Marshal(p); err == nil {
				c.Put(fastProbeKind, dk, b) // a failed write costs the next process a probe, nothing else
			}
		}
	}
	if gpu.Verbose || os.Getenv("GPUCC_VERBOSE") != "" {
		fmt.Fprintf(os.Stderr, "gpucc: webgpu: fast-path probe on %s: %v: fast paths %v\n", info, p, p.Passed())
	}
	fastProbes.Store(key, p)
	return p
}

// fastRuns counts the probes run (not read from a cache), for tests.
var fastRuns atomic.Int64

// fastDiskKey is the disk cache's key of a verdict: the adapter (key) and
// its driver (driverID: this binding's adapter info names no driver
// version), the probe's extent,
// its two shaders (every body, constant and edge it compares) and the
// running binary (its WGSL translator), so that a new driver, body or
// build probes again.
func fastDiskKey(key fastKey, o wgsl.FastProbeOptions, exhaustive bool) cache.Key {
	h := sha256.New()
	for _, vec := range []bool{false, true} {
		o.Vec = vec
		s := wgsl.FastProbe(o)
		fmt.Fprintf(h, "%d:%s%d:", len(s.Source), s.Source, len(s.Params))
		h.Write(s.Params)
	}
	return cache.NewKey([]byte("gpucc-fastprobe-v1"), []byte(key.adapter), []byte(driverID()), fmt.Appendf(nil, "fused=%v exhaustive=%v sampled=%d edge=%d", key.fused, exhaustive, sampledN, edge),
		h.Sum(nil), []byte(binaryID()))
}

// binaryID identifies the running binary (path, size, modification time),
// as the shader cache's key does (backend.ProgramKey).
var binaryID = sync.OnceValue(func() string {
	if exe, err := os.Executable(); err == nil {
		if fi, err := os.Stat(exe); err == nil {
			return fmt.Sprintf("%s|%d|%d", exe, fi.Size(), fi.ModTime().UnixNano())
		}
	}
	return "unknown"
})

// fastKeyOf is the key of the probe of adapter info for fused.
func fastKeyOf(info gpu.AdapterInfo, fused bool) fastKey {
	return fastKey{fmt.Sprintf("%s|%s|%s|%s|%x:%x", info.Name, info.Driver, info.DriverInfo, info.Backend, info.VendorID, info.DeviceID), fused}
}

// probeOn runs the probe of o on dev: on hardware over every float32
// inside each interval (6.66e9 inputs a form, 13.3e9 comparisons of a
// fast path with its table's body: 109 ms on an H100, 2026-12-05), unless
// its first submissions say that would take longer than fastProbeBudget;
// then, and on a software adapter, over a sample (sampledSpans): lavapipe
// compared 18 to 44 million inputs a second on this 2-core host under
// load (2026-12-05), so every input would take 5 to 12 minutes, where the
// sample takes 0.25 s and its two pipelines 0.15 s. A cut probe that had
// already seen an input differ keeps that verdict.
func probeOn(dev *gpu.Device, o wgsl.FastProbeOptions, software bool) (fastProbe, error) {
	var cut, spent time.Duration
	if !software {
		p, err := runFastProbe(dev, o, exhaustiveSpans, fastProbeBudget)
		var c *probeCut
		if !errors.As(err, &c) {
			p.Exhaustive = err == nil
			return p, err
		}
		if !p.Passed() { // an input differed before the cut
			p.Cut = c.estimate
			return p, nil
		}
		cut, spent = c.estimate, p.Took
	}
	p, err := runFastProbe(dev, o, sampledSpans, 0)
	p.Cut, p.Took = cut, p.Took+spent
	return p, err
}

// fastProbeBudget bounds the exhaustive probe: the first compile of a
// process (or of a new driver or binary: the verdict is kept on disk) on
// a GPU many times slower than an H100 pays for the sample instead of
// seconds. A variable so that tests can cut it.
var fastProbeBudget = time.Second

// probeCut is runFastProbe's error where its estimate of the whole probe
// passed its budget.
type probeCut struct{ estimate time.Duration }

func (c *probeCut) Error() string {
	return fmt.Sprintf("fast-path probe: every input would take about %v, past the budget of %v", c.estimate.Round(time.Millisecond), fastProbeBudget)
}

// spanner returns the spans that probe path fp.
type spanner func(fp ir.FastPath) []wgsl.FastSpan

// chunk bounds a span's inputs: a vec4 dispatch of it is 8192 workgroups,
// a scalar one 32768, under WebGPU's 65535 a dimension.
const chunk = 1 << 25

// perSubmit bounds the inputs of one submission of the probe (after the
// first, of one span, each submission takes twice the last, up to this):
// about 2 ms on an H100, so that no submission runs near a driver's
// watchdog (Windows' TDR: 2 s) on a GPU a hundred times slower, and the
// budget is judged after each.
const perSubmit = 8 * chunk

// halves returns the bits of the floats inside fp's interval as ranges
// [lo, hi) of one sign each: (0, Hi) and (Lo, -0).
func halves(fp ir.FastPath) [][2]uint32 {
	var out [][2]uint32
	if fp.Hi > 0 {
		out = append(out, [2]uint32{0, math.Float32bits(fp.Hi)}) // +0 up to the float below Hi
	}
	if fp.Lo < 0 {
		out = append(out, [2]uint32{0x80000000, math.Float32bits(fp.Lo)}) // -0 down to the float above Lo
	}
	return out
}

// exhaustiveSpans: every float32 inside fp's interval, and the edges.
func exhaustiveSpans(fp ir.FastPath) []wgsl.FastSpan {
	var out []wgsl.FastSpan
	for _, h := range halves(fp) {
		for lo := uint64(h[0]); lo < uint64(h[1]); lo += chunk {
			out = append(out, wgsl.FastSpan{First: uint32(lo), Count: uint32(min(chunk, uint64(h[1])-lo)), Stride: 1})
		}
	}
	return append(out, edgeSpans(fp)...)
}

// sampledN is how many inputs sampledSpans takes from each half of an
// interval, at an odd stride: every binade, and every residue of the low
// 16 bits (each 2^16 consecutive samples of an odd stride take them all).
const sampledN = 1 << 18

// sampledSpans: sampledN floats of each half of fp's interval, evenly
// spread over its bits, and the edges.
func sampledSpans(fp ir.FastPath) []wgsl.FastSpan {
	var out []wgsl.FastSpan
	for _, h := range halves(fp) {
		stride := (h[1]-h[0])/sampledN | 1
		out = append(out, wgsl.FastSpan{First: h[0], Count: min(sampledN, (h[1]-h[0]-1)/stride+1), Stride: stride})
	}
	return append(out, edgeSpans(fp)...)
}

// edge is the number of floats on each side of an edge that every probe
// takes.
const edge = 1 << 12

// edgeSpans: the floats next to the interval's ends (where a vec4 mixes
// the fast body with the table's), to its tails' bounds (where the tails'
// constants take over), to ±0 (subnormals) and to ±Inf (the largest
// floats, the infinities, the first NaNs).
func edgeSpans(fp ir.FastPath) []wgsl.FastSpan {
	var at []uint32
	for _, v := range []float32{fp.Lo, fp.Hi, fp.Below.At, fp.Above.At} {
		at = append(at, math.Float32bits(v))
	}
	at = append(at, 0, 0x80000000, 0x7f800000, 0xff800000, 0x7fc00000, 0xffc00000)
	var out []wgsl.FastSpan
	for _, b := range at {
		first := b - edge
		if b&0x7fffffff < edge { // ±0: from itself up, not across the sign
			first = b
		}
		out = append(out, wgsl.FastSpan{First: first, Count: 2 * edge, Stride: 1})
	}
	return out
}

// runFastProbe runs the probe of o on dev over the spans of each path,
// both forms, and returns what it saw (Funcs in o.Paths' probe order).
// Each path's spans are submitted in growing batches (perSubmit). With a
// budget, once its submissions took a tenth of it and their time, scaled
// to every input, is past it, it stops with a *probeCut and what it saw
// so far.
func runFastProbe(dev *gpu.Device, o wgsl.FastProbeOptions, spans spanner, budget time.Duration) (p fastProbe, err error) {
	defer func() { // a probe that fails leaves the device as it was, never panics open
		if r := recover(); r != nil {
			err = fmt.Errorf("fast-path probe: %v", r)
		}
	}()
	start := time.Now()
	p.Fused = o.Fused
	var bufs []*gpu.Buffer
	defer func() {
		for _, b := range bufs {
			b.Release()
		}
	}()
	out, err := dev.NewBuffer(4*wgsl.FastProbeWords, "fast probe")
	if err != nil {
		return p, err
	}
	bufs = append(bufs, out)
	zero := make([]float32, wgsl.FastProbeWords)
	got := make([]float32, wgsl.FastProbeWords)
	names := wgsl.FastProbeFuncs(o.Paths)
	p.Funcs = make([]fastResult, len(names))
	var total, done uint64 // inputs, both forms
	for i, name := range names {
		p.Funcs[i].Name = name
		for _, sp := range spans(o.Paths[name]) {
			total += 2 * uint64(sp.Count)
		}
	}
	var busy time.Duration // in submissions
	for _, vec := range []bool{false, true} {
		o.Vec = vec
		s := wgsl.FastProbe(o)
		pipe, err := dev.Compile(s.Source, s.Entry, []gpu.BindingKind{gpu.Storage, gpu.Uniform, gpu.Uniform})
		if err != nil {
			return p, fmt.Errorf("fast-path probe: %w", err)
		}
		defer pipe.Release()
		params, err := dev.NewUniform(s.Params, "fast probe params")
		if err != nil {
			return p, err
		}
		bufs = append(bufs, params)
		for i, name := range names {
			if err := dev.Upload(out, zero); err != nil {
				return p, err
			}
			f := &p.Funcs[i]
			before, logged := f.Differ, len(f.Log)
			var ds []gpu.Dispatch
			var batch, want uint64 = 0, 0 // the batch's inputs; the first batch is one span
			all := spans(o.Paths[name])
			for j, sp := range all {
				sp.Fn = i
				u, err := dev.NewUniform(sp.Bytes(), "fast probe span")
				if err != nil {
					return p, err
				}
				bufs = append(bufs, u)
				ds = append(ds, gpu.Dispatch{Pipeline: pipe, Buffers: []*gpu.Buffer{out, u, params}, Groups: [3]uint32{sp.Groups(vec), 1, 1}})
				batch += uint64(sp.Count)
				if batch < want && j+1 < len(all) {
					continue
				}
				t := time.Now()
				if err := dev.RunRead(ds, out, got); err != nil {
					return p, err
				}
				busy += time.Since(t)
				f.Checked += batch
				done += batch
				// the count and log are the form's so far: out is zeroed once a function and form
				n := uint64(math.Float32bits(got[0]))
				f.Differ = before + n
				f.Log = f.Log[:logged]
				for k := range min(n, wgsl.FastProbeLog) {
					f.Log = append(f.Log, [2]uint32{math.Float32bits(got[1+2*k]), math.Float32bits(got[2+2*k])})
				}
				// judged once the submissions took a tenth of the budget:
				// a GPU's first ones, at an idle clock (an H100's falls to
				// 345 MHz), say too little
				if budget > 0 && done < total && busy >= budget/10 {
					if est := time.Duration(float64(busy) * float64(total) / float64(done)); est > budget {
						p.Took = time.Since(start)
						return p, &probeCut{est}
					}
				}
				ds, want, batch = ds[:0], min(perSubmit, max(2*batch, want)), 0
			}
		}
	}
	p.Took = time.Since(start)
	return p, nil
}
