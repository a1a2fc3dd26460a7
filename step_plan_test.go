package gpucc_test

import (
	"testing"

	"github.com/gpucc/gpucc"
	"github.com/gpucc/gpucc/bench"
	"github.com/gpucc/gpucc/ir"
	"github.com/gpucc/gpucc/passes"
)

// TestStepPlan checks the plan of SGD steps (gpucc.StepGraph, for the
// WebGPU default profile) against issue 21's training-step rules: no
// kernel materialises a transpose (backward matmuls read them in place),
// each parameter's update p − lr·g is computed in the kernel that computes
// its gradient g (a matmul's epilogue for a weight, the column sum's for a
// bias), and the step takes at most its kernels.
func TestStepPlan(t *testing.T) {
	fixture, _ := loadFixture(t)
	cases := []struct {
		name    string
		g       *ir.Graph
		limits  ir.Limits
		kernels int
	}{
		{"fixture", fixture, ir.Limits{}, 10},
		// BenchmarkMLPTrainStep's step at the device visit's size: 21
		// kernels before the loss guard shared its sums (13 before the
		// guard existed).
		{"mlp4096", bench.MLP(4096, 1024, 1024, 16), bench.Limits(), 16},
		{"mlp small", bench.MLP(64, 32, 48, 5), ir.Limits{}, 15},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			sg, err := gpucc.StepGraph(c.g, "loss", 0.01)
			if err != nil {
				t.Fatal(err)
			}
			plan, err := gpucc.Seal(sg, c.limits, passes.WebGPUDefault, passes.Options{})
			if err != nil {
				t.Fatal(err)
			}
			p := plan.Program
			if len(p.Kernels) > c.kernels {
				t.Errorf("%d kernels, want at most %d:\n%s", len(p.Kernels), c.kernels, p)
			}
			kernelOf := map[ir.NodeID]int{}
			for i, k := range p.Kernels {
				for _, n := range k.Nodes {
					kernelOf[n] = i
				}
				for j, in := range k.Inputs {
					if k.Kind == ir.KernelMatmul && j < 2 && !in.Plain() && !in.Transposed() {
						t.Errorf("%s reads operand %d through strides %v", k.Name, j, in.Strides)
					}
				}
			}
			for i, n := range sg.Nodes {
				if _, ok := kernelOf[ir.NodeID(i)]; ok && n.Op == ir.OpTranspose {
					t.Errorf("kernel %s materialises transpose node %d", p.Kernels[kernelOf[ir.NodeID(i)]].Name, i)
				}
			}
			for _, param := range c.g.Params() {
				var updated ir.NodeID = -1
				for _, o := range sg.Outputs {
					if o.Name == param.Name {
						updated = o.ID
					}
				}
				// p′ = p − lr·g: sub(p, mul_scalar(g, lr)).
				u := sg.Nodes[updated]
				if u.Op != ir.OpSub || sg.Nodes[u.Args[1]].Op != ir.OpMulScalar {
					t.Fatalf("%s: the update is %s, not p − lr·g", param.Name, u.Op.Info().Name)
				}
				g := sg.Nodes[u.Args[1]].Args[0]
				for sg.Nodes[g].Op.IsView() {
					g = sg.Nodes[g].Args[0]
				}
				ku, kg := kernelOf[updated], kernelOf[g]
				if ku != kg {
					t.Errorf("%s: the update runs in %s, its gradient (node %d) in %s", param.Name, p.Kernels[ku].Name, g, p.Kernels[kg].Name)
				}
				if k := p.Kernels[kg]; k.Kind != ir.KernelMatmul && !(k.Kind == ir.KernelSum && k.Blocks <= 1) {
					t.Errorf("%s: its gradient is a %s kernel %s, want a matmul or an unsplit column sum", param.Name, k.Kind, k.Name)
				}
			}
			t.Logf("%d kernels, %+v", len(p.Kernels), passes.ProgramCost(p))
		})
	}
}
