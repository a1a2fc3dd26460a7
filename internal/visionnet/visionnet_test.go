package visionnet_test

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/gpucc/gpucc"
	"github.com/gpucc/gpucc/codegen"
	"github.com/gpucc/gpucc/codegen/wgsl"
	"github.com/gpucc/gpucc/internal/visionnet"
	"github.com/gpucc/gpucc/ir"
	"github.com/gpucc/gpucc/onnx"
	"github.com/gpucc/gpucc/passes"
)

var limits = ir.Limits{MaxNodes: 100000, MaxElements: 1 << 28, MaxStorageBytes: 4 << 30, MaxOps: 1 << 40,
	MaxKernelOps: 1000000, MaxOutputs: 16}

// TestModelsImport imports both models and writes them to
// $GPUCC_VISIONNET_OUT when it is set (resnet18.onnx, efficientnet_b0.onnx).
func TestModelsImport(t *testing.T) {
	for name, raw := range map[string][]byte{"resnet18": visionnet.ResNet18(), "efficientnet_b0": visionnet.EfficientNetB0(), "vit_tiny": visionnet.ViTTiny()} {
		g, err := onnx.Load(bytes.NewReader(raw), onnx.Options{Limits: limits})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		t.Logf("%s: %d bytes, %d nodes", name, len(raw), len(g.Nodes))
		if dir := os.Getenv("GPUCC_VISIONNET_OUT"); dir != "" {
			if err := os.WriteFile(filepath.Join(dir, name+".onnx"), raw, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// TestEmitInAnyOrder: WGSL generated several kernels at once (codegen.Each)
// is the text generated one kernel at a time, for every kernel of both
// models (run it under -race too: the generators share tables).
func TestEmitInAnyOrder(t *testing.T) {
	for name, raw := range map[string][]byte{"resnet18": visionnet.ResNet18(), "efficientnet_b0": visionnet.EfficientNetB0(), "vit_tiny": visionnet.ViTTiny()} {
		lim := limits
		lim.NonFinite = true
		g, err := onnx.Load(bytes.NewReader(raw), onnx.Options{Limits: lim})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		plan, err := gpucc.Seal(g, lim, passes.WebGPUDefault, passes.Options{})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		sp, err := plan.Sealed()
		if err != nil {
			t.Fatal(err)
		}
		emit := func(workers int) []codegen.Shader {
			defer func(w int) { codegen.Workers = w }(codegen.Workers)
			codegen.Workers = workers
			shaders, err := wgsl.Target{}.Emit(sp)
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			return shaders
		}
		serial, concurrent := emit(1), emit(8)
		if len(serial) < 20 || len(concurrent) != len(serial) {
			t.Fatalf("%s: %d shaders one at a time, %d several at once", name, len(serial), len(concurrent))
		}
		for i := range serial {
			if diff := cmp.Diff(serial[i], concurrent[i]); diff != "" {
				t.Fatalf("%s: kernel %d differs (-one at a time +several at once):\n%s", name, i, diff)
			}
		}
	}
}
