//go:build cgo && !js

package webgpu

import (
	"crypto/sha256"
	"encoding/json"
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
	Fused      bool // the fused bodies (the device's Target.Fused)
	Funcs      []fastResult
	Took       time.Duration
	Err        error `json:"-"` // why the probe did not run to its end (then no fast paths)
	Cached     bool  `json:"-"` // read from the disk cache, not run in this process
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
// kernel) and d's probe, run on first use, passed. A probe that fails to
// run leaves them off.
func (d *device) fastPaths(p *ir.Program, fused bool) bool {
	return wgsl.FastPaths && callsFastPath(p) && probeFast(d.dev, d.cache.Cache, fused).Passed()
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
		p, err = runFastProbe(dev, o, spansFor(info))
		p.Exhaustive, p.Err = !info.Software, err
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

// spansFor is the probe's extent on adapter info: every float32 inside
// each interval on hardware (6.66e9 inputs a form, 13.3e9 comparisons of
// a fast path with its table's body; at xcost's 120 to 330 units a
// comparison, of the order of 0.1 s on an H100's 30e12 lanes a second),
// a sample (sampledSpans) on a software adapter: lavapipe compared 18 to
// 44 million inputs a second on this 2-core host under load (2026-12-05),
// so every input would take 5 to 12 minutes, where the sample takes
// 0.25 s and its two pipelines 0.15 s.
func spansFor(info gpu.AdapterInfo) spanner {
	if info.Software {
		return sampledSpans
	}
	return exhaustiveSpans
}

// spanner returns the spans that probe path fp.
type spanner func(fp ir.FastPath) []wgsl.FastSpan

// chunk bounds a span's inputs: a vec4 dispatch of it is 8192 workgroups,
// a scalar one 32768, under WebGPU's 65535 a dimension.
const chunk = 1 << 25

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
func runFastProbe(dev *gpu.Device, o wgsl.FastProbeOptions, spans spanner) (p fastProbe, err error) {
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
	names := wgsl.FastProbeFuncs(o.Paths)
	p.Funcs = make([]fastResult, len(names))
	for i, name := range names {
		p.Funcs[i].Name = name
	}
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
			var ds []gpu.Dispatch
			for _, sp := range spans(o.Paths[name]) {
				sp.Fn = i
				u, err := dev.NewUniform(sp.Bytes(), "fast probe span")
				if err != nil {
					return p, err
				}
				bufs = append(bufs, u)
				ds = append(ds, gpu.Dispatch{Pipeline: pipe, Buffers: []*gpu.Buffer{out, u, params}, Groups: [3]uint32{sp.Groups(vec), 1, 1}})
				p.Funcs[i].Checked += uint64(sp.Count)
			}
			if err := dev.Upload(out, zero); err != nil {
				return p, err
			}
			got := make([]float32, wgsl.FastProbeWords)
			if err := dev.RunRead(ds, out, got); err != nil {
				return p, err
			}
			n := uint64(math.Float32bits(got[0]))
			p.Funcs[i].Differ += n
			for j := range min(n, wgsl.FastProbeLog) {
				p.Funcs[i].Log = append(p.Funcs[i].Log, [2]uint32{math.Float32bits(got[1+2*j]), math.Float32bits(got[2+2*j])})
			}
		}
	}
	p.Took = time.Since(start)
	return p, nil
}
