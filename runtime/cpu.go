package runtime

import (
	"time"

	"github.com/gpucc/gpucc/cpuref"
)

func init() { Register("cpu", func(Options) (Backend, error) { return cpuBackend{}, nil }) }

// cpuBackend evaluates the source graph with cpuref: the reference itself.
type cpuBackend struct{}

func (cpuBackend) Name() string      { return "cpu" }
func (cpuBackend) Adapter() *Adapter { return &Adapter{Name: "cpuref", Type: "cpu"} }
func (cpuBackend) MaxBindings() int  { return 0 }
func (cpuBackend) Close()            {}

func (cpuBackend) Run(job *Job) ([][]float32, error) {
	start := time.Now()
	vals := cpuref.Eval(job.Graph)
	job.Timings.DispatchMs = ms(time.Since(start))
	job.Timings.DispatchClock = "wall"
	out := make([][]float32, len(job.Program.Outputs))
	for i, o := range job.Program.Outputs {
		if o.Buffer >= 0 {
			out[i] = vals[outputNode(job, o.Name)]
		}
	}
	return out, nil
}

func outputNode(job *Job, name string) int {
	for _, o := range job.Graph.Outputs {
		if o.Name == name {
			return int(o.ID)
		}
	}
	return -1
}
