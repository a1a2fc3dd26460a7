// Package wasm is the wasm backend: the C kernels of codegen/c, compiled by
// Clang to WebAssembly and run by wazero (no cgo). Its device memory is
// host memory; a run copies its inputs into the module's linear memory and
// its outputs out. Importing it registers "wasm".
//
// Modules are cached in memory (compiled and instantiated, shared by the
// executables of the same source) and, as bytes, in the artifact cache of
// Options.Cache. A plan that carries a module
// needs no Clang at all.
package wasm

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"unsafe"

	"github.com/gpucc/gpucc/codegen/c"
	"github.com/gpucc/gpucc/codegen/cache"
	"github.com/gpucc/gpucc/ir"
	"github.com/gpucc/gpucc/passes"
	"github.com/gpucc/gpucc/runtime/backend"
	"github.com/gpucc/gpucc/runtime/internal/cbuild"
)

func init() { backend.Register("wasm", open) }

const (
	wasmPage = 1 << 16
	// maxPages keeps linear memory one page under wasm32's 4 GiB, so that
	// its byte size fits a uint32.
	maxPages = 65535
	// align aligns every buffer to a cache line.
	align         = 64
	wazeroVersion = "v1.12.0"
)

// maxIdleModules bounds the modules kept that no live executable uses. A
// variable so that tests can make it small.
var maxIdleModules = 64

type device struct {
	backend.HostMemory
	tc    *cbuild.Toolchain // nil when none was found (tcErr says why): only plans with modules compile
	tcErr error
	// build, when set, makes the module of C source where there is no
	// toolchain: the page asks the server that served it for the module of
	// req, the program or graph the source was generated from
	// (engine_js.go, ServeBuild). buildKey names its modules in the caches.
	build    func(ctx context.Context, source string, req BuildRequest) ([]byte, error)
	buildKey func(source string) cache.Key
	eng      engine
	cache    *cache.Cache // the artifact cache (nil: none)
	modules  map[string]*module
	// threads is the most threads a program's kernel runs on: above 1
	// only where the engine runs threads (a cross-origin isolated page)
	// and the modules are built on request (threads.go).
	threads int
	minWork int64 // the least work of a part (threadEngine.partWork)
}

// module is one instantiated module: its kernels and its memory, grown on
// demand and reused by every executable of the same source.
type module struct {
	key  string
	inst instance
	mem  memory
	// shared says the module is a threads module (partSource's export,
	// shared memory, instantiated in every thread).
	shared bool
	base   uint64 // first byte after the module's stack and data
	refs   int
	// typedRunner is the typed executable whose run last wrote the
	// module's memory (executables of one typed source share it).
	typedRunner *typedExecutable
}

// close releases the instance and its compiled code.
func (m *module) close(ctx context.Context) { m.inst.close(ctx) }

// probes remembers, per toolchain, that it built a module: every Factory
// call checks the toolchain once per process, not once per Runtime.
var probes sync.Map

// probeSource is the smallest unit exercising the whole build.
const probeSource = `__attribute__((visibility("default"))) void probe(float *p) { p[0] = p[0] + p[0]; }`

func open(opts backend.Options) (backend.Device, error) {
	if !littleEndian() {
		return nil, errors.New("wasm backend needs a little-endian host")
	}
	var tcErr error
	tc, err := cbuild.Find()
	if err != nil {
		if !opts.Explicit {
			return nil, err
		}
		// Asked for by name: open anyway, for plans that carry their
		// module (gpucc build's kernels.wasm); compiling anything else
		// reports the missing toolchain.
		tc, tcErr = nil, err
	} else if _, ok := probes.Load(tc.Key() + tc.Clang + tc.WasmLD); !ok {
		if _, err := tc.Wasm(context.Background(), probeSource); err != nil {
			return nil, fmt.Errorf("toolchain %s cannot build a module: %w", tc.Clang, err)
		}
		probes.Store(tc.Key()+tc.Clang+tc.WasmLD, true)
	}
	eng, err := newEngine(opts.Threads)
	if err != nil {
		return nil, err
	}
	d := &device{tc: tc, tcErr: tcErr, eng: eng, modules: map[string]*module{}, cache: opts.Cache, threads: 1}
	if tc == nil {
		d.build, d.buildKey = remoteBuild()
	}
	if te, ok := eng.(threadEngine); ok && d.build != nil {
		d.threads, d.minWork = te.threads(), te.partWork()
	}
	return d, nil
}

func littleEndian() bool {
	x := uint16(1)
	return *(*byte)(unsafe.Pointer(&x)) == 1
}

func (d *device) Info() backend.Info {
	return backend.Info{Name: "wasm", Profile: passes.Profile{Name: "wasm"}, Adapter: backend.Adapter{Name: d.eng.adapter(),
		Driver: d.driver(), Backend: "wasm", Type: "cpu"}}
}

// driver names the toolchain, or says there is none.
func (d *device) driver() string {
	switch {
	case d.tc != nil:
		return d.tc.Version
	case d.build != nil:
		return "Clang of the server that served the page"
	}
	return "no toolchain: prebuilt modules only"
}

func (d *device) Close() {
	if d.eng != nil {
		d.eng.close()
		d.eng = nil
	}
}

func fail(code ir.Code, err error) error {
	return &backend.Error{Code: code, Backend: "wasm", Err: err}
}

// Compile generates C (unless the plan carries it), obtains the module
// (the plan's, memory cache, disk cache or Clang) and lays the program's
// buffers out in its memory.
func (d *device) Compile(ctx context.Context, bp *backend.Program, st *backend.Stats) (backend.Executable, error) {
	stop := st.Start(backend.StageCodegen)
	var unit *c.Unit
	var wasm []byte
	var err error
	if bp.Prebuilt != nil {
		a, err := prebuilt(bp.Prebuilt, bp.IR.Program())
		if err != nil {
			stop()
			return nil, err
		}
		unit, wasm = a.Unit, a.Module
	} else if unit, err = (c.Target{}).Emit(bp.IR); err != nil {
		stop()
		return nil, fail(ir.CodeInternal, err)
	}
	stop()
	defer st.Start(backend.StageCompile)()
	source, req := unit.Source, BuildRequest{Program: bp.IR.WithoutData().Program()}
	parts, tiles := planParts(unit.Kernels, d.threads, d.minWork)
	if wasm != nil || d.build == nil {
		parts, tiles = nil, nil // a prebuilt module has no gpucc_part
	}
	if parts != nil {
		source, req.Threads = source+partSource(unit), true
	}
	mod, err := d.module(ctx, source, wasm, req, st)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if d.tc == nil && d.build == nil && wasm == nil {
			return nil, fail(ir.CodeBackendUnavailable, err)
		}
		return nil, fail(ir.CodeExecutionFailed, err)
	}
	e := &executable{d: d, p: bp.IR.Program(), mod: mod, unit: unit, parts: parts, tiles: tiles}
	if e.offs, e.table, err = mod.layout(bp.IR.Program(), unit.Scratch*maxOf(parts), parts != nil); err != nil {
		e.Release()
		return nil, fail(ir.CodeLimitExceeded, err)
	}
	for _, k := range unit.Kernels {
		fn := mod.inst.export(k.Export)
		if fn == nil {
			e.Release()
			return nil, fail(ir.CodeExecutionFailed, fmt.Errorf("kernel %s: module does not export %s", k.Name, k.Export))
		}
		args := make([]uint64, 0, len(k.Buffers)+1)
		for _, buf := range k.Buffers {
			args = append(args, e.offs[buf])
		}
		if k.Scratch {
			args = append(args, e.offs[len(e.offs)-1])
		}
		e.calls = append(e.calls, call{name: k.Name, fn: fn, args: args})
	}
	return e, nil
}

// module returns the instantiated module of source (or of the prebuilt
// bytes when given; req is what source was generated from, for a device
// that builds remotely), taking a reference to it. It records
// CacheModuleMemory (this device's modules, or the artifact cache's
// memory) and CacheModuleDisk.
func (d *device) module(ctx context.Context, source string, prebuilt []byte, req BuildRequest, st *backend.Stats) (*module, error) {
	var key cache.Key
	var build func() ([]byte, error)
	switch {
	case prebuilt != nil:
		key = cache.NewKey([]byte("prebuilt"), prebuilt)
	case d.tc != nil:
		key, build = d.tc.ModuleKey(source), func() ([]byte, error) { return d.tc.Wasm(ctx, source) }
	case d.build != nil:
		key, build = d.buildKey(source), func() ([]byte, error) { return d.build(ctx, source, req) }
		if req.Threads {
			key = cache.NewKey([]byte("threads"), []byte(key.String()))
		}
	default:
		return nil, fmt.Errorf("the plan carries no wasm module and %w", d.tcErr)
	}
	if m, ok := d.modules[key.String()]; ok {
		st.Hit(backend.CacheModuleMemory, true)
		st.Hit(backend.CacheModuleDisk, false)
		m.refs++
		return m, nil
	}
	var m *module
	var err error
	src := cache.Miss
	if prebuilt != nil {
		m, err = d.instantiate(ctx, key.String(), prebuilt, false)
	} else {
		src, err = cbuild.Load(d.cache, cache.Wasm, key, build,
			func(wasm []byte) (err error) {
				m, err = d.instantiate(ctx, key.String(), wasm, req.Threads)
				return err
			})
	}
	if err != nil {
		return nil, err
	}
	st.Hit(backend.CacheModuleMemory, src == cache.Memory)
	st.Hit(backend.CacheModuleDisk, src == cache.Disk)
	m.refs = 1
	d.modules[key.String()] = m
	return m, nil
}

// unref drops a reference to m and closes idle modules past the bound.
func (d *device) unref(m *module) {
	m.refs--
	backend.EvictIdle(d.modules, maxIdleModules, func(m *module) int { return m.refs },
		func(m *module) { m.close(context.Background()) })
}

// instantiate compiles wasm with the device's engine and instantiates it
// once, or, for a threads module (shared), in every thread.
func (d *device) instantiate(ctx context.Context, key string, wasm []byte, shared bool) (*module, error) {
	var inst instance
	var err error
	if te, ok := d.eng.(threadEngine); ok && shared {
		inst, err = te.instantiateShared(ctx, key, wasm)
	} else {
		inst, err = d.eng.instantiate(ctx, key, wasm)
	}
	if err != nil {
		return nil, err
	}
	m := &module{key: key, inst: inst, mem: inst.memory(), shared: shared}
	if m.mem == nil {
		m.close(ctx)
		return nil, errors.New("module exports no memory")
	}
	m.base = uint64(m.mem.Size())
	return m, nil
}

// layout places every buffer, then the scratch area (scratch floats),
// then, with table, the threads' pointer table (a word for each buffer
// and the scratch), after the module's own memory, growing linear memory
// to fit. offs[i] is buffer i's byte offset; offs[len(p.Buffers)] is the
// scratch's; table is the table's (0 without).
func (m *module) layout(p *ir.Program, scratch int, table bool) (offs []uint64, tab uint64, err error) {
	offs = make([]uint64, len(p.Buffers)+1)
	end := m.base
	place := func(floats int) uint64 {
		at := (end + align - 1) / align * align
		end = at + 4*uint64(floats)
		return at
	}
	for i, buf := range p.Buffers {
		offs[i] = place(buf.Len)
	}
	offs[len(p.Buffers)] = place(scratch)
	if table {
		tab = place(len(offs))
	}
	have, _ := m.mem.Grow(0)
	need := (end + wasmPage - 1) / wasmPage
	if need > maxPages {
		return nil, 0, fmt.Errorf("program needs %d MiB of wasm memory; wasm32 allows %d MiB", end>>20, uint64(maxPages)*wasmPage>>20)
	}
	if need > uint64(have) {
		if _, ok := m.mem.Grow(uint32(need) - have); !ok {
			return nil, 0, fmt.Errorf("cannot grow wasm memory from %d to %d pages", have, need)
		}
	}
	return offs, tab, nil
}

// floatBytes views a float32 slice as its little-endian bytes.
func floatBytes(f []float32) []byte {
	if len(f) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(&f[0])), 4*len(f))
}

type call struct {
	name string
	fn   function
	args []uint64
}

type executable struct {
	d     *device
	p     *ir.Program
	mod   *module
	unit  *c.Unit
	offs  []uint64
	calls []call
	// parts and tiles, when set, are each kernel's threads and tiles
	// (planParts), and table the pointer table's offset (threads.go).
	parts, tiles []int
	table        uint64
}

func (e *executable) Release() {
	if e.mod != nil {
		e.d.unref(e.mod)
		e.mod = nil
	}
}

// Run copies the inputs into linear memory, calls each kernel and copies
// the outputs out.
func (e *executable) Run(ctx context.Context, cl *backend.Call) error {
	st, mem := cl.Stats, e.mod.mem
	stop := st.Start(backend.StageUpload)
	for i, buf := range e.p.Buffers {
		if !buf.Input {
			continue
		}
		data := backend.HostData(cl.Args[i])
		if len(data) != buf.Len {
			stop()
			return fail(ir.CodeExecutionFailed, fmt.Errorf("buf%d: input holds %d values, shape %v needs %d", i, len(data), buf.Shape, buf.Len))
		}
		if !mem.Write(uint32(e.offs[i]), floatBytes(data)) {
			stop()
			return fail(ir.CodeExecutionFailed, fmt.Errorf("buf%d: upload outside wasm memory", i))
		}
		if cl.Args[i].Buf == nil {
			st.UploadBytes += 4 * int64(buf.Len)
		}
	}
	stop()
	stop = st.Start(backend.StageDispatch)
	if e.parts != nil {
		err := e.dispatchParts(ctx)
		stop()
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return fail(ir.CodeExecutionFailed, err)
		}
		return e.readback(cl)
	}
	for _, k := range e.calls {
		if err := ctx.Err(); err != nil {
			stop()
			return err
		}
		if _, err := k.fn.Call(ctx, k.args...); err != nil {
			stop()
			return fail(ir.CodeExecutionFailed, fmt.Errorf("kernel %s: %w", k.name, err))
		}
	}
	stop()
	return e.readback(cl)
}

// readback copies the outputs out of linear memory.
func (e *executable) readback(cl *backend.Call) error {
	st, mem := cl.Stats, e.mod.mem
	defer st.Start(backend.StageReadback)()
	for i, o := range e.p.Outputs {
		d := &cl.Dests[i]
		if o.Buffer < 0 {
			continue
		}
		l := e.p.Buffers[o.Buffer].Len
		view, ok := mem.Read(uint32(e.offs[o.Buffer]), uint32(4*l))
		if !ok {
			return fail(ir.CodeExecutionFailed, fmt.Errorf("output %q: buf%d lies outside wasm memory", o.Name, o.Buffer))
		}
		if d.Keep {
			hb := &backend.HostBuffer{Data: make([]float32, l)}
			copy(floatBytes(hb.Data), view)
			d.Buf = hb
			continue
		}
		copy(floatBytes(d.Host), view)
		st.ReadbackBytes += 4 * int64(l)
	}
	return nil
}

// BuildModule compiles a C unit's source (codegen/c) to the wasm module
// this backend runs, with the toolchain it would use: gpucc build embeds
// the result so that a plan needs no Clang at run time.
func BuildModule(ctx context.Context, source string) ([]byte, error) {
	tc, err := cbuild.Find()
	if err != nil {
		return nil, err
	}
	return tc.Wasm(ctx, source)
}
