package onnx_test

import (
	"fmt"
	"math"
)

// FuzzLoad's op grammar: a fuzz input is read as a program (an opset, an
// input's shape, then ops) that writes a structurally valid ModelProto:
// real op types, attributes of the right kinds and constant inputs from a
// pool of values that reach the importer's checked arithmetic (0, ±1,
// small axes, 2^31-1, 2^62, ±2^63). Its shapes are not tracked, so many
// models are refused (invalid_graph); each must be refused with a code,
// never a panic, or import as a valid graph.

// fuzzProgram reads bytes; past the end it reads zeros.
type fuzzProgram struct{ b []byte }

func (p *fuzzProgram) byte() byte {
	if len(p.b) == 0 {
		return 0
	}
	c := p.b[0]
	p.b = p.b[1:]
	return c
}

func (p *fuzzProgram) intn(n int) int { return int(p.byte()) % n }

// interesting are the integers beyond small ones that have broken
// importers: wraps of int32, int64 and their products.
var interesting = []int64{1<<31 - 1, 1 << 31, 1 << 32, 1 << 62, math.MaxInt64, math.MinInt64, -(1 << 31), 1 << 20, 1<<62 + 2}

// int64 is mostly a small value in [-4, 4], sometimes an interesting one.
func (p *fuzzProgram) int64() int64 {
	c := p.byte()
	if c < 224 {
		return int64(c%9) - 4
	}
	return interesting[int(c)%len(interesting)]
}

// small is in [1, 4].
func (p *fuzzProgram) small() int64 { return int64(p.intn(4)) + 1 }

func (p *fuzzProgram) ints(n int) []int64 {
	vs := make([]int64, n)
	for i := range vs {
		vs[i] = p.int64()
	}
	return vs
}

func (p *fuzzProgram) float() float32 {
	return []float32{0, 1, -1, 0.5, -2.5, 3, 1e-3, 65504, 1e30, float32(math.Inf(1)), float32(math.NaN())}[p.intn(11)]
}

// fuzzGraph is the model being written.
type fuzzGraph struct {
	p      *fuzzProgram
	nodes  []msg
	inits  []msg
	values []string // the values defined so far, the input first
	next   int
}

func (g *fuzzGraph) name(prefix string) string {
	g.next++
	return fmt.Sprintf("%s%d", prefix, g.next)
}

// val picks a defined value.
func (g *fuzzGraph) val() string { return g.values[g.p.intn(len(g.values))] }

// konst adds an int64 initializer of n values (a scalar when n is 0).
func (g *fuzzGraph) konst(n int) string {
	name := g.name("k")
	if n == 0 {
		g.inits = append(g.inits, int64s(name, nil, g.p.int64()))
	} else {
		g.inits = append(g.inits, int64s(name, []int64{int64(n)}, g.p.ints(n)...))
	}
	return name
}

// fconst adds a float32 initializer of a small shape.
func (g *fuzzGraph) fconst() string {
	name := g.name("f")
	dims := make([]int64, g.p.intn(4))
	n := 1
	for i := range dims {
		dims[i] = g.p.small()
		n *= int(dims[i])
	}
	vs := make([]float32, n)
	for i := range vs {
		vs[i] = g.p.float()
	}
	g.inits = append(g.inits, floats(name, dims, vs...))
	return name
}

// emit adds a node of op with inputs and k outputs, and defines them.
func (g *fuzzGraph) emit(op string, inputs []string, k int, attrs ...msg) {
	outs := make([]string, k)
	for i := range outs {
		outs[i] = g.name("v")
	}
	g.nodes = append(g.nodes, node(op, g.name("n"), inputs, outs, attrs...))
	g.values = append(g.values, outs...)
}

// fuzzOps is the grammar's ops: each writes one node (and the constants
// it reads).
var fuzzOps = []func(g *fuzzGraph){
	func(g *fuzzGraph) { // an elementwise unary op
		ops := []string{"Relu", "Neg", "Abs", "Exp", "Log", "Tanh", "Sqrt", "Floor", "Ceil", "Sigmoid", "Identity", "Erf", "Sign", "Reciprocal", "Not", "IsNaN"}
		g.emit(ops[g.p.intn(len(ops))], []string{g.val()}, 1)
	},
	func(g *fuzzGraph) { // a binary op, broadcasting
		ops := []string{"Add", "Sub", "Mul", "Div", "Max", "Min", "Pow", "MatMul", "Equal", "Less", "Greater", "And", "Mod", "PRelu"}
		g.emit(ops[g.p.intn(len(ops))], []string{g.val(), g.val()}, 1)
	},
	func(g *fuzzGraph) { // an op along an axis
		ops := []string{"Softmax", "LogSoftmax", "Flatten", "Hardmax", "ArgMax", "ArgMin"}
		op := ops[g.p.intn(len(ops))]
		attrs := []msg{attrInt("axis", g.p.int64())}
		if op == "ArgMax" || op == "ArgMin" {
			attrs = append(attrs, attrInt("keepdims", int64(g.p.intn(2))), attrInt("select_last_index", int64(g.p.intn(2))))
		}
		g.emit(op, []string{g.val()}, 1, attrs...)
	},
	func(g *fuzzGraph) { // CumSum
		g.emit("CumSum", []string{g.val(), g.konst(0)}, 1, attrInt("exclusive", int64(g.p.intn(2))), attrInt("reverse", int64(g.p.intn(2))))
	},
	func(g *fuzzGraph) { // a reduction, its axes an attribute or an input
		ops := []string{"ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL2", "ReduceLogSumExp", "ReduceSumSquare"}
		op, in := ops[g.p.intn(len(ops))], []string{g.val()}
		attrs := []msg{attrInt("keepdims", int64(g.p.intn(2)))}
		if g.p.intn(2) == 0 {
			in = append(in, g.konst(g.p.intn(3)+1))
		} else {
			attrs = append(attrs, attrInts("axes", g.p.ints(g.p.intn(3)+1)...))
		}
		g.emit(op, in, 1, attrs...)
	},
	func(g *fuzzGraph) { // Transpose
		perm := make([]int64, g.p.intn(5))
		for i := range perm {
			perm[i] = int64(g.p.intn(len(perm) + 1))
		}
		g.emit("Transpose", []string{g.val()}, 1, attrInts("perm", perm...))
	},
	func(g *fuzzGraph) { // an op of a constant shape: Reshape, Expand, Tile
		ops := []string{"Reshape", "Expand", "Tile"}
		g.emit(ops[g.p.intn(3)], []string{g.val(), g.konst(g.p.intn(4) + 1)}, 1)
	},
	func(g *fuzzGraph) { // Slice
		k := g.p.intn(3) + 1
		in := []string{g.val(), g.konst(k), g.konst(k)}
		for range g.p.intn(3) {
			in = append(in, g.konst(k)) // axes, then steps
		}
		g.emit("Slice", in, 1)
	},
	func(g *fuzzGraph) { // Split, by sizes or into equal parts
		parts := g.p.intn(4) + 1
		attrs := []msg{attrInt("axis", g.p.int64())}
		in := []string{g.val()}
		switch g.p.intn(3) {
		case 0:
			in = append(in, g.konst(parts))
		case 1:
			attrs = append(attrs, attrInt("num_outputs", int64(parts)))
		}
		g.emit("Split", in, parts, attrs...)
	},
	func(g *fuzzGraph) { // Concat
		in := make([]string, g.p.intn(3)+1)
		for i := range in {
			in[i] = g.val()
		}
		g.emit("Concat", in, 1, attrInt("axis", g.p.int64()))
	},
	func(g *fuzzGraph) { // Gather and GatherElements of constant indices
		ops := []string{"Gather", "GatherElements"}
		g.emit(ops[g.p.intn(2)], []string{g.val(), g.konst(g.p.intn(4))}, 1, attrInt("axis", g.p.int64()))
	},
	func(g *fuzzGraph) { // Unsqueeze and Squeeze, axes an input or an attribute
		ops := []string{"Unsqueeze", "Squeeze"}
		op := ops[g.p.intn(2)]
		if g.p.intn(2) == 0 {
			g.emit(op, []string{g.val(), g.konst(g.p.intn(2) + 1)}, 1)
		} else {
			g.emit(op, []string{g.val()}, 1, attrInts("axes", g.p.ints(g.p.intn(2)+1)...))
		}
	},
	func(g *fuzzGraph) { // DepthToSpace and SpaceToDepth
		ops := []string{"DepthToSpace", "SpaceToDepth"}
		attrs := []msg{attrInt("blocksize", g.p.int64())}
		if g.p.intn(2) == 0 {
			attrs = append(attrs, attrStr("mode", []string{"DCR", "CRD"}[g.p.intn(2)]))
		}
		g.emit(ops[g.p.intn(2)], []string{g.val()}, 1, attrs...)
	},
	func(g *fuzzGraph) { // Shape, then ConstantOfShape, Range or Size
		switch g.p.intn(4) {
		case 0:
			g.emit("Shape", []string{g.val()}, 1)
		case 1:
			g.emit("ConstantOfShape", []string{g.konst(g.p.intn(3) + 1)}, 1)
		case 2:
			g.emit("Range", []string{g.konst(0), g.konst(0), g.konst(0)}, 1)
		default:
			g.emit("Size", []string{g.val()}, 1)
		}
	},
	func(g *fuzzGraph) { // Cast
		g.emit("Cast", []string{g.val()}, 1, attrInt("to", []int64{1, 6, 7, 9, 10, 11, 16}[g.p.intn(7)]))
	},
	func(g *fuzzGraph) { // Where of a comparison
		g.emit([]string{"Greater", "Equal", "Less"}[g.p.intn(3)], []string{g.val(), g.val()}, 1)
		g.emit("Where", []string{g.values[len(g.values)-1], g.val(), g.val()}, 1)
	},
	func(g *fuzzGraph) { // Pad
		in := []string{g.val(), g.konst(2 * (g.p.intn(4) + 1))}
		if g.p.intn(2) == 0 {
			in = append(in, g.fconst())
		}
		g.emit("Pad", in, 1, attrStr("mode", []string{"constant", "reflect", "edge", "wrap"}[g.p.intn(4)]))
	},
	func(g *fuzzGraph) { // Clip, Trilu, LayerNormalization, Gemm
		switch g.p.intn(4) {
		case 0:
			g.emit("Clip", []string{g.val(), g.fconst(), g.fconst()}, 1)
		case 1:
			g.emit("Trilu", []string{g.val(), g.konst(0)}, 1, attrInt("upper", int64(g.p.intn(2))))
		case 2:
			g.emit("LayerNormalization", []string{g.val(), g.val()}, 1, attrInt("axis", g.p.int64()), attrFloat("epsilon", g.p.float()))
		default:
			g.emit("Gemm", []string{g.val(), g.val(), g.val()}, 1, attrInt("transA", int64(g.p.intn(2))), attrInt("transB", int64(g.p.intn(2))), attrFloat("alpha", g.p.float()))
		}
	},
	func(g *fuzzGraph) { // a float constant, as an initializer or a Constant node
		if g.p.intn(2) == 0 {
			g.values = append(g.values, g.fconst())
			return
		}
		g.emit("Constant", nil, 1, attrInts("value_ints", g.p.ints(g.p.intn(4)+1)...))
	},
	func(g *fuzzGraph) { // Conv and the poolings
		ops := []string{"Conv", "MaxPool", "AveragePool"}
		op := ops[g.p.intn(3)]
		k := g.p.intn(2) + 1
		attrs := []msg{attrInts("kernel_shape", g.p.ints(k)...), attrInts("strides", g.p.ints(k)...)}
		if g.p.intn(2) == 0 {
			attrs = append(attrs, attrInts("pads", g.p.ints(2*k)...))
		}
		in := []string{g.val()}
		if op == "Conv" {
			in = append(in, g.fconst())
		}
		g.emit(op, in, 1, attrs...)
	},
	func(g *fuzzGraph) { // Dropout, with its mask
		g.emit("Dropout", []string{g.val()}, g.p.intn(2)+1)
	},
}

// fuzzModel writes the model the program describes.
func fuzzModel(program []byte) []byte {
	p := &fuzzProgram{b: program}
	opset := []int64{7, 11, 13, 17, 18, 21, 13, 18}[p.intn(8)]
	dims := make([]int64, p.intn(4)+1)
	for i := range dims {
		dims[i] = p.small()
	}
	g := &fuzzGraph{p: p, values: []string{"x"}}
	for range p.intn(12) + 1 {
		fuzzOps[p.intn(len(fuzzOps))](g)
	}
	outputs := []msg{valueInfo(g.values[len(g.values)-1])}
	if p.intn(2) == 0 {
		if o := g.val(); o != g.values[len(g.values)-1] && o != "x" {
			outputs = append(outputs, valueInfo(o))
		}
	}
	return model(opset, graph(g.nodes, g.inits, []msg{valueInfo("x", dims...)}, outputs))
}
