// Package gpucc compiles tensor graphs once and runs them many times on a
// backend: webgpu (wgpu-native, or the browser's navigator.gpu under
// GOOS=js), webgl2 (in the browser), wasm (Clang-compiled C run by wazero),
// native (the system C compiler's shared objects) and cpu (the reference,
// cpuref).
//
// The life of a graph:
//
//	rt, err := gpucc.Open(ctx, gpucc.Options{Backend: "auto"})
//	exe, err := rt.Compile(ctx, g)              // validate, plan, generate and compile, once
//	res, err := exe.Run(ctx, gpucc.Inputs{"x": gpucc.NewTensor(shape, data)})
//
// Compile validates the graph, runs the passes for the device's Profile
// (Seal) and has the backend compile the sealed Plan (Load). Run checks the
// inputs, runs every kernel once and returns the outputs. Inputs are given
// by name; an input not given takes the data embedded in the graph. An
// input without a name is named "input<N>" (ir.DefaultInputName): N is its
// id in the protocol v1 document, which Decode's lowering of broadcasts
// and reductions never shifts, or its node id in a graph built in Go. A
// graph where another input is already named so is refused
// (invalid_graph), so a name never means two inputs. Plan.Inputs lists
// every input with its name and node.
//
// Data can stay on the device between runs: Runtime.Upload makes a
// DeviceTensor, an input given as one is not uploaded again, and
// RunOptions.Keep leaves chosen outputs on the device as DeviceTensors for
// the next run. A tensor belongs to its Runtime; using it after Release,
// after the Runtime's Close, or on another Runtime fails with
// ir.CodeInvalidTensor. Options.MaxDeviceBytes caps the device memory held
// by tensors and a run's buffers, checked before allocation
// (ir.CodeLimitExceeded). Trainer runs SGD with parameters resident.
//
// Backends are packages under runtime/ that register themselves; import
// github.com/gpucc/gpucc/runtime/all for every backend this build
// supports, or single ones (runtime/cpu, runtime/wasm, ...). Auto selection
// tries Chain in order and records every failed initialisation in
// Result.FallbackAttempts; an explicit choice fails with
// backend_unavailable instead of downgrading. A missing GPU is never
// reported as a GPU result.
//
// Every blocking call takes a context.Context and returns its error once it
// is done; a cancelled run releases everything it allocated. A Runtime is
// safe for concurrent use; its calls are serialised.
package gpucc

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

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
	// every core the process is given (runtime.GOMAXPROCS).
	Threads int
}

// DefaultPoolBytes is the default bound of a backend's buffer pool.
const DefaultPoolBytes = backend.DefaultPoolBytes

// Adapter describes the device a backend runs on.
type Adapter = backend.Adapter

// Profile is a named set of device limits that a compilation targets; see
// passes.Profile. passes.WebGPUDefault is every adapter's.
type Profile = passes.Profile

// Attempt is one failed backend initialisation during auto selection.
type Attempt struct {
	Backend string  `json:"backend"`
	Code    ir.Code `json:"code"`
	Error   string  `json:"error"`
}

// Backends returns the names of the backends built into this binary.
func Backends() []string { return backend.Names() }

// Error is a runtime error with a stable code, naming the backend.
type Error = backend.Error

// CodeOf returns the stable code of err: its own, or internal; a nil err
// (no failure) has no code, "".
func CodeOf(err error) ir.Code {
	if err == nil {
		return ""
	}
	var c interface{ ErrorCode() ir.Code }
	if errors.As(err, &c) {
		return c.ErrorCode()
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return ir.CodeExecutionFailed
	}
	return ir.CodeInternal
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
		err := fmt.Errorf("backend %q is not built into this binary (have %v)", name, Backends())
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

// errClosed is the error of a call on a closed Runtime.
func (rt *Runtime) errClosed() error {
	return &Error{Code: ir.CodeBackendUnavailable, Backend: rt.info.Name, Err: errors.New("runtime is closed")}
}

// reserve checks that n more device bytes fit under the cap; rt.mu held.
func (rt *Runtime) reserve(n int64) error {
	if c := rt.opts.MaxDeviceBytes; c > 0 && rt.live+rt.held+n > c {
		return ir.Errorf(ir.CodeLimitExceeded, -1, "", "%d device bytes are live and this needs %d more; the cap (MaxDeviceBytes) is %d", rt.live+rt.held, n, c)
	}
	return nil
}

// Run is the one-shot form: compile g, run it once with its embedded data,
// release the executable. A typed graph (a value of a dtype other than
// float32, or a typed op: Typed) runs on the cpu backend only, as
// cpuref.EvalTyped computes it; every other backend refuses it by name
// (unsupported) until its kernels handle the dtype.
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
	addCompile(&res.Timings, exe)
	for k, v := range exe.compile.Caches() {
		if res.Cache == nil {
			res.Cache = map[string]bool{}
		}
		if _, ok := res.Cache[k]; !ok {
			res.Cache[k] = v
		}
	}
	return res, nil
}

// Run opens a Runtime, runs g once and closes it. With auto selection, a
// typed graph (Typed) runs on the cpu backend, the one that computes every
// dtype so far.
func Run(ctx context.Context, g *ir.Graph, opts Options) (*Result, error) {
	if (opts.Backend == "" || opts.Backend == "auto") && Typed(g) {
		opts.Backend = "cpu"
	}
	rt, err := Open(ctx, opts)
	if err != nil {
		return nil, err
	}
	defer rt.Close()
	return rt.Run(ctx, g)
}
