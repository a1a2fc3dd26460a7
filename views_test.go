package gpucc_test

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gpucc/gpucc/codegen/wgsl"
	"github.com/gpucc/gpucc/ir"
	"github.com/gpucc/gpucc/ir/irtest"
	"github.com/gpucc/gpucc/onnx"
	"github.com/gpucc/gpucc/passes"
)

// TestSliceViews: crops (a Slice or Split of step 1) are read in place at
// an offset by the kernels whose kind takes one (ir.KernelInfo.Offsets)
// and copied first for the others, no pad kernel runs, and every case of
// irtest.Slices gives cpuref's bits on every backend: offsets at the
// buffer's end, offsets that are not multiples of 4 (webgpu's vec4 loads)
// nor of 64 elements (webgpu's 256-byte binding offsets: the offset is in
// the shader, the binding the whole buffer), extremes, and a fused QKV
// split into attention's heads.
func TestSliceViews(t *testing.T) {
	offsets := map[string][]int{ // the offsets some operand of the case reads at
		"slice/split-rows":   {5, 10},
		"slice/split-cols":   {3, 6},
		"slice/last-element": {6, 23},
		"slice/vec4-offsets": {1, 4, 8},
		"slice/of-transpose": {13},
		"slice/extremes":     {5},
		"slice/qkv-heads-4":  {8, 16},
		"slice/qkv-heads-3":  {6, 12},
		"slice/qkv-offset-2": {2, 10, 18},
		"slice/reduced":      {3, 48},
		"slice/mha-bias":     {8, 16},
		"slice/copied":       {2},
	}
	for _, c := range irtest.Slices() {
		p, _, err := passes.Compile(c.Graph, passes.Options{})
		if err != nil {
			t.Fatalf("%s: %v", c.Name, err)
		}
		seen := map[int]bool{}
		for _, k := range p.Program().Kernels {
			if k.Kind == ir.KernelPad {
				t.Errorf("%s: a pad kernel copies a crop:\n%s", c.Name, p)
			}
			for _, in := range k.Inputs {
				seen[in.Offset] = true
			}
		}
		for _, o := range offsets[c.Name] {
			if !seen[o] {
				t.Errorf("%s: no operand reads at offset %d:\n%s", c.Name, o, p)
			}
		}
		if c.Name == "slice/outputs" {
			out := p.Program().Outputs[1]
			if b := p.Program().Buffers[out.Buffer]; !b.Input {
				t.Errorf("the identity crop is buf%d, not its input's buffer:\n%s", out.Buffer, p)
			}
		}
		if c.Name == "slice/mha-bias" && len(p.Program().Kernels) != 3 {
			t.Errorf("mha-bias: %d kernels, want 3 (the projection and its bias, q's scale, attention):\n%s", len(p.Program().Kernels), p)
		}
		if c.Name == "slice/copied" {
			for _, k := range p.Program().Kernels {
				if k.Kind == ir.KernelMatmul && slices.ContainsFunc(k.Inputs, func(in ir.Operand) bool { return in.Offset != 0 }) {
					t.Errorf("a %v kernel reads at an offset:\n%s", k.Kind, p)
				}
			}
		}
	}
	for _, backend := range backends {
		t.Run(backend, func(t *testing.T) {
			rt := open(t, backend)
			for _, c := range irtest.Slices() {
				t.Run(c.Name, func(t *testing.T) { checkRun(t, rt, c.Graph) })
			}
		})
	}
}

// TestSliceRandom: random chains of crops (with transposes and reshapes
// between them) of extremes, read in place by an elementwise op and
// written as an output, give cpuref's bits on every backend.
func TestSliceRandom(t *testing.T) {
	checkRandom(t, func(seed int) (any, *ir.Graph) {
		return seed, irtest.RandomSlice(uint64(7000 + seed))
	})
}

// TestTransformerBlockSplitInPlace: the transformer fixture's fused QKV
// projection is split in place: no pad kernel copies a third of it, and
// its bias add (+0) is the projection's epilogue (views_lift.go) rather
// than a copy of the whole projection through the head split, so the only
// kernel writing a QKV-sized buffer is the projection and the pieces are
// read from it at offsets 256 and 512 of each 768-wide row (14 kernels
// with the three pad copies and the add, 10 without).
func TestTransformerBlockSplitInPlace(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("onnx", "testdata", "models", "transformer.onnx"))
	if err != nil {
		t.Fatal(err)
	}
	limits := ir.Limits{MaxStorageBytes: 1 << 30, MaxOps: 1e11}
	g, err := onnx.Load(bytes.NewReader(raw), onnx.Options{Limits: limits})
	if err != nil {
		t.Fatal(err)
	}
	p, _, err := passes.Compile(g, passes.Options{Limits: limits})
	if err != nil {
		t.Fatal(err)
	}
	seen := map[int]bool{}
	for _, k := range p.Program().Kernels {
		if k.Kind == ir.KernelPad {
			t.Errorf("kernel %s copies a piece of the split:\n%s", k.Name, p)
		}
		for _, o := range k.Outputs {
			if p.Program().Buffers[o].Len == 128*768 && k.Kind != ir.KernelMatmul {
				t.Errorf("kernel %s writes a QKV-sized buffer:\n%s", k.Name, p)
			}
		}
		for _, in := range k.Inputs {
			seen[in.Offset] = true
		}
	}
	if !seen[256] || !seen[512] {
		t.Errorf("no operand reads the split's pieces at 256 and 512:\n%s", p)
	}
}

// TestSliceAttentionVariants: attention reading a fused QKV's split in
// place gives cpuref's bits under every webgpu attention kernel
// (wgsl.AttentionTile: the Direct ones read k and v as vectors only where
// each piece's offset is a multiple of the vector's lanes, which
// qkv-offset-2's are not, rows of 28 elements though) and in the online
// order (ir.AttentionOnlineFrom) on every backend.
func TestSliceAttentionVariants(t *testing.T) {
	var cases []irtest.Case
	for _, c := range irtest.Slices() {
		if strings.HasPrefix(c.Name, "slice/qkv-") || c.Name == "slice/mha-bias" {
			cases = append(cases, c)
		}
	}
	if slices.Contains(backends, "webgpu") {
		defer func(old wgsl.AttTile) { wgsl.AttentionTile = old }(wgsl.AttentionTile)
		for _, tile := range attTileVariants {
			t.Run("webgpu/"+tile.String(), func(t *testing.T) {
				wgsl.AttentionTile = tile
				rt := open(t, "webgpu")
				for _, c := range cases {
					t.Run(c.Name, func(t *testing.T) { checkRun(t, rt, c.Graph) })
				}
			})
		}
		wgsl.AttentionTile = wgsl.DefaultAttTile
	}
	onlineFrom(t, 1)
	for _, backend := range backends {
		t.Run("online/"+backend, func(t *testing.T) {
			rt := open(t, backend)
			for _, c := range cases {
				t.Run(c.Name, func(t *testing.T) { checkRun(t, rt, c.Graph) })
			}
		})
	}
}
