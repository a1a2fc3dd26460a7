package webgl2

import (
	"errors"
	"github.com/gpucc/gpucc/runtime/backend"
	"testing"

	"github.com/gpucc/gpucc/codegen/glsl"
	"github.com/gpucc/gpucc/ir"
	"github.com/gpucc/gpucc/passes"
)

func TestTextureCap(t *testing.T) {
	big := ir.Limits{MaxStorageBytes: 1 << 30, MaxOps: 1 << 40, MaxOutputs: 32}
	tests := []struct {
		name    string
		inputs  int // [1024,1024] inputs, each added to the next into an output
		wantErr bool
	}{
		{"seed-sized", 1, false},
		{"at the cap", 8, false},   // 8 inputs + 8 outputs = 256 MiB exactly
		{"over the cap", 17, true}, // 17 inputs are live before the first pass
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := ir.NewBuilder()
			var xs []ir.Tensor
			for i := 0; i < tt.inputs; i++ {
				xs = append(xs, b.Input(ir.Shape{1024, 1024}, make([]float32, 1<<20)))
			}
			for i, x := range xs {
				b.Output(string(rune('a'+i)), x.Add(xs[(i+1)%len(xs)]))
			}
			g, err := b.Build(big)
			if err != nil {
				t.Fatal(err)
			}
			p, _, err := passes.Compile(g, passes.Options{Limits: big, MaxBindings: 16})
			if err != nil {
				t.Fatal(err)
			}
			pl, err := glsl.Target{}.Emit(p)
			if err != nil {
				t.Fatal(err)
			}
			err = checkTextures(p.Program(), pl, 8192)
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, want error %v", err, tt.wantErr)
			}
			if err != nil && codeOf(err) != ir.CodeLimitExceeded {
				t.Errorf("code %s, want %s", codeOf(err), ir.CodeLimitExceeded)
			}
		})
	}
}

// TestWebGL2TextureSize: a texture taller than MAX_TEXTURE_SIZE is
// limit_exceeded before anything is allocated, not a failed texImage2D.
func TestWebGL2TextureSize(t *testing.T) {
	n := 1024 * 3000 // 3000 rows of glsl.MaxWidth texels
	b := ir.NewBuilder()
	b.Output("y", b.Input(ir.Shape{n}, make([]float32, n)).AddScalar(1))
	big := ir.Limits{MaxElements: 1 << 22, MaxStorageBytes: 1 << 30, MaxOps: 1 << 40}
	g, err := b.Build(big)
	if err != nil {
		t.Fatal(err)
	}
	p, _, err := passes.Compile(g, passes.Options{Limits: big, MaxBindings: 16})
	if err != nil {
		t.Fatal(err)
	}
	pl, err := glsl.Target{}.Emit(p)
	if err != nil {
		t.Fatal(err)
	}
	if err := checkTextures(p.Program(), pl, 4096); err != nil {
		t.Errorf("3000 rows with MAX_TEXTURE_SIZE 4096: %v", err)
	}
	if err := checkTextures(p.Program(), pl, 2048); codeOf(err) != ir.CodeLimitExceeded {
		t.Errorf("3000 rows with MAX_TEXTURE_SIZE 2048: err = %v, want %s", err, ir.CodeLimitExceeded)
	}
}

func codeOf(err error) ir.Code {
	var e *backend.Error
	if errors.As(err, &e) {
		return e.Code
	}
	return ir.CodeInternal
}
