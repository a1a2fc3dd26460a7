// Package backend is the contract between gpucc's runtime (package gpucc at
// the module root) and the devices it runs on.
//
// A backend is a package that calls Register from an init function. Its
// Factory opens a Device; a Device compiles a sealed ir.Program into an
// Executable once (stage one) and runs that Executable many times (stage
// two), on Args that are host slices or device Buffers, writing each output
// into a caller slice or keeping it on the device.
//
// Backends do no validation, planning or policy: the runtime validates the
// graph, runs the passes, checks inputs, enforces the memory cap and
// serialises calls (a Device and its Executables are used by one goroutine
// at a time). Backends report what they did in a Stats value: the duration
// of each Stage and whether each Cache level hit, in one typed form for
// every backend.
package backend

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/gpucc/gpucc/codegen/cache"
	"github.com/gpucc/gpucc/ir"
	"github.com/gpucc/gpucc/passes"
)

// Options configure a Device when it opens.
type Options struct {
	AllowSoftware bool         // accept software GPU adapters (lavapipe, SwiftShader, WARP)
	Cache         *cache.Cache // generated code across runs and processes; never nil
	// Upload names the webgpu upload path ("writebuffer" or "staging"; ""
	// for the device's fastest) and UploadChunk its chunk size in bytes
	// (0: the path's default).
	Upload      string
	UploadChunk uint64
	// PoolBytes bounds the device memory kept between runs for reuse by
	// later runs (0: DefaultPoolBytes; negative: no pool).
	PoolBytes int64
	// Explicit says the caller named this backend (not auto selection): a
	// backend whose compiler is missing may then still open, to run plans
	// that carry their kernels (wasm without Clang).
	Explicit bool
	// Threads bounds the threads a CPU backend runs one kernel on (0:
	// GPUCC_THREADS, else every core the process is given; see
	// native.Threads).
	Threads int
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

// Info says what an open Device is.
type Info struct {
	Name    string // the backend's registered name
	Adapter Adapter
	// Profile is the device's limits (passes.Profile, Name the backend's);
	// a zero limit is unbounded.
	Profile passes.Profile
	// ChecksHost says that Executable.Run checks host Args for ±Inf and
	// NaN while it copies them to the device (no second pass over the
	// data), failing with a *NonFiniteError; the runtime then does not
	// scan them itself.
	ChecksHost bool
	// ChecksOutputs says that Run and Pending.Wait check the host outputs
	// for ±Inf and NaN while they read them back (no second pass),
	// failing with a *NonFiniteOutputError; the runtime then does not
	// scan them itself.
	ChecksOutputs bool
	// TypedIslands says that the device's typed code (TypedDevice) runs a
	// typed graph's float32 stretches as compiled float32 programs itself,
	// on the device: the runtime then gives it the whole graph instead of
	// cutting it into float and typed segments with host tensors between
	// them (gpucc's split.go).
	TypedIslands bool
	// TypedBuffers says that the device's typed executables take device
	// Buffers for input nodes of every dtype (TypedCall.Bufs) and keep
	// outputs of every dtype on the device (TypedCall.Keep). Elsewhere the runtime reads
	// a DeviceTensor input to the host for a typed run, and uploads a kept
	// output after it.
	TypedBuffers bool
}

// NonFiniteOutputError is a host output holding ±Inf or NaN, found by a
// backend that ChecksOutputs.
type NonFiniteOutputError struct {
	Output int // the program output
	Index  int // the element
	Value  float32
}

func (e *NonFiniteOutputError) Error() string {
	return fmt.Sprintf("output %d element %d is %v", e.Output, e.Index, e.Value)
}

// NonFiniteError is a host Arg holding ±Inf or NaN, found by a backend
// that ChecksHost.
type NonFiniteError struct {
	Buffer int // the program buffer
	Index  int // the element
	Value  float32
}

func (e *NonFiniteError) Error() string {
	return fmt.Sprintf("buf%d element %d is %v; inputs must be finite float32", e.Buffer, e.Index, e.Value)
}

// Program is a sealed program handed to Device.Compile: the lowered IR
// (sealed: a backend trusts it without checking it again), with this
// backend's prebuilt artifact when the plan carries one.
type Program struct {
	IR *ir.Sealed
	// Prebuilt is what this backend's Exporter made of IR ahead of time
	// (gpucc build embeds it in the plan, by backend name), or nil: the
	// backend then generates its own. It is opaque above the backend,
	// which decodes it and refuses, with invalid_graph, one that does not
	// fit IR (the plan's digest ties it to IR, but not to its format).
	Prebuilt []byte
	// Fast allows fast kernels (gpucc.Options.Fast): a backend with a fast
	// path may let the driver contract a matmul's multiply-add, and then
	// sets Stats.Fast. Others compile exact kernels.
	Fast bool
}

// Buffer is memory on a device holding Len float32 values. Release frees it;
// a released buffer must not be used again (the runtime guarantees that).
type Buffer interface {
	Len() int
	Release()
}

// Arg is one input buffer's value for a run: a device Buffer of the
// right length, or host data (Host) that the run copies in.
type Arg struct {
	Buf  Buffer
	Host []float32
}

// Dest says where one program output goes: into Host (of the output's
// length) or, with Keep, into a new device buffer that Run stores in Buf
// and hands to the caller. The runtime only asks to keep a buffer that is
// not an input and that no other Dest keeps.
type Dest struct {
	Host []float32
	Keep bool
	Buf  Buffer
}

// Call is one run of an Executable.
type Call struct {
	Args  []Arg  // by program buffer; zero for buffers that are not inputs
	Dests []Dest // by program output; zero for constant outputs (Buffer < 0)
	Stats *Stats // never nil
	// NonFinite says the host allows ±Inf and NaN (ir.Limits.NonFinite):
	// a backend that ChecksHost or ChecksOutputs skips those checks, and
	// the runtime makes every NaN output the quiet NaN 0x7fc00000.
	NonFinite bool
}

// Executable is a compiled program.
type Executable interface {
	// Run uploads the host Args, executes every kernel once and delivers
	// every Dest. On error it releases what it allocated (no Dest.Buf is
	// left set). It returns ctx.Err() promptly once ctx is done.
	Run(ctx context.Context, call *Call) error
	// Release frees what Compile made; the Device's caches may keep it.
	Release()
}

// CheckedReader is a Device whose Read can check for ±Inf and NaN while
// it copies (Info.ChecksOutputs): ReadChecked is Read that also returns
// the index of the first non-finite value read, or -1 (the values after
// it are unspecified).
type CheckedReader interface {
	ReadChecked(ctx context.Context, b Buffer, out []float32) (int, error)
}

// CheckedUploader is a Device whose Upload can check for ±Inf and NaN
// while it copies (Info.ChecksHost): UploadChecked is Upload that also
// returns the index of the first non-finite value of data, or -1 (b's
// contents are then unspecified).
type CheckedUploader interface {
	UploadChecked(ctx context.Context, b Buffer, data []float32) (int, error)
}

// Launcher is an Executable that can queue a run without waiting for it
// (the runtime's Executable.Launch). Launch does what Run does up to the
// kernels, submits them and returns: call's kept Dests are set at once and
// may be Args of the next Launch or Run, which the device orders after
// this one; host Dests are filled by the Pending's Wait. On error it
// releases what it allocated, as Run does. A backend without it runs
// synchronously.
type Launcher interface {
	Launch(ctx context.Context, call *Call) (Pending, error)
}

// Pending is a run that Launch queued. Wait waits for it, reads its host
// outputs into the call's Dests and releases what the run still holds;
// once ctx is done it reads nothing more and returns ctx.Err(). The kept
// Dests are the caller's whatever Wait returns. Wait is called exactly
// once.
type Pending interface {
	Wait(ctx context.Context) error
}

// Device is an open backend.
type Device interface {
	Info() Info
	// Compile prepares p to run: code generation and compilation, through
	// the caches (Stats records the stages and hits).
	Compile(ctx context.Context, p *Program, st *Stats) (Executable, error)
	// Alloc returns a buffer of n values; its contents are undefined.
	Alloc(ctx context.Context, n int) (Buffer, error)
	// Upload copies data (len == b.Len()) into b.
	Upload(ctx context.Context, b Buffer, data []float32) error
	// Read copies b into out (len == b.Len()).
	Read(ctx context.Context, b Buffer, out []float32) error
	// Close releases the device and every buffer still held.
	Close()
}

// Tuner is a Device with tuned matmul tiles (webgpu: runtime/gpu/tune's
// table for its adapter). TileFor returns the tiling pass's chooser for
// exact or fast kernels, or nil.
type Tuner interface {
	TileFor(fast bool) passes.TileChooser
}

// Factory opens a Device, or says why it cannot run here.
type Factory func(opts Options) (Device, error)

// Exporter makes a backend's artifacts for a sealed program ahead of time,
// with no device: what `gpucc build` embeds in a plan (Export.Prebuilt,
// handed back to the backend as Program.Prebuilt) and writes beside it.
// A backend registers one beside its Factory (RegisterExporter), from a
// file that builds wherever the generator does (no cgo, no browser), so
// that packages above the backends never know what a shader, a C unit or
// a module is.
type Exporter interface {
	Export(ctx context.Context, p *ir.Sealed) (*Export, error)
	// Check refuses (invalid_graph) an artifact that does not decode or
	// does not fit p: the runtime asks it of every artifact a plan from
	// bytes carries, so that one made for another program is refused at
	// Load on any backend, as the backend that reads it refuses it.
	Check(p *ir.Sealed, prebuilt []byte) error
}

// Export is what an Exporter made of a program.
type Export struct {
	// Prebuilt is the backend's artifact, opaque above it; nil when the
	// backend takes none (it then generates its code when it compiles).
	Prebuilt []byte
	// Files are readable sources for the build's output directory, by
	// name relative to it, in order.
	Files []File
	// Kernels, when the backend can say, describe how it dispatches each
	// kernel of the program, in program order (the manifest shows them).
	Kernels []KernelDesc
}

// File is one file of an Export.
type File struct {
	Name string
	Data []byte
}

// KernelDesc is how a backend dispatches one kernel.
type KernelDesc struct {
	File      string   // its source among Export.Files
	Source    []byte   // its source (the manifest records its SHA-256)
	Workgroup [3]int   // threads per workgroup
	Dispatch  [3]int   // workgroups
	Bindings  []string // each binding's kind: "read-only-storage", "storage" or "uniform"
}

var (
	registryMu sync.Mutex
	registry   = map[string]Factory{}
	exporters  = map[string]Exporter{}
)

// RegisterExporter makes name's Exporter available. Backends call it from
// init, beside Register.
func RegisterExporter(name string, e Exporter) {
	registryMu.Lock()
	defer registryMu.Unlock()
	if _, dup := exporters[name]; dup {
		panic("backend: exporter " + name + " registered twice")
	}
	exporters[name] = e
}

// ExporterOf returns the Exporter registered under name.
func ExporterOf(name string) (Exporter, bool) {
	registryMu.Lock()
	defer registryMu.Unlock()
	e, ok := exporters[name]
	return e, ok
}

// Register makes a backend available under name. Backends call it from init.
func Register(name string, f Factory) {
	registryMu.Lock()
	defer registryMu.Unlock()
	if _, dup := registry[name]; dup {
		panic("backend: " + name + " registered twice")
	}
	registry[name] = f
}

// Lookup returns the factory registered under name.
func Lookup(name string) (Factory, bool) {
	registryMu.Lock()
	defer registryMu.Unlock()
	f, ok := registry[name]
	return f, ok
}

// Names returns the names of the registered backends, sorted.
func Names() []string {
	registryMu.Lock()
	defer registryMu.Unlock()
	names := make([]string, 0, len(registry))
	for n := range registry {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Error is a backend error with a stable code, naming the backend.
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

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

// ErrorCode returns the stable code.
func (e *Error) ErrorCode() ir.Code { return e.Code }

// Is reports whether target is e's code, so that errors.Is(err,
// ir.ErrExecutionFailed) works on backend errors as on ir's.
func (e *Error) Is(target error) bool {
	c, ok := target.(ir.Code)
	return ok && c == e.Code
}

// Errorf returns an *Error of code for backend.
func Errorf(code ir.Code, backend, format string, args ...any) *Error {
	return &Error{Code: code, Backend: backend, Err: fmt.Errorf(format, args...)}
}

// KernelTimer is an Executable that can time each kernel of a run on its own
// (the runtime's RunOptions.KernelTimes). RunEachTimed is Run with every kernel
// recorded, submitted and waited for alone, in program order, and returns
// each kernel's time; the outputs are Run's. Each kernel runs in a
// submission of its own, so the times' sum is not a run's time.
type KernelTimer interface {
	RunEachTimed(ctx context.Context, call *Call) ([]KernelTime, error)
}

// KernelTime is one kernel's time in a RunEachTimed.
type KernelTime struct {
	Name, Kind string        // the kernel's (ir.Kernel's Name, its Kind's String)
	Time       time.Duration // by the device's timestamps when GPU, else the wall time of its submission and wait
	GPU        bool
}
