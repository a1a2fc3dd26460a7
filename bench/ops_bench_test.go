package bench

import (
	"fmt"
	"testing"

	"github.com/gpucc/gpucc/codegen/wgsl"
	"github.com/gpucc/gpucc/ir"
	"github.com/gpucc/gpucc/passes"
	"github.com/gpucc/gpucc/runtime/gpu"
)

// BenchmarkOpsVsBuiltin measures each op that gpucc defines by a float32
// sequence (exp, log, tanh, sqrt, rsqrt, div) against the WGSL builtin
// that a driver implements in hardware, over 16M elements: "gpucc" is the
// generated kernel, "builtin" the same loop with exp(), log(), tanh(),
// sqrt(), inverseSqrt() or a / b, whose result differs between drivers.
// The ns/elem metric is the dispatch time per element.
func BenchmarkOpsVsBuiltin(b *testing.B) {
	const n = 1 << 24
	d := openDevice(b)
	defer d.Close()
	ops := []struct {
		op      ir.Op
		builtin string // WGSL of the result from x (and y)
	}{
		{ir.OpExp, "exp(x)"}, {ir.OpLog, "log(x)"}, {ir.OpTanh, "tanh(x)"},
		{ir.OpSqrt, "sqrt(x)"}, {ir.OpRsqrt, "inverseSqrt(x)"}, {ir.OpDiv, "x / y"},
	}
	for _, o := range ops {
		bl := ir.NewBuilder()
		x := bl.Input(ir.Shape{n}, make([]float32, n))
		y := x
		if o.op.Info().Args == 2 {
			y = bl.Input(ir.Shape{n}, make([]float32, n))
			bl.Output("y", x.Apply(o.op, y))
		} else {
			bl.Output("y", x.Apply(o.op))
		}
		g, err := bl.Build(Limits())
		if err != nil {
			b.Fatal(err)
		}
		p, _, err := passes.Compile(g, passes.Options{Limits: Limits()})
		if err != nil {
			b.Fatal(err)
		}
		shaders, err := wgsl.Target{}.Emit(p)
		if err != nil {
			b.Fatal(err)
		}
		s := shaders[0]
		ins := len(p.Program().Kernels[0].Inputs)
		builtin := builtinShader(ins, o.builtin)
		for _, v := range []struct{ name, src string }{{"gpucc", s.Source}, {"builtin", builtin}} {
			b.Run(fmt.Sprintf("%s/%s", o.op, v.name), func(b *testing.B) {
				kinds := make([]gpu.BindingKind, len(s.Bindings))
				for i, k := range s.Bindings {
					kinds[i] = gpu.BindingKind(k)
				}
				pipe, err := d.Compile(v.src, "main", kinds)
				if err != nil {
					b.Fatal(err)
				}
				var bufs []*gpu.Buffer
				for range ins + 1 {
					buf, err := d.NewBuffer(n*4, "t")
					if err != nil {
						b.Fatal(err)
					}
					defer buf.Release()
					bufs = append(bufs, buf)
				}
				u, _ := d.NewUniform(s.Params, "params")
				groups := [3]uint32{uint32(s.Groups[0]), uint32(s.Groups[1]), uint32(s.Groups[2])}
				ds := []gpu.Dispatch{{Pipeline: pipe, Buffers: append(bufs, u), Groups: groups}}
				if err := d.Run(ds); err != nil {
					b.Fatal(err)
				}
				for b.Loop() {
					if err := d.Run(ds); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/n, "ns/elem")
			})
		}
	}
}

// builtinShader is the generated elementwise kernel's layout (vec4 lanes,
// the same bindings and dispatch) with the builtin expression as its body.
func builtinShader(ins int, expr string) string {
	src := "struct Params { one: f32, zero: f32, k: array<vec4<f32>, 1> }\n"
	for i := 0; i < ins; i++ {
		src += fmt.Sprintf("@group(0) @binding(%d) var<storage, read> in%d: array<vec4<f32>>;\n", i, i)
	}
	src += fmt.Sprintf("@group(0) @binding(%d) var<storage, read_write> out0: array<vec4<f32>>;\n", ins)
	src += fmt.Sprintf("@group(0) @binding(%d) var<uniform> params: Params;\n", ins+1)
	y := "x"
	if ins > 1 {
		y = "in1[i]"
	}
	src += fmt.Sprintf(`@compute @workgroup_size(%d)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
	let i = (wg.x + wg.y * nwg.x) * %du + lid.x;
	for (var j = 0u; j < %du; j++) {
		let e = i + j * %du;
		if (e < arrayLength(&out0)) {
			let x = in0[e];
			let y = %s;
			out0[e] = %s;
		}
	}
}
`, wgsl.VectorThreads, wgsl.VectorThreads*wgsl.VectorsPerThread, wgsl.VectorsPerThread, wgsl.VectorThreads, y, expr)
	return src
}
