package gpucc_test

import (
	"context"
	"math"
	"testing"

	"github.com/gpucc/gpucc"
	"github.com/gpucc/gpucc/ir"
	"github.com/gpucc/gpucc/ir/irtest"
	"github.com/gpucc/gpucc/passes"
	"github.com/gpucc/gpucc/runtime/backend"
)

// aotPlan seals g and carries its webgpu and native artifacts (WGSL and
// C), made by their exporters and bound as gpucc build binds them.
func aotPlan(t *testing.T, g *ir.Graph) *gpucc.Plan {
	t.Helper()
	p, err := gpucc.Seal(g, ir.Limits{}, passes.WebGPUDefault, passes.Options{})
	if err != nil {
		t.Fatal(err)
	}
	p.Prebuilt = map[string][]byte{}
	for _, name := range []string{"webgpu", "native"} {
		e, ok := backend.ExporterOf(name)
		if !ok {
			t.Fatalf("no %s exporter", name)
		}
		ex, err := e.Export(context.Background(), sealed(t, p))
		if err != nil {
			t.Fatal(err)
		}
		p.Prebuilt[name] = ex.Prebuilt
	}
	p.BindKernels()
	return p
}

// sealed returns p's program sealed.
func sealed(t *testing.T, p *gpucc.Plan) *ir.Sealed {
	t.Helper()
	sp, err := p.Sealed()
	if err != nil {
		t.Fatal(err)
	}
	return sp
}

// clonePlan deep-copies p through its encoding, as a generated package
// decodes its plan.gob.
func clonePlan(t *testing.T, p *gpucc.Plan) *gpucc.Plan {
	t.Helper()
	b, err := gpucc.EncodePlan(p)
	if err != nil {
		t.Fatal(err)
	}
	q, err := gpucc.DecodePlan(b)
	if err != nil {
		t.Fatal(err)
	}
	return q
}

// TestLoadRefusesInconsistentPlan edits a plan the way an edited
// plan.gob (with manifest.json edited to match) or another package's
// kernels would, and expects Load to refuse each with a stable code on
// every backend, where it once panicked in RunWith (an input naming buffer
// 999), read out of bounds natively (another program's C) or ran over
// stale pooled data (a shortened input shape). The plan unedited loads and
// runs bit-exact against cpuref, so the refusals are not of every plan.
func TestLoadRefusesInconsistentPlan(t *testing.T) {
	const n = 4
	g := layer(n, 2*n, n, irtest.Values(1, 2*n*n, 1), irtest.Values(2, 2*n*n, 1), irtest.Values(3, n, 1))
	good := aotPlan(t, g)
	other := aotPlan(t, layer(2*n, 3*n, 2*n, nil, nil, nil)) // another build's kernels, of the same structure
	bl := ir.NewBuilder()
	x := bl.NamedInput("x", ir.Shape{64}, make([]float32, 64))
	bl.Output("y", x.Add(x))
	small, err := bl.Build(ir.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	unlike := aotPlan(t, small) // and of another structure
	nonInput := -1
	for i, b := range good.Program.Buffers {
		if !b.Input {
			nonInput = i
			break
		}
	}
	cases := []struct {
		name string
		edit func(p *gpucc.Plan)
		code ir.Code
	}{
		{"input names buffer 999", func(p *gpucc.Plan) { p.Inputs[0].Buffer = 999 }, ir.CodeInvalidGraph},
		{"input names buffer -5", func(p *gpucc.Plan) { p.Inputs[0].Buffer = -5 }, ir.CodeInvalidGraph},
		{"input names a kernel's output", func(p *gpucc.Plan) { p.Inputs[0].Buffer = nonInput }, ir.CodeInvalidGraph},
		{"input names another's buffer", func(p *gpucc.Plan) { p.Inputs[1].Buffer = p.Inputs[0].Buffer }, ir.CodeInvalidGraph},
		{"input shape shortened", func(p *gpucc.Plan) { p.Inputs[0].Shape = ir.Shape{n / 2, 2 * n} }, ir.CodeInvalidGraph},
		{"input shape past the limits", func(p *gpucc.Plan) { p.Inputs[0].Shape = ir.Shape{1 << 15, 1 << 15} }, ir.CodeLimitExceeded},
		{"input buffer left unnamed", func(p *gpucc.Plan) { p.Inputs = p.Inputs[1:] }, ir.CodeInvalidGraph},
		{"input renamed to another's name", func(p *gpucc.Plan) { p.Inputs[1].Name = p.Inputs[0].Name }, ir.CodeInvalidGraph},
		{"buffer shape negative", func(p *gpucc.Plan) { p.Program.Buffers[p.Inputs[0].Buffer].Shape = ir.Shape{-n, -2 * n} }, ir.CodeInvalidGraph},
		{"embedded data NaN", func(p *gpucc.Plan) { p.Program.Buffers[p.Inputs[0].Buffer].Data[3] = float32(math.NaN()) }, ir.CodeInvalidGraph},
		{"embedded data short", func(p *gpucc.Plan) { b := &p.Program.Buffers[p.Inputs[0].Buffer]; b.Data = b.Data[1:] }, ir.CodeInvalidGraph},
		{"output shape past its buffer", func(p *gpucc.Plan) { p.Program.Outputs[0].Shape = ir.Shape{n, 2 * n} }, ir.CodeInvalidGraph},
		{"output names buffer 999", func(p *gpucc.Plan) { p.Program.Outputs[0].Buffer = 999 }, ir.CodeInvalidGraph},
		{"output constant NaN", func(p *gpucc.Plan) {
			p.Program.Outputs[0].Buffer, p.Program.Outputs[0].Const = -1, float32(math.NaN())
		}, ir.CodeInvalidGraph},
		{"kernel operand past its buffer", func(p *gpucc.Plan) {
			k := &p.Program.Kernels[len(p.Program.Kernels)-1]
			k.Inputs[0].Strides[0] *= 64
		}, ir.CodeInvalidGraph},
		{"another build's C", func(p *gpucc.Plan) { p.Prebuilt["native"] = other.Prebuilt["native"] }, ir.CodeInvalidGraph},
		{"another structure's C, digest recomputed", func(p *gpucc.Plan) {
			p.Prebuilt["native"] = unlike.Prebuilt["native"]
			p.BindKernels()
		}, ir.CodeInvalidGraph},
		{"another structure's WGSL, digest recomputed", func(p *gpucc.Plan) {
			p.Prebuilt["webgpu"] = unlike.Prebuilt["webgpu"]
			p.BindKernels()
		}, ir.CodeInvalidGraph},
		{"another build's WGSL", func(p *gpucc.Plan) { p.Prebuilt["webgpu"] = other.Prebuilt["webgpu"] }, ir.CodeInvalidGraph},
		{"an edited shader", func(p *gpucc.Plan) { p.Prebuilt["webgpu"] = append(p.Prebuilt["webgpu"], '\n') }, ir.CodeInvalidGraph},
		{"a shader's byte changed", func(p *gpucc.Plan) { p.Prebuilt["webgpu"][len(p.Prebuilt["webgpu"])/2]++ }, ir.CodeInvalidGraph},
		{"an undecodable artifact, digest recomputed", func(p *gpucc.Plan) { p.Prebuilt["native"] = []byte("{"); p.BindKernels() }, ir.CodeInvalidGraph},
		{"another build's wasm", func(p *gpucc.Plan) { p.Prebuilt["wasm"] = []byte("\x00asm\x01\x00\x00\x00") }, ir.CodeInvalidGraph},
		{"a constant changed", func(p *gpucc.Plan) {
			for i := range p.Program.Kernels {
				for j := range p.Program.Kernels[i].Body {
					p.Program.Kernels[i].Body[j].Scalar++
				}
			}
		}, ir.CodeInvalidGraph},
		{"kernels without a digest", func(p *gpucc.Plan) { p.KernelsSHA256 = "" }, ir.CodeInvalidGraph},
	}
	want, _ := expect(g)
	ctx := context.Background()
	for _, be := range backends {
		t.Run(be, func(t *testing.T) {
			rt := open(t, be)
			exe, err := rt.Load(ctx, clonePlan(t, good))
			if err != nil {
				t.Fatalf("the unedited plan: %v", err)
			}
			res, err := exe.Run(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			got := map[string][]float32{}
			for name, out := range res.Outputs {
				got[name] = out.Data
			}
			compare(t, rt, g, want, got)
			for _, tc := range cases {
				t.Run(tc.name, func(t *testing.T) {
					p := clonePlan(t, good)
					tc.edit(p)
					exe, err := rt.Load(ctx, p)
					if err == nil {
						_, err = exe.Run(ctx, nil)
						t.Fatalf("loaded; a run gave %v", err)
					}
					if got := gpucc.CodeOf(err); got != tc.code {
						t.Errorf("code %s (%v), want %s", got, err, tc.code)
					}
				})
			}
		})
	}
}
