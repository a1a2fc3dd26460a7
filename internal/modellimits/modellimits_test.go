package modellimits_test

import (
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/gpucc/gpucc/internal/modellimits"
	"github.com/gpucc/gpucc/internal/testmodels"
	"github.com/gpucc/gpucc/ir"
	"github.com/gpucc/gpucc/onnx"
)

// shapes binds the classifier's dynamic input as onnx's TestRealModels does.
var shapes = map[string][]int{"x": {1, 3, 48, 192}}

func load(raw []byte, l ir.Limits) (*ir.Graph, error) {
	return onnx.Load(onnx.Bytes(raw), onnx.Options{Limits: l, InputShapes: shapes})
}

// TestLoadSizesTheModel: PaddleOCR's orientation classifier (591 nodes as
// it ships) is past the seed's 512 nodes; Load with every limit unset, as
// the page calls it, imports it and returns limits that run it (Fit: at
// least twice its need, never below the defaults); a limit the caller sets
// stays a cap, and the refusal names its flag.
func TestLoadSizesTheModel(t *testing.T) {
	raw, err := os.ReadFile(testmodels.Path(t, "ppocr_v2_cls"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := load(raw, ir.Limits{}); !errors.Is(err, ir.ErrLimitExceeded) {
		t.Fatalf("under the defaults: %v, want limit_exceeded", err)
	}
	g, sized, err := modellimits.Load(raw, ir.Limits{}, modellimits.Unset(), shapes, load)
	if err != nil {
		t.Fatal(err)
	}
	need, d := ir.Need(g), ir.DefaultLimits()
	if sized.MaxNodes < 2*need.MaxNodes || sized.MaxNodes < d.MaxNodes || need.MaxNodes <= d.MaxNodes {
		t.Errorf("sized MaxNodes %d for a graph of %d nodes (default %d)", sized.MaxNodes, need.MaxNodes, d.MaxNodes)
	}
	if sized.MaxKernelOps != d.MaxKernelOps || sized.MaxOutputs != d.MaxOutputs {
		t.Errorf("sized MaxKernelOps %d, MaxOutputs %d; want the defaults %d, %d", sized.MaxKernelOps, sized.MaxOutputs, d.MaxKernelOps, d.MaxOutputs)
	}
	if err := ir.Validate(g, sized); err != nil {
		t.Errorf("the graph does not validate under its sized limits: %v", err)
	}
	unset := modellimits.Unset()
	delete(unset, "MaxNodes")
	_, _, err = modellimits.Load(raw, ir.Limits{MaxNodes: 512}, unset, shapes, load)
	if !errors.Is(err, ir.ErrLimitExceeded) || !strings.Contains(err.Error(), "gpucc --max-nodes") {
		t.Errorf("MaxNodes 512 set: %v, want limit_exceeded naming --max-nodes", err)
	}
}

// TestCaps: a small model is held to the defaults; the caps grow with S
// and saturate instead of overflowing.
func TestCaps(t *testing.T) {
	d := ir.DefaultLimits()
	if c := modellimits.Caps(1000); c.MaxNodes != d.MaxNodes || c.MaxElements != d.MaxElements || c.MaxOps != d.MaxOps || c.MaxStorageBytes != d.MaxStorageBytes {
		t.Errorf("Caps(1000) = %+v, want the defaults", c)
	}
	if c := modellimits.Caps(8 << 20); c.MaxStorageBytes != 2<<30 || c.MaxNodes != 2<<20 {
		t.Errorf("Caps(8 MiB): storage %d, nodes %d; want 2 GiB, 2Mi", c.MaxStorageBytes, c.MaxNodes)
	}
	if c := modellimits.Caps(1 << 62); c.MaxOps <= 0 || c.MaxStorageBytes <= 0 || c.MaxNodes != 1<<24 {
		t.Errorf("Caps(2^62) = %+v, overflowed", c)
	}
}
