package wgsl_test

import (
	"regexp"
	"strings"
	"testing"

	"github.com/gpucc/gpucc/codegen/wgsl"
	"github.com/gpucc/gpucc/ir"
	"github.com/gpucc/gpucc/ir/irtest"
	"github.com/gpucc/gpucc/passes"
)

// binding is a storage binding's declaration: read (an input) or
// read_write (an output), its name and its element type.
var binding = regexp.MustCompile(`var<storage, (read|read_write)> (\w+): array<([\w<>]+)>;`)

// TestRowVec4: under wgsl.RowVec4 a rows kernel binds as array<vec4<f32>>
// each input read at its leaves in aligned runs of 4 (plain, a row
// broadcast over the rows, a crop at a multiple of 4 whose rows are a
// multiple of 4 apart) and each per-leaf output, and reads and writes
// them a vec4 at a time; it leaves f32 an input at an offset or a row
// stride not a multiple of 4, a transposed one, a per-row value's, a
// per-row output, and every binding of a kernel whose rows are padded
// (1000 leaves) or whose threads hold fewer than 4 leaves (512); off, every
// binding is f32 as before.
func TestRowVec4(t *testing.T) {
	tests := []struct {
		name    string
		threads int // wgsl.RowThreads, 0 for the default
		build   func(b *ir.Builder)
		off     bool // RowVec4 off
		// the element types of the rows kernel's inputs and outputs, in
		// binding order
		in, out []string
		lines   []string // lines the shader has
	}{
		{name: "softmax", build: func(b *ir.Builder) {
			b.Output("y", b.Input(ir.Shape{3, 1024}, irtest.Values(1, 3*1024, 1)).Softmax(1))
		}, in: []string{"vec4<f32>"}, out: []string{"vec4<f32>"},
			lines: []string{"let vbase = base / 4u;", "let x0_0_0 = in0[vbase + t];", "let v0 = x0_0_0.w;", "st0.z = ", "out0[vbase + t] = st0;"}},
		{name: "softmax, off", off: true, build: func(b *ir.Builder) {
			b.Output("y", b.Input(ir.Shape{3, 1024}, irtest.Values(1, 3*1024, 1)).Softmax(1))
		}, in: []string{"f32"}, out: []string{"f32"}, lines: []string{"let r = 768u + t;", "out0[i] = v"}},
		{name: "softmax, 128 threads: two vec4s a thread", threads: 128, build: func(b *ir.Builder) {
			b.Output("y", b.Input(ir.Shape{3, 1024}, irtest.Values(1, 3*1024, 1)).Softmax(1))
		}, in: []string{"vec4<f32>"}, out: []string{"vec4<f32>"},
			lines: []string{"let x0_0_1 = in0[vbase + t * 2u + 1u];", "let v0 = x0_0_1.x;", "out0[vbase + t * 2u + 1u] = st0;"}},
		{name: "log-softmax and layer norm over 4096 leaves", build: func(b *ir.Builder) {
			x := b.Input(ir.Shape{2, 4096}, irtest.Values(1, 2*4096, 1))
			b.Output("y", x.LogSoftmax(1))
			b.Output("z", x.LayerNorm(1, 1e-5))
		}, in: []string{"vec4<f32>"}, out: []string{"vec4<f32>", "vec4<f32>"},
			lines: []string{"let x0_0_3 = in0[vbase + t * 4u + 3u];"}},
		{name: "a row's max beside softmax: the max per row", build: func(b *ir.Builder) {
			x := b.Input(ir.Shape{3, 1024}, irtest.Values(1, 3*1024, 1))
			b.Output("m", x.MaxAxes(true, 1))
			b.Output("y", x.Softmax(1))
		}, in: []string{"vec4<f32>"}, out: []string{"f32", "vec4<f32>"}},
		{name: "a scale over the rows and a per-row shift", build: func(b *ir.Builder) {
			x := b.Input(ir.Shape{3, 1024}, irtest.Values(1, 3*1024, 1))
			g := b.Input(ir.Shape{1024}, irtest.Values(2, 1024, 1)).Reshape(ir.Shape{1, 1024}).Broadcast(ir.Shape{3, 1024})
			h := b.Input(ir.Shape{3, 1}, irtest.Values(3, 3, 1)).Broadcast(ir.Shape{3, 1024})
			b.Output("y", x.Mul(g).Add(h).Softmax(1))
		}, in: []string{"vec4<f32>", "vec4<f32>", "f32"}, out: []string{"vec4<f32>"}},
		{name: "crops at 4 (rows 1028 apart) and at 1", build: func(b *ir.Builder) {
			x := b.Input(ir.Shape{3, 1029}, irtest.Values(1, 3*1029, 1))
			w := b.Input(ir.Shape{3, 1028}, irtest.Values(2, 3*1028, 1))
			y := irtest.Crop(x, []int{0, 1}, ir.Shape{3, 1024})
			z := irtest.Crop(w, []int{0, 4}, ir.Shape{3, 1024})
			b.Output("y", y.Add(z).Softmax(1))
		}, in: []string{"f32", "vec4<f32>"}, out: []string{"vec4<f32>"}},
		{name: "a crop at 4 whose rows are 1030 apart", build: func(b *ir.Builder) {
			x := b.Input(ir.Shape{3, 1030}, irtest.Values(1, 3*1030, 1))
			b.Output("y", irtest.Crop(x, []int{0, 4}, ir.Shape{3, 1024}).Softmax(1))
		}, in: []string{"f32"}, out: []string{"f32"}},
		{name: "a transposed input", build: func(b *ir.Builder) {
			x := b.Input(ir.Shape{1024, 3}, irtest.Values(1, 3*1024, 1))
			b.Output("y", x.T().Softmax(1))
		}, in: []string{"f32"}, out: []string{"f32"}},
		{name: "padded rows: 1000 leaves", build: func(b *ir.Builder) {
			b.Output("y", b.Input(ir.Shape{3, 1000}, irtest.Values(1, 3*1000, 1)).Softmax(1))
		}, in: []string{"f32"}, out: []string{"f32"}, lines: []string{"if (r < 1000u) {"}},
		{name: "two leaves a thread: 512 leaves", build: func(b *ir.Builder) {
			b.Output("y", b.Input(ir.Shape{3, 512}, irtest.Values(1, 3*512, 1)).Softmax(1))
		}, in: []string{"f32"}, out: []string{"f32"}},
	}
	defer func(v bool, n int) { wgsl.RowVec4, wgsl.RowThreads = v, n }(wgsl.RowVec4, wgsl.RowThreads)
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			wgsl.RowVec4, wgsl.RowThreads = !tc.off, wgsl.SumThreads
			if tc.threads != 0 {
				wgsl.RowThreads = tc.threads
			}
			b := ir.NewBuilder()
			tc.build(b)
			g, err := b.Build(ir.Limits{})
			if err != nil {
				t.Fatal(err)
			}
			p, _, err := passes.Compile(g, passes.Options{})
			if err != nil {
				t.Fatal(err)
			}
			shaders, err := wgsl.Target{}.Emit(p)
			if err != nil {
				t.Fatal(err)
			}
			var src string
			for i, k := range p.Program().Kernels {
				if k.Kind == ir.KernelRows {
					if src != "" {
						t.Fatalf("two rows kernels:\n%s", p)
					}
					src = shaders[i].Source
				}
			}
			if src == "" {
				t.Fatalf("no rows kernel:\n%s", p)
			}
			var in, out []string
			for _, m := range binding.FindAllStringSubmatch(src, -1) {
				if m[1] == "read" {
					in = append(in, m[3])
				} else {
					out = append(out, m[3])
				}
			}
			if strings.Join(in, " ") != strings.Join(tc.in, " ") || strings.Join(out, " ") != strings.Join(tc.out, " ") {
				t.Errorf("inputs %v and outputs %v, want %v and %v:\n%s", in, out, tc.in, tc.out, src)
			}
			for _, ln := range tc.lines {
				if !strings.Contains(src, ln) {
					t.Errorf("the shader lacks %q:\n%s", ln, src)
				}
			}
			if vec := strings.Contains(src, "vec4<f32>>;"); !vec && strings.Contains(src, "vbase") {
				t.Errorf("a kernel of no vec4 binding takes RowVec4's schedule:\n%s", src)
			}
		})
	}
}
