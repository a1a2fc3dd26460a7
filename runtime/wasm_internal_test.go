package runtime

import (
	"context"
	"os"
	"testing"

	"github.com/tetratelabs/wazero"
)

// TestWasmEvictionFreesCode: a module dropped from the in-memory cache
// takes its compiled code with it, so a long-lived backend running many
// graphs does not keep every module it ever compiled.
func TestWasmEvictionFreesCode(t *testing.T) {
	t.Setenv("GPUCC_CACHE_DIR", t.TempDir())
	be, err := newWasm(Options{})
	if err != nil {
		if os.Getenv("GPUCC_REQUIRE_WASM") != "" {
			t.Fatal(err)
		}
		t.Skip(err)
	}
	defer be.Close()
	b := be.(*wasmBackend)
	defer func(old int) { wasmMaxModules = old }(wasmMaxModules)
	wasmMaxModules = 1
	first, err := b.module(probeSource, map[string]bool{})
	if err != nil {
		t.Fatal(err)
	}
	other := `__attribute__((visibility("default"))) void probe(float *p) { p[0] = p[0] * p[0]; }`
	if _, err := b.module(other, map[string]bool{}); err != nil {
		t.Fatal(err)
	}
	if len(b.modules) != 1 {
		t.Fatalf("%d modules cached, want 1", len(b.modules))
	}
	ctx := context.Background()
	if m, err := b.rt.InstantiateModule(ctx, first.compiled, wazero.NewModuleConfig().WithName("again")); err == nil {
		m.Close(ctx)
		t.Error("the evicted module's compiled code is still loaded")
	}
}
