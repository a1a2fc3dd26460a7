package bench

import (
	"encoding/json"
	"fmt"
	"os"

	"github.com/gpucc/gpucc/ir"
)

// Torch is what bench/torch_bench.py prints: PyTorch's figures for the
// side-by-side workloads on the same machine.
type Torch struct {
	Device         string  `json:"device"`
	Version        string  `json:"torch"`
	ReluMulAddN    int     `json:"relu_mul_add_n"`
	ReluMulAddMs   float64 `json:"relu_mul_add_ms"` // CUDA-event time of the kernels
	MatmulN        int     `json:"matmul_n"`
	MatmulMs       float64 `json:"matmul_ms"`
	UploadBytes    int64   `json:"upload_bytes"`
	UploadGBps     float64 `json:"upload_gbps"`      // pageable host to device
	ReadbackGBps   float64 `json:"readback_gbps"`    // device to pageable host
	TinyDispatchUs float64 `json:"tiny_dispatch_us"` // wall clock: launch and synchronize
	// Error is why torch_bench.py measured nothing (no torch, no CUDA).
	Error string `json:"error,omitempty"`
}

// ReadTorch reads a torch_bench.py output file; one that reports an error
// is an error.
func ReadTorch(path string) (*Torch, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, ir.Errorf(ir.CodeIO, -1, "", "bench: torch figures: %v", err)
	}
	var t Torch
	if err := json.Unmarshal(b, &t); err != nil {
		return nil, fmt.Errorf("bench: torch figures %s: %w", path, err)
	}
	if t.Error != "" {
		return nil, fmt.Errorf("bench: torch figures %s: torch_bench.py measured nothing: %s", path, t.Error)
	}
	return &t, nil
}

// Ratio is one gpucc figure beside PyTorch's.
type Ratio struct {
	What  string  `json:"what"`
	Gpucc float64 `json:"gpucc"`
	Torch float64 `json:"torch"`
	Unit  string  `json:"unit"`
	// Ratio is gpucc/torch for times and torch/gpucc for rates: above 1
	// means gpucc is slower.
	Ratio float64 `json:"slowdown"`
}

// Compare pairs the report's webgpu cases with PyTorch's figures, where
// both were measured.
func (r *Report) Compare() []Ratio {
	t := r.Torch
	if t == nil {
		return nil
	}
	find := func(workload string, size int) *Case {
		for i, c := range r.Cases {
			if c.Backend == "webgpu" && c.Error == "" && c.Workload == workload && c.Size == size {
				return &r.Cases[i]
			}
		}
		return nil
	}
	var out []Ratio
	add := func(what string, g, tv float64, unit string, rate bool) {
		if g <= 0 || tv <= 0 {
			return
		}
		x := Ratio{What: what, Gpucc: g, Torch: tv, Unit: unit, Ratio: g / tv}
		if rate {
			x.Ratio = tv / g
		}
		out = append(out, x)
	}
	// PyTorch times kernels with CUDA events; gpucc's dispatch time is
	// kernel time only on the gpu-timestamp clock.
	kernel := func(c *Case) string {
		if c.Warm.DispatchClock == "gpu-timestamp" {
			return "kernel"
		}
		return "dispatch (gpucc: " + c.Warm.DispatchClock + " clock; torch: kernel)"
	}
	if c := find("relu(a*b+c)", t.ReluMulAddN); c != nil {
		add(fmt.Sprintf("relu(a*b+c) over %d, %s", t.ReluMulAddN, kernel(c)), c.Warm.DispatchMs, t.ReluMulAddMs, "ms", false)
	}
	if c := find("matmul", t.MatmulN); c != nil {
		add(fmt.Sprintf("matmul %d³ fp32, %s", t.MatmulN, kernel(c)), c.Warm.DispatchMs, t.MatmulMs, "ms", false)
	}
	var up, down, tiny float64
	for _, c := range r.Cases {
		if c.Backend != "webgpu" || c.Error != "" {
			continue
		}
		if c.Warm.UploadMs > 0 && c.Warm.UploadBytes >= 1<<24 {
			up = max(up, float64(c.Warm.UploadBytes)/c.Warm.UploadMs/1e6)
		}
		if c.Warm.ReadbackMs > 0 && c.Warm.ReadbackBytes >= 1<<24 {
			down = max(down, float64(c.Warm.ReadbackBytes)/c.Warm.ReadbackMs/1e6)
		}
		// PyTorch's tiny figure is a launch and synchronize on the wall
		// clock; a gpu-timestamp dispatch time leaves both out.
		if c.Workload == "relu(a*b+c)" && c.Size == 1<<10 && c.Warm.DispatchClock == "wall" {
			tiny = c.Warm.DispatchMs * 1000
		}
	}
	add("upload, best case ≥16 MiB", up, t.UploadGBps, "GB/s", true)
	add("readback, best case ≥16 MiB", down, t.ReadbackGBps, "GB/s", true)
	add("tiny kernel (gpucc: 1K elements, torch: 64), launch and wait", tiny, t.TinyDispatchUs, "µs", false)
	return out
}
