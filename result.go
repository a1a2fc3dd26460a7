package gpucc

import (
	"encoding/json"
	"math"
	"time"

	"github.com/gpucc/gpucc/codegen/wgsl"
	"github.com/gpucc/gpucc/runtime/backend"
)

// Timings are the stages of one run, in milliseconds. Upload and readback
// carry their byte counts (host data a run took in, and values it
// delivered to host slices) so throughput can be computed. A stage a run
// did not have is zero: a run of an Executable has no passes, codegen or
// compile (Runtime.Run, which compiles, reports them).
//
// A run executes its kernels once. When that run was the first to use its
// kernels or some of its buffers (drivers finish compiling at the first
// dispatch, and fresh memory is mapped at first touch), FirstDispatchMs is
// its dispatch's wall time, flagged by being non-zero; DispatchMs is the
// same dispatch, from GPU timestamps when DispatchClock says
// "gpu-timestamp", else wall time.
type Timings struct {
	PassesMs        float64 `json:"passesMs"`
	CodegenMs       float64 `json:"codegenMs"`
	CompileMs       float64 `json:"compileMs"`
	UploadMs        float64 `json:"uploadMs"`
	UploadBytes     int64   `json:"uploadBytes"`
	DispatchMs      float64 `json:"dispatchMs"`
	DispatchClock   string  `json:"dispatchClock"` // "gpu-timestamp" or "wall"
	FirstDispatchMs float64 `json:"firstDispatchMs,omitempty"`
	ReadbackMs      float64 `json:"readbackMs"`
	ReadbackBytes   int64   `json:"readbackBytes"`
	TotalMs         float64 `json:"totalMs"`
	// StartupMs is opening the backend (a device, a compiler probe), when
	// the run opened it: gpucc.Run and gpucc run do, and count it in
	// TotalMs; a Runtime's own runs do not.
	StartupMs float64 `json:"startupMs,omitempty"`
	// ImportMs is reading the graph and importing it (an .onnx model's
	// import, a graph JSON's decode), when the run read it: gpucc run
	// does, and counts it in TotalMs. With PassesMs, CodegenMs and
	// CompileMs it is a model's first compile, stage by stage.
	ImportMs float64 `json:"importMs,omitempty"`
}

// Add adds o's stages to t: every duration, TotalMs included, and every
// byte count, so that t sums runs (a training loop's steps) or a compile
// and its first run. DispatchClock becomes o's when o names one (runs of
// one Executable share their clock). A caller that times the whole and
// the stages overlap sets TotalMs itself afterwards. TestTimingsAdd
// fails on a field Add leaves out.
func (t *Timings) Add(o Timings) {
	t.PassesMs += o.PassesMs
	t.CodegenMs += o.CodegenMs
	t.CompileMs += o.CompileMs
	t.UploadMs += o.UploadMs
	t.UploadBytes += o.UploadBytes
	t.DispatchMs += o.DispatchMs
	if o.DispatchClock != "" {
		t.DispatchClock = o.DispatchClock
	}
	t.FirstDispatchMs += o.FirstDispatchMs
	t.ReadbackMs += o.ReadbackMs
	t.ReadbackBytes += o.ReadbackBytes
	t.TotalMs += o.TotalMs
	t.StartupMs += o.StartupMs
	t.ImportMs += o.ImportMs
}

// KernelTime is one kernel's time in a run timed kernel by kernel
// (RunOptions.KernelTimes).
type KernelTime struct {
	Kernel string  `json:"kernel"` // its name, as --explain prints it
	Kind   string  `json:"kind"`   // matmul, elementwise, sum, …
	Ms     float64 `json:"ms"`
	Clock  string  `json:"clock"` // "gpu-timestamp", or "wall" where the device has no timestamps
}

// Result is what one run returns; the CLI prints it as JSON.
type Result struct {
	Backend string            `json:"backend"`
	Adapter *Adapter          `json:"adapter,omitempty"`
	Outputs map[string]Tensor `json:"outputs"`
	// Kept holds the outputs RunOptions.Keep left on the device.
	Kept             map[string]*DeviceTensor `json:"-"`
	Timings          Timings                  `json:"timings"`
	Kernels          int                      `json:"kernels"`
	Cache            map[string]bool          `json:"cache,omitempty"` // hit or miss per cache level
	FallbackAttempts []Attempt                `json:"fallbackAttempts"`
	// KernelTimes is each kernel's time, in program order, when the run
	// was timed kernel by kernel (RunOptions.KernelTimes).
	KernelTimes []KernelTime `json:"kernelTimes,omitempty"`
	// Exact says the outputs are cpuref's, bit for bit (up to the GPU's
	// flushing of subnormals). It is false only for fast mode's matmuls and
	// convolutions (Options.Fast); ErrorBound then bounds each matmul or
	// convolution output c: |c − Σ_k a·b| ≤ ErrorBound·Σ_k |a·b| over the
	// float32 values it multiplied (K·2⁻²⁴ for the longest K, K a
	// convolution's taps per output, wgsl.FastErrorBound), which
	// cpuref's own result also meets. Every other op is exact given its
	// inputs, so an error can carry through later ops.
	Exact      bool    `json:"exact"`
	ErrorBound float64 `json:"errorBound,omitempty"`
}

// exactness returns what a run of e's kernels reports as Exact and
// ErrorBound.
func exactness(e *Executable) (bool, float64) {
	if !e.compile.Fast {
		return true, 0
	}
	bound := 0.0
	for _, k := range e.plan.Program.Kernels {
		if c := k.Kind.Info().Contracts; c != nil { // the products fast mode sums in any order
			bound = max(bound, wgsl.FastErrorBound(c(&k)))
		}
	}
	return bound == 0, bound
}

// timings converts a backend's typed stats to Timings.
func timings(st *backend.Stats) Timings {
	t := Timings{
		CodegenMs:     ms(st.Durations[backend.StageCodegen]),
		CompileMs:     ms(st.Durations[backend.StageCompile]),
		UploadMs:      ms(st.Durations[backend.StageUpload]),
		UploadBytes:   st.UploadBytes,
		DispatchMs:    ms(st.Durations[backend.StageDispatch]),
		DispatchClock: "wall",
		ReadbackMs:    ms(st.Durations[backend.StageReadback]),
		ReadbackBytes: st.ReadbackBytes,
	}
	if st.FirstDispatch {
		t.FirstDispatchMs = t.DispatchMs
	}
	if st.GPUTimed {
		t.DispatchMs, t.DispatchClock = ms(st.GPUDispatch), "gpu-timestamp"
	}
	return t
}

// mergeCompile merges what sealing and loading e took into res, the
// result of e's first run (Runtime.Run, ExecutableCache.Run): the
// compile's timings added to the run's, and each cache the run did not
// report itself.
func (res *Result) mergeCompile(e *Executable) {
	t, caches := e.CompileTimings()
	res.Timings.Add(t)
	for k, v := range caches {
		if res.Cache == nil {
			res.Cache = map[string]bool{}
		}
		if _, ok := res.Cache[k]; !ok {
			res.Cache[k] = v
		}
	}
}

// addCompile adds what sealing and loading e took to t.
func addCompile(t *Timings, e *Executable) {
	if e.split != nil {
		for _, x := range e.split.segs {
			addCompile(t, x)
		}
		return
	}
	passes := 0.0
	if e.plan != nil { // a typed graph has none: it is not sealed
		passes = e.plan.PassesMs
	}
	t.PassesMs += passes
	t.CodegenMs += ms(e.compile.Durations[backend.StageCodegen])
	t.CompileMs += ms(e.compile.Durations[backend.StageCompile])
	t.TotalMs += passes + ms(e.compile.Durations[backend.StageCodegen]+e.compile.Durations[backend.StageCompile])
}

// MarshalJSON writes t with every time rounded to the microsecond (three
// decimals of a millisecond): the precision the clocks give, without the
// float noise of the nanosecond conversion.
func (t Timings) MarshalJSON() ([]byte, error) {
	type plain Timings // without this method
	p := plain(t)
	for _, f := range []*float64{&p.PassesMs, &p.CodegenMs, &p.CompileMs, &p.UploadMs, &p.DispatchMs, &p.FirstDispatchMs, &p.ReadbackMs, &p.TotalMs, &p.StartupMs, &p.ImportMs} {
		*f = math.Round(*f*1e3) / 1e3
	}
	return json.Marshal(p)
}

// MarshalJSON writes kt with its time rounded to the microsecond, as
// Timings' (the Go value keeps the timestamps' nanoseconds).
func (kt KernelTime) MarshalJSON() ([]byte, error) {
	type plain KernelTime // without this method
	p := plain(kt)
	p.Ms = math.Round(p.Ms*1e3) / 1e3
	return json.Marshal(p)
}

// ms converts a duration to fractional milliseconds.
func ms(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e6 }
