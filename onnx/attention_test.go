package onnx_test

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpucc/gpucc/cpuref"
	"github.com/gpucc/gpucc/internal/npy"
	"github.com/gpucc/gpucc/ir"
	"github.com/gpucc/gpucc/ir/eval64"
	"github.com/gpucc/gpucc/ir/irtest"
	"github.com/gpucc/gpucc/onnx"
)

// TestImportFusesAttention: the PyTorch-exported BERT and GPT-2 fixtures
// (testdata/transformers, 2 layers each) import with each layer's
// softmax(q·kᵀ·s + mask)·v as one attention node (ir.FuseAttention), and
// with none under Options.KeepAttention, and so does the causal decoder,
// whose masked_fill(-Inf) is a Where over a constant causal mask (see
// TestCausalDecoderFused for its values). The values are checked against PyTorch by
// cmd/gpucc's TestRunTypedInput (BERT within 1e-5) and across backends by
// TestTransformersOnWebGPU.
func TestImportFusesAttention(t *testing.T) {
	for _, c := range []struct {
		model string
		want  int
	}{{"bert", 2}, {"gpt2", 2}, {"decoder", 2}} {
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

// TestAttentionOp: ONNX's Attention (opset 23) imports as one attention
// node over Q and K each scaled by √scale (the spec's order) with scale 1,
// bit for bit the graph built by hand, and within 1e-5 of the float64
// meaning: 4-D heads with a float mask, 3-D inputs split into heads by
// q_num_heads and kv_num_heads, is_causal, the default scale 1/√D.
// What it cannot import it refuses by name.
func TestAttentionOp(t *testing.T) {
	vals := func(seed uint64, dims ...int64) []float32 {
		n := int64(1)
		for _, d := range dims {
			n *= d
		}
		return irtest.Values(seed, int(n), 2)
	}
	type in struct {
		name string
		dims []int64
	}
	cases := []struct {
		name   string
		ins    []in
		attrs  []msg
		out    []int64
		refuse string
		// want builds the expected graph from the inputs (4-D views).
		want func(b *ir.Builder, x []ir.Tensor) ir.Tensor
	}{
		{name: "4d-mask", ins: []in{{"q", []int64{1, 2, 3, 4}}, {"k", []int64{1, 2, 5, 4}}, {"v", []int64{1, 2, 5, 3}}, {"m", []int64{3, 5}}},
			attrs: []msg{attrFloat("scale", 0.3)}, out: []int64{1, 2, 3, 3},
			want: func(b *ir.Builder, x []ir.Tensor) ir.Tensor {
				r := float32(math.Sqrt(0.3))
				return x[0].MulScalar(r).Attention(x[1].MulScalar(r), x[2], x[3], 1, false)
			}},
		{name: "3d-causal-default-scale", ins: []in{{"q", []int64{2, 4, 6}}, {"k", []int64{2, 4, 6}}, {"v", []int64{2, 4, 4}}},
			attrs: []msg{attrInt("is_causal", 1), attrInt("q_num_heads", 2), attrInt("kv_num_heads", 2)}, out: []int64{2, 4, 4},
			want: func(b *ir.Builder, x []ir.Tensor) ir.Tensor {
				heads := func(t ir.Tensor, d int) ir.Tensor { return t.Reshape(ir.Shape{2, 4, 2, d}).Permute(0, 2, 1, 3) }
				r := float32(math.Sqrt(float64(float32(1 / math.Sqrt(3)))))
				y := heads(x[0], 3).MulScalar(r).Attention(heads(x[1], 3).MulScalar(r), heads(x[2], 2), b.Full(ir.Shape{}, float32(math.Copysign(0, -1))), 1, true)
				return y.Permute(0, 2, 1, 3).Reshape(ir.Shape{2, 4, 4})
			}},
		{name: "grouped", ins: []in{{"q", []int64{1, 4, 3, 4}}, {"k", []int64{1, 2, 3, 4}}, {"v", []int64{1, 2, 3, 4}}}, out: []int64{1, 4, 3, 4},
			refuse: "key heads for 4 query heads"},
		{name: "causal-not-square", ins: []in{{"q", []int64{1, 1, 3, 4}}, {"k", []int64{1, 1, 5, 4}}, {"v", []int64{1, 1, 5, 4}}}, out: []int64{1, 1, 3, 4},
			attrs: []msg{attrInt("is_causal", 1)}, refuse: "square scores only"},
		{name: "softcap", ins: []in{{"q", []int64{1, 1, 3, 4}}, {"k", []int64{1, 1, 3, 4}}, {"v", []int64{1, 1, 3, 4}}}, out: []int64{1, 1, 3, 4},
			attrs: []msg{attrFloat("softcap", 30)}, refuse: "softcap"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var inputs, names []string
			var infos []msg
			for _, x := range c.ins {
				names = append(names, x.name)
				infos = append(infos, valueInfo(x.name, x.dims...))
			}
			inputs = names
			m := model(23, graph([]msg{node("Attention", "att", inputs, []string{"y"}, c.attrs...)}, nil, infos, []msg{valueInfo("y", c.out...)}))
			g, err := onnx.Load(bytes.NewReader(m), onnx.Options{})
			if c.refuse != "" {
				var ie *ir.Error
				if !errors.As(err, &ie) || ie.Code != ir.CodeUnsupported || !strings.Contains(err.Error(), c.refuse) {
					t.Fatalf("Load = %v; want unsupported naming %q", err, c.refuse)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			b := ir.NewBuilder()
			var xs []ir.Tensor
			for k, x := range c.ins {
				s := make(ir.Shape, len(x.dims))
				for d, n := range x.dims {
					s[d] = int(n)
				}
				v := vals(uint64(k+1), x.dims...)
				xs = append(xs, b.NamedInput(x.name, s, v))
				g.Nodes[g.Input(x.name)].Data = v
			}
			b.Output("y", c.want(b, xs))
			w, err := b.Build(ir.Limits{})
			if err != nil {
				t.Fatal(err)
			}
			got, want, exact := cpuref.Eval(g)[g.Outputs[0].ID], cpuref.Eval(w)[w.Outputs[0].ID], eval64.Eval(g, nil)[g.Outputs[0].ID]
			for i := range want {
				if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
					t.Fatalf("y[%d] = %v, the hand-built graph's %v", i, got[i], want[i])
				}
				if math.Abs(float64(got[i])-exact[i]) > 1e-5 {
					t.Errorf("y[%d] = %v, float64 %v", i, got[i], exact[i])
				}
			}
		})
	}
}

// TestCausalDecoderFused: the causal decoder fixture (2 layers, its
// masked_fill(-Inf) imported as causal attention) gives PyTorch float64's
// output within 1e-5 of its largest magnitude at sequences 1, 7 and 64,
// fused and unfused alike.
func TestCausalDecoderFused(t *testing.T) {
	dir := filepath.Join("testdata", "transformers")
	read := func(name string) *npy.Array {
		f, err := os.Open(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		a, err := npy.Read(f, 1<<24)
		if err != nil {
			t.Fatal(err)
		}
		return a
	}
	for _, seq := range []int{1, 7, 64} {
		ids, ref := read(fmt.Sprintf("decoder.%d.ids.npy", seq)), read(fmt.Sprintf("decoder.%d.ref.npy", seq))
		for _, keep := range []bool{false, true} {
			f, err := os.Open(filepath.Join(dir, "decoder.onnx"))
			if err != nil {
				t.Fatal(err)
			}
			g, err := onnx.Load(f, onnx.Options{KeepAttention: keep, InputShapes: map[string][]int{"input_ids": {1, seq}}, Limits: ir.Limits{NonFinite: true}})
			f.Close()
			if err != nil {
				t.Fatal(err)
			}
			g.Nodes[g.Input("input_ids")].Ints = ids.Int64
			vals, err := cpuref.EvalTyped(g)
			if err != nil {
				t.Fatal(err)
			}
			y := vals[g.Outputs[0].ID].F
			want := ref.Float64
			if want == nil {
				for _, v := range ref.Float32 {
					want = append(want, float64(v))
				}
			}
			var worst, scale float64
			for i, r := range want {
				worst, scale = max(worst, math.Abs(float64(y[i])-r)), max(scale, math.Abs(r))
			}
			if worst > 1e-5*scale {
				t.Errorf("seq %d, KeepAttention %v: max |gpucc − PyTorch float64| = %.3g, over 1e-5 × %.3g", seq, keep, worst, scale)
			}
			t.Logf("seq %d, KeepAttention %v: max |gpucc − PyTorch float64| = %.3g of %.3g", seq, keep, worst, scale)
		}
	}
}
