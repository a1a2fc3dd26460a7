package gpucc

import (
	"time"

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

// addCompile adds what sealing and loading e took to t.
func addCompile(t *Timings, e *Executable) {
	t.PassesMs += e.plan.PassesMs
	t.CodegenMs += ms(e.compile.Durations[backend.StageCodegen])
	t.CompileMs += ms(e.compile.Durations[backend.StageCompile])
	t.TotalMs += e.plan.PassesMs + ms(e.compile.Durations[backend.StageCodegen]+e.compile.Durations[backend.StageCompile])
}

// ms converts a duration to fractional milliseconds.
func ms(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e6 }
