package codegen_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/gpucc/gpucc/codegen/c"
	"github.com/gpucc/gpucc/codegen/glsl"
	"github.com/gpucc/gpucc/codegen/wgsl"
	"github.com/gpucc/gpucc/ir"
	"github.com/gpucc/gpucc/passes"
)

// sources returns the generated code of g on every target: the WGSL of
// each shader, the GLSL of each pass and the C unit.
func sources(t *testing.T, g *ir.Graph, limits ir.Limits) map[string][]string {
	t.Helper()
	p, _, err := passes.Compile(g, passes.Options{Limits: limits})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]string{}
	shaders, err := wgsl.Target{}.Emit(p)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range shaders {
		out["wgsl"] = append(out["wgsl"], s.Source)
	}
	pl, err := glsl.Target{}.Emit(p)
	if err != nil {
		t.Fatal(err)
	}
	for _, ps := range pl.Passes {
		out["glsl"] = append(out["glsl"], ps.Source)
	}
	u, err := c.Target{}.Emit(p)
	if err != nil {
		t.Fatal(err)
	}
	out["c"] = []string{u.Source}
	return out
}

// tanhChain returns tanh applied n times to a vector of 7 (not a multiple
// of 4: WGSL's scalar body) or 8 (vec4) elements.
func tanhChain(t *testing.T, n, elems int) *ir.Graph {
	t.Helper()
	b := ir.NewBuilder()
	x := b.Input(ir.Shape{elems}, make([]float32, elems))
	for i := 0; i < n; i++ {
		x = x.Tanh()
	}
	b.Output("y", x)
	g, err := b.Build(ir.Limits{MaxNodes: 1024})
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// TestCallsNotExpansions checks that a fused chain of tanh (which calls
// exp and div_normal) defines each primitive once per kernel and costs a call per
// use: 511 tanh once made 13.4 MB of WGSL and 11.6 MB of C, about 25 KB a
// use, which lavapipe and Clang did not finish compiling.
func TestCallsNotExpansions(t *testing.T) {
	limits := ir.Limits{MaxNodes: 1024, MaxKernelOps: 1 << 30}
	for _, elems := range []int{7, 8} {
		one := sources(t, tanhChain(t, 1, elems), limits)
		many := sources(t, tanhChain(t, 511, elems), limits)
		for target, srcs := range many {
			if len(srcs) != len(one[target]) {
				t.Fatalf("%s: %d kernels for 511 tanh, %d for one", target, len(srcs), len(one[target]))
			}
			for i, src := range srcs {
				for _, fn := range []string{"prim_tanh(", "prim_exp(", "prim_div_normal("} {
					// one definition, and for tanh a call per use
					if d := strings.Count(src, fn+"float p0") + strings.Count(src, fn+"p0: "); d != 1 {
						t.Errorf("%s %d elements: %d definitions of %s), want 1", target, elems, d, fn)
					}
				}
				if calls := strings.Count(src, "prim_tanh(") - 1; calls != 511 {
					t.Errorf("%s %d elements: %d calls of prim_tanh, want 511", target, elems, calls)
				}
				grow := len(src) - len(one[target][i])
				if per := grow / 510; per > 200 {
					t.Errorf("%s %d elements: %d bytes per tanh (%d for 511, %d for one), want at most 200",
						target, elems, per, len(src), len(one[target][i]))
				}
			}
		}
	}
}

// TestKernelOpsLimit checks that a kernel over the default MaxKernelOps
// (511 fused tanh) is refused with limit_exceeded, quickly, and one within
// it (111 tanh) compiles.
func TestKernelOpsLimit(t *testing.T) {
	for _, tt := range []struct {
		n    int
		code ir.Code // "" for success
	}{{111, ""}, {112, ir.CodeLimitExceeded}, {511, ir.CodeLimitExceeded}} {
		start := time.Now()
		_, _, err := passes.Compile(tanhChain(t, tt.n, 8), passes.Options{Limits: ir.Limits{MaxNodes: 1024}})
		var e *ir.Error
		switch {
		case tt.code == "" && err != nil:
			t.Errorf("%d tanh: %v", tt.n, err)
		case tt.code != "" && (!errors.As(err, &e) || e.Code != tt.code):
			t.Errorf("%d tanh: got %v, want %s", tt.n, err, tt.code)
		}
		if d := time.Since(start); d > 10*time.Second {
			t.Errorf("%d tanh: %v to compile or refuse", tt.n, d)
		}
	}
}
