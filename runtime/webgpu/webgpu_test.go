//go:build cgo && !js

package webgpu

import (
	"context"
	"math"
	"os"
	"sync/atomic"
	"testing"

	"github.com/gpucc/gpucc/codegen"
	"github.com/gpucc/gpucc/codegen/cache"
	"github.com/gpucc/gpucc/cpuref"
	"github.com/gpucc/gpucc/ir"
	"github.com/gpucc/gpucc/ir/irtest"
	"github.com/gpucc/gpucc/passes"
	"github.com/gpucc/gpucc/runtime/backend"
)

func openDevice(t *testing.T) *device {
	t.Helper()
	c, err := cache.Open(cache.Options{})
	if err != nil {
		t.Fatal(err)
	}
	d, err := open(backend.Options{AllowSoftware: true, Cache: c})
	if err != nil {
		if os.Getenv("GPUCC_REQUIRE_WEBGPU") != "" {
			t.Fatal(err)
		}
		t.Skip(err)
	}
	t.Cleanup(d.Close)
	return d.(*device)
}

func program(t testing.TB, g *ir.Graph) *backend.Program {
	t.Helper()
	p, _, err := passes.Compile(g, passes.Options{SplitSums: true})
	if err != nil {
		t.Fatal(err)
	}
	return &backend.Program{IR: p}
}

// compiled compiles g on d, failing the test where it cannot, and
// releases the executable when the test ends.
func compiled(t testing.TB, d *device, g *ir.Graph) *executable {
	t.Helper()
	e, err := d.Compile(context.Background(), program(t, g), &backend.Stats{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Release)
	return e.(*executable)
}

// countdown is a context whose Err turns to Canceled after n calls.
type countdown struct {
	context.Context
	n atomic.Int64
}

func (c *countdown) Err() error {
	if c.n.Add(-1) < 0 {
		return context.Canceled
	}
	return nil
}

// TestCancelReturnsBuffers cancels a run at each point it checks its
// context and counts the device buffers out of the pool: none is left but
// the kept output of a run that completed.
func TestCancelReturnsBuffers(t *testing.T) {
	d := openDevice(t)
	bl := ir.NewBuilder()
	x := bl.Input(ir.Shape{64}, irtest.Values(1, 64, 3))
	y := x.MulScalar(2).Relu()
	bl.Output("y", y)
	bl.Output("s", y.Sum())
	g, err := bl.Build(ir.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	bp := program(t, g)
	exe, err := d.Compile(context.Background(), bp, &backend.Stats{})
	if err != nil {
		t.Fatal(err)
	}
	defer exe.Release()
	p := bp.IR
	for k := range 20 {
		ctx := &countdown{Context: context.Background()}
		ctx.n.Store(int64(k))
		call := &backend.Call{Args: make([]backend.Arg, len(p.Program().Buffers)), Dests: make([]backend.Dest, len(p.Program().Outputs)), Stats: &backend.Stats{}}
		for i, b := range p.Program().Buffers {
			if b.Input {
				call.Args[i].Host = b.Data
			}
		}
		for i, o := range p.Program().Outputs {
			call.Dests[i].Keep = o.Buffer >= 0 && !p.Program().Buffers[o.Buffer].Input
			if !call.Dests[i].Keep {
				call.Dests[i].Host = make([]float32, o.Shape.Len())
			}
		}
		err := exe.Run(ctx, call)
		for _, dst := range call.Dests {
			if dst.Buf != nil {
				if err != nil {
					t.Fatalf("cancel after %d: a failed run left a kept buffer", k)
				}
				dst.Buf.Release()
			}
		}
		if err == nil && k < 3 {
			t.Fatalf("cancel after %d checks: the run completed", k)
		}
		if d.pool.out != 0 {
			t.Fatalf("cancel after %d checks (err %v): %d buffers out of the pool", k, err, d.pool.out)
		}
	}
}

// TestPipelineCacheBounded: pipelines no executable uses are released
// past the bound, and compiling again afterwards works.
func TestPipelineCacheBounded(t *testing.T) {
	d := openDevice(t)
	defer func(old int) { maxIdlePipelines = old }(maxIdlePipelines)
	maxIdlePipelines = 2
	for n := 1; n <= 5; n++ { // each size is a different kernel
		bl := ir.NewBuilder()
		x := bl.Input(ir.Shape{n}, irtest.Values(1, n, 3))
		bl.Output("y", x.MulScalar(2).Relu())
		g, err := bl.Build(ir.Limits{})
		if err != nil {
			t.Fatal(err)
		}
		exe, err := d.Compile(context.Background(), program(t, g), &backend.Stats{})
		if err != nil {
			t.Fatal(err)
		}
		exe.Release()
		if len(d.pipelines) > maxIdlePipelines {
			t.Fatalf("after %d graphs, %d pipelines cached; bound %d idle", n, len(d.pipelines), maxIdlePipelines)
		}
	}
}

// TestLaunchBuffers: a launched run holds no buffer of the pool but its
// kept output's until Wait (its host outputs are copied into staging in
// its own submission), Wait gives the host outputs cpuref's bits, and a
// launch cancelled at any point it checks its context, or waited for on
// a done one, leaves no buffer out of the pool.
func TestLaunchBuffers(t *testing.T) {
	d := openDevice(t)
	bl := ir.NewBuilder()
	x := bl.Input(ir.Shape{64}, irtest.Values(1, 64, 3))
	y := x.MulScalar(2).Relu()
	bl.Output("y", y)
	bl.Output("s", y.Sum())
	bl.Output("z", y.AddScalar(1))
	g, err := bl.Build(ir.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	bp := program(t, g)
	exe, err := d.Compile(context.Background(), bp, &backend.Stats{})
	if err != nil {
		t.Fatal(err)
	}
	defer exe.Release()
	p := bp.IR
	newCall := func() *backend.Call {
		call := &backend.Call{Args: make([]backend.Arg, len(p.Program().Buffers)), Dests: make([]backend.Dest, len(p.Program().Outputs)), Stats: &backend.Stats{}}
		for i, b := range p.Program().Buffers {
			if b.Input {
				call.Args[i].Host = b.Data
			}
		}
		for i, o := range p.Program().Outputs {
			call.Dests[i].Keep = o.Name == "y"
			if !call.Dests[i].Keep {
				call.Dests[i].Host = make([]float32, o.Shape.Len())
			}
		}
		return call
	}
	done, cancel := context.WithCancel(context.Background())
	cancel()
	for k := range 20 {
		ctx := &countdown{Context: context.Background()}
		ctx.n.Store(int64(k))
		call := newCall()
		pd, err := exe.(backend.Launcher).Launch(ctx, call)
		if err != nil {
			for _, dst := range call.Dests {
				if dst.Buf != nil {
					t.Fatalf("cancel after %d: a failed launch left a kept buffer", k)
				}
			}
		} else {
			if d.pool.out != 1 { // y, which the caller holds
				t.Fatalf("launched: %d buffers out of the pool, want 1", d.pool.out)
			}
			wctx := context.Background()
			if k%2 == 1 {
				wctx = done
			}
			if err := pd.Wait(wctx); (err != nil) != (k%2 == 1) {
				t.Fatalf("wait (done %v): %v", k%2 == 1, err)
			}
			if k%2 == 0 {
				want := cpuref.RunProgram(p.Program())
				for i, o := range p.Program().Outputs {
					for j, v := range call.Dests[i].Host {
						if math.Float32bits(v) != math.Float32bits(want[o.Name][j]) {
							t.Fatalf("%s[%d] = %v, cpuref %v", o.Name, j, v, want[o.Name][j])
						}
					}
				}
			}
			for _, dst := range call.Dests {
				if dst.Buf != nil {
					dst.Buf.Release()
				}
			}
		}
		if d.pool.out != 0 {
			t.Fatalf("cancel after %d checks (err %v): %d buffers out of the pool", k, err, d.pool.out)
		}
	}
}

// TestPipelinesShared: kernels whose WGSL differs only in the leading
// comment (the kernel's name and nodes) share one pipeline, so a model's
// repeated blocks are compiled once (PP-OCRv4's detector: 92 kernels, 67
// pipelines); each keeps its own buffers and constants, and the bits are
// cpuref's. Three layers relu(x·Wi + bi)·si of one shape are three
// kernels' worth of each form.
func TestPipelinesShared(t *testing.T) {
	d := openDevice(t)
	const n = 64
	bl := ir.NewBuilder()
	x := bl.Input(ir.Shape{n, n}, irtest.Values(1, n*n, 2))
	for i := range 3 {
		w := bl.Input(ir.Shape{n, n}, irtest.Values(uint64(10+i), n*n, 1))
		c := bl.Input(ir.Shape{n, n}, irtest.Values(uint64(20+i), n*n, 1))
		x = x.MatMul(w).Add(c).Relu().MulScalar(float32(i) + 0.5)
	}
	bl.Output("y", x)
	g, err := bl.Build(ir.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	prog := program(t, g)
	exe, err := d.Compile(context.Background(), prog, &backend.Stats{})
	if err != nil {
		t.Fatal(err)
	}
	defer exe.Release()
	e := exe.(*executable)
	distinct := map[*pipeline]bool{}
	for i := range e.shaders {
		distinct[e.pipes[i]] = true
		for j := range i {
			same := pipelineKey(e.shaders[i]) == pipelineKey(e.shaders[j])
			if same != (e.pipes[i] == e.pipes[j]) {
				t.Errorf("kernels %d and %d: same source %v, same pipeline %v", j, i, same, e.pipes[i] == e.pipes[j])
			}
		}
	}
	if len(distinct) >= len(e.shaders) {
		t.Fatalf("%d kernels in %d pipelines: nothing shared", len(e.shaders), len(distinct))
	}
	p := prog.IR.Program()
	call := &backend.Call{Args: make([]backend.Arg, len(p.Buffers)), Dests: []backend.Dest{{Host: make([]float32, n*n)}}, Stats: &backend.Stats{}}
	for i, b := range p.Buffers {
		if b.Input {
			call.Args[i].Host = b.Data
		}
	}
	if err := exe.Run(context.Background(), call); err != nil {
		t.Fatal(err)
	}
	want := cpuref.RunProgram(p)["y"]
	for i, v := range call.Dests[0].Host {
		if math.Float32bits(v) != math.Float32bits(want[i]) {
			t.Fatalf("y[%d] = %v, cpuref %v", i, v, want[i])
		}
	}
}

// TestPipelineKey: the leading comment lines do not count, the body, the
// entry point and the bindings do.
func TestPipelineKey(t *testing.T) {
	body := "struct Params { one: f32 }\n@compute @workgroup_size(64) fn main() {}\n"
	rw := []codegen.BindingKind{codegen.ReadOnly, codegen.ReadWrite, codegen.Uniform}
	base := codegen.Shader{Entry: "main", Source: "// kernel k1 (elementwise), nodes [3]\n\n" + body, Bindings: rw}
	same := base
	same.Source = "// Code generated by gpucc. DO NOT EDIT.\n// kernel k7 (elementwise), nodes [9 10]\n" + body
	if pipelineKey(base) != pipelineKey(same) {
		t.Error("kernels that differ in their leading comments have different keys")
	}
	for name, s := range map[string]codegen.Shader{
		"body":     {Entry: "main", Source: base.Source + "// trailing\n", Bindings: rw},
		"entry":    {Entry: "main2", Source: base.Source, Bindings: rw},
		"bindings": {Entry: "main", Source: base.Source, Bindings: []codegen.BindingKind{codegen.ReadWrite, codegen.ReadWrite, codegen.Uniform}},
		"fewer":    {Entry: "main", Source: base.Source, Bindings: rw[:2]},
	} {
		if pipelineKey(s) == pipelineKey(base) {
			t.Errorf("a different %s has the same key", name)
		}
	}
}
