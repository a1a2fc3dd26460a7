//go:build cgo && !js

package webgpu

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/gpucc/gpucc/codegen/cache"
	"github.com/gpucc/gpucc/codegen/wgsl"
	"github.com/gpucc/gpucc/runtime/gpu"
)

// fmaProbe is what the FMA probe (wgsl.FMAProbe) saw on a device: whether
// its driver keeps the rounding of a product that the kernels pass through
// Keep (if not, no kernel is exact there: Compile refuses), whether it
// contracts a bare a·b + c (what Keep defends against), and whether its
// fma() rounds once and division's fused twin gives IEEE's quotients, so
// that kernels may take the fused twins (wgsl.Target.Fused).
type fmaProbe struct {
	KeepSafe      bool // every Keep'd a·b + a rounded twice, as cpuref does
	BareContracts bool // some bare a·b + a came back rounded once
	FMAFused      bool // every fma(a, b, -a·b) gave the product's exact error
	DivExact      bool // every fused-twin quotient was IEEE's
	Pairs         int  // pairs probed
	Cached        bool `json:"-"` // read from the disk cache, not run in this process
}

// Fused reports whether kernels on the device take the fused twins: only
// where the probe saw fma rounded once, the twins give IEEE's quotients
// and Keep hold, and not with GPUCC_FMA=off. The twins' algorithms are
// proven against cpuref on the CPU (all 2^32 inputs of the unary ops in
// C's fmaf); on the H200 (NVIDIA's Vulkan driver, 2026-12-05) the row
// kernels' bit tests passed on them (TestRowDivision, TestRowKnobs,
// TestRandomRows, TestSuite, TestXMathPairs, TestAttentionOnline: 297
// tests) and they cut softmax [8192,1024] from 0.0691 to 0.0600 ms,
// layernorm from 0.0913 to 0.0768, tanh from 0.0582 to 0.0469
// (bench/h200/lead-2026-12-05). lavapipe's fma rounds twice: it keeps
// Dekker's products.
func (p fmaProbe) Fused() bool {
	return p.KeepSafe && p.FMAFused && p.DivExact && os.Getenv("GPUCC_FMA") != "off"
}

// takesFused reports whether kernels on a device of backend take the
// fused twins, given its FMA probe: never on wgpu's GL backend
// (gpu.BackendGL). There naga writes the kernels as GLSL, whose compilers
// may fuse or split a·b + c as they like outside a precise declaration,
// and below GLSL ES 3.20 naga writes WGSL's fma() itself as a·b + c; so
// what the probes see in their own kernels says nothing of another
// kernel's. Nor are the fast paths, which rest on it, taken there. On the
// H100 (2026-12-05) a test process that had opened the GL adapter gave
// subnormal quotients one ulp off in TestRowDivision, which every Vulkan
// run has passed; which backend gave them is not known, but nothing
// vouches for GL's.
func takesFused(p fmaProbe, err error, backend string) bool {
	return err == nil && p.Fused() && backend != gpu.BackendGL
}

// fused reports whether d's kernels take the fused twins (takesFused).
func (d *device) fused() bool { return takesFused(d.fma, d.fmaErr, d.adapter.Backend) }

func (p fmaProbe) String() string {
	s := fmt.Sprintf("keep=%v bare-contracts=%v fma-fused=%v div-exact=%v pairs=%d", p.KeepSafe, p.BareContracts, p.FMAFused, p.DivExact, p.Pairs)
	if p.Cached {
		s += " (from the disk cache)"
	}
	return s
}

// probes holds each adapter's probe, run once a process: an adapter's
// driver does not change while the process runs.
var probes sync.Map // adapter key -> fmaProbe

// fmaProbeKind is the disk cache's namespace of FMA probe verdicts.
const fmaProbeKind cache.Kind = "fmaprobe"

// fmaRuns counts the FMA probes run (not read from a cache), for tests.
var fmaRuns atomic.Int64

// probeFMA returns the probe of dev's adapter: from this process's earlier
// probe, else from c (the verdict an earlier process stored for the same
// adapter and driver, probe and binary: fmaDiskKey), else run now and
// stored in both. The verdict decides whether kernels are exact there at
// all (KeepSafe) and which kernels run (Fused), so an entry is trusted
// only under the key that covers all of it, sealed by the cache's MAC (a
// tampered or planted file is a miss), and whole (decodeFMA); anything
// else runs the probe again. A probe that failed to run is stored
// nowhere: the next open tries again.
func probeFMA(dev *gpu.Device, c *cache.Cache) (fmaProbe, error) {
	key := fastKeyOf(dev.Info(), false).adapter
	if p, ok := probes.Load(key); ok {
		return p.(fmaProbe), nil
	}
	a, b := probePairs()
	dk := fmaDiskKey(key, driverID(), a, b)
	disk := c != nil && binaryID() != "unknown" && driverID() != "" // else a verdict might outlive its build or driver
	if disk {
		if v, src := c.Get(fmaProbeKind, dk); src != cache.Miss {
			if p, ok := decodeFMA(v, len(a)); ok {
				p.Cached = true
				probes.Store(key, p)
				return p, nil
			}
		}
	}
	fmaRuns.Add(1)
	out, err := runProbe(dev, a, b)
	if err != nil {
		return fmaProbe{}, err
	}
	p := judgeProbe(a, b, out)
	if disk {
		if v, err := json.Marshal(p); err == nil {
			c.Put(fmaProbeKind, dk, v) // a failed write costs the next process a probe, nothing else
		}
	}
	probes.Store(key, p)
	return p, nil
}

// fmaDiskKey is the disk cache's key of the verdict of the probe over
// pairs a, b on adapter (fastKeyOf's: its name, description, backend,
// vendor and device ids) under driver (driverID: the driver's code and
// settings, which the adapter's info does not name): the probe's shader,
// every operand's bits and the running binary (its judge, its WGSL
// translator and wgpu) with it, so that a new driver, probe or build
// probes again.
func fmaDiskKey(adapter, driver string, a, b []float32) cache.Key {
	h := sha256.New()
	for _, x := range [][]float32{a, b} {
		binary.Write(h, binary.LittleEndian, x)
	}
	return cache.NewKey([]byte("gpucc-fmaprobe-v1"), []byte(adapter), []byte(driver), []byte(wgsl.FMAProbe(len(a))), h.Sum(nil), []byte(binaryID()))
}

// driverID identifies the driver code and settings of the process, for
// the probes' disk keys: wgpu's adapter info in this binding names no
// driver version (lavapipe's is "llvmpipe (LLVM 15.0.6, 256 bits)",
// nothing of Mesa's; its architecture field is empty), so a new driver
// under the same adapter name would find the old driver's verdict. It is
// every shared object mapped into the process when first asked (after a
// device opened: the Vulkan loader, the ICD, its compiler and LLVM; a
// package update changes a version in a name, a size or a modification
// time) and the environment variables drivers read (driverEnv). ""
// where /proc/self/maps cannot be read: then no verdict goes to disk.
var driverID = sync.OnceValue(func() string {
	maps, err := os.ReadFile("/proc/self/maps")
	if err != nil {
		return ""
	}
	return driverIdentity(string(maps), os.Environ(), os.Stat)
})

// driverEnv are the prefixes of environment variables that change what a
// driver compiles or how (Mesa's, llvmpipe's, NVIDIA's, the Vulkan
// loader's).
var driverEnv = []string{"MESA_", "LP_", "GALLIUM_", "NIR_", "LIBGL_", "VK_", "RADV_", "ANV_", "AMD_", "__GL_", "__NV_", "NV_", "DXVK_"}

// driverIdentity is driverID's text for the mappings of a
// /proc/self/maps and an environment: each shared object's path, size
// and modification time (stat), sorted, and the driver variables, sorted.
func driverIdentity(maps string, environ []string, stat func(string) (os.FileInfo, error)) string {
	seen := map[string]bool{}
	var lines []string
	for _, ln := range strings.Split(maps, "\n") {
		f := strings.Fields(ln)
		if len(f) != 6 || !strings.HasPrefix(f[5], "/") || seen[f[5]] {
			continue
		}
		path := f[5]
		seen[path] = true
		if base := path[strings.LastIndexByte(path, '/')+1:]; !strings.HasSuffix(base, ".so") && !strings.Contains(base, ".so.") {
			continue
		}
		id := path
		if fi, err := stat(path); err == nil {
			id = fmt.Sprintf("%s|%d|%d", path, fi.Size(), fi.ModTime().UnixNano())
		}
		lines = append(lines, id)
	}
	for _, kv := range environ {
		for _, p := range driverEnv {
			if strings.HasPrefix(kv, p) {
				lines = append(lines, "env "+kv)
				break
			}
		}
	}
	slices.Sort(lines)
	return strings.Join(lines, "\n")
}

// decodeFMA reads a stored verdict of a probe over n pairs: only a
// payload that decodes whole, with no unknown field, no trailing bytes
// and n pairs, is one.
func decodeFMA(v []byte, n int) (fmaProbe, bool) {
	var p fmaProbe
	d := json.NewDecoder(bytes.NewReader(v))
	d.DisallowUnknownFields()
	if d.Decode(&p) != nil || d.More() || p.Pairs != n {
		return fmaProbe{}, false
	}
	if _, err := d.Token(); err == nil { // trailing bytes
		return fmaProbe{}, false
	}
	return p, true
}

// probePairs returns the probe's operands: random normal pairs whose
// products and quotients stay normal (a flushing GPU computes them as
// cpuref does), and pairs whose quotient lies next to a rounding
// boundary (a = b·q rounded, and its neighbours), where a remainder off by
// half an ulp of the product rounds the wrong way.
func probePairs() (as, bs []float32) {
	r := rand.New(rand.NewPCG(35, 1))
	normal := func() float32 {
		return math.Float32frombits(uint32(r.IntN(1<<23)) | uint32(107+r.IntN(40))<<23 | r.Uint32()&0x80000000)
	}
	for range 2048 {
		as, bs = append(as, normal()), append(bs, normal())
	}
	for range 512 {
		b, q := normal(), normal()
		ab := math.Float32bits(b * q)
		for d := -2; d <= 1; d++ {
			as, bs = append(as, math.Float32frombits(ab+uint32(d))), append(bs, b)
		}
	}
	return as, bs
}

// runProbe runs the probe kernel on dev over pairs a, b and returns its
// output (wgsl.ProbeOutputs·n floats).
func runProbe(dev *gpu.Device, a, b []float32) (_ []float32, err error) {
	defer func() { // a probe that fails leaves the device as it was, never panics open
		if r := recover(); r != nil {
			err = fmt.Errorf("FMA probe: %v", r)
		}
	}()
	n := len(a)
	p, err := dev.Compile(wgsl.FMAProbe(n), "main", []gpu.BindingKind{gpu.ReadOnlyStorage, gpu.ReadOnlyStorage, gpu.Storage, gpu.Uniform})
	if err != nil {
		return nil, err
	}
	defer p.Release()
	var bufs []*gpu.Buffer
	defer func() {
		for _, x := range bufs {
			x.Release()
		}
	}()
	for _, size := range []int{n, n, wgsl.ProbeOutputs * n} {
		x, err := dev.NewBuffer(uint64(4*size), "fma probe")
		if err != nil {
			return nil, err
		}
		bufs = append(bufs, x)
	}
	uniform := make([]byte, 32) // Params: one = 1, zero = 0, k[0] unused
	binary.LittleEndian.PutUint32(uniform, math.Float32bits(1))
	params, err := dev.NewUniform(uniform, "fma probe params")
	if err != nil {
		return nil, err
	}
	bufs = append(bufs, params)
	if err := dev.Upload(bufs[0], a); err != nil {
		return nil, err
	}
	if err := dev.Upload(bufs[1], b); err != nil {
		return nil, err
	}
	out := make([]float32, wgsl.ProbeOutputs*n)
	groups := uint32((n + wgsl.ProbeThreads - 1) / wgsl.ProbeThreads)
	if err := dev.RunRead([]gpu.Dispatch{{Pipeline: p, Buffers: bufs, Groups: [3]uint32{groups, 1, 1}}}, bufs[2], out); err != nil {
		return nil, err
	}
	return out, nil
}

// judgeProbe compares the probe's output with what each reading of its
// arithmetic gives (computed here in float64, each rounding explicit).
func judgeProbe(a, b, out []float32) fmaProbe {
	n := len(a)
	p := fmaProbe{KeepSafe: true, FMAFused: true, DivExact: true, Pairs: n}
	same := func(x, y float32) bool { return math.Float32bits(x) == math.Float32bits(y) }
	for i := range n {
		prod := float32(float64(a[i]) * float64(b[i]))
		twice := prod + a[i] // float32 arithmetic: rounded once more
		p.KeepSafe = p.KeepSafe && same(out[wgsl.ProbeKeep*n+i], twice)
		p.BareContracts = p.BareContracts || !same(out[wgsl.ProbeBare*n+i], twice)
		// the product's error is a float: exact in float64, so one rounding
		exactErr := float32(math.FMA(float64(a[i]), float64(b[i]), -float64(prod)))
		p.FMAFused = p.FMAFused && same(out[wgsl.ProbeErr*n+i], exactErr)
		p.DivExact = p.DivExact && same(out[wgsl.ProbeDiv*n+i], a[i]/b[i])
	}
	return p
}
