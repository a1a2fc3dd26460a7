package wgsl_test

import (
	"strings"
	"testing"

	"github.com/gpucc/gpucc/codegen/wgsl"
	"github.com/gpucc/gpucc/ir"
	"github.com/gpucc/gpucc/passes"
)

// leanSource is the WGSL of the matmul kernel of y = f(x × w) under tile.
func leanSource(t *testing.T, tile string, m, k, n int, f func(y, x ir.Tensor) ir.Tensor) string {
	t.Helper()
	tl, err := passes.ParseTile(tile)
	if err != nil {
		t.Fatal(err)
	}
	b := ir.NewBuilder()
	x := b.Input(ir.Shape{m, k}, make([]float32, m*k))
	b.Output("y", f(x.MatMul(b.Input(ir.Shape{k, n}, make([]float32, k*n))), x))
	g, err := b.Build(ir.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	sp, _, err := passes.Compile(g, passes.Options{MaxInvocations: 256, MaxWorkgroupStorage: 16384, Tile: &tl})
	if err != nil {
		t.Fatal(err)
	}
	shaders, err := wgsl.Target{}.Emit(sp)
	if err != nil {
		t.Fatal(err)
	}
	for i, kn := range sp.Program().Kernels {
		if kn.Kind == ir.KernelMatmul {
			if kn.Tile != tl {
				t.Fatalf("the matmul took tile %+v, not %s", kn.Tile, tile)
			}
			return shaders[i].Source
		}
	}
	t.Fatal("no matmul kernel")
	return ""
}

// TestLeanMatmulSource: the lean option (ir.TileLean) binds both operands
// as vec4s and leaves no guard where the shape divides the tile; keeps the
// guards of a side that leaves a partial tile; and an epilogue's own
// input stays f32 (matmulInputElem's refusals: TestMatmulInputElem). Without it (s2) every guard stays. The bits are
// TestMatmulStagedExact's (the root package).
func TestLeanMatmulSource(t *testing.T) {
	id := func(y, _ ir.Tensor) ir.Tensor { return y }
	src := leanSource(t, "64x128/8x8k8v4s2l", 128, 64, 256, id)
	for _, want := range []string{"in0: array<vec4<f32>>", "in1: array<vec4<f32>>", "for (var kt = 0u; kt < 56u; kt += 8u)"} {
		if !strings.Contains(src, want) {
			t.Errorf("lean, a shape the tile divides: no %q in\n%s", want, src)
		}
	}
	if strings.Contains(src, "if (") {
		t.Errorf("lean, a shape the tile divides: a guard is left:\n%s", src)
	}
	if src := leanSource(t, "64x128/8x8k8v4s2", 128, 64, 256, id); !strings.Contains(src, "if (e < 128u && row0 + u < M && kt0 + v < K)") {
		t.Errorf("s2 dropped its guards:\n%s", src)
	}
	src = leanSource(t, "64x128/8x8k8v4s2l", 130, 68, 256, id)
	for _, want := range []string{"if (row0 + u < M && kt0 + v < K)", "if (kt0 + u < K)", "if (r0 < M)"} {
		if !strings.Contains(src, want) {
			t.Errorf("lean, partial tiles along M and K: no %q in\n%s", want, src)
		}
	}
	if strings.Contains(src, "col < N") {
		t.Errorf("lean: a guard on N, which the tile divides:\n%s", src)
	}
	// y = x × w + x: the epilogue reads x through an input of its own (in2, f32)
	src = leanSource(t, "64x128/8x8k8v4s2l", 128, 128, 128, func(y, x ir.Tensor) ir.Tensor { return y.Add(x) })
	if !strings.Contains(src, "in0: array<vec4<f32>>") || !strings.Contains(src, "in2: array<f32>") {
		t.Errorf("lean with an epilogue reading x:\n%s", src)
	}
}
