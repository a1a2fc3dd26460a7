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
	"os"
	goruntime "runtime"
	"strconv"
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

// entry and scan are the symbols of the functions entrySource adds to
// every unit.
const (
	entry = "gpucc_run"
	part  = "gpucc_part"
	scan  = "gpucc_scan"
)

type device struct {
	backend.HostMemory
	cc      *cbuild.Native
	cache   *cache.Cache       // the artifact cache (nil: none)
	private *cbuild.PrivateDir // where libraries are copied to be loaded
	libs    map[string]*library
	threads int // the most threads one kernel runs on (Threads)
}

// library is one loaded shared object, its entry points and its scan.
type library struct {
	handle            uintptr
	entry, part, scan uintptr
	typed             uintptr // a typed unit's entry (typedEntry); the others are then 0
	refs              int
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
		// The probe's object goes through the artifact cache like any
		// kernel's: a process finding it on disk (the same compiler,
		// version and flags built it before) skips the compile, which was
		// most of every start-up (issue 36: 0.3-0.7 s a process here);
		// a memory-only cache (bench's cold runs) builds it each time.
		if _, err := cbuild.Load(opts.Cache, cache.SharedObject, cc.ObjectKey(probeSource),
			func() ([]byte, error) { return cc.Shared(context.Background(), probeSource) },
			func([]byte) error { return nil }); err != nil {
			return nil, fmt.Errorf("compiler %s cannot build a shared object: %w", cc.CC, err)
		}
		probes.Store(cc.Key(), true)
	}
	threads, err := Threads(opts.Threads)
	if err != nil {
		return nil, err
	}
	private, err := cbuild.NewPrivateDir()
	if err != nil {
		return nil, err
	}
	return &device{cc: cc, cache: opts.Cache, private: private, libs: map[string]*library{}, threads: threads}, nil
}

// Threads returns the number of threads the native backend runs a kernel
// on, given backend.Options.Threads: n when n > 0; else GPUCC_THREADS
// when it is set (a positive integer); else runtime.GOMAXPROCS(0), every
// core the process is given (Go counts the CPU affinity mask and, on
// Linux, the cgroup CPU limit). 1 runs every kernel on the calling
// goroutine, in one call into C per run.
func Threads(n int) (int, error) {
	switch {
	case n > 0:
		return n, nil
	case n < 0:
		return 0, fmt.Errorf("threads %d: want 0 (every core) or a positive count", n)
	}
	if v := os.Getenv("GPUCC_THREADS"); v != "" {
		t, err := strconv.Atoi(v)
		if err != nil || t <= 0 {
			return 0, fmt.Errorf("GPUCC_THREADS=%q: want a positive integer", v)
		}
		return t, nil
	}
	return goruntime.GOMAXPROCS(0), nil
}

func (d *device) Info() backend.Info {
	return backend.Info{Name: "native", Profile: passes.Profile{Name: "native"}, Adapter: backend.Adapter{Name: fmt.Sprintf("native %s/%s", goruntime.GOOS, goruntime.GOARCH),
		Driver: d.cc.Version, Backend: "native", Type: "cpu"}, ChecksHost: true, ChecksOutputs: true}
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
	var unit *c.Unit
	var err error
	if bp.Prebuilt != nil {
		if unit, err = prebuiltUnit(bp.Prebuilt, bp.IR.Program()); err != nil {
			stop()
			return nil, err
		}
	} else if unit, err = (c.Target{}).Emit(bp.IR); err != nil {
		stop()
		return nil, fail(ir.CodeInternal, err)
	}
	source := unit.Source + entrySource(unit, len(bp.IR.Program().Buffers))
	stop()
	defer st.Start(backend.StageCompile)()
	lib, err := d.library(ctx, source, false, st)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, fail(ir.CodeExecutionFailed, err)
	}
	e := &executable{d: d, p: bp.IR.Program(), lib: lib, scratch: unit.Scratch, own: make([][]float32, len(bp.IR.Program().Buffers)+1)}
	e.plan(unit.Kernels, d.threads)
	return e, nil
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
	fmt.Fprintf(&s, "\n/* %s runs tiles [t0, t1) of kernel k with its own scratch (see codegen/c's Kernel.Tiles). */\n", part)
	fmt.Fprintf(&s, "EXPORT void %s(float *const *b, float *scratch, idx k, idx t0, idx t1) {\n\tconst fpenv saved = fpenv_reference();\n\tswitch (k) {\n", part)
	for n, k := range u.Kernels {
		args := make([]string, 0, len(k.Buffers)+3)
		for _, buf := range k.Buffers {
			args = append(args, fmt.Sprintf("b[%d]", buf))
		}
		if k.Scratch {
			args = append(args, "scratch")
		}
		args = append(args, "t0", "t1")
		fmt.Fprintf(&s, "\tcase %d:\n\t\t%s_tiles(%s);\n\t\tbreak;\n", n, k.Export, strings.Join(args, ", "))
	}
	s.WriteString("\t}\n\t(void)scratch;\n\tfpenv_restore(saved);\n}\n")
	s.WriteString(scanSource)
	return s.String()
}

// scanSource is the finiteness check of host inputs and outputs (the
// backend ChecksHost and ChecksOutputs): blocks of 64 values are tested
// with no branch, which Clang vectorises, and only a block holding a
// non-finite value is searched for its first one. It replaces the
// runtime's scalar Go scan, which took half of a host run of relu(a*b+c).
const scanSource = `
/* gpucc_scan returns the index of the first ±Inf or NaN of p[0..n), or n. */
EXPORT idx gpucc_scan(const float *p, idx n) {
	const u32 *u = (const u32 *)p;
	idx i = 0;
	for (; i + 64 <= n; i += 64) {
		u32 any = 0;
		for (int j = 0; j < 64; j++)
			any |= (u[i + j] & 0x7f800000u) == 0x7f800000u;
		if (any)
			break;
	}
	for (; i < n; i++)
		if ((u[i] & 0x7f800000u) == 0x7f800000u)
			return i;
	return n;
}
`

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

// library returns the loaded library of source, taking a reference: a
// program's unit (entrySource's symbols) or, when typed, a typed graph's
// (typedEntry's). It records CacheLibraryMemory (this device's libraries,
// or the artifact cache's memory) and CacheLibraryDisk.
func (d *device) library(ctx context.Context, source string, typed bool, st *backend.Stats) (*library, error) {
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
		func(so []byte) (err error) { lib, err = openLib(d.private, so, typed); return err })
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
// its entry points (typedEntry's alone when typed).
func openLib(private *cbuild.PrivateDir, so []byte, typed bool) (*library, error) {
	path, release, err := private.File(so)
	if err != nil {
		return nil, err
	}
	defer release()
	h, err := purego.Dlopen(path, purego.RTLD_NOW|purego.RTLD_LOCAL)
	if err != nil {
		return nil, fmt.Errorf("dlopen: %w", err)
	}
	lib := &library{handle: h}
	type symbol struct {
		name string
		fn   *uintptr
	}
	syms := []symbol{{entry, &lib.entry}, {part, &lib.part}, {scan, &lib.scan}}
	if typed {
		syms = []symbol{{typedEntry, &lib.typed}}
	}
	for _, sym := range syms {
		if *sym.fn, err = purego.Dlsym(h, sym.name); err != nil {
			purego.Dlclose(h)
			return nil, fmt.Errorf("dlsym %s: %w", sym.name, err)
		}
	}
	return lib, nil
}

type executable struct {
	d       *device
	p       *ir.Program
	lib     *library
	scratch int // floats of scratch per concurrent call
	// parts is, per kernel, how many threads run it (1: the calling
	// goroutine alone), tiles its tile count; nil when every kernel runs
	// on one thread, in one call of the entry point.
	parts, tiles []int
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

// Run checks the host inputs (ChecksHost), calls the entry point once
// with pointers to every buffer: inputs in place (kernels never write an
// input), outputs in the caller's slices where they can be (see direct),
// the rest in the executable's own memory; then it checks the host
// outputs (ChecksOutputs), copies those computed elsewhere and hands out
// the kept ones.
func (e *executable) Run(ctx context.Context, cl *backend.Call) error {
	st := cl.Stats
	if err := ctx.Err(); err != nil {
		return err
	}
	var pin goruntime.Pinner
	defer pin.Unpin()
	bufs := make([][]float32, len(e.own))
	for i := range bufs {
		if i < len(e.p.Buffers) && e.p.Buffers[i].Input {
			b := e.p.Buffers[i]
			bufs[i] = backend.HostData(cl.Args[i])
			if len(bufs[i]) != b.Len {
				return fail(ir.CodeExecutionFailed, fmt.Errorf("buf%d: input holds %d values, shape %v needs %d", i, len(bufs[i]), b.Shape, b.Len))
			}
			if cl.Args[i].Buf == nil {
				st.UploadBytes += 4 * int64(b.Len)
				if cl.NonFinite {
					continue
				}
				if k := e.scan(&pin, bufs[i]); k >= 0 {
					return &backend.NonFiniteError{Buffer: i, Index: k, Value: bufs[i][k]}
				}
			}
		}
	}
	direct := e.direct(cl, bufs)
	for i := range bufs {
		if bufs[i] != nil {
			continue
		}
		n := e.scratch * e.maxParts()
		if i < len(e.p.Buffers) {
			n = e.p.Buffers[i].Len
		}
		if len(e.own[i]) != max(n, 1) {
			e.own[i] = make([]float32, max(n, 1)) // every buffer has an address to pass
			st.FirstDispatch = true
		}
		bufs[i] = e.own[i]
	}
	e.dispatch(&pin, bufs, st)
	defer st.Start(backend.StageReadback)()
	for i, o := range e.p.Outputs {
		d := &cl.Dests[i]
		switch {
		case o.Buffer < 0:
		case d.Keep:
			d.Buf = &backend.HostBuffer{Data: e.own[o.Buffer]}
			e.own[o.Buffer] = nil
		default:
			if j, ok := direct[o.Buffer]; !ok || j != i {
				copy(d.Host, bufs[o.Buffer])
			}
			st.ReadbackBytes += 4 * int64(len(d.Host))
			if cl.NonFinite {
				continue // the runtime canonicalizes NaN outputs
			}
			if k := e.scan(&pin, d.Host); k >= 0 {
				return &backend.NonFiniteOutputError{Output: i, Index: k, Value: d.Host[k]}
			}
		}
	}
	return nil
}

// direct places in bufs the caller's slice of each host output that the
// kernels may write in place: not kept, of the buffer's length, the first
// output of its buffer, and overlapping no input and no other output so
// placed (a caller may pass one slice as an input and as RunOptions.Into,
// or as two outputs' Into). It returns, per buffer so
// placed, the output it belongs to; the others copy.
func (e *executable) direct(cl *backend.Call, bufs [][]float32) map[int]int {
	direct, kept := map[int]int{}, map[int]bool{}
	for i, o := range e.p.Outputs {
		if cl.Dests[i].Keep {
			kept[o.Buffer] = true
		}
	}
	for i, o := range e.p.Outputs {
		d := &cl.Dests[i]
		if o.Buffer < 0 || kept[o.Buffer] || bufs[o.Buffer] != nil || len(d.Host) == 0 ||
			len(d.Host) != e.p.Buffers[o.Buffer].Len || e.p.Buffers[o.Buffer].Input {
			continue
		}
		overlaps := false
		for _, b := range bufs[:len(e.p.Buffers)] { // the inputs and the outputs placed so far
			overlaps = overlaps || overlap(b, d.Host)
		}
		if !overlaps {
			bufs[o.Buffer] = d.Host
			direct[o.Buffer] = i
		}
	}
	return direct
}

// overlap reports whether a and b share memory.
func overlap(a, b []float32) bool {
	if len(a) == 0 || len(b) == 0 {
		return false
	}
	a0, b0 := uintptr(unsafe.Pointer(&a[0])), uintptr(unsafe.Pointer(&b[0]))
	return a0 < b0+4*uintptr(len(b)) && b0 < a0+4*uintptr(len(a))
}

// scan returns the index of data's first ±Inf or NaN, or -1, found by the
// library's vectorised gpucc_scan.
func (e *executable) scan(pin *goruntime.Pinner, data []float32) int {
	if len(data) == 0 {
		return -1
	}
	pin.Pin(&data[0])
	k, _, _ := purego.SyscallN(e.lib.scan, uintptr(unsafe.Pointer(&data[0])), uintptr(len(data)))
	if int(k) >= len(data) {
		return -1
	}
	return int(k)
}

// dispatch calls the entry point with an array of the buffers' addresses.
// The buffers and the array are pinned for the call: C holds them, and the
// array, Go memory handed to C, holds Go pointers.
func (e *executable) dispatch(pin *goruntime.Pinner, bufs [][]float32, st *backend.Stats) {
	ptrs := make([]unsafe.Pointer, len(bufs))
	for i, buf := range bufs {
		pin.Pin(&buf[0])
		ptrs[i] = unsafe.Pointer(&buf[0])
	}
	pin.Pin(&ptrs[0])
	defer st.Start(backend.StageDispatch)()
	if e.parts == nil {
		purego.SyscallN(e.lib.entry, uintptr(unsafe.Pointer(&ptrs[0])))
		return
	}
	e.dispatchParts(ptrs, bufs[len(bufs)-1])
}
