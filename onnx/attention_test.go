package onnx_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/gpucc/gpucc/ir"
	"github.com/gpucc/gpucc/onnx"
)

// TestImportFusesAttention: the PyTorch-exported BERT and GPT-2 fixtures
// (testdata/transformers, 2 layers each) import with each layer's
// softmax(q·kᵀ·s + mask)·v as one attention node (ir.FuseAttention), and
// with none under Options.KeepAttention; the causal decoder, whose mask is
// a Where, keeps its nodes. The values are checked against PyTorch by
// cmd/gpucc's TestRunTypedInput (BERT within 1e-5) and across backends by
// TestTransformersOnWebGPU.
func TestImportFusesAttention(t *testing.T) {
	for _, c := range []struct {
		model string
		want  int
	}{{"bert", 2}, {"gpt2", 2}, {"decoder", 0}} {
		for _, keep := range []bool{false, true} {
			f, err := os.Open(filepath.Join("testdata", "transformers", c.model+".onnx"))
			if err != nil {
				t.Fatal(err)
			}
			shapes := map[string][]int{"input_ids": {1, 7}}
			if c.model != "decoder" {
				shapes["attention_mask"] = []int{1, 7}
			}
			g, err := onnx.Load(f, onnx.Options{KeepAttention: keep, InputShapes: shapes, Limits: ir.Limits{NonFinite: true}})
			f.Close()
			if err != nil {
				t.Fatal(err)
			}
			n := 0
			for _, nd := range g.Nodes {
				if nd.Op == ir.OpAttention {
					n++
				}
			}
			if want := map[bool]int{false: c.want, true: 0}[keep]; n != want {
				t.Errorf("%s, KeepAttention %v: %d attention nodes, want %d", c.model, keep, n, want)
			}
		}
	}
}
