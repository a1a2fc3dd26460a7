// Package runtime compiles graphs and executes them on a backend: webgpu
// (wgpu-native, or the browser's navigator.gpu under GOOS=js), webgl2 (in
// the browser), wasm (Clang-compiled C kernels run by wazero) and cpu (the
// reference, cpuref).
//
// Backends register themselves in init functions of their own files, built
// only where they can exist. Auto selection tries Chain in order and records
// every failed initialisation in Result.FallbackAttempts; an explicit choice
// fails with backend_unavailable instead of downgrading. A missing GPU is
// never reported as a GPU result.
package runtime

import (
	"errors"
	"fmt"
	"math"
	"sort"
	"sync"
	"time"

	"github.com/gpucc/gpucc/codegen/cache"
	"github.com/gpucc/gpucc/ir"
	"github.com/gpucc/gpucc/passes"
)

// Chain is the order auto tries backends in.
var Chain = []string{"webgpu", "webgl2", "wasm", "cpu"}

// Options configure a Runtime.
type Options struct {
	Backend       string // "auto" (or ""), or one backend name
	AllowSoftware bool   // accept software GPU adapters (lavapipe, SwiftShader, WARP)
	// Limits bound the graphs Run accepts (ir.Validate) and what the
	// passes may produce.
	Limits ir.Limits
	// Passes tunes compilation; MaxBindings defaults to the device's limit.
	Passes passes.Options
	// Cache keeps generated code across runs and processes; nil means
	// cache.Default() (memory, and disk under cache.DefaultDir()).
	Cache *cache.Cache
	// Upload names the webgpu upload path ("writebuffer" or "staging", see
	// gpu.UploadPath; "" for staging, the fastest on the H200) and UploadChunk its chunk size
	// in bytes (0: the path's default).
	Upload      string
	UploadChunk uint64
	// PoolBytes bounds the device memory kept between runs for reuse by
	// later runs of same-sized buffers (0: DefaultPoolBytes; negative: no
	// pool).
	PoolBytes int64
}

// DefaultPoolBytes is the default bound of a backend's buffer pool.
const DefaultPoolBytes = 1 << 30

// Adapter describes the device a backend runs on.
type Adapter struct {
	Name     string `json:"name"`
	Driver   string `json:"driver,omitempty"`
	Backend  string `json:"backend,omitempty"`
	Type     string `json:"type,omitempty"`
	Software bool   `json:"software"`
}

// Timings are the stages of one run, in milliseconds. Upload and readback
// carry their byte counts so throughput can be computed. A backend leaves
// at zero the stages it does not have (cpu has no codegen or transfers).
//
// CompileMs is the time to create shader modules and pipelines; drivers
// finish compiling at the first dispatch, so when a run compiled anything
// its first dispatch is timed apart in FirstDispatchMs and DispatchMs is a
// second, warm dispatch of the same kernels. DispatchClock says whether
// DispatchMs is GPU time from timestamp queries or host wall time.
// On webgpu, UploadMs also covers allocating the device buffers that the
// buffer pool could not supply (Result.Cache["buffer_pool"] is then false).
type Timings struct {
	PassesMs        float64 `json:"passes_ms"`
	CodegenMs       float64 `json:"codegen_ms"`
	CompileMs       float64 `json:"compile_ms"`
	UploadMs        float64 `json:"upload_ms"`
	UploadBytes     int64   `json:"upload_bytes"`
	DispatchMs      float64 `json:"dispatch_ms"`
	DispatchClock   string  `json:"dispatch_clock"` // "gpu-timestamp" or "wall"
	FirstDispatchMs float64 `json:"first_dispatch_ms,omitempty"`
	ReadbackMs      float64 `json:"readback_ms"`
	ReadbackBytes   int64   `json:"readback_bytes"`
	TotalMs         float64 `json:"total_ms"`
}

// Attempt is one failed backend initialisation during auto selection.
type Attempt struct {
	Backend string  `json:"backend"`
	Code    ir.Code `json:"code"`
	Error   string  `json:"error"`
}

// Tensor is an output value.
type Tensor struct {
	Shape []int     `json:"shape"`
	Data  []float32 `json:"data"`
}

// Result is what one run returns; the CLI prints it as JSON.
type Result struct {
	Backend          string            `json:"backend"`
	Adapter          *Adapter          `json:"adapter,omitempty"`
	Outputs          map[string]Tensor `json:"outputs"`
	Timings          Timings           `json:"timings"`
	Kernels          int               `json:"kernels"`
	Cache            map[string]bool   `json:"cache,omitempty"` // hit or miss per cache level
	FallbackAttempts []Attempt         `json:"fallbackAttempts"`
}

// Job is one compiled graph handed to a backend.
type Job struct {
	Graph   *ir.Graph   // validated source graph (the cpu backend evaluates it)
	Program *ir.Program // lowered program (the others run it)
	Timings *Timings    // the backend fills the stages it measures
	// Cache records, per cache level, whether this run hit it
	// ("codegen_memory", "codegen_disk", "pipeline", "buffer_pool").
	Cache map[string]bool
	// Codegen caches generated code; never nil.
	Codegen *cache.Cache
}

// Backend executes jobs on one device. It is used by one goroutine at a time.
type Backend interface {
	Name() string
	Adapter() *Adapter
	// MaxBindings is the storage-buffer limit kernels must respect (0: none).
	MaxBindings() int
	// Run executes the job and returns each program output's buffer values,
	// indexed like Program.Outputs (nil for constant outputs).
	Run(job *Job) ([][]float32, error)
	Close()
}

// workgroupLimiter is a Backend whose kernels run in workgroups: the
// tiling pass fits matmul tiles to its limits, and large sums are split
// into a block per workgroup.
type workgroupLimiter interface {
	// WorkgroupLimits returns the most invocations per workgroup and bytes
	// of workgroup memory a kernel may use.
	WorkgroupLimits() (invocations, storage int)
}

// Factory opens a backend, or says why it cannot run here.
type Factory func(opts Options) (Backend, error)

var (
	registryMu sync.Mutex
	registry   = map[string]Factory{}
)

// Register makes a backend available under name. Backends call it from init.
func Register(name string, f Factory) {
	registryMu.Lock()
	defer registryMu.Unlock()
	registry[name] = f
}

// Backends returns the names of the backends built into this binary.
func Backends() []string {
	registryMu.Lock()
	defer registryMu.Unlock()
	var names []string
	for n := range registry {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Error is a runtime error with a stable code, naming the backend.
type Error struct {
	Code    ir.Code
	Backend string
	Err     error
}

func (e *Error) Error() string {
	if e.Backend == "" {
		return fmt.Sprintf("%s: %v", e.Code, e.Err)
	}
	return fmt.Sprintf("%s: %s: %v", e.Code, e.Backend, e.Err)
}
func (e *Error) Unwrap() error { return e.Err }

// ErrorCode returns the stable code.
func (e *Error) ErrorCode() ir.Code { return e.Code }

// CodeOf returns the stable code of err: its own, or internal.
func CodeOf(err error) ir.Code {
	var c interface{ ErrorCode() ir.Code }
	if errors.As(err, &c) {
		return c.ErrorCode()
	}
	return ir.CodeInternal
}

// Runtime holds an open backend; reuse it to amortise device setup and the
// compiled-shader cache across runs. A Runtime is safe for concurrent use;
// runs are serialised.
type Runtime struct {
	mu       sync.Mutex
	opts     Options
	backend  Backend // nil once closed; guarded by mu
	name     string  // the backend's name, kept after Close
	attempts []Attempt
}

// New opens the backend opts asks for (the first that works, for auto).
func New(opts Options) (*Runtime, error) {
	if opts.Cache == nil {
		opts.Cache = cache.Default()
	}
	rt := &Runtime{opts: opts}
	names := Chain
	if opts.Backend != "" && opts.Backend != "auto" {
		names = []string{opts.Backend}
	}
	for _, name := range names {
		registryMu.Lock()
		f := registry[name]
		registryMu.Unlock()
		var b Backend
		var err error
		if f == nil {
			err = fmt.Errorf("backend %q is not built into this binary (have %v)", name, Backends())
		} else {
			b, err = open(f, opts)
		}
		if err == nil {
			rt.backend, rt.name = b, b.Name()
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
func open(f Factory, opts Options) (b Backend, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("initialisation panicked: %v", r)
		}
	}()
	return f(opts)
}

// Backend returns the name of the backend the Runtime opened, also after
// Close.
func (rt *Runtime) Backend() string { return rt.name }

// Close releases the backend.
func (rt *Runtime) Close() {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	if rt.backend != nil {
		rt.backend.Close()
		rt.backend = nil
	}
}

// Run compiles and executes a validated graph.
func (rt *Runtime) Run(g *ir.Graph) (*Result, error) {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	if rt.backend == nil {
		return nil, &Error{Code: ir.CodeBackendUnavailable, Err: errors.New("runtime is closed")}
	}
	start := time.Now()
	if err := ir.Validate(g, rt.opts.Limits); err != nil {
		return nil, err
	}
	popts := rt.opts.Passes
	popts.Limits = rt.opts.Limits
	if popts.MaxBindings == 0 {
		popts.MaxBindings = rt.backend.MaxBindings()
	}
	if l, ok := rt.backend.(workgroupLimiter); ok && popts.MaxInvocations == 0 {
		popts.MaxInvocations, popts.MaxWorkgroupStorage = l.WorkgroupLimits()
		popts.SplitSums = true // a workgroup per block of a large sum
	}
	res := &Result{Backend: rt.backend.Name(), Adapter: rt.backend.Adapter(),
		FallbackAttempts: append([]Attempt{}, rt.attempts...), Outputs: map[string]Tensor{}}
	p, timings, err := passes.Compile(g, popts)
	if err != nil {
		return nil, err
	}
	for _, t := range timings {
		res.Timings.PassesMs += t.Millis
	}
	res.Kernels = len(p.Kernels)
	job := &Job{Graph: g, Program: p, Timings: &res.Timings, Cache: map[string]bool{}, Codegen: rt.opts.Cache}
	vals, err := runBackend(rt.backend, job)
	if err != nil {
		if CodeOf(err) == ir.CodeInternal {
			err = &Error{Code: ir.CodeExecutionFailed, Backend: rt.backend.Name(), Err: err}
		}
		return nil, err
	}
	if len(job.Cache) > 0 {
		res.Cache = job.Cache
	}
	for i, o := range p.Outputs {
		data := vals[i]
		if o.Buffer < 0 {
			data = make([]float32, o.Shape.Len())
			for k := range data {
				data[k] = o.Const
			}
		}
		for k, v := range data {
			if math.Float32bits(v)&0x7f800000 == 0x7f800000 { // ±Inf or NaN
				return nil, &Error{Code: ir.CodeNonFiniteOutput, Backend: rt.backend.Name(),
					Err: fmt.Errorf("output %q element %d is %v; outputs must be finite float32", o.Name, k, v)}
			}
		}
		res.Outputs[o.Name] = Tensor{Shape: append([]int{}, o.Shape...), Data: data}
	}
	res.Timings.TotalMs = ms(time.Since(start))
	return res, nil
}

// runBackend runs job on b, turning a panic inside the backend into an
// execution_failed error that names it: a caller never sees a panic trace.
func runBackend(b Backend, job *Job) (vals [][]float32, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = &Error{Code: ir.CodeExecutionFailed, Backend: b.Name(), Err: fmt.Errorf("backend panicked: %v", r)}
		}
	}()
	return b.Run(job)
}

// Run is the one-shot form: open, run once, close.
func Run(g *ir.Graph, opts Options) (*Result, error) {
	rt, err := New(opts)
	if err != nil {
		return nil, err
	}
	defer rt.Close()
	return rt.Run(g)
}

// ms converts a duration to fractional milliseconds.
func ms(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e6 }
