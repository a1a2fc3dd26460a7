package runtime

import (
	"errors"
	"time"

	"github.com/gpucc/gpucc/grad"
	"github.com/gpucc/gpucc/ir"
)

// TrainResult is what Train returns; gpucc train prints it as JSON.
type TrainResult struct {
	Backend string   `json:"backend"`
	Adapter *Adapter `json:"adapter,omitempty"`
	// Losses holds the loss before each step's update, one per step.
	Losses []float32 `json:"losses"`
	// Params holds every parameter after the last step, by name.
	Params map[string]Tensor `json:"params"`
	// Timings are summed over the steps; TotalMs includes building the
	// step graph.
	Timings          Timings   `json:"timings"`
	Steps            int       `json:"steps"`
	Kernels          int       `json:"kernels"` // per step
	FallbackAttempts []Attempt `json:"fallbackAttempts"`
}

// Train runs steps steps of plain SGD with learning rate lr on g's output
// named loss (shape []), updating every parameter (input marked Param) by
// p -= lr·∂loss/∂p. The step graph (grad.Step) is built once; each step runs
// it with the current parameters as input data and reads the updated ones
// back, so parameters are uploaded and read back on every step (they do not
// stay on the device between steps). g is not modified.
func (rt *Runtime) Train(g *ir.Graph, loss string, lr float32, steps int) (*TrainResult, error) {
	start := time.Now()
	if steps < 0 {
		return nil, ir.Errorf(ir.CodeInvalidGraph, -1, "steps", "%d steps; want 0 or more", steps)
	}
	rt.mu.Lock()
	b := rt.backend
	rt.mu.Unlock()
	if b == nil {
		return nil, &Error{Code: ir.CodeBackendUnavailable, Err: errors.New("runtime is closed")}
	}
	sg, err := grad.Step(g, loss, lr)
	if err != nil {
		return nil, err
	}
	params := g.Params()
	res := &TrainResult{Backend: b.Name(), Adapter: b.Adapter(), Steps: steps,
		Losses: []float32{}, Params: map[string]Tensor{}, FallbackAttempts: append([]Attempt{}, rt.attempts...)}
	for _, p := range params {
		n := &g.Nodes[p.ID]
		res.Params[p.Name] = Tensor{Shape: append([]int{}, n.Shape...), Data: append([]float32(nil), n.Data...)}
	}
	for range steps {
		for _, p := range params {
			// The step graph shares g's data until here: replace the
			// slice, never write into it.
			sg.Nodes[p.ID].Data = res.Params[p.Name].Data
		}
		r, err := rt.Run(sg)
		if err != nil {
			return nil, err
		}
		res.Losses = append(res.Losses, r.Outputs[loss].Data[0])
		for _, p := range params {
			res.Params[p.Name] = r.Outputs[p.Name]
		}
		res.Kernels = r.Kernels
		addTimings(&res.Timings, &r.Timings)
	}
	res.Timings.TotalMs = ms(time.Since(start))
	return res, nil
}

// addTimings adds the stages of one run to sum.
func addTimings(sum, t *Timings) {
	sum.PassesMs += t.PassesMs
	sum.CodegenMs += t.CodegenMs
	sum.CompileMs += t.CompileMs
	sum.UploadMs += t.UploadMs
	sum.UploadBytes += t.UploadBytes
	sum.DispatchMs += t.DispatchMs
	sum.DispatchClock = t.DispatchClock
	sum.FirstDispatchMs += t.FirstDispatchMs
	sum.ReadbackMs += t.ReadbackMs
	sum.ReadbackBytes += t.ReadbackBytes
}
