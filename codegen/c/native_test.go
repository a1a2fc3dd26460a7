package c_test

import (
	"context"
	"flag"
	"math"
	"math/rand/v2"
	"os"
	"testing"

	"github.com/gpucc/gpucc/codegen/cache"
	"github.com/gpucc/gpucc/cpuref"
	"github.com/gpucc/gpucc/ir"
	"github.com/gpucc/gpucc/passes"
	_ "github.com/gpucc/gpucc/runtime/all"
	"github.com/gpucc/gpucc/runtime/backend"
)

// long runs TestNative over 16 times as many bit patterns (the benchmark
// tier: go test -run TestNative -long ./codegen/c/).
var long = flag.Bool("long", false, "run TestNative over 16M bit patterns per op instead of 1M")

// edges are the operands where division and square root are most likely
// to differ: zeros, infinities, NaNs (quiet, signalling, negative), the
// subnormal range and its ends, the normal range's ends, and values whose
// quotients sit at the overflow and underflow boundaries.
var edges = []uint32{
	0x00000000, 0x80000000, 0x7f800000, 0xff800000, 0x7fc00000, 0xffc00000, 0x7f800001, 0x7fbfffff, 0xffffffff,
	0x00000001, 0x80000001, 0x00000002, 0x00000003, 0x007fffff, 0x807fffff, 0x00400000, 0x00400001,
	0x00800000, 0x80800000, 0x00800001, 0x7f7fffff, 0xff7fffff, 0x7f7ffffe, 0x7f000000,
	0x3f800000, 0xbf800000, 0x3f800001, 0x3f7fffff, 0x40000000, 0x3f000000, 0x40400000, 0x40490fdb,
	0x34000000, 0x33800000, 0x4b800000, 0x5f800000, 0x1f800000, 0x0c000000, 0x72800000, 0x3fb504f3,
}

// operands returns n pairs (a, b) of bit patterns: every pair of edges,
// then a third each of uniform random bits (every class, NaNs included), of
// random significands with exponents within 2 of each other (quotients and
// roots in the normal range, where the rounding is decided), and of random
// pairs whose quotients land near the overflow or the subnormal range.
func operands(n int, seed uint64) (a, b []float32) {
	r := rand.New(rand.NewPCG(seed, 0x9e3779b97f4a7c15))
	f := math.Float32frombits
	for _, x := range edges {
		for _, y := range edges {
			a, b = append(a, f(x)), append(b, f(y))
		}
	}
	for i := len(a); i < n; i++ {
		x, y := r.Uint32(), r.Uint32()
		switch i % 3 {
		case 1:
			y = y&0x807fffff | (x&0x7f800000+uint32(r.IntN(5)-2)<<23)&0x7f800000
		case 2:
			if r.IntN(2) == 0 { // |a/b| near 2^128
				x = x&0x807fffff | uint32(200+r.IntN(55))<<23
				y = y&0x807fffff | uint32(72+r.IntN(8))<<23
			} else { // |a/b| near 2^-126 and below
				x = x&0x807fffff | uint32(1+r.IntN(40))<<23
				y = y&0x807fffff | uint32(120+r.IntN(30))<<23
			}
		}
		a, b = append(a, f(x)), append(b, f(y))
	}
	return a, b
}

// TestNative checks C's per-target primitives (codegen/c's native table:
// the target's own division and square root) against cpuref's integer
// emulation, bit for bit, NaNs included, on the native and wasm backends:
// div and div by a scalar, sqrt, and rsqrt (1/√x, both primitives), over
// 1M operand pairs (16M with -long; 64K with -short) of edges and random
// bit patterns. The backends are called directly, below the runtime's
// refusal of non-finite outputs, so every NaN's bits are compared too.
func TestNative(t *testing.T) {
	n, rounds := 1<<20, 1
	if testing.Short() {
		n = 1 << 16
	}
	if *long {
		rounds = 16
	}
	for _, name := range []string{"native", "wasm"} {
		t.Run(name, func(t *testing.T) {
			dev := openBackend(t, name)
			for round := range rounds {
				a, b := operands(n, uint64(round))
				bd := ir.NewBuilder()
				// Graph data must be finite: the inputs hold 0 and 1 until
				// the program's buffers are given the bit patterns.
				zeros, ones := make([]float32, n), make([]float32, n)
				for i := range ones {
					ones[i] = 1
				}
				x, y := bd.Input(ir.Shape{n}, zeros), bd.Input(ir.Shape{n}, ones)
				bd.Output("div", x.Div(y))
				bd.Output("div_scalar", x.DivScalar(3))
				bd.Output("sqrt", x.Sqrt())
				bd.Output("rsqrt", y.Rsqrt())
				limits := ir.Limits{MaxElements: int64(n), MaxStorageBytes: 64 << 20, MaxOps: 1 << 40}
				g, err := bd.Build(limits)
				if err != nil {
					t.Fatal(err)
				}
				p, _, err := passes.Compile(g, passes.Options{Limits: limits})
				if err != nil {
					t.Fatal(err)
				}
				for i, buf := range p.Program().Buffers {
					switch {
					case !buf.Input:
					case buf.Data[0] == 0:
						p.Program().Buffers[i].Data = a
					case buf.Data[0] == 1:
						p.Program().Buffers[i].Data = b
					}
				}
				got := run(t, dev, p)
				want := cpuref.RunProgram(p.Program())
				for _, o := range p.Program().Outputs {
					bad := 0
					for i, w := range want[o.Name] {
						if gb, wb := math.Float32bits(got[o.Name][i]), math.Float32bits(w); gb != wb {
							if bad++; bad <= 5 {
								t.Errorf("round %d: %s(%#08x, %#08x) = %#08x, cpuref %#08x", round, o.Name,
									math.Float32bits(a[i]), math.Float32bits(b[i]), gb, wb)
							}
						}
					}
					if bad > 0 {
						t.Errorf("round %d: %s: %d of %d differ", round, o.Name, bad, n)
					}
				}
			}
		})
	}
}

// openBackend opens a backend directly, or skips where it is unavailable
// and the GPUCC_REQUIRE_ variable for it is unset.
func openBackend(t *testing.T, name string) backend.Device {
	t.Helper()
	req := map[string]string{"native": "GPUCC_REQUIRE_NATIVE", "wasm": "GPUCC_REQUIRE_WASM"}[name]
	f, ok := backend.Lookup(name)
	var dev backend.Device
	var err error
	if ok {
		// The on-disk cache (GPUCC_CACHE_DIR or the user cache dir), as
		// the library's tests use: a second run of the suite compiles
		// nothing (issue 36: this package's ~360 Clang compiles took
		// 300-400 s of every make test on 2 cores).
		dev, err = f(backend.Options{Cache: cache.Default()})
	}
	if !ok || err != nil {
		if os.Getenv(req) != "" {
			t.Fatalf("%s: %v (and %s is set)", name, err, req)
		}
		t.Skipf("%s: %v", name, err)
	}
	t.Cleanup(dev.Close)
	return dev
}

// run runs p once on dev with its inputs' data and returns every output.
func run(t *testing.T, dev backend.Device, sp *ir.Sealed) map[string][]float32 {
	t.Helper()
	p := sp.Program()
	ctx := context.Background()
	// These tests feed and expect ±Inf and NaN. A backend that checks host
	// data for them (native) gets its inputs as device buffers and keeps
	// its outputs on the device, so that only the arithmetic is under test;
	// an output that is a constant, an input or another output's buffer is
	// then taken from there rather than run.
	info := dev.Info()
	run := sp
	if info.ChecksOutputs {
		cp := *p
		cp.Outputs = nil
		seen := map[int]bool{}
		for _, o := range p.Outputs {
			if o.Buffer >= 0 && !p.Buffers[o.Buffer].Input && !seen[o.Buffer] {
				seen[o.Buffer] = true
				cp.Outputs = append(cp.Outputs, o)
			}
		}
		var err error
		if run, err = ir.Seal(&cp); err != nil {
			t.Fatal(err)
		}
	}
	st := &backend.Stats{}
	exe, err := dev.Compile(ctx, &backend.Program{IR: run}, st)
	if err != nil {
		t.Fatal(err)
	}
	defer exe.Release()
	call := &backend.Call{Args: make([]backend.Arg, len(run.Program().Buffers)), Dests: make([]backend.Dest, len(run.Program().Outputs)), Stats: st}
	for i, b := range run.Program().Buffers {
		if !b.Input {
			continue
		}
		call.Args[i].Host = b.Data
		if info.ChecksHost {
			buf, err := dev.Alloc(ctx, b.Len)
			if err != nil {
				t.Fatal(err)
			}
			if err := dev.Upload(ctx, buf, b.Data); err != nil {
				t.Fatal(err)
			}
			call.Args[i] = backend.Arg{Buf: buf}
		}
	}
	byBuffer := map[int][]float32{}
	for i, o := range run.Program().Outputs {
		call.Dests[i] = backend.Dest{Host: make([]float32, o.Shape.Len()), Keep: info.ChecksOutputs}
		byBuffer[o.Buffer] = call.Dests[i].Host
	}
	if err := exe.Run(ctx, call); err != nil {
		t.Fatal(err)
	}
	out := map[string][]float32{}
	for i, o := range run.Program().Outputs {
		if call.Dests[i].Keep {
			if err := dev.Read(ctx, call.Dests[i].Buf, byBuffer[o.Buffer]); err != nil {
				t.Fatal(err)
			}
		}
		out[o.Name] = byBuffer[o.Buffer]
	}
	for _, o := range p.Outputs {
		switch {
		case out[o.Name] != nil:
		case o.Buffer < 0:
			out[o.Name] = make([]float32, o.Shape.Len())
			for i := range out[o.Name] {
				out[o.Name][i] = o.Const
			}
		case p.Buffers[o.Buffer].Input:
			out[o.Name] = p.Buffers[o.Buffer].Data
		default:
			out[o.Name] = byBuffer[o.Buffer]
		}
	}
	return out
}
