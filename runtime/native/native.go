//go:build (darwin || freebsd || linux || netbsd) && (amd64 || arm64) && !android && !js

// Package native is the native backend: the C kernels of codegen/c built
// by the system C compiler into a shared object and loaded with purego (no
// cgo). Its device memory is Go memory: a run hands the kernels pointers
// to its inputs, host slices and resident tensors alike, without copying
// them. Importing it registers "native"; auto selection never picks it,
// because it loads generated machine code into the process.
//
// Libraries are cached in memory (loaded) and, as bytes, in the artifact
// cache of Options.Cache; a library is loaded from a private copy of
// verified bytes, never from the cache directory.
package native

import (
	"context"
	"errors"
	"fmt"
	goruntime "runtime"
	"strings"
	"sync"
	"unsafe"

	"github.com/ebitengine/purego"

	"github.com/gpucc/gpucc/codegen/c"
	"github.com/gpucc/gpucc/codegen/cache"
	"github.com/gpucc/gpucc/ir"
	"github.com/gpucc/gpucc/passes"
	"github.com/gpucc/gpucc/runtime/backend"
	"github.com/gpucc/gpucc/runtime/internal/cbuild"
)

func init() { backend.Register("native", open) }

// maxIdleLibs bounds the libraries kept loaded that no live executable
// uses.
const maxIdleLibs = 64

// entry is the symbol of the function entrySource adds to every unit.
const entry = "gpucc_run"

type device struct {
	backend.HostMemory
	cc      *cbuild.Native
	cache   *cache.Cache       // the artifact cache (nil: none)
	private *cbuild.PrivateDir // where libraries are copied to be loaded
	libs    map[string]*library
}

// library is one loaded shared object and its entry point.
type library struct {
	handle uintptr
	entry  uintptr
	refs   int
}

// probes remembers, per compiler, that it built a shared object: every
// Factory call checks the compiler once per process.
var probes sync.Map

// probeSource is the smallest unit exercising the whole build.
const probeSource = `__attribute__((visibility("default"))) void probe(float *p) { p[0] = p[0] + p[0]; }`

func open(opts backend.Options) (backend.Device, error) {
	x := uint16(1)
	if *(*byte)(unsafe.Pointer(&x)) != 1 {
		return nil, errors.New("native backend needs a little-endian host")
	}
	cc, err := cbuild.FindNative()
	if err != nil {
		return nil, err
	}
	if _, ok := probes.Load(cc.Key()); !ok {
		if _, err := cc.Shared(context.Background(), probeSource); err != nil {
			return nil, fmt.Errorf("compiler %s cannot build a shared object: %w", cc.CC, err)
		}
		probes.Store(cc.Key(), true)
	}
	private, err := cbuild.NewPrivateDir()
	if err != nil {
		return nil, err
	}
	return &device{cc: cc, cache: opts.Cache, private: private, libs: map[string]*library{}}, nil
}

func (d *device) Info() backend.Info {
	return backend.Info{Name: "native", Profile: passes.Profile{Name: "native"}, Adapter: backend.Adapter{Name: fmt.Sprintf("native %s/%s", goruntime.GOOS, goruntime.GOARCH),
		Driver: d.cc.Version, Backend: "native", Type: "cpu"}}
}

// Close unloads every library; the disk cache stays.
func (d *device) Close() {
	for k, lib := range d.libs {
		purego.Dlclose(lib.handle)
		delete(d.libs, k)
	}
	if d.private != nil {
		d.private.Close()
		d.private = nil
	}
}

func fail(code ir.Code, err error) error {
	return &backend.Error{Code: code, Backend: "native", Err: err}
}

// Compile generates C (unless the plan carries it) with the entry point,
// and obtains the library (memory cache, disk cache or the compiler).
func (d *device) Compile(ctx context.Context, bp *backend.Program, st *backend.Stats) (backend.Executable, error) {
	stop := st.Start(backend.StageCodegen)
	unit := bp.C
	var err error
	if unit == nil {
		unit, err = c.Target{}.Emit(bp.IR)
	}
	if err != nil {
		stop()
		return nil, fail(ir.CodeInternal, err)
	}
	source := unit.Source + entrySource(unit, len(bp.IR.Buffers))
	stop()
	defer st.Start(backend.StageCompile)()
	lib, err := d.library(ctx, source, st)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, fail(ir.CodeExecutionFailed, err)
	}
	return &executable{d: d, p: bp.IR, lib: lib, scratch: unit.Scratch, own: make([][]float32, len(bp.IR.Buffers)+1)}, nil
}

// entrySource returns the C of the entry point: one call for the whole
// program, so that a run crosses from Go to C once. Buffer i is b[i]; the
// scratch area is b[nbuf]. On x86-64 and arm64 it also sets the
// floating-point environment cpuref assumes (round to nearest even, no
// flush of subnormals, exceptions masked) and restores the caller's after,
// so that a library elsewhere in the process that changed MXCSR or FPCR
// cannot change a result.
func entrySource(u *c.Unit, nbuf int) string {
	var s strings.Builder
	s.WriteString(fpEnv)
	fmt.Fprintf(&s, "\n/* %s runs every kernel in program order; b[i] is buffer i, b[%d] the scratch. */\n", entry, nbuf)
	fmt.Fprintf(&s, "EXPORT void %s(float *const *b) {\n\tconst fpenv saved = fpenv_reference();\n", entry)
	for _, k := range u.Kernels {
		args := make([]string, 0, len(k.Buffers)+1)
		for _, buf := range k.Buffers {
			args = append(args, fmt.Sprintf("b[%d]", buf))
		}
		if k.Scratch {
			args = append(args, fmt.Sprintf("b[%d]", nbuf))
		}
		fmt.Fprintf(&s, "\t%s(%s);\n", k.Export, strings.Join(args, ", "))
	}
	s.WriteString("\tfpenv_restore(saved);\n}\n")
	return s.String()
}

// fpEnv saves the floating-point control register and loads the reference
// one. MXCSR: clear FTZ (bit 15), DAZ (bit 6) and the rounding field (bits
// 13-14), mask all exceptions (bits 7-12). FPCR: clear FZ (bit 24), the
// rounding field (bits 22-23), FIZ and AH (bits 0-1).
const fpEnv = `
#if defined(__x86_64__)
typedef unsigned int fpenv;
static inline fpenv fpenv_reference(void) {
	fpenv saved, ref;
	__asm__ volatile("stmxcsr %0" : "=m"(saved));
	ref = (saved & ~0xE040u) | 0x1F80u;
	__asm__ volatile("ldmxcsr %0" : : "m"(ref));
	return saved;
}
static inline void fpenv_restore(fpenv saved) { __asm__ volatile("ldmxcsr %0" : : "m"(saved)); }
#elif defined(__aarch64__)
typedef unsigned long fpenv;
static inline fpenv fpenv_reference(void) {
	fpenv saved;
	__asm__ volatile("mrs %0, fpcr" : "=r"(saved));
	__asm__ volatile("msr fpcr, %0" : : "r"(saved & ~0x1C00003ul));
	return saved;
}
static inline void fpenv_restore(fpenv saved) { __asm__ volatile("msr fpcr, %0" : : "r"(saved)); }
#else
#error "gpucc native backend: unsupported architecture"
#endif
`

// library returns the loaded library of source, taking a reference. It
// records CacheLibraryMemory (this device's libraries, or the artifact
// cache's memory) and CacheLibraryDisk.
func (d *device) library(ctx context.Context, source string, st *backend.Stats) (*library, error) {
	key := d.cc.ObjectKey(source)
	if lib, ok := d.libs[key.String()]; ok {
		st.Hit(backend.CacheLibraryMemory, true)
		st.Hit(backend.CacheLibraryDisk, false)
		lib.refs++
		return lib, nil
	}
	var lib *library
	src, err := cbuild.Load(d.cache, cache.SharedObject, key,
		func() ([]byte, error) { return d.cc.Shared(ctx, source) },
		func(so []byte) (err error) { lib, err = openLib(d.private, so); return err })
	if err != nil {
		return nil, err
	}
	st.Hit(backend.CacheLibraryMemory, src == cache.Memory)
	st.Hit(backend.CacheLibraryDisk, src == cache.Disk)
	lib.refs = 1
	d.libs[key.String()] = lib
	return lib, nil
}

// unref drops a reference to lib and unloads idle libraries past the bound.
func (d *device) unref(lib *library) {
	lib.refs--
	backend.EvictIdle(d.libs, maxIdleLibs, func(l *library) int { return l.refs },
		func(l *library) { purego.Dlclose(l.handle) })
}

// openLib loads the shared object so, from a copy of its bytes in private
// (never a file in the cache directory, see cbuild.PrivateDir), and finds
// its entry point.
func openLib(private *cbuild.PrivateDir, so []byte) (*library, error) {
	path, release, err := private.File(so)
	if err != nil {
		return nil, err
	}
	defer release()
	h, err := purego.Dlopen(path, purego.RTLD_NOW|purego.RTLD_LOCAL)
	if err != nil {
		return nil, fmt.Errorf("dlopen: %w", err)
	}
	fn, err := purego.Dlsym(h, entry)
	if err != nil {
		purego.Dlclose(h)
		return nil, fmt.Errorf("dlsym %s: %w", entry, err)
	}
	return &library{handle: h, entry: fn}, nil
}

type executable struct {
	d       *device
	p       *ir.Program
	lib     *library
	scratch int
	// own holds the executable's buffers (not inputs) and, last, the
	// scratch, allocated at the first run that needs them; a kept output
	// takes its buffer away.
	own [][]float32
}

func (e *executable) Release() {
	if e.lib != nil {
		e.d.unref(e.lib)
		e.lib, e.own = nil, nil
	}
}

// Run calls the entry point once with pointers to every buffer: inputs in
// place (kernels never write an input), the rest in the executable's own
// memory, then copies or hands out the outputs.
func (e *executable) Run(ctx context.Context, cl *backend.Call) error {
	st := cl.Stats
	if err := ctx.Err(); err != nil {
		return err
	}
	bufs := make([][]float32, len(e.own))
	for i := range bufs {
		n := e.scratch
		if i < len(e.p.Buffers) {
			b := e.p.Buffers[i]
			n = b.Len
			if b.Input {
				bufs[i] = backend.HostData(cl.Args[i])
				if len(bufs[i]) != n {
					return fail(ir.CodeExecutionFailed, fmt.Errorf("buf%d: input holds %d values, shape %v needs %d", i, len(bufs[i]), b.Shape, n))
				}
				if cl.Args[i].Buf == nil {
					st.UploadBytes += 4 * int64(n)
				}
				continue
			}
		}
		if len(e.own[i]) != max(n, 1) {
			e.own[i] = make([]float32, max(n, 1)) // every buffer has an address to pass
			st.FirstDispatch = true
		}
		bufs[i] = e.own[i]
	}
	e.dispatch(bufs, st)
	defer st.Start(backend.StageReadback)()
	for i, o := range e.p.Outputs {
		d := &cl.Dests[i]
		switch {
		case o.Buffer < 0:
		case d.Keep:
			d.Buf = &backend.HostBuffer{Data: e.own[o.Buffer]}
			e.own[o.Buffer] = nil
		default:
			copy(d.Host, bufs[o.Buffer])
			st.ReadbackBytes += 4 * int64(len(d.Host))
		}
	}
	return nil
}

// dispatch calls the entry point with an array of the buffers' addresses.
// The buffers and the array are pinned for the call: C holds them, and the
// array, Go memory handed to C, holds Go pointers.
func (e *executable) dispatch(bufs [][]float32, st *backend.Stats) {
	var pin goruntime.Pinner
	defer pin.Unpin()
	ptrs := make([]unsafe.Pointer, len(bufs))
	for i, buf := range bufs {
		pin.Pin(&buf[0])
		ptrs[i] = unsafe.Pointer(&buf[0])
	}
	pin.Pin(&ptrs[0])
	defer st.Start(backend.StageDispatch)()
	purego.SyscallN(e.lib.entry, uintptr(unsafe.Pointer(&ptrs[0])))
}
