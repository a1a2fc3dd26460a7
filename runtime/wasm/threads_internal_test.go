package wasm

import (
	"bytes"
	"context"
	"encoding/gob"
	"errors"
	"fmt"
	"math"
	"os"
	"slices"
	"sync"
	"testing"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/experimental"

	"github.com/gpucc/gpucc/codegen/c"
	"github.com/gpucc/gpucc/codegen/cache"
	"github.com/gpucc/gpucc/cpuref"
	"github.com/gpucc/gpucc/ir"
	"github.com/gpucc/gpucc/ir/irtest"
	"github.com/gpucc/gpucc/passes"
	"github.com/gpucc/gpucc/runtime/backend"
	"github.com/gpucc/gpucc/runtime/internal/cbuild"
)

// wazeroThreads is the page's thread engine (threads_js.go) played by
// wazero's interpreter (which runs SIMD128 right, and threads): a threads
// module is instantiated n times on one shared memory, instance j with
// stack j, and runClaims runs gpucc_claim on instance j in goroutine j.
type wazeroThreads struct {
	*wazeroEngine
	n    int
	mode uint64 // wazeroShared.mode
}

func (e *wazeroThreads) threads() int    { return e.n }
func (e *wazeroThreads) partWork() int64 { return 1 }

func (e *wazeroThreads) instantiateShared(ctx context.Context, name string, wasm []byte) (instance, error) {
	lo, hi, err := importedMemory(wasm)
	if err != nil {
		return nil, err
	}
	rt := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfigInterpreter().
		WithCoreFeatures(api.CoreFeaturesV2|experimental.CoreFeaturesThreads).WithMemoryLimitPages(maxPages))
	if _, err := rt.InstantiateWithConfig(ctx, sharedMemoryModule(lo, hi), wazero.NewModuleConfig().WithName("env")); err != nil {
		return nil, fmt.Errorf("the shared memory: %w", err)
	}
	compiled, err := rt.CompileModule(ctx, wasm)
	if err != nil {
		return nil, err
	}
	s := &wazeroShared{rt: rt, mode: e.mode}
	for j := range e.n {
		inst, err := rt.InstantiateModule(ctx, compiled, wazero.NewModuleConfig().WithName(fmt.Sprint(name, j)))
		if err != nil {
			return nil, err
		}
		s.insts = append(s.insts, inst)
	}
	mem := s.insts[0].Memory()
	base, ok := mem.Grow(uint32((e.n-1)*cbuild.WasmThreadStack/wasmPage) + 1)
	if !ok {
		return nil, errors.New("cannot grow for the stacks")
	}
	s.ctl = uint64(base)*wasmPage + uint64(e.n-1)*cbuild.WasmThreadStack
	for j := 1; j < e.n; j++ {
		s.insts[j].ExportedGlobal("__stack_pointer").(api.MutableGlobal).Set(uint64(base)*wasmPage + uint64(j)*cbuild.WasmThreadStack)
	}
	return s, nil
}

// sharedMemoryModule is a module exporting a shared memory of lo to hi
// pages as "memory".
func sharedMemoryModule(lo, hi uint32) []byte {
	uleb := func(b []byte, v uint32) []byte {
		for v >= 0x80 {
			b, v = append(b, byte(v)|0x80), v>>7
		}
		return append(b, byte(v))
	}
	mem := uleb(uleb([]byte{1, 3}, lo), hi)
	exp := append([]byte{1, 6}, "memory\x02\x00"...)
	b := []byte("\x00asm\x01\x00\x00\x00")
	b = append(uleb(append(b, 5), uint32(len(mem))), mem...)
	return append(uleb(append(b, 7), uint32(len(exp))), exp...)
}

type wazeroShared struct {
	rt    wazero.Runtime
	insts []api.Module
	ctl   uint64
	gen   uint32
	mode  uint64 // the first thread's gpucc_claim mode (1 claims, 2 leaves every chunk to the others)
	ran   int    // tiles computed by instances other than the first
}

func (s *wazeroShared) memory() memory { return s.insts[0].Memory() }

func (s *wazeroShared) export(name string) function {
	if f := s.insts[0].ExportedFunction(name); f != nil {
		return f
	}
	return nil
}

func (s *wazeroShared) close(ctx context.Context) { s.rt.Close(ctx) }

func (s *wazeroShared) runClaims(ctx context.Context, c claim) error {
	s.gen++
	if _, err := s.insts[0].ExportedFunction(armExport).Call(ctx, s.ctl, uint64(s.gen)); err != nil {
		return err
	}
	errs := make([]error, c.threads)
	var wg sync.WaitGroup
	for j := 1; j < c.threads; j++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[j] = s.insts[j].ExportedFunction(claimExport).Call(ctx, c.table, c.scratch+uint64(j)*c.stride, c.kernel, c.tiles, c.chunk, s.ctl, uint64(s.gen), 0)
		}()
	}
	r, err := s.insts[0].ExportedFunction(claimExport).Call(ctx, c.table, c.scratch, c.kernel, c.tiles, c.chunk, s.ctl, uint64(s.gen), s.mode)
	wg.Wait()
	if err != nil {
		return err
	}
	s.ran += int(c.tiles - r[0])
	return errors.Join(errs...)
}

// TestThreadsModule: a threads request builds the program's C with
// gpucc_part appended (the source the page compares), a SIMD128 and
// atomics module that imports a shared env.memory of up to 65535 pages;
// run through the backend's own Compile and Run on 1, 2, 3 and 4 threads
// (wazero's interpreter on one shared memory, each thread a goroutine
// with its own stack), a matmul with a bias and relu epilogue feeding
// a sum, an elementwise pair and a row maximum, on float32's limits, give
// cpuref's bits, with ranges run off the first thread whenever there are
// several. A typed graph asked for threads is invalid_graph, and
// importedMemory refuses a module without a shared memory, never panics.
func TestThreadsModule(t *testing.T) {
	if _, err := cbuild.Find(); err != nil {
		if os.Getenv("GPUCC_REQUIRE_WASM") != "" {
			t.Fatal(err)
		}
		t.Skip(err)
	}
	scaled := func(seed uint64, n, exp int) []float32 {
		v := irtest.Extremes(seed, n)
		for i := range v {
			v[i] = float32(math.Ldexp(float64(v[i]), exp))
		}
		return v
	}
	bl := ir.NewBuilder()
	a := bl.Input(ir.Shape{64, 40}, scaled(1, 64*40, -70))
	b := bl.Input(ir.Shape{40, 24}, scaled(2, 40*24, -70))
	bias := bl.Input(ir.Shape{24}, scaled(3, 24, -140))
	s := a.MatMul(b).Add(bias).Relu()
	bl.Output("s", s)
	bl.Output("t", s.SumAxes(false, 1))
	x, y := bl.Input(ir.Shape{9000}, scaled(4, 9000, -64)), bl.Input(ir.Shape{9000}, scaled(5, 9000, -64))
	bl.Output("prod", x.Mul(y))
	bl.Output("max", x.Reshape(ir.Shape{90, 100}).MaxAxes(false, 1))
	g, err := bl.Build(ir.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	p, _, err := passes.Compile(g, passes.Options{})
	if err != nil {
		t.Fatal(err)
	}
	unit, err := c.Target{}.Emit(p)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	req, err := BuildRequest{Program: p.WithoutData().Program(), SIMD: true, Threads: true}.Encode()
	if err != nil {
		t.Fatal(err)
	}
	out, err := ServeBuild(ctx, bytes.NewReader(req), ir.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	var r BuildResponse
	if err := gob.NewDecoder(bytes.NewReader(out)).Decode(&r); err != nil {
		t.Fatal(err)
	}
	if r.Source != unit.Source+partSource(unit) {
		t.Fatal("the server generated other C than the page's")
	}
	feats, err := cbuild.Features(r.Module)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(feats, "+simd128") || !slices.Contains(feats, "+atomics") || slices.Contains(feats, "+relaxed-simd") {
		t.Errorf("the module's features are %v", feats)
	}
	if lo, hi, err := importedMemory(r.Module); err != nil || lo == 0 || hi != maxPages {
		t.Errorf("importedMemory: %d to %d pages, %v; want 65535 at most", lo, hi, err)
	}

	want := cpuref.Eval(g)
	build := func(ctx context.Context, source string, req BuildRequest) ([]byte, error) {
		req.SIMD = true
		enc, err := req.Encode()
		if err != nil {
			return nil, err
		}
		out, err := ServeBuild(ctx, bytes.NewReader(enc), ir.Limits{})
		if err != nil {
			return nil, err
		}
		var r BuildResponse
		if err := gob.NewDecoder(bytes.NewReader(out)).Decode(&r); err != nil {
			return nil, err
		}
		if r.Source != source {
			return nil, errors.New("the server generated other C than the page's")
		}
		return r.Module, nil
	}
	for _, tt := range []struct {
		threads int
		mode    uint64
	}{{1, 1}, {2, 2}, {2, 1}, {3, 2}, {4, 2}, {4, 1}} {
		threads := tt.threads
		eng := &wazeroThreads{wazeroEngine: newWazero(false), n: threads, mode: tt.mode}
		d := &device{eng: eng, modules: map[string]*module{}, threads: threads, minWork: eng.partWork(), build: build,
			buildKey: func(source string) cache.Key { return cache.NewKey([]byte("test"), []byte(source)) }}
		exe, err := d.Compile(ctx, &backend.Program{IR: p}, &backend.Stats{})
		if err != nil {
			t.Fatalf("%d threads: %v", threads, err)
		}
		call := &backend.Call{Args: make([]backend.Arg, len(p.Program().Buffers)), Dests: make([]backend.Dest, len(p.Program().Outputs)), Stats: &backend.Stats{}}
		for i, b := range p.Program().Buffers {
			call.Args[i].Host = b.Data
		}
		got := map[string][]float32{}
		for i, o := range p.Program().Outputs {
			got[o.Name] = make([]float32, o.Shape.Len())
			call.Dests[i].Host = got[o.Name]
		}
		if err := exe.Run(ctx, call); err != nil {
			t.Fatalf("%d threads: %v", threads, err)
		}
		for _, o := range g.Outputs {
			for i, v := range want[o.ID] {
				if math.Float32bits(v) != math.Float32bits(got[o.Name][i]) {
					t.Fatalf("%d threads: %s[%d] = %v, cpuref %v", threads, o.Name, i, got[o.Name][i], v)
				}
			}
		}
		ran := 0
		for _, m := range d.modules {
			if sh, ok := m.inst.(*wazeroShared); ok {
				ran += sh.ran
			}
		}
		if threads == 1 && ran != 0 || tt.mode == 2 && ran == 0 {
			t.Errorf("%d threads, mode %d: %d tiles computed off the first thread", threads, tt.mode, ran)
		}
		t.Logf("%d threads, mode %d: %d tiles off the first thread", threads, tt.mode, ran)
		exe.Release()
		d.Close()
	}

	typed := ir.NewBuilder()
	typed.Output("y", typed.Input(ir.Shape{3}, []float32{1, 2, 3}).Relu())
	tg, err := typed.Build(ir.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	treq, _ := BuildRequest{Graph: tg, Threads: true}.Encode()
	if _, err := ServeBuild(ctx, bytes.NewReader(treq), ir.Limits{}); !errors.Is(err, ir.ErrInvalidGraph) {
		t.Errorf("a typed graph for threads: %v, want invalid_graph", err)
	}
	for _, m := range [][]byte{nil, []byte("\x00asm"), []byte("\x00asm\x01\x00\x00\x00\x02\xff\xff\xff\xff\x0f"),
		[]byte("\x00asm\x01\x00\x00\x00\x02\x09\x01\x03env\x06memory\x02"), sharedMemoryModule(1, 2), sharedMemoryModule(1, 2)[:12]} {
		if _, _, err := importedMemory(m); err == nil {
			t.Errorf("importedMemory(%q) took it", m)
		}
	}
}
