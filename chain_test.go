package gpucc_test

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/gpucc/gpucc"
	"github.com/gpucc/gpucc/ir"
)

// TestChainBuiltIn: outside the browser auto never tries webgl2, which only
// a js/wasm build holds, so no run records an attempt that cannot succeed.
func TestChainBuiltIn(t *testing.T) {
	if slices.Contains(gpucc.Chain, "webgl2") {
		t.Errorf("Chain %v names webgl2 outside the browser", gpucc.Chain)
	}
	for _, name := range gpucc.Chain {
		if !slices.Contains(gpucc.Backends(), name) {
			t.Errorf("Chain names %s, which is not built in (have %v)", name, gpucc.Backends())
		}
	}
	b := ir.NewBuilder()
	b.Output("y", b.Input(ir.Shape{2}, []float32{1, -1}).Relu())
	g, err := b.Build(ir.DefaultLimits())
	if err != nil {
		t.Fatal(err)
	}
	res, err := gpucc.Run(context.Background(), g, gpucc.Options{Backend: "auto"})
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range res.FallbackAttempts {
		if a.Backend == "webgl2" {
			t.Errorf("auto recorded %+v", a)
		}
	}
}

// TestCodeOf: a nil error has no code; any other has its own or internal.
func TestCodeOf(t *testing.T) {
	for _, tt := range []struct {
		err  error
		want ir.Code
	}{
		{nil, ""},
		{ir.Errorf(ir.CodeIO, -1, "", "x"), ir.CodeIO},
		{context.Canceled, ir.CodeExecutionFailed},
		{errors.New("plain"), ir.CodeInternal},
	} {
		if got := gpucc.CodeOf(tt.err); got != tt.want {
			t.Errorf("CodeOf(%v) = %q, want %q", tt.err, got, tt.want)
		}
	}
}
