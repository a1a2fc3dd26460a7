package gpucc

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gpucc/gpucc/codegen/cache"
	"github.com/gpucc/gpucc/ir"
	"github.com/gpucc/gpucc/passes"
	"github.com/gpucc/gpucc/runtime/backend"
)

// Chain is the order auto tries backends in. Native is never tried: it
// loads generated machine code into the process, so it must be asked for.
// Each build keeps only what it can hold: webgl2 in the browser only
// (chain_other.go), wasm outside it only (chain_js.go).
var Chain = []string{"webgpu", "webgl2", "wasm", "cpu"}

// Options configure a Runtime.
type Options struct {
	Backend       string // "auto" (or ""), or one backend name
	AllowSoftware bool   // accept software GPU adapters (lavapipe, SwiftShader, WARP)
	// Limits bound the graphs Compile accepts (ir.Validate) and what the
	// passes may produce.
	Limits ir.Limits
	// Passes tunes compilation; its device fields default to the device's
	// Profile.
	Passes passes.Options
	// Cache keeps generated code across runs and processes; nil means
	// cache.Default() (memory, and disk under cache.DefaultDir()).
	Cache *cache.Cache
	// Upload names the webgpu upload path ("writebuffer" or "staging", see
	// gpu.UploadPath; "" for staging, the fastest on the H200) and
	// UploadChunk its chunk size in bytes (0: the path's default).
	Upload      string
	UploadChunk uint64
	// PoolBytes bounds the device memory kept between runs for reuse by
	// later runs of same-sized buffers (0: DefaultPoolBytes; negative: no
	// pool).
	PoolBytes int64
	// MaxDeviceBytes caps the device memory held at once by live
	// DeviceTensors, the embedded data executables keep on the device, and
	// the buffers of the run in progress (0: no cap).
	MaxDeviceBytes int64
	// Fast compiles matmuls and convolutions in fast mode where the
	// backend has one (webgpu on wgpu-native): the driver may contract
	// each multiply-add into an FMA, so results differ from cpuref's
	// within a stated bound and carry Exact false and ErrorBound
	// (wgsl.FastErrorBound). Other backends, and graphs with neither,
	// compile exact kernels and report Exact true. Fast changes the generated code, so it applies
	// when a graph is compiled (Compile, Load).
	Fast bool
	// Threads bounds the threads the native backend runs one kernel on; the
	// bits do not depend on it. 0 means $GPUCC_THREADS when set, else
	// every core the process is given (runtime.GOMAXPROCS). In a browser
	// page the wasm backend takes it too (0: the page's cores, where the
	// page is cross-origin isolated; runtime/wasm's threads.go).
	Threads int
}

// DefaultPoolBytes is the default bound of a backend's buffer pool.
const DefaultPoolBytes = backend.DefaultPoolBytes

// Attempt is one failed backend initialisation during auto selection.
type Attempt struct {
	Backend string  `json:"backend"`
	Code    ir.Code `json:"code"`
	Error   string  `json:"error"`
}

// Runtime holds an open backend; reuse it to amortise device setup and the
// caches across runs. A Runtime is safe for concurrent use; its calls are
// serialised.
type Runtime struct {
	mu       sync.Mutex
	opts     Options
	dev      backend.Device // nil once closed; guarded by mu
	info     backend.Info
	tiles    passes.TileChooser // the device's tuned matmul tiles, or nil
	attempts []Attempt
	live     int64 // bytes held by live tensors; guarded by mu
	held     int64 // bytes of executables' embedded data on the device (Executable.embedded); guarded by mu
	tensors  map[*DeviceTensor]struct{}
	exes     map[*Executable]struct{}
	pending  map[*Pending]struct{} // launched and not yet waited for
	broken   atomic.Pointer[Error] // set by guard when the backend panics
}

// Open opens the backend opts asks for (the first that works, for auto).
func Open(ctx context.Context, opts Options) (*Runtime, error) {
	if opts.Cache == nil {
		opts.Cache = cache.Default()
	}
	rt := &Runtime{opts: opts, tensors: map[*DeviceTensor]struct{}{}, exes: map[*Executable]struct{}{}, pending: map[*Pending]struct{}{}}
	names := Chain
	if opts.Backend != "" && opts.Backend != "auto" {
		names = []string{opts.Backend}
	}
	bopts := backend.Options{AllowSoftware: opts.AllowSoftware, Cache: opts.Cache,
		Upload: opts.Upload, UploadChunk: opts.UploadChunk, PoolBytes: opts.PoolBytes, Explicit: len(names) == 1,
		Threads: opts.Threads}
	for _, name := range names {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		var dev backend.Device
		f, ok := backend.Lookup(name)
		err := fmt.Errorf("backend %q is not built into this binary (have %v; a program links the backends in with import _ \"github.com/gpucc/gpucc/runtime/all\")", name, Backends())
		if ok {
			dev, err = open(f, bopts)
		}
		if err == nil {
			rt.dev, rt.info = dev, dev.Info()
			if t, ok := dev.(backend.Tuner); ok {
				rt.tiles = t.TileFor(opts.Fast)
			}
			return rt, nil
		}
		if len(names) == 1 {
			return nil, &Error{Code: ir.CodeBackendUnavailable, Backend: name, Err: err}
		}
		rt.attempts = append(rt.attempts, Attempt{Backend: name, Code: ir.CodeBackendUnavailable, Error: err.Error()})
	}
	return nil, &Error{Code: ir.CodeBackendUnavailable, Err: fmt.Errorf("no backend could start: %v", rt.attempts)}
}

// open calls f, turning a panic inside a backend's setup into an error.
func open(f backend.Factory, opts backend.Options) (d backend.Device, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("initialisation panicked: %v", r)
		}
	}()
	return f(opts)
}

// Backend returns the name of the backend the Runtime opened, also after
// Close.
func (rt *Runtime) Backend() string { return rt.info.Name }

// Adapter describes the device the Runtime runs on.
func (rt *Runtime) Adapter() Adapter { return rt.info.Adapter }

// Profile returns the device's limits, which Compile plans for.
func (rt *Runtime) Profile() Profile { return rt.info.Profile }

// FallbackAttempts lists the backends auto selection tried and could not
// open before this one.
func (rt *Runtime) FallbackAttempts() []Attempt { return slices.Clone(rt.attempts) }

// Close releases every Executable and DeviceTensor of the Runtime and the
// backend. Closing twice is a no-op.
func (rt *Runtime) Close() {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	if rt.dev == nil {
		return
	}
	rt.closePendingLocked()
	for t := range rt.tensors {
		t.releaseLocked()
	}
	for e := range rt.exes {
		e.releaseLocked()
	}
	rt.dev.Close()
	rt.dev = nil
}

// LiveTensors returns the number of DeviceTensors not yet released and the
// device bytes they hold.
func (rt *Runtime) LiveTensors() (n int, bytes int64) {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	return len(rt.tensors), rt.live
}

// dead reports whether the Runtime refuses work: it is closed, or a
// panic inside its backend broke it (Broken).
func (rt *Runtime) dead() bool { return rt.dev == nil || rt.broken.Load() != nil }

// errClosed is the error of a call on a dead Runtime: the panic that
// broke it, or runtime is closed.
func (rt *Runtime) errClosed() error {
	if b := rt.broken.Load(); b != nil && rt.dev != nil {
		return b
	}
	return &Error{Code: ir.CodeBackendUnavailable, Backend: rt.info.Name, Err: errors.New("runtime is closed")}
}

// Broken returns the error of the backend panic that broke the Runtime,
// or nil. A panic inside a backend is a bug in gpucc; it comes back as an
// execution_failed error, and the backend may be left half way through a
// device operation (a staging buffer mapped, a submission recorded), where
// its next call could abort the process in the driver. So the Runtime
// refuses all further work with that same error, and its owner closes it
// and opens another (serve does so for the next request).
func (rt *Runtime) Broken() error {
	if b := rt.broken.Load(); b != nil {
		return b
	}
	return nil
}

// reserve checks that n more device bytes fit under the cap; rt.mu held.
func (rt *Runtime) reserve(n int64) error {
	if c := rt.opts.MaxDeviceBytes; c > 0 && rt.live+rt.held+n > c {
		return ir.Errorf(ir.CodeLimitExceeded, -1, "", "%d device bytes are live and this needs %d more; the cap is %d (raise Options.MaxDeviceBytes)", rt.live+rt.held, n, c)
	}
	return nil
}

// Run is the one-shot form: compile g, run it once with its embedded data,
// release the executable. A typed graph (a value of a dtype other than
// float32, or a typed op: Typed) runs on the cpu backend, as
// cpuref.EvalTyped computes it, and on a backend with typed code
// (backend.TypedDevice: native, wasm, webgpu, webgl2) with its bits; every other backend
// refuses it by name (unsupported) until its kernels handle the dtype.
func (rt *Runtime) Run(ctx context.Context, g *ir.Graph) (*Result, error) {
	exe, err := rt.Compile(ctx, g)
	if err != nil {
		return nil, err
	}
	defer exe.Release()
	res, err := exe.Run(ctx, nil)
	if err != nil {
		return nil, err
	}
	res.mergeCompile(exe)
	return res, nil
}

// Run opens a Runtime, runs g once and closes it. With auto selection, a
// typed graph (Typed) runs on the cpu backend, the one that computes every
// dtype so far.
func Run(ctx context.Context, g *ir.Graph, opts Options) (*Result, error) {
	if (opts.Backend == "" || opts.Backend == "auto") && Typed(g) {
		opts.Backend = "cpu"
	}
	start := time.Now()
	rt, err := Open(ctx, opts)
	if err != nil {
		return nil, err
	}
	defer rt.Close()
	startup := ms(time.Since(start))
	res, err := rt.Run(ctx, g)
	if res != nil {
		res.Timings.StartupMs = startup
		res.Timings.TotalMs += startup
	}
	return res, err
}

// Compile seals g for this Runtime's device (Seal with the Runtime's
// limits, passes options and Profile) and loads the plan. Unless the
// passes options name a tile, matmuls take the device's tuned tiles where
// it has them (the webgpu backend's table, for the adapter, the shape class
// and the mode of Options.Fast).
func (rt *Runtime) Compile(ctx context.Context, g *ir.Graph) (*Executable, error) {
	if Typed(g) && rt.typedRunner() {
		if rt.info.Name == "cpu" || rt.info.TypedIslands {
			return rt.compileTyped(ctx, g)
		}
		return rt.compileSplit(ctx, g)
	}
	return rt.compileFloat(ctx, g, rt.opts.Limits)
}

// compileFloat seals float32 graph g under limits with the Runtime's
// profile and passes options (the device's tuned tiles unless the options
// name one) and loads the plan: Compile's path, and a split graph's float
// segments' (segmentLimits).
func (rt *Runtime) compileFloat(ctx context.Context, g *ir.Graph, limits ir.Limits) (*Executable, error) {
	popts := rt.opts.Passes
	if popts.TileFor == nil {
		popts.TileFor = rt.tiles
	}
	plan, err := Seal(g, limits, rt.info.Profile, popts)
	if err != nil {
		return nil, err
	}
	return rt.load(ctx, plan, limits) // under the limits it was sealed with: trusted, not checked again
}

// Load compiles a sealed plan on this Runtime's device: code generation
// (skipped for the kernels the plan carries) and compilation, through the
// caches. It refuses a plan whose profile the device cannot meet, and,
// with invalid_graph, one that does not hold together: inputs or outputs
// that do not match the program's buffers, a shape or an offset past a
// buffer, or kernels generated for another program (see BindKernels). A
// plan that Seal made is trusted and its program not checked again; any
// other (one decoded from bytes) is checked in full. With
// Options.Fast, a backend with a fast path generates fast matmuls (not
// for kernels the plan carries, which run as they are).
func (rt *Runtime) Load(ctx context.Context, plan *Plan) (*Executable, error) {
	return rt.load(ctx, plan, rt.opts.Limits)
}

// load is Load checking plan under limits.
func (rt *Runtime) load(ctx context.Context, plan *Plan, limits ir.Limits) (*Executable, error) {
	if plan == nil || plan.Program == nil {
		return nil, ir.Errorf(ir.CodeInvalidGraph, -1, "", "nil plan")
	}
	sp, err := plan.check(limits)
	if err != nil {
		return nil, err
	}
	rt.mu.Lock()
	defer rt.mu.Unlock()
	if rt.dead() {
		return nil, rt.errClosed()
	}
	if err := plan.Profile.Check(rt.info.Profile); err != nil {
		return nil, err
	}
	e := &Executable{rt: rt, plan: plan}
	bp := &backend.Program{IR: sp, Prebuilt: plan.Prebuilt[rt.info.Name], Fast: rt.opts.Fast}
	exe, err := guard(rt, func() (backend.Executable, error) { return rt.dev.Compile(ctx, bp, &e.compile) })
	if err != nil {
		return nil, rt.wrap(err)
	}
	e.exe = exe
	rt.exes[e] = struct{}{}
	return e, nil
}

// guard calls f, turning a panic inside rt's backend into an error that
// breaks rt (Broken).
func guard[T any](rt *Runtime, f func() (T, error)) (v T, err error) {
	defer func() {
		if r := recover(); r != nil {
			b := &Error{Code: ir.CodeExecutionFailed, Backend: rt.info.Name,
				Err: fmt.Errorf("backend panicked: %v; the runtime refuses further work (close it and open another)", r)}
			rt.broken.CompareAndSwap(nil, b)
			err = b
		}
	}()
	return f()
}

// wrap gives a backend error without a code execution_failed, naming the
// backend; a context's error is kept as it is.
func (rt *Runtime) wrap(err error) error {
	if err == nil || err == context.Canceled || err == context.DeadlineExceeded {
		return err
	}
	if CodeOf(err) == ir.CodeInternal {
		return &Error{Code: ir.CodeExecutionFailed, Backend: rt.info.Name, Err: err}
	}
	return err
}
