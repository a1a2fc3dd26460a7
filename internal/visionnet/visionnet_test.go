package visionnet_test

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/gpucc/gpucc/internal/visionnet"
	"github.com/gpucc/gpucc/ir"
	"github.com/gpucc/gpucc/onnx"
)

var limits = ir.Limits{MaxNodes: 100000, MaxElements: 1 << 28, MaxStorageBytes: 4 << 30, MaxOps: 1 << 40,
	MaxKernelOps: 1000000, MaxOutputs: 16}

// TestModelsImport imports both models and writes them to
// $GPUCC_VISIONNET_OUT when it is set (resnet18.onnx, efficientnet_b0.onnx).
func TestModelsImport(t *testing.T) {
	for name, raw := range map[string][]byte{"resnet18": visionnet.ResNet18(), "efficientnet_b0": visionnet.EfficientNetB0()} {
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
