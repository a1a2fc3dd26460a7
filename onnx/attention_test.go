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
		name    string
		ins     []in
		attrs   []msg
		out     []int64
		refuse  string
		invalid bool // refuse with invalid_graph, not unsupported
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
		{name: "grouped", ins: []in{{"q", []int64{1, 4, 3, 4}}, {"k", []int64{1, 2, 5, 4}}, {"v", []int64{1, 2, 5, 3}}, {"m", []int64{3, 5}}}, out: []int64{1, 4, 3, 3},
			want: func(b *ir.Builder, x []ir.Tensor) ir.Tensor {
				// np.repeat(k, 2, axis=1): heads 0 0 1 1, written out by hand
				rep := func(t ir.Tensor) ir.Tensor {
					return t.Gather(b.TypedInput("", ir.I64, ir.Shape{4}, nil, []int64{0, 0, 1, 1}), 1)
				}
				r := float32(math.Sqrt(float64(float32(1 / math.Sqrt(4)))))
				return x[0].MulScalar(r).Attention(rep(x[1]).MulScalar(r), rep(x[2]), x[3], 1, false)
			}},
		{name: "grouped-3d", ins: []in{{"q", []int64{1, 3, 8}}, {"k", []int64{1, 3, 4}}, {"v", []int64{1, 3, 4}}}, out: []int64{1, 3, 8},
			attrs: []msg{attrInt("q_num_heads", 4), attrInt("kv_num_heads", 2)},
			want: func(b *ir.Builder, x []ir.Tensor) ir.Tensor {
				heads := func(t ir.Tensor, h int) ir.Tensor { return t.Reshape(ir.Shape{1, 3, h, 2}).Permute(0, 2, 1, 3) }
				rep := func(t ir.Tensor) ir.Tensor {
					return t.Gather(b.TypedInput("", ir.I64, ir.Shape{4}, nil, []int64{0, 0, 1, 1}), 1)
				}
				r := float32(math.Sqrt(float64(float32(1 / math.Sqrt(2)))))
				y := heads(x[0], 4).MulScalar(r).Attention(rep(heads(x[1], 2)).MulScalar(r), rep(heads(x[2], 2)), b.Full(ir.Shape{}, float32(math.Copysign(0, -1))), 1, false)
				return y.Permute(0, 2, 1, 3).Reshape(ir.Shape{1, 3, 8})
			}},
		{name: "heads-not-a-multiple", ins: []in{{"q", []int64{1, 3, 3, 4}}, {"k", []int64{1, 2, 3, 4}}, {"v", []int64{1, 2, 3, 4}}}, out: []int64{1, 3, 3, 4},
			refuse: "multiple of the key heads", invalid: true},
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
				code := map[bool]ir.Code{false: ir.CodeUnsupported, true: ir.CodeInvalidGraph}[c.invalid]
				if !errors.As(err, &ie) || ie.Code != code || !strings.Contains(err.Error(), c.refuse) {
					t.Fatalf("Load = %v; want %s naming %q", err, code, c.refuse)
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
			wv, err := cpuref.EvalTyped(w)
			if err != nil {
				t.Fatal(err)
			}
			got, want, exact := cpuref.Eval(g)[g.Outputs[0].ID], wv[w.Outputs[0].ID].F, eval64.Eval(g, nil)[g.Outputs[0].ID]
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

// TestAttentionOpBoolMask: a boolean attn_mask of ONNX's Attention (true:
// the key takes part) adds -0 where true and -Inf where false, bit for
// bit the hand-built attention with that float mask, within 1e-5 of the
// float64 meaning, and a row with every key masked is NaN as the spec's
// softmax of -Inf gives. (A bool graph input was added as 1 and 0 before.)
func TestAttentionOpBoolMask(t *testing.T) {
	keep := []int64{1, 0, 1, 1, 0, 0, 1, 1, 1, 1, 0, 0, 0, 0, 0} // [3,5]; row 2 masks every key
	m := model(23, graph([]msg{node("Attention", "att", []string{"q", "k", "v", "m"}, []string{"y"})}, nil,
		[]msg{valueInfo("q", 1, 2, 3, 4), valueInfo("k", 1, 2, 5, 4), valueInfo("v", 1, 2, 5, 3), typedValueInfo("m", 9, 3, 5)},
		[]msg{valueInfo("y", 1, 2, 3, 3)}))
	g, err := onnx.Load(bytes.NewReader(m), onnx.Options{Limits: ir.Limits{NonFinite: true}})
	if err != nil {
		t.Fatal(err)
	}
	q, k, v := irtest.Values(1, 24, 2), irtest.Values(2, 40, 2), irtest.Values(3, 30, 2)
	g.Nodes[g.Input("q")].Data, g.Nodes[g.Input("k")].Data, g.Nodes[g.Input("v")].Data = q, k, v
	g.Nodes[g.Input("m")].Ints = keep
	b := ir.NewBuilder()
	fm := make([]float32, len(keep))
	for i, x := range keep {
		fm[i] = map[int64]float32{1: float32(math.Copysign(0, -1)), 0: float32(math.Inf(-1))}[x]
	}
	r := float32(math.Sqrt(float64(float32(1 / math.Sqrt(4)))))
	b.Output("y", b.Input(ir.Shape{1, 2, 3, 4}, q).MulScalar(r).Attention(b.Input(ir.Shape{1, 2, 5, 4}, k).MulScalar(r), b.Input(ir.Shape{1, 2, 5, 3}, v), b.Input(ir.Shape{3, 5}, fm), 1, false))
	w, err := b.Build(ir.Limits{NonFinite: true})
	if err != nil {
		t.Fatal(err)
	}
	gv, err := cpuref.EvalTyped(g)
	if err != nil {
		t.Fatal(err)
	}
	got, want := gv[g.Outputs[0].ID].F, cpuref.Eval(w)[w.Outputs[0].ID]
	exact := eval64.Eval(w, nil)[w.Outputs[0].ID]
	for i := range want {
		if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
			t.Fatalf("y[%d] = %v, the hand-built graph's %v", i, got[i], want[i])
		}
		if row := i / 3 % 3; row == 2 {
			if !math.IsNaN(float64(got[i])) {
				t.Errorf("y[%d] = %v in the fully masked row, want NaN", i, got[i])
			}
		} else if math.Abs(float64(got[i])-exact[i]) > 1e-5 {
			t.Errorf("y[%d] = %v, float64 %v", i, got[i], exact[i])
		}
	}
}

// TestImportFusesLlamaStyle: the attention Hugging Face's Llama/Qwen-style
// decoders export (grouped-query heads repeated by repeat_kv's Unsqueeze,
// Expand and Reshape; a run-time bool mask as Where(mask, scores, -Inf),
// masked_fill's Where(not mask, -Inf, scores), or an additive float mask of
// float32's lowest; Softmax then a Cast to float) imports as one attention
// node, bit for bit the hand-built attention with the mask it adds, within
// 1e-5 of float64, and as the unfused chain under KeepAttention; the
// fused attention reads each shared key and value head in place (rank 5,
// ir.GroupAttention), where the repeat was a copy kernel of H/KV times
// the keys and the values.
func TestImportFusesLlamaStyle(t *testing.T) {
	const H, KV, S, T, D = 4, 2, 3, 5, 4
	keep := []int64{1, 1, 1, 0, 1} // the padding mask over the keys
	ninf, lowest := float32(math.Inf(-1)), float32(-math.MaxFloat32)
	for _, form := range []string{"where-keep", "masked-fill", "additive"} {
		t.Run(form, func(t *testing.T) {
			nodes := []msg{}
			for _, x := range []string{"k", "v"} {
				nodes = append(nodes,
					node("Unsqueeze", x+"u", []string{x, "ax2"}, []string{x + "5"}),
					node("Expand", x+"e", []string{x + "5", "rep"}, []string{x + "x"}),
					node("Reshape", x+"r", []string{x + "x", "heads"}, []string{x + "r"}))
			}
			nodes = append(nodes,
				node("Transpose", "kt", []string{"kr"}, []string{"kt"}, attrInts("perm", 0, 1, 3, 2)),
				node("MatMul", "qk", []string{"q", "kt"}, []string{"s"}),
				node("Mul", "scale", []string{"s", "half"}, []string{"ss"}))
			ins := []msg{valueInfo("q", 1, H, S, D), valueInfo("k", 1, KV, T, D), valueInfo("v", 1, KV, T, D)}
			switch form {
			case "where-keep", "masked-fill":
				ins = append(ins, typedValueInfo("m", 9, 1, T))
				nodes = append(nodes, node("Unsqueeze", "mu", []string{"m", "ax12"}, []string{"m4"}))
				if form == "where-keep" {
					nodes = append(nodes, node("Where", "w", []string{"m4", "ss", "ninf"}, []string{"masked"}))
				} else {
					nodes = append(nodes, node("Not", "not", []string{"m4"}, []string{"hide"}),
						node("Where", "w", []string{"hide", "ninf", "ss"}, []string{"masked"}))
				}
			case "additive":
				ins = append(ins, valueInfo("m", 1, 1, S, T))
				nodes = append(nodes, node("Add", "w", []string{"ss", "m"}, []string{"masked"}))
			}
			nodes = append(nodes,
				node("Softmax", "sm", []string{"masked"}, []string{"p"}, attrInt("axis", -1)),
				node("Cast", "c", []string{"p"}, []string{"pc"}, attrInt("to", 1)),
				node("MatMul", "pv", []string{"pc", "vr"}, []string{"y"}))
			inits := []msg{int64s("ax2", []int64{1}, 2), int64s("ax12", []int64{2}, 1, 2), int64s("rep", []int64{5}, 1, KV, H/KV, T, D),
				int64s("heads", []int64{4}, 1, H, T, D), floats("half", nil, 0.5), floats("ninf", nil, ninf)}
			mdl := model(17, graph(nodes, inits, ins, []msg{valueInfo("y", 1, H, S, D)}))
			q, k, v := irtest.Values(1, H*S*D, 2), irtest.Values(2, KV*T*D, 2), irtest.Values(3, KV*T*D, 2)
			fm := make([]float32, S*T) // the mask the attention adds
			for i := range fm {
				fm[i] = map[int64]float32{1: float32(math.Copysign(0, -1)), 0: ninf}[keep[i%T]]
				if form == "additive" {
					fm[i] = map[int64]float32{1: 0, 0: lowest}[keep[i%T]]
				}
			}
			run := func(keepAtt bool) (*ir.Graph, []float32) {
				g, err := onnx.Load(bytes.NewReader(mdl), onnx.Options{KeepAttention: keepAtt, Limits: ir.Limits{NonFinite: true}})
				if err != nil {
					t.Fatal(err)
				}
				g.Nodes[g.Input("q")].Data, g.Nodes[g.Input("k")].Data, g.Nodes[g.Input("v")].Data = q, k, v
				if form == "additive" {
					g.Nodes[g.Input("m")].Data = fm
				} else {
					g.Nodes[g.Input("m")].Ints = keep
				}
				vals, err := cpuref.EvalTyped(g)
				if err != nil {
					t.Fatal(err)
				}
				return g, vals[g.Outputs[0].ID].F
			}
			count := func(g *ir.Graph) (n int) {
				for _, nd := range g.Nodes {
					if nd.Op == ir.OpAttention {
						n++
					}
				}
				return n
			}
			g, got := run(false)
			u, unfused := run(true)
			if n, m := count(g), count(u); n != 1 || m != 0 {
				t.Fatalf("%d attention nodes (want 1), %d under KeepAttention (want 0):\n%s", n, m, g)
			}
			for _, nd := range g.Nodes { // ir.GroupAttention: the shared heads read in place, no repeat copied
				if nd.Op == ir.OpAttention && len(nd.Shape) != 5 {
					t.Errorf("the attention is %v; want [1,%d,%d,%d,%d], its keys and values read in place", nd.Shape, KV, H/KV, S, D)
				}
			}
			b := ir.NewBuilder()
			rep := func(x ir.Tensor) ir.Tensor {
				return x.Gather(b.TypedInput("", ir.I64, ir.Shape{H}, nil, []int64{0, 0, 1, 1}), 1)
			}
			b.Output("y", b.Input(ir.Shape{1, H, S, D}, q).Attention(rep(b.Input(ir.Shape{1, KV, T, D}, k)), rep(b.Input(ir.Shape{1, KV, T, D}, v)), b.Input(ir.Shape{S, T}, fm), 0.5, false))
			w, err := b.Build(ir.Limits{NonFinite: true})
			if err != nil {
				t.Fatal(err)
			}
			wv, err := cpuref.EvalTyped(w)
			if err != nil {
				t.Fatal(err)
			}
			want, exact := wv[w.Outputs[0].ID].F, attention64(q, k, v, fm, H, KV, S, T, D, 0.5)
			for i := range want {
				if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
					t.Fatalf("y[%d] = %v, the hand-built attention's %v", i, got[i], want[i])
				}
				if math.Abs(float64(got[i])-exact[i]) > 1e-5 || math.Abs(float64(unfused[i])-exact[i]) > 1e-5 {
					t.Errorf("y[%d] = %v fused, %v unfused, float64 %v", i, got[i], unfused[i], exact[i])
				}
			}
		})
	}
}

// attention64 is grouped-query attention in float64: q [H,S,D], k and v
// [KV,T,D] (query head h reads key head h/(H/KV)), mask [S,T] added to
// the scores.
func attention64(q, k, v, mask []float32, H, KV, S, T, D int, scale float64) []float64 {
	y := make([]float64, H*S*D)
	for h := range H {
		kh := h / (H / KV)
		for i := range S {
			s := make([]float64, T)
			m := math.Inf(-1)
			for j := range T {
				for d := range D {
					s[j] += float64(q[(h*S+i)*D+d]) * float64(k[(kh*T+j)*D+d])
				}
				s[j] = s[j]*scale + float64(mask[i*T+j])
				m = math.Max(m, s[j])
			}
			var l float64
			for j := range T {
				s[j] = math.Exp(s[j] - m)
				l += s[j]
			}
			for j := range T {
				for d := range D {
					y[(h*S+i)*D+d] += s[j] / l * float64(v[(kh*T+j)*D+d])
				}
			}
		}
	}
	return y
}

// boolTensor returns a bool TensorProto in raw_data (a byte each).
func boolTensor(name string, dims []int64, vs ...bool) msg {
	t := msg(nil)
	for _, d := range dims {
		t = t.varint(1, d)
	}
	raw := make([]byte, len(vs))
	for i, v := range vs {
		if v {
			raw[i] = 1
		}
	}
	return t.varint(2, 9).str(8, name).bytes(9, raw)
}

// TestWhereConstantCondition: a Where whose condition is a constant all
// true or all false (transformers' GPT-2 slices its causal bias buffer so:
// at one query a step the slice is all true) imports as the operand it
// picks, broadcast to the Where's shape, with no mask node left: bit for
// bit the Where with the same condition fed at run time (mask(1, x) +
// mask(0, y) is x + -0), -0 and NaN in x kept; a condition holding both
// is imported as before. The scores masked so by float32's lowest then
// fuse into one attention node (the Where over them was an unfused chain).
func TestWhereConstantCondition(t *testing.T) {
	negz, nan := float32(math.Copysign(0, -1)), float32(math.NaN())
	x := []float32{negz, 1, nan, -2.5, 0, 3} // [2,3]
	for _, c := range []struct {
		name  string
		cond  []bool // [1,3]
		folds bool
	}{{"true", []bool{true, true, true}, true}, {"false", []bool{false, false, false}, true}, {"both", []bool{true, false, true}, false}} {
		t.Run(c.name, func(t *testing.T) {
			where := []msg{node("Where", "w", []string{"c", "x", "y"}, []string{"z"})}
			ins := []msg{valueInfo("x", 2, 3)}
			outs := []msg{valueInfo("z", 2, 3)}
			lowest := floats("y", nil, -math.MaxFloat32)
			constant, err := onnx.Load(bytes.NewReader(model(17, graph(where, []msg{boolTensor("c", []int64{1, 3}, c.cond...), lowest}, ins, outs))), onnx.Options{Limits: ir.Limits{NonFinite: true}})
			if err != nil {
				t.Fatal(err)
			}
			fed, err := onnx.Load(bytes.NewReader(model(17, graph(where, []msg{lowest}, append(ins, typedValueInfo("c", 9, 1, 3)), outs))), onnx.Options{Limits: ir.Limits{NonFinite: true}})
			if err != nil {
				t.Fatal(err)
			}
			masks := 0
			for _, n := range constant.Nodes {
				if n.Op == ir.OpMask {
					masks++
				}
			}
			if folded := masks == 0; folded != c.folds {
				t.Errorf("%d mask nodes; folded %v, want %v", masks, folded, c.folds)
			}
			constant.Nodes[constant.Input("x")].Data, fed.Nodes[fed.Input("x")].Data = x, x
			for i, b := range c.cond {
				fed.Nodes[fed.Input("c")].Ints[i] = map[bool]int64{true: 1, false: 0}[b]
			}
			got, err := cpuref.EvalTyped(constant)
			if err != nil {
				t.Fatal(err)
			}
			want, err := cpuref.EvalTyped(fed)
			if err != nil {
				t.Fatal(err)
			}
			g, w := got[constant.Outputs[0].ID].F, want[fed.Outputs[0].ID].F
			if len(g) != 6 || len(w) != 6 {
				t.Fatalf("%d and %d values, want 6", len(g), len(w))
			}
			for i := range w {
				if math.Float32bits(g[i]) != math.Float32bits(w[i]) {
					t.Errorf("z[%d] = %v (%#x) with the constant condition, %v (%#x) with it fed", i, g[i], math.Float32bits(g[i]), w[i], math.Float32bits(w[i]))
				}
			}
		})
	}
	// The GPT-2 form: Where(bias slice, q·kᵀ/2, lowest) before the softmax, one query row.
	nodes := []msg{
		node("Transpose", "kt", []string{"k"}, []string{"kt"}, attrInts("perm", 0, 1, 3, 2)),
		node("MatMul", "qk", []string{"q", "kt"}, []string{"s"}),
		node("Div", "scale", []string{"s", "two"}, []string{"ss"}),
		node("Where", "w", []string{"bias", "ss", "lowest"}, []string{"masked"}),
		node("Softmax", "sm", []string{"masked"}, []string{"p"}, attrInt("axis", -1)),
		node("MatMul", "pv", []string{"p", "v"}, []string{"y"}),
	}
	inits := []msg{floats("two", nil, 2), floats("lowest", nil, -math.MaxFloat32), boolTensor("bias", []int64{1, 1, 1, 5}, true, true, true, true, true)}
	g, err := onnx.Load(bytes.NewReader(model(17, graph(nodes, inits,
		[]msg{valueInfo("q", 1, 2, 1, 4), valueInfo("k", 1, 2, 5, 4), valueInfo("v", 1, 2, 5, 3)}, []msg{valueInfo("y", 1, 2, 1, 3)}))), onnx.Options{Limits: ir.Limits{NonFinite: true}})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, nd := range g.Nodes {
		if nd.Op == ir.OpAttention {
			n++
		}
	}
	if n != 1 {
		t.Errorf("%d attention nodes for GPT-2's Where(bias slice, scores, lowest) at one query; want 1", n)
	}
}

// TestAttentionPresentGrouped: ONNX Attention's present_key and
// present_value are K and V as given, [B,kv_num_heads,T,D], under
// grouped-query heads too (they were the repeated [B,q_num_heads,T,D],
// another shape than the spec's and the model's declared one).
func TestAttentionPresentGrouped(t *testing.T) {
	m := model(23, graph([]msg{node("Attention", "att", []string{"q", "k", "v"}, []string{"y", "pk", "pv"})}, nil,
		[]msg{valueInfo("q", 1, 4, 3, 4), valueInfo("k", 1, 2, 5, 4), valueInfo("v", 1, 2, 5, 3)},
		[]msg{valueInfo("y", 1, 4, 3, 3), valueInfo("pk", 1, 2, 5, 4), valueInfo("pv", 1, 2, 5, 3)}))
	g, err := onnx.Load(bytes.NewReader(m), onnx.Options{})
	if err != nil {
		t.Fatal(err)
	}
	k, v := irtest.Values(2, 40, 2), irtest.Values(3, 30, 2)
	g.Nodes[g.Input("q")].Data, g.Nodes[g.Input("k")].Data, g.Nodes[g.Input("v")].Data = irtest.Values(1, 48, 2), k, v
	vals := cpuref.Eval(g)
	for _, o := range g.Outputs {
		want := map[string][]float32{"pk": k, "pv": v}[o.Name]
		if want == nil {
			continue
		}
		if s := g.Nodes[o.ID].Shape; !s.Equal(ir.Shape{1, 2, 5, len(want) / 10}) {
			t.Errorf("%s has shape %v, want [1 2 5 %d]", o.Name, s, len(want)/10)
			continue
		}
		for i, x := range vals[o.ID] {
			if math.Float32bits(x) != math.Float32bits(want[i]) {
				t.Fatalf("%s[%d] = %v, want %v", o.Name, i, x, want[i])
			}
		}
	}
}

// TestWhereLowestCausal: transformers' GPT-2 masks a full sequence with
// Where(its bias buffer's lower triangle sliced to [S,S], scores,
// float32's lowest); the importer gives one causal attention node, bit for
// bit the hand-built causal attention, within 1e-5 of float64 (it was the
// unfused chain). A condition that is not the causal triangle (the
// triangle shifted by one key) stays unfused: an added mask of the lowest
// is not the where's lowest.
func TestWhereLowestCausal(t *testing.T) {
	const S, D, N = 5, 4, 8
	tril := make([]bool, N*N)
	for i := range N {
		for j := range N {
			tril[i*N+j] = j <= i
		}
	}
	for _, c := range []struct {
		name  string
		start int64 // the rows' slice starts here, the keys' at 0
		fused bool
	}{{"causal", 0, true}, {"shifted", 1, false}} {
		t.Run(c.name, func(t *testing.T) {
			nodes := []msg{
				node("Slice", "rows", []string{"bias", "starts", "ends", "axes"}, []string{"b1"}),
				node("Slice", "keys", []string{"b1", "zero", "s", "ax3"}, []string{"b2"}),
				node("Transpose", "kt", []string{"k"}, []string{"kt"}, attrInts("perm", 0, 1, 3, 2)),
				node("MatMul", "qk", []string{"q", "kt"}, []string{"sc"}),
				node("Div", "scale", []string{"sc", "two"}, []string{"ss"}),
				node("Where", "w", []string{"b2", "ss", "lowest"}, []string{"masked"}),
				node("Softmax", "sm", []string{"masked"}, []string{"p"}, attrInt("axis", -1)),
				node("MatMul", "pv", []string{"p", "v"}, []string{"y"}),
			}
			inits := []msg{boolTensor("bias", []int64{1, 1, N, N}, tril...), int64s("starts", []int64{1}, c.start), int64s("ends", []int64{1}, c.start+S),
				int64s("axes", []int64{1}, 2), int64s("zero", []int64{1}, 0), int64s("s", []int64{1}, S), int64s("ax3", []int64{1}, 3),
				floats("two", nil, 2), floats("lowest", nil, -math.MaxFloat32)}
			g, err := onnx.Load(bytes.NewReader(model(17, graph(nodes, inits,
				[]msg{valueInfo("q", 1, 2, S, D), valueInfo("k", 1, 2, S, D), valueInfo("v", 1, 2, S, D)}, []msg{valueInfo("y", 1, 2, S, D)}))), onnx.Options{Limits: ir.Limits{NonFinite: true}})
			if err != nil {
				t.Fatal(err)
			}
			var att *ir.Node
			for i := range g.Nodes {
				if g.Nodes[i].Op == ir.OpAttention {
					att = &g.Nodes[i]
				}
			}
			if (att != nil) != c.fused {
				t.Fatalf("fused %v, want %v:\n%s", att != nil, c.fused, g)
			}
			if !c.fused {
				return
			}
			if a := ir.AttentionOf([]ir.Shape{{1, 2, S, D}, {1, 2, S, D}, {1, 2, S, D}, {}}, att.Attrs); !a.Causal || a.Scale != 0.5 {
				t.Errorf("attention causal %v, scale %v; want causal, 0.5", a.Causal, a.Scale)
			}
			q, k, v := irtest.Values(1, 2*S*D, 2), irtest.Values(2, 2*S*D, 2), irtest.Values(3, 2*S*D, 2)
			g.Nodes[g.Input("q")].Data, g.Nodes[g.Input("k")].Data, g.Nodes[g.Input("v")].Data = q, k, v
			b := ir.NewBuilder()
			s := ir.Shape{1, 2, S, D}
			b.Output("y", b.Input(s, q).Attention(b.Input(s, k), b.Input(s, v), b.Full(ir.Shape{}, float32(math.Copysign(0, -1))), 0.5, true))
			w, err := b.Build(ir.Limits{NonFinite: true})
			if err != nil {
				t.Fatal(err)
			}
			gv, err := cpuref.EvalTyped(g)
			if err != nil {
				t.Fatal(err)
			}
			got, want := gv[g.Outputs[0].ID].F, cpuref.Eval(w)[w.Outputs[0].ID]
			mask := make([]float32, S*S)
			for i := range S {
				for j := range S {
					if j > i {
						mask[i*S+j] = float32(math.Inf(-1))
					}
				}
			}
			exact := attention64(q, k, v, mask, 2, 2, S, S, D, 0.5)
			for i := range want {
				if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
					t.Fatalf("y[%d] = %v, the causal attention's %v", i, got[i], want[i])
				}
				if math.Abs(float64(got[i])-exact[i]) > 1e-5 {
					t.Errorf("y[%d] = %v, float64 %v", i, got[i], exact[i])
				}
			}
		})
	}
}
