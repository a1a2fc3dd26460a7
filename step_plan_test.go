package gpucc_test

import (
	"math"
	"slices"
	"testing"

	"github.com/gpucc/gpucc"
	"github.com/gpucc/gpucc/bench"
	"github.com/gpucc/gpucc/cpuref"
	"github.com/gpucc/gpucc/grad"
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
		{"fixture", fixture, ir.Limits{}, 9},
		// BenchmarkMLPTrainStep's step at the device visit's size: 21
		// kernels before the loss guard shared its sums (13 before the
		// guard existed).
		{"mlp4096", bench.MLP(4096, 1024, 1024, 16), bench.Limits(), 15},
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
				if k := p.Kernels[kg]; k.Kind != ir.KernelMatmul && !(k.Kind == ir.KernelReduce && k.Blocks <= 1) {
					t.Errorf("%s: its gradient is a %s kernel %s, want a matmul or an unsplit column sum", param.Name, k.Kind, k.Name)
				}
			}
			t.Logf("%d kernels, %+v", len(p.Kernels), passes.ProgramCost(p))
		})
	}
}

// TestStepGuard: the step's loss is NaN when any one updated parameter is
// not finite (the guard shares one sum among parameters of several
// shapes, read through broadcasts), and cpuref's loss bit for bit when
// every one is finite, for each parameter of the three-layer MLP.
func TestStepGuard(t *testing.T) {
	g := bench.MLP(8, 6, 5, 3)
	plain, err := grad.Step(g, "loss", 0.01)
	if err != nil {
		t.Fatal(err)
	}
	loss := func(sg *ir.Graph) float32 {
		for _, o := range sg.Outputs {
			if o.Name == "loss" {
				return cpuref.Eval(sg)[o.ID][0]
			}
		}
		t.Fatal("no loss output")
		return 0
	}
	sg, err := gpucc.StepGraph(g, "loss", 0.01)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := loss(sg), loss(plain); math.Float32bits(got) != math.Float32bits(want) {
		t.Errorf("finite step: loss %v, unguarded %v", got, want)
	}
	for _, p := range g.Params() {
		for _, bad := range []float32{float32(math.Inf(1)), float32(math.NaN())} {
			h := g.Clone()
			data := slices.Clone(g.Nodes[p.ID].Data)
			data[len(data)-1] = bad
			h.Nodes[p.ID].Data = data
			sg, err := gpucc.StepGraph(h, "loss", 0.01)
			if err != nil {
				t.Fatal(err)
			}
			if got := loss(sg); !math.IsNaN(float64(got)) {
				t.Errorf("%s's last element %v: loss %v, want NaN", p.Name, bad, got)
			}
		}
	}
}
