package wasm

import (
	"context"
	"os"
	"testing"

	"github.com/tetratelabs/wazero"

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
	first, err := d.module(ctx, probeSource, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	d.unref(first)
	other := `__attribute__((visibility("default"))) void probe(float *p) { p[0] = p[0] * p[0]; }`
	second, err := d.module(ctx, other, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	third := `__attribute__((visibility("default"))) void probe(float *p) { p[0] = p[0] - p[0]; }`
	if _, err := d.module(ctx, third, nil, nil); err != nil {
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
	if m, err := d.rt.InstantiateModule(ctx, evicted.compiled, wazero.NewModuleConfig().WithName("again")); err == nil {
		m.Close(ctx)
		t.Error("the evicted module's compiled code is still loaded")
	}
}
