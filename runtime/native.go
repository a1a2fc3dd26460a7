//go:build (darwin || freebsd || linux || netbsd) && (amd64 || arm64) && !android && !js

package runtime

import (
	"context"
	"errors"
	"fmt"
	goruntime "runtime"
	"strings"
	"sync"
	"time"
	"unsafe"

	"github.com/ebitengine/purego"

	"github.com/gpucc/gpucc/codegen/c"
	"github.com/gpucc/gpucc/codegen/cache"
	"github.com/gpucc/gpucc/ir"
	"github.com/gpucc/gpucc/runtime/internal/cbuild"
)

// The native backend is explicit-only: it loads generated machine code
// into the process, so auto selection (Chain) never picks it.
func init() { Register("native", newNative) }

// nativeMaxLibs bounds the in-memory library cache; past it, an arbitrary
// library is closed.
const nativeMaxLibs = 64

// nativeEntry is the symbol of the function nativeEntrySource adds to
// every unit.
const nativeEntry = "gpucc_run"

// nativeBackend runs Programs as the C kernels of codegen/c built by the
// system C compiler into a shared object, loaded with purego (no cgo).
// Libraries are cached in memory (loaded, keyed by the SHA-256 of source
// and compiler) and, as bytes, in the artifact cache of Options.Cache; a
// library is loaded from a private copy of verified bytes, never from the
// cache directory (see cbuild.PrivateDir). Buffers are Go memory, kept
// for the next run like the wasm backend's linear memory.
type nativeBackend struct {
	cc      *cbuild.Native
	cache   *cache.Cache       // the artifact cache (nil: none)
	private *cbuild.PrivateDir // where libraries are copied to be loaded
	libs    map[string]*nativeLib
	bufs    [][]float32 // buffer i of the last run, reused when large enough
	pool    int64       // bytes of buffers kept between runs
}

// nativeLib is one loaded shared object and its entry point.
type nativeLib struct {
	handle uintptr
	entry  uintptr
}

// nativeProbes remembers, per compiler, that it built a shared object:
// every Factory call checks the compiler once per process.
var nativeProbes sync.Map

func newNative(opts Options) (Backend, error) {
	if !littleEndian() {
		return nil, errors.New("native backend needs a little-endian host")
	}
	cc, err := cbuild.FindNative()
	if err != nil {
		return nil, err
	}
	if _, ok := nativeProbes.Load(cc.Key()); !ok {
		if _, err := cc.Shared(context.Background(), probeSource); err != nil {
			return nil, fmt.Errorf("compiler %s cannot build a shared object: %w", cc.CC, err)
		}
		nativeProbes.Store(cc.Key(), true)
	}
	private, err := cbuild.NewPrivateDir()
	if err != nil {
		return nil, err
	}
	b := &nativeBackend{cc: cc, cache: opts.Cache, private: private, libs: map[string]*nativeLib{}, pool: opts.PoolBytes}
	if b.pool == 0 {
		b.pool = DefaultPoolBytes
	}
	return b, nil
}

func (b *nativeBackend) Name() string { return "native" }

func (b *nativeBackend) Adapter() *Adapter {
	return &Adapter{Name: fmt.Sprintf("native %s/%s", goruntime.GOOS, goruntime.GOARCH),
		Driver: b.cc.Version, Backend: "native", Type: "cpu"}
}

// MaxBindings is 0: the entry point takes one array of pointers.
func (b *nativeBackend) MaxBindings() int { return 0 }

// Close unloads every library; the disk cache stays.
func (b *nativeBackend) Close() {
	for k, lib := range b.libs {
		purego.Dlclose(lib.handle)
		delete(b.libs, k)
	}
	b.libs, b.bufs = nil, nil
	if b.private != nil {
		b.private.Close()
		b.private = nil
	}
}

// Run generates C, obtains the library (memory cache, disk cache or the
// compiler), uploads inputs into Go buffers, calls the entry point once
// for all kernels and copies the outputs out.
func (b *nativeBackend) Run(job *Job) ([][]float32, error) {
	if b.libs == nil {
		return nil, b.fail(ir.CodeBackendUnavailable, errors.New("backend is closed"))
	}
	start := time.Now()
	unit, err := c.Target{}.Emit(job.Program)
	if err != nil {
		return nil, b.fail(ir.CodeInternal, err)
	}
	source := unit.Source + nativeEntrySource(unit, len(job.Program.Buffers))
	job.Timings.CodegenMs = ms(time.Since(start))

	start = time.Now()
	lib, err := b.library(source, job.Cache)
	if err != nil {
		return nil, b.fail(ir.CodeExecutionFailed, err)
	}
	job.Timings.CompileMs = ms(time.Since(start))

	bufs := b.buffers(job.Program, unit.Scratch)
	if err := nativeUpload(job, bufs); err != nil {
		return nil, b.fail(ir.CodeExecutionFailed, err)
	}
	lib.dispatch(job, bufs)
	out := nativeReadback(job, bufs)
	b.keep(bufs)
	return out, nil
}

func (b *nativeBackend) fail(code ir.Code, err error) error {
	return &Error{Code: code, Backend: "native", Err: err}
}

// nativeEntrySource returns the C of the entry point: one call for the
// whole program, so that a run crosses from Go to C once. Buffer i is
// b[i]; the scratch area is b[nbuf]. On x86-64 and arm64 it also sets the
// floating-point environment cpuref assumes (round to nearest even, no
// flush of subnormals, exceptions masked) and restores the caller's after,
// so that a library elsewhere in the process that changed MXCSR or FPCR
// cannot change a result.
func nativeEntrySource(u *c.Unit, nbuf int) string {
	var s strings.Builder
	s.WriteString(nativeFPEnv)
	fmt.Fprintf(&s, "\n/* %s runs every kernel in program order; b[i] is buffer i, b[%d] the scratch. */\n", nativeEntry, nbuf)
	fmt.Fprintf(&s, "EXPORT void %s(float *const *b) {\n\tconst fpenv saved = fpenv_reference();\n", nativeEntry)
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

// nativeFPEnv saves the floating-point control register and loads the
// reference one. MXCSR: clear FTZ (bit 15), DAZ (bit 6) and the rounding
// field (bits 13-14), mask all exceptions (bits 7-12). FPCR: clear FZ (bit
// 24), the rounding field (bits 22-23), FIZ and AH (bits 0-1).
const nativeFPEnv = `
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

// library returns the loaded library of source, recording which cache
// level hit in hits: "native_so_memory" (this backend's libraries, or the
// artifact cache's memory) or "native_so_disk".
func (b *nativeBackend) library(source string, hits map[string]bool) (*nativeLib, error) {
	key := b.cc.ObjectKey(source)
	hits["native_so_memory"], hits["native_so_disk"] = false, false
	if lib, ok := b.libs[key.String()]; ok {
		hits["native_so_memory"] = true
		return lib, nil
	}
	var lib *nativeLib
	src, err := cbuild.Load(b.cache, cache.SharedObject, key,
		func() ([]byte, error) { return b.cc.Shared(context.Background(), source) },
		func(so []byte) (err error) { lib, err = openLib(b.private, so); return err })
	if err != nil {
		return nil, err
	}
	hits["native_so_memory"], hits["native_so_disk"] = src == cache.Memory, src == cache.Disk
	makeRoom(b.libs, nativeMaxLibs, func(old *nativeLib) { purego.Dlclose(old.handle) })
	b.libs[key.String()] = lib
	return lib, nil
}

// openLib loads the shared object so, from a copy of its bytes in
// private, and finds its entry point.
func openLib(private *cbuild.PrivateDir, so []byte) (*nativeLib, error) {
	path, release, err := private.File(so)
	if err != nil {
		return nil, err
	}
	defer release()
	h, err := purego.Dlopen(path, purego.RTLD_NOW|purego.RTLD_LOCAL)
	if err != nil {
		return nil, fmt.Errorf("dlopen: %w", err)
	}
	entry, err := purego.Dlsym(h, nativeEntry)
	if err != nil {
		purego.Dlclose(h)
		return nil, fmt.Errorf("dlsym %s: %w", nativeEntry, err)
	}
	return &nativeLib{handle: h, entry: entry}, nil
}

// buffers returns one slice per program buffer plus the scratch area,
// reusing the last run's slices where they are large enough. Every slice
// has at least one element, so that each has an address to pass.
func (b *nativeBackend) buffers(p *ir.Program, scratch int) [][]float32 {
	bufs := make([][]float32, len(p.Buffers)+1)
	for i := range bufs {
		n := scratch
		if i < len(p.Buffers) {
			n = p.Buffers[i].Len
		}
		n = max(n, 1)
		if i < len(b.bufs) && cap(b.bufs[i]) >= n {
			bufs[i] = b.bufs[i][:n]
		} else {
			bufs[i] = make([]float32, n)
		}
	}
	return bufs
}

// keep holds bufs for the next run unless together they exceed the pool
// bound.
func (b *nativeBackend) keep(bufs [][]float32) {
	var n int64
	for _, buf := range bufs {
		n += 4 * int64(cap(buf))
	}
	if b.pool < 0 || n > b.pool {
		b.bufs = nil
		return
	}
	b.bufs = bufs
}

func nativeUpload(job *Job, bufs [][]float32) error {
	start := time.Now()
	var n int64
	for i, buf := range job.Program.Buffers {
		if !buf.Input {
			continue
		}
		if len(buf.Data) != buf.Len {
			return fmt.Errorf("buf%d: input holds %d values, shape %v needs %d", i, len(buf.Data), buf.Shape, buf.Len)
		}
		copy(bufs[i], buf.Data)
		n += 4 * int64(buf.Len)
	}
	job.Timings.UploadMs = ms(time.Since(start))
	job.Timings.UploadBytes = n
	return nil
}

// dispatch calls the entry point with an array of the buffers' addresses.
// The buffers and the array are pinned for the call: C holds them, and
// the array, Go memory handed to C, holds Go pointers.
func (lib *nativeLib) dispatch(job *Job, bufs [][]float32) {
	var pin goruntime.Pinner
	defer pin.Unpin()
	ptrs := make([]unsafe.Pointer, len(bufs))
	for i, buf := range bufs {
		pin.Pin(&buf[0])
		ptrs[i] = unsafe.Pointer(&buf[0])
	}
	pin.Pin(&ptrs[0])
	start := time.Now()
	purego.SyscallN(lib.entry, uintptr(unsafe.Pointer(&ptrs[0])))
	job.Timings.DispatchMs = ms(time.Since(start))
	job.Timings.DispatchClock = "wall"
}

func nativeReadback(job *Job, bufs [][]float32) [][]float32 {
	start := time.Now()
	var n int64
	out := make([][]float32, len(job.Program.Outputs))
	for i, o := range job.Program.Outputs {
		if o.Buffer < 0 {
			continue
		}
		l := job.Program.Buffers[o.Buffer].Len
		out[i] = append([]float32(nil), bufs[o.Buffer][:l]...)
		n += 4 * int64(len(out[i]))
	}
	job.Timings.ReadbackMs = ms(time.Since(start))
	job.Timings.ReadbackBytes = n
	return out
}
