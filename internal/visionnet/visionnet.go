// Package visionnet writes ONNX models shaped as torchvision's ResNet-18
// and EfficientNet-B0 are when bench/torch_vision.py exports them at batch
// 1 (opset 17, torch.onnx.export with dynamo=False): each batch norm
// folded into its convolution's weights and bias, SiLU as Sigmoid then
// Mul, squeeze-and-excitation as GlobalAveragePool, two 1×1 convolutions
// and a Mul, the classifier a Flatten and a Gemm. The weights are
// pseudo-random (a fixed seed, He-scaled), as the device's exports are.
//
// They let a model's first compile (import, passes, codegen) be measured
// and profiled on a machine without PyTorch, such as this project's CI,
// on the same graphs the H200's visits compile (115 kernels, 66 distinct,
// for EfficientNet-B0 there on 2026-12-04).
package visionnet

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"

	"google.golang.org/protobuf/encoding/protowire"
)

// msg is a protobuf message built field by field against onnx.proto's
// field numbers.
type msg []byte

func (m msg) bytes(num protowire.Number, v []byte) msg {
	m = protowire.AppendTag(m, num, protowire.BytesType)
	return protowire.AppendBytes(m, v)
}

func (m msg) str(num protowire.Number, s string) msg { return m.bytes(num, []byte(s)) }

func (m msg) varint(num protowire.Number, v int64) msg {
	m = protowire.AppendTag(m, num, protowire.VarintType)
	return protowire.AppendVarint(m, uint64(v))
}

func attrInt(name string, v int64) msg {
	return msg(nil).str(1, name).varint(20, 2).varint(3, v)
}

func attrInts(name string, vs ...int64) msg {
	var packed []byte
	for _, v := range vs {
		packed = protowire.AppendVarint(packed, uint64(v))
	}
	return msg(nil).str(1, name).varint(20, 7).bytes(8, packed)
}

func attrFloat(name string, v float32) msg {
	m := msg(nil).str(1, name).varint(20, 1)
	m = protowire.AppendTag(m, 2, protowire.Fixed32Type)
	return protowire.AppendFixed32(m, math.Float32bits(v))
}

func valueInfo(name string, dims ...int64) msg {
	var shape msg
	for _, d := range dims {
		shape = shape.bytes(1, msg(nil).varint(1, d))
	}
	tt := msg(nil).varint(1, 1).bytes(2, shape)
	return msg(nil).str(1, name).bytes(2, msg(nil).bytes(1, tt))
}

// builder accumulates a graph's nodes and initializers.
type builder struct {
	nodes, inits []msg
	rng          *rand.Rand
	n            int
}

func newBuilder() *builder { return &builder{rng: rand.New(rand.NewPCG(0, 1))} }

// name returns a fresh value name with prefix p.
func (b *builder) name(p string) string {
	b.n++
	return fmt.Sprintf("%s_%d", p, b.n)
}

// weight adds a float32 initializer of dims, uniform in ±scale.
func (b *builder) weight(p string, scale float64, dims ...int64) string {
	n := int64(1)
	for _, d := range dims {
		n *= d
	}
	raw := make([]byte, 4*n)
	for i := range n {
		v := float32((2*b.rng.Float64() - 1) * scale)
		binary.LittleEndian.PutUint32(raw[4*i:], math.Float32bits(v))
	}
	name := b.name(p)
	t := msg(nil)
	for _, d := range dims {
		t = t.varint(1, d)
	}
	b.inits = append(b.inits, t.varint(2, 1).str(8, name).bytes(9, raw))
	return name
}

// node adds a node of op with one output and returns the output's name.
func (b *builder) node(op string, inputs []string, attrs ...msg) string {
	out := b.name(op)
	var n msg
	for _, s := range inputs {
		n = n.str(1, s)
	}
	n = n.str(2, out).str(3, out).str(4, op)
	for _, a := range attrs {
		n = n.bytes(5, a)
	}
	b.nodes = append(b.nodes, n)
	return out
}

// conv adds a convolution with bias (a batch norm folded in, or a
// squeeze-and-excitation's own bias) of k×k, stride s, padding (k-1)/2.
func (b *builder) conv(x string, cin, cout, k, s, groups int64) string {
	fan := float64(cin / groups * k * k)
	w := b.weight("w", math.Sqrt(6/fan), cout, cin/groups, k, k)
	bias := b.weight("b", 0.1, cout)
	p := (k - 1) / 2
	return b.node("Conv", []string{x, w, bias}, attrInts("dilations", 1, 1), attrInt("group", groups),
		attrInts("kernel_shape", k, k), attrInts("pads", p, p, p, p), attrInts("strides", s, s))
}

func (b *builder) silu(x string) string {
	return b.node("Mul", []string{x, b.node("Sigmoid", []string{x})})
}

// head adds GlobalAveragePool, Flatten and the classifier's Gemm.
func (b *builder) head(x string, c int64) string {
	x = b.node("Flatten", []string{b.node("GlobalAveragePool", []string{x})}, attrInt("axis", 1))
	w := b.weight("fc_w", math.Sqrt(1/float64(c)), 1000, c)
	bias := b.weight("fc_b", 0.1, 1000)
	return b.node("Gemm", []string{x, w, bias}, attrFloat("alpha", 1), attrFloat("beta", 1), attrInt("transB", 1))
}

// model returns the ModelProto of the graph from input "x" [1,3,224,224]
// to y, renamed "y" [1,1000].
func (b *builder) model(y string) []byte {
	// rename y's producer output to "y"
	last := b.nodes[len(b.nodes)-1]
	b.nodes[len(b.nodes)-1] = renameOutput(last, y, "y")
	var g msg
	for _, n := range b.nodes {
		g = g.bytes(1, n)
	}
	g = g.str(2, "main_graph")
	for _, t := range b.inits {
		g = g.bytes(5, t)
	}
	g = g.bytes(11, valueInfo("x", 1, 3, 224, 224)).bytes(12, valueInfo("y", 1, 1000))
	op := msg(nil).varint(2, 17)
	return msg(nil).varint(1, 8).str(2, "visionnet").bytes(8, op).bytes(7, g)
}

// renameOutput rewrites a node's output field from old to new.
func renameOutput(n msg, old, new string) msg {
	var out msg
	for len(n) > 0 {
		num, typ, l := protowire.ConsumeTag(n)
		rest := n[l:]
		var size int
		if typ == protowire.BytesType {
			v, m := protowire.ConsumeBytes(rest)
			size = m
			if num == 2 && string(v) == old {
				out = out.str(2, new)
				n = rest[size:]
				continue
			}
		} else {
			size = protowire.ConsumeFieldValue(num, typ, rest)
		}
		out = append(out, n[:l+size]...)
		n = rest[size:]
	}
	return out
}

// ResNet18 returns torchvision's resnet18 at batch 1 as ONNX.
func ResNet18() []byte {
	b := newBuilder()
	x := b.node("Relu", []string{b.conv("x", 3, 64, 7, 2, 1)})
	x = b.node("MaxPool", []string{x}, attrInt("ceil_mode", 0), attrInts("kernel_shape", 3, 3),
		attrInts("pads", 1, 1, 1, 1), attrInts("strides", 2, 2))
	cin := int64(64)
	for _, c := range []int64{64, 128, 256, 512} {
		for i := range 2 {
			s := int64(1)
			if i == 0 && c != 64 {
				s = 2
			}
			out := b.node("Relu", []string{b.conv(x, cin, c, 3, s, 1)})
			out = b.conv(out, c, c, 3, 1, 1)
			id := x
			if s != 1 || cin != c {
				id = b.conv(x, cin, c, 1, s, 1)
			}
			x = b.node("Relu", []string{b.node("Add", []string{out, id})})
			cin = c
		}
	}
	return b.model(b.head(x, 512))
}

// EfficientNetB0 returns torchvision's efficientnet_b0 at batch 1 as ONNX.
func EfficientNetB0() []byte {
	b := newBuilder()
	x := b.silu(b.conv("x", 3, 32, 3, 2, 1))
	// expand ratio, kernel, stride, in, out, layers (torchvision's B0 table)
	stages := [][6]int64{
		{1, 3, 1, 32, 16, 1}, {6, 3, 2, 16, 24, 2}, {6, 5, 2, 24, 40, 2}, {6, 3, 2, 40, 80, 3},
		{6, 5, 1, 80, 112, 3}, {6, 5, 2, 112, 192, 4}, {6, 3, 1, 192, 320, 1},
	}
	for _, st := range stages {
		e, k, s, cin, cout, n := st[0], st[1], st[2], st[3], st[4], st[5]
		for i := range n {
			if i > 0 {
				cin, s = cout, 1
			}
			h, ce := x, cin*e
			if e != 1 {
				h = b.silu(b.conv(h, cin, ce, 1, 1, 1))
			}
			h = b.silu(b.conv(h, ce, ce, k, s, ce))
			sq := max(1, cin/4)
			sc := b.node("GlobalAveragePool", []string{h})
			sc = b.silu(b.conv(sc, ce, sq, 1, 1, 1))
			sc = b.node("Sigmoid", []string{b.conv(sc, sq, ce, 1, 1, 1)})
			h = b.node("Mul", []string{sc, h})
			h = b.conv(h, ce, cout, 1, 1, 1)
			if s == 1 && cin == cout {
				h = b.node("Add", []string{h, x})
			}
			x = h
		}
	}
	x = b.silu(b.conv(x, 320, 1280, 1, 1, 1))
	return b.model(b.head(x, 1280))
}

// ints adds an int64 initializer (a shape, an index, axes) of dims.
func (b *builder) ints(dims []int64, vs ...int64) string {
	name := b.name("c")
	t := msg(nil)
	for _, d := range dims {
		t = t.varint(1, d)
	}
	var packed []byte
	for _, v := range vs {
		packed = protowire.AppendVarint(packed, uint64(v))
	}
	b.inits = append(b.inits, t.varint(2, 7).str(8, name).bytes(7, packed))
	return name
}

// scalar adds a float32 initializer of one value and no dimensions.
func (b *builder) scalar(v float32) string {
	name := b.name("s")
	raw := binary.LittleEndian.AppendUint32(nil, math.Float32bits(v))
	b.inits = append(b.inits, msg(nil).varint(2, 1).str(8, name).bytes(9, raw))
	return name
}

func (b *builder) reshape(x string, shape ...int64) string {
	return b.node("Reshape", []string{x, b.ints([]int64{int64(len(shape))}, shape...)})
}

func (b *builder) transpose(x string, perm ...int64) string {
	return b.node("Transpose", []string{x}, attrInts("perm", perm...))
}

// linear adds x·Wᵀ + bias as MatMul and Add (a Linear over 3-D input).
func (b *builder) linear(x string, in, out int64) string {
	w := b.weight("w", math.Sqrt(1/float64(in)), in, out) // Wᵀ, as the export stores it
	return b.node("Add", []string{b.node("MatMul", []string{x, w}), b.weight("b", 0.1, out)})
}

func (b *builder) layerNorm(x string, d int64) string {
	return b.node("LayerNormalization", []string{x, b.weight("ln_w", 1, d), b.weight("ln_b", 0.1, d)},
		attrInt("axis", -1), attrFloat("epsilon", 1e-6))
}

// ViTTiny returns torchvision's VisionTransformer(image_size=224,
// patch_size=16, num_layers=12, num_heads=3, hidden_dim=192, mlp_dim=768)
// at batch 1 as ONNX, as bench/torch_vision.py exports it: LayerNormalization
// (opset 17), nn.MultiheadAttention's packed in-projection split by Gather,
// scaled_dot_product_attention as MatMul, Softmax and MatMul over scaled
// q and kᵀ, GELU by Erf.
func ViTTiny() []byte {
	const d, heads, mlp, seq = 192, 3, 768, 197
	const hd = d / heads
	b := newBuilder()
	w := b.weight("w", math.Sqrt(6/float64(3*16*16)), d, 3, 16, 16)
	x := b.node("Conv", []string{"x", w, b.weight("b", 0.1, d)}, attrInts("dilations", 1, 1), attrInt("group", 1),
		attrInts("kernel_shape", 16, 16), attrInts("pads", 0, 0, 0, 0), attrInts("strides", 16, 16))
	x = b.transpose(b.reshape(x, 1, d, seq-1), 0, 2, 1)
	x = b.node("Concat", []string{b.weight("cls", 0.02, 1, 1, d), x}, attrInt("axis", 1))
	x = b.node("Add", []string{x, b.weight("pos", 0.02, 1, seq, d)})
	scale := b.scalar(float32(math.Sqrt(1 / math.Sqrt(hd))))
	for range 12 {
		h := b.transpose(b.layerNorm(x, d), 1, 0, 2) // batch_first: [seq, 1, d]
		proj := b.linear(h, d, 3*d)
		proj = b.node("Unsqueeze", []string{b.reshape(proj, seq, 1, 3, d), b.ints([]int64{1}, 0)})
		proj = b.node("Squeeze", []string{b.transpose(proj, 3, 1, 2, 0, 4), b.ints([]int64{1}, -2)})
		var qkv [3]string
		for i := range qkv {
			t := b.node("Gather", []string{proj, b.ints(nil, int64(i))}, attrInt("axis", 0))
			t = b.transpose(b.reshape(t, seq, heads, hd), 1, 0, 2)
			qkv[i] = b.reshape(t, 1, heads, seq, hd)
		}
		q := b.node("Mul", []string{qkv[0], scale})
		kt := b.node("Mul", []string{b.transpose(qkv[1], 0, 1, 3, 2), scale})
		att := b.node("Softmax", []string{b.node("MatMul", []string{q, kt})}, attrInt("axis", -1))
		o := b.reshape(b.transpose(b.node("MatMul", []string{att, qkv[2]}), 2, 0, 1, 3), seq, d)
		ow := b.weight("w", math.Sqrt(1/float64(d)), d, d)
		o = b.node("Gemm", []string{o, ow, b.weight("b", 0.1, d)}, attrFloat("alpha", 1), attrFloat("beta", 1), attrInt("transB", 1))
		o = b.transpose(b.reshape(o, seq, 1, d), 1, 0, 2)
		x = b.node("Add", []string{o, x})
		m := b.linear(b.layerNorm(x, d), d, mlp)
		e := b.node("Erf", []string{b.node("Div", []string{m, b.scalar(1.4142135)})})
		m = b.node("Mul", []string{b.node("Mul", []string{m, b.node("Add", []string{e, b.scalar(1)})}), b.scalar(0.5)})
		x = b.node("Add", []string{b.linear(m, mlp, d), x})
	}
	x = b.node("Gather", []string{b.layerNorm(x, d), b.ints(nil, 0)}, attrInt("axis", 1))
	hw := b.weight("head_w", math.Sqrt(1/float64(d)), 1000, d)
	return b.model(b.node("Gemm", []string{x, hw, b.weight("head_b", 0.1, 1000)}, attrFloat("alpha", 1), attrFloat("beta", 1), attrInt("transB", 1)))
}
