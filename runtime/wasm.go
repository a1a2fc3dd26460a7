package runtime

import (
	"context"
	"errors"
	"fmt"
	goruntime "runtime"
	"sync"
	"time"
	"unsafe"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"

	"github.com/gpucc/gpucc/codegen/c"
	"github.com/gpucc/gpucc/codegen/cache"
	"github.com/gpucc/gpucc/ir"
	"github.com/gpucc/gpucc/runtime/internal/cbuild"
)

func init() { Register("wasm", newWasm) }

const (
	wasmPage = 1 << 16
	// wasmMaxPages keeps linear memory one page under wasm32's 4 GiB, so
	// that its byte size fits a uint32.
	wasmMaxPages = 65535
	// wasmAlign aligns every buffer to a cache line.
	wasmAlign     = 64
	wazeroVersion = "v1.12.0"
)

// wasmMaxModules bounds the in-memory module cache; past it, an arbitrary
// module is dropped. A variable so that tests can make it small.
var wasmMaxModules = 64

// wasmBackend runs Programs as C kernels compiled by Clang to WebAssembly
// and executed by wazero. Modules are cached in memory (compiled and
// instantiated, keyed by the SHA-256 of source and toolchain) and, as
// bytes, in the artifact cache of Options.Cache.
type wasmBackend struct {
	tc       *cbuild.Toolchain
	rt       wazero.Runtime
	compiler bool         // wazero compiles to native code (else interprets)
	cache    *cache.Cache // the artifact cache (nil: none)
	modules  map[string]*wasmModule
}

// wasmModule is one instantiated module: its kernels and its memory, grown
// on demand and reused by every run of the same source.
type wasmModule struct {
	compiled wazero.CompiledModule
	inst     api.Module
	mem      api.Memory
	base     uint64 // first byte after the module's stack and data
}

// close releases the instance and its compiled code: closing an instance
// alone leaves the code in the wazero runtime until the runtime closes.
func (m *wasmModule) close(ctx context.Context) {
	m.inst.Close(ctx)
	m.compiled.Close(ctx)
}

// probes remembers, per toolchain, that it built a module: every Factory
// call checks the toolchain once per process, not once per Runtime.
var probes sync.Map

// probeSource is the smallest unit exercising the whole build.
const probeSource = `__attribute__((visibility("default"))) void probe(float *p) { p[0] = p[0] + p[0]; }`

func newWasm(opts Options) (Backend, error) {
	if !littleEndian() {
		return nil, errors.New("wasm backend needs a little-endian host")
	}
	tc, err := cbuild.Find()
	if err != nil {
		return nil, err
	}
	if _, ok := probes.Load(tc.Key() + tc.Clang + tc.WasmLD); !ok {
		if _, err := tc.Wasm(context.Background(), probeSource); err != nil {
			return nil, fmt.Errorf("toolchain %s cannot build a module: %w", tc.Clang, err)
		}
		probes.Store(tc.Key()+tc.Clang+tc.WasmLD, true)
	}
	compiler := goruntime.GOARCH == "amd64" || goruntime.GOARCH == "arm64"
	cfg := wazero.NewRuntimeConfigInterpreter()
	if compiler {
		cfg = wazero.NewRuntimeConfigCompiler()
	}
	return &wasmBackend{tc: tc, compiler: compiler, modules: map[string]*wasmModule{}, cache: opts.Cache,
		rt: wazero.NewRuntimeWithConfig(context.Background(), cfg.WithMemoryLimitPages(wasmMaxPages))}, nil
}

func littleEndian() bool {
	x := uint16(1)
	return *(*byte)(unsafe.Pointer(&x)) == 1
}

func (b *wasmBackend) Name() string { return "wasm" }

func (b *wasmBackend) Adapter() *Adapter {
	mode := "interpreter"
	if b.compiler {
		mode = "compiler"
	}
	return &Adapter{Name: fmt.Sprintf("wazero %s (%s)", wazeroVersion, mode), Driver: b.tc.Version,
		Backend: "wasm", Type: "cpu"}
}

// MaxBindings is 0: a kernel takes any number of pointers.
func (b *wasmBackend) MaxBindings() int { return 0 }

func (b *wasmBackend) Close() {
	if b.rt != nil {
		b.rt.Close(context.Background())
		b.rt = nil
	}
}

// Run generates C, obtains the module (memory cache, disk cache or Clang),
// places the buffers in linear memory, uploads inputs, calls each kernel
// and reads the outputs back.
func (b *wasmBackend) Run(job *Job) ([][]float32, error) {
	if b.rt == nil {
		return nil, b.fail(ir.CodeBackendUnavailable, errors.New("backend is closed"))
	}
	start := time.Now()
	unit, err := c.Target{}.Emit(job.Program)
	if err != nil {
		return nil, b.fail(ir.CodeInternal, err)
	}
	job.Timings.CodegenMs = ms(time.Since(start))

	start = time.Now()
	mod, err := b.module(unit.Source, job.Cache)
	if err != nil {
		return nil, b.fail(ir.CodeExecutionFailed, err)
	}
	job.Timings.CompileMs = ms(time.Since(start))

	offs, err := mod.layout(job.Program, unit.Scratch)
	if err != nil {
		return nil, b.fail(ir.CodeLimitExceeded, err)
	}
	if err := mod.upload(job, offs); err != nil {
		return nil, b.fail(ir.CodeExecutionFailed, err)
	}
	if err := mod.dispatch(job, unit, offs); err != nil {
		return nil, b.fail(ir.CodeExecutionFailed, err)
	}
	return mod.readback(job, offs)
}

func (b *wasmBackend) fail(code ir.Code, err error) error {
	return &Error{Code: code, Backend: "wasm", Err: err}
}

// module returns the instantiated module of source, recording which cache
// level hit in hits: "wasm_module_memory" (this backend's modules, or the
// artifact cache's memory) or "wasm_module_disk".
func (b *wasmBackend) module(source string, hits map[string]bool) (*wasmModule, error) {
	key := b.tc.ModuleKey(source)
	hits["wasm_module_memory"], hits["wasm_module_disk"] = false, false
	if m, ok := b.modules[key.String()]; ok {
		hits["wasm_module_memory"] = true
		return m, nil
	}
	ctx := context.Background()
	var m *wasmModule
	src, err := cbuild.Load(b.cache, cache.Wasm, key, func() ([]byte, error) { return b.tc.Wasm(ctx, source) },
		func(wasm []byte) (err error) { m, err = b.instantiate(ctx, key.String(), wasm); return err })
	if err != nil {
		return nil, err
	}
	hits["wasm_module_memory"], hits["wasm_module_disk"] = src == cache.Memory, src == cache.Disk
	makeRoom(b.modules, wasmMaxModules, func(old *wasmModule) { old.close(context.Background()) })
	b.modules[key.String()] = m
	return m, nil
}

// instantiate compiles wasm with wazero and instantiates it once.
func (b *wasmBackend) instantiate(ctx context.Context, key string, wasm []byte) (*wasmModule, error) {
	compiled, err := b.rt.CompileModule(ctx, wasm)
	if err != nil {
		return nil, fmt.Errorf("wazero compile: %w", err)
	}
	inst, err := b.rt.InstantiateModule(ctx, compiled, wazero.NewModuleConfig().WithName(key))
	if err != nil {
		compiled.Close(ctx)
		return nil, fmt.Errorf("wazero instantiate: %w", err)
	}
	m := &wasmModule{compiled: compiled, inst: inst, mem: inst.Memory()}
	if m.mem == nil {
		m.close(ctx)
		return nil, errors.New("module exports no memory")
	}
	m.base = uint64(m.mem.Size())
	return m, nil
}

// layout places every buffer, then the scratch area, after the module's
// own memory, growing linear memory to fit. offs[i] is buffer i's byte
// offset; offs[len(p.Buffers)] is the scratch's.
func (m *wasmModule) layout(p *ir.Program, scratch int) ([]uint64, error) {
	offs := make([]uint64, len(p.Buffers)+1)
	end := m.base
	place := func(floats int) uint64 {
		at := (end + wasmAlign - 1) / wasmAlign * wasmAlign
		end = at + 4*uint64(floats)
		return at
	}
	for i, buf := range p.Buffers {
		offs[i] = place(buf.Len)
	}
	offs[len(p.Buffers)] = place(scratch)
	have, _ := m.mem.Grow(0)
	need := (end + wasmPage - 1) / wasmPage
	if need > wasmMaxPages {
		return nil, fmt.Errorf("program needs %d MiB of wasm memory; wasm32 allows %d MiB", end>>20, uint64(wasmMaxPages)*wasmPage>>20)
	}
	if need > uint64(have) {
		if _, ok := m.mem.Grow(uint32(need) - have); !ok {
			return nil, fmt.Errorf("cannot grow wasm memory from %d to %d pages", have, need)
		}
	}
	return offs, nil
}

// floatBytes views a float32 slice as its little-endian bytes.
func floatBytes(f []float32) []byte {
	if len(f) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(&f[0])), 4*len(f))
}

func (m *wasmModule) upload(job *Job, offs []uint64) error {
	start := time.Now()
	var n int64
	for i, buf := range job.Program.Buffers {
		if !buf.Input {
			continue
		}
		if len(buf.Data) != buf.Len {
			return fmt.Errorf("buf%d: input holds %d values, shape %v needs %d", i, len(buf.Data), buf.Shape, buf.Len)
		}
		if !m.mem.Write(uint32(offs[i]), floatBytes(buf.Data)) {
			return fmt.Errorf("buf%d: upload outside wasm memory", i)
		}
		n += 4 * int64(buf.Len)
	}
	job.Timings.UploadMs = ms(time.Since(start))
	job.Timings.UploadBytes = n
	return nil
}

func (m *wasmModule) dispatch(job *Job, unit *c.Unit, offs []uint64) error {
	ctx := context.Background()
	start := time.Now()
	for _, k := range unit.Kernels {
		fn := m.inst.ExportedFunction(k.Export)
		if fn == nil {
			return fmt.Errorf("kernel %s: module does not export %s", k.Name, k.Export)
		}
		args := make([]uint64, 0, len(k.Buffers)+1)
		for _, buf := range k.Buffers {
			args = append(args, offs[buf])
		}
		if k.Scratch {
			args = append(args, offs[len(offs)-1])
		}
		if _, err := fn.Call(ctx, args...); err != nil {
			return fmt.Errorf("kernel %s (%s): %w", k.Name, k.Export, err)
		}
	}
	job.Timings.DispatchMs = ms(time.Since(start))
	job.Timings.DispatchClock = "wall"
	return nil
}

func (m *wasmModule) readback(job *Job, offs []uint64) ([][]float32, error) {
	start := time.Now()
	var n int64
	out := make([][]float32, len(job.Program.Outputs))
	for i, o := range job.Program.Outputs {
		if o.Buffer < 0 {
			continue
		}
		l := job.Program.Buffers[o.Buffer].Len
		view, ok := m.mem.Read(uint32(offs[o.Buffer]), uint32(4*l))
		if !ok {
			return nil, &Error{Code: ir.CodeExecutionFailed, Backend: "wasm",
				Err: fmt.Errorf("output %q: buf%d lies outside wasm memory", o.Name, o.Buffer)}
		}
		out[i] = make([]float32, l)
		copy(floatBytes(out[i]), view)
		n += 4 * int64(l)
	}
	job.Timings.ReadbackMs = ms(time.Since(start))
	job.Timings.ReadbackBytes = n
	return out, nil
}
