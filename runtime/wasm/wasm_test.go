package wasm

import (
	"context"
	"math"
	"os"
	"strings"
	"testing"

	"github.com/tetratelabs/wazero"

	"github.com/gpucc/gpucc/codegen/c"
	"github.com/gpucc/gpucc/cpuref"
	"github.com/gpucc/gpucc/ir"
	"github.com/gpucc/gpucc/ir/irtest"
	"github.com/gpucc/gpucc/passes"
	"github.com/gpucc/gpucc/runtime/backend"
)

// TestEvictionFreesCode: an idle module dropped from the in-memory cache
// takes its compiled code with it, so a long-lived backend running many
// graphs does not keep every module it ever compiled.
func TestEvictionFreesCode(t *testing.T) {
	dev, err := open(backend.Options{})
	if err != nil {
		if os.Getenv("GPUCC_REQUIRE_WASM") != "" {
			t.Fatal(err)
		}
		t.Skip(err)
	}
	defer dev.Close()
	d := dev.(*device)
	defer func(old int) { maxIdleModules = old }(maxIdleModules)
	maxIdleModules = 1
	ctx := context.Background()
	first, err := d.module(ctx, probeSource, nil, BuildRequest{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	d.unref(first)
	other := `__attribute__((visibility("default"))) void probe(float *p) { p[0] = p[0] * p[0]; }`
	second, err := d.module(ctx, other, nil, BuildRequest{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	third := `__attribute__((visibility("default"))) void probe(float *p) { p[0] = p[0] - p[0]; }`
	if _, err := d.module(ctx, third, nil, BuildRequest{}, nil); err != nil {
		t.Fatal(err)
	}
	d.unref(second) // two idle now, over the bound of one
	if len(d.modules) != 2 {
		t.Fatalf("%d modules cached, want 2 (one in use, one idle)", len(d.modules))
	}
	evicted := first
	if _, ok := d.modules[first.key]; ok {
		evicted = second
	}
	w := evicted.inst.(*wazeroInstance)
	if m, err := d.eng.(*wazeroEngine).rt.InstantiateModule(ctx, w.compiled, wazero.NewModuleConfig().WithName("again")); err == nil {
		m.Close(ctx)
		t.Error("the evicted module's compiled code is still loaded")
	}
}

// TestPrebuiltWithoutClang: a plan that carries its module runs on a wasm
// backend opened by name with no toolchain at all, bit for bit as cpuref;
// auto selection still refuses a backend without one, and a plan without a
// module is backend_unavailable.
func TestPrebuiltWithoutClang(t *testing.T) {
	bl := ir.NewBuilder()
	x := bl.Input(ir.Shape{64}, irtest.Values(1, 64, 3))
	y := bl.Input(ir.Shape{64}, irtest.Values(2, 64, 3))
	s := x.Mul(y).Relu()
	bl.Output("s", s)
	bl.Output("t", s.Sum())
	g, err := bl.Build(ir.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	p, _, err := passes.Compile(g, passes.Options{})
	if err != nil {
		t.Fatal(err)
	}
	unit, err := c.Target{}.Emit(p)
	if err != nil {
		t.Fatal(err)
	}
	mod, err := BuildModule(context.Background(), unit.Source)
	if err != nil {
		if os.Getenv("GPUCC_REQUIRE_WASM") != "" {
			t.Fatal(err)
		}
		t.Skip(err)
	}
	t.Setenv("GPUCC_CLANG", "/nonexistent/clang")
	t.Setenv("PATH", "")
	if _, err := open(backend.Options{}); err == nil {
		t.Fatal("auto selection opened wasm without a toolchain")
	}
	dev, err := open(backend.Options{Explicit: true})
	if err != nil {
		t.Fatal(err)
	}
	defer dev.Close()
	ctx := context.Background()
	if _, err := dev.Compile(ctx, &backend.Program{IR: p}, nil); err == nil || !strings.Contains(err.Error(), "backend_unavailable") {
		t.Errorf("a plan without a module: %v, want backend_unavailable", err)
	}
	exe, err := dev.Compile(ctx, &backend.Program{IR: p, Prebuilt: Artifact(unit, mod)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer exe.Release()
	call := &backend.Call{Args: make([]backend.Arg, len(p.Program().Buffers)), Dests: make([]backend.Dest, len(p.Program().Outputs)), Stats: &backend.Stats{}}
	for i, b := range p.Program().Buffers {
		call.Args[i].Host = b.Data
	}
	got := map[string][]float32{}
	for i, o := range p.Program().Outputs {
		got[o.Name] = make([]float32, o.Shape.Len())
		call.Dests[i].Host = got[o.Name]
	}
	if err := exe.Run(ctx, call); err != nil {
		t.Fatal(err)
	}
	vals := cpuref.Eval(g)
	for _, o := range g.Outputs {
		for i, v := range vals[o.ID] {
			if math.Float32bits(v) != math.Float32bits(got[o.Name][i]) {
				t.Fatalf("%s[%d] = %v, cpuref %v", o.Name, i, got[o.Name][i], v)
			}
		}
	}
}
