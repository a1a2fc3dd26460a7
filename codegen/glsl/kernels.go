package glsl

import (
	"fmt"
	"strings"

	"github.com/gpucc/gpucc/codegen"
	"github.com/gpucc/gpucc/ir"
)

// elementwise emits an elementwise kernel, or one that accumulates per
// element (matmul, conv, ...: accFn renders the function accName that
// returns element i's accumulator; see accumulating): one pass per group
// of up to MaxDrawBuffers outputs, each evaluating the whole body.
func (pl *Plan) elementwise(ki int, k *ir.Kernel, accFn func(*ir.Kernel) string, accName string) {
	groups := (len(k.Outputs) + MaxDrawBuffers - 1) / MaxDrawBuffers
	for g := 0; g < groups; g++ {
		lo, hi := g*MaxDrawBuffers, min((g+1)*MaxDrawBuffers, len(k.Outputs))
		name := k.Name
		if groups > 1 {
			name = fmt.Sprintf("%s.%d", k.Name, g)
		}
		b := header(name)
		pl.declare(b, k, hi-lo)
		acc := ""
		if accFn != nil {
			b.WriteString(accFn(k))
			acc = accName + "(" + indexVar + ")"
		}
		b.WriteString("void main() {\n")
		b.WriteString(fragIndex(pl.Textures[k.Outputs[lo]].Width))
		b.WriteString(codegen.Indent(codegen.Body(Lang, k, load, acc), 1))
		for s := lo; s < hi; s++ {
			fmt.Fprintf(b, "\to%d = %s;\n", s-lo, codegen.Value(int(k.Stores[s])))
		}
		b.WriteString("}\n")
		pl.add(name, ki, b.String(), inputs(k), k.Outputs[lo:hi])
	}
}

// matmul renders the accumulator of output element i: k ascending from +0,
// each product rounded on its own (Keep) before it is added; in a batched
// matmul, over the matrices of i's batch.
func matmul(k *ir.Kernel) string {
	u := Lang.Uint
	var b strings.Builder
	b.WriteString("float matmul(uint i) {\n")
	fmt.Fprintf(&b, "\tuint r = i / %s;\n\tuint c = i %% %s;\n", u(k.N), u(k.N))
	a, bb := "r * %s + k", "k * %s + c"
	if len(k.Shape) > 2 { // a batch: the loads' logical index carries the matrix's (their strides map it)
		fmt.Fprintf(&b, "\tuint z = i / %s;\n\tr = r %% %s;\n", u(k.M*k.N), u(k.M))
		a, bb = fmt.Sprintf("z * %s + ", u(k.M*k.K))+a, fmt.Sprintf("z * %s + ", u(k.K*k.N))+bb
	}
	fmt.Fprintf(&b, "\tfloat acc = %s;\n", Lang.Float(0))
	fmt.Fprintf(&b, "\tfor (uint k = 0u; k < %s; k++) {\n", u(k.K))
	fmt.Fprintf(&b, "\t\tfloat p = %s;\n", Lang.Keep(fmt.Sprintf("load0("+a+") * load1("+bb+")", u(k.K), u(k.N))))
	b.WriteString("\t\tacc = acc + p;\n\t}\n\treturn acc;\n}\n")
	return b.String()
}

// sum emits the reduction passes of a reduction kernel (sum or max). With
// P the power of two ≥ n, the leaves of each output, each output's leaves
// are padded with the identity (-0.0, -Inf) to P: leaf g of the padded
// leaf space is leaf g mod P of output g div P. Pass 0 evaluates the
// prologue at the leaves and each fragment combines SumFanIn contiguous
// leaves with the pairwise tree; every later pass does the same to the
// partials, until one value per output is left. The blocks are aligned
// powers of two within each output, so this is cpuref's tree exactly. A
// split reduction (k.Blocks > 1) stops when k.Blocks values per output are
// left: each is the subtree of one block.
func (pl *Plan) sum(ki int, k *ir.Kernel) {
	red := ir.ReductionOf(k.Shape, k.Keep)
	p, _ := codegen.SumBlock(red.Leaves, 1)
	blocks := max(k.Blocks, 1)
	src := -1 // texture of the partials; -1: the leaves themselves
	for step := 0; p > blocks || step == 0; step++ {
		fan := min(SumFanIn, p/blocks)
		p /= fan
		out := k.Outputs[0]
		if p > blocks {
			out = len(pl.Textures)
			pl.Textures = append(pl.Textures, Layout(red.Outputs*p, -1))
		}
		name := fmt.Sprintf("%s.%d", k.Name, step)
		b := header(name)
		ins := []int{src}
		if src < 0 {
			pl.declare(b, k, 1)
			b.WriteString(combine(k))
			b.WriteString(leaf(k, red))
			ins = inputs(k)
		} else {
			fmt.Fprintf(b, "uniform highp sampler2D %s0;\nlayout(location = 0) out float o0;\n", SamplerPrefix)
			b.WriteString(combine(k))
			fmt.Fprintf(b, "float leaf(uint i) {\n\treturn %s;\n}\n", fetch(SamplerPrefix+"0", "i", pl.Textures[src].Width))
		}
		b.WriteString("void main() {\n")
		b.WriteString(fragIndex(pl.Textures[out].Width))
		b.WriteString(tree(fan))
		b.WriteString("}\n")
		pl.add(name, ki, b.String(), ins, []int{out})
		src = out
	}
	if k.AccIndex() >= 0 {
		pl.epilogue(ki, k)
	}
}

// epilogue emits the passes of a reduction's epilogue: fragment o reads
// the reduced value o from Outputs[0]'s texture (one more sampler after
// the operands'), evaluates the epilogue and writes up to MaxDrawBuffers
// of Outputs[1:].
func (pl *Plan) epilogue(ki int, k *ir.Kernel) {
	outs, stores := k.Outputs[1:], k.Stores[1:]
	red := pl.Textures[k.Outputs[0]]
	for lo := 0; lo < len(outs); lo += MaxDrawBuffers {
		hi := min(lo+MaxDrawBuffers, len(outs))
		name := fmt.Sprintf("%s.epilogue%d", k.Name, lo/MaxDrawBuffers)
		b := header(name)
		pl.declare(b, k, hi-lo)
		sampler := fmt.Sprintf("%s%d", SamplerPrefix, len(k.Inputs))
		fmt.Fprintf(b, "uniform highp sampler2D %s;\n", sampler)
		b.WriteString("void main() {\n")
		b.WriteString(fragIndex(pl.Textures[outs[lo]].Width))
		b.WriteString(codegen.Indent(codegen.Epilogue(Lang, k, load, fetch(sampler, indexVar, red.Width)), 1))
		for s := lo; s < hi; s++ {
			fmt.Fprintf(b, "\to%d = %s;\n", s-lo, codegen.Value(int(stores[s])))
		}
		b.WriteString("}\n")
		pl.add(name, ki, b.String(), append(inputs(k), k.Outputs[0]), outs[lo:hi])
	}
}

// combine renders the reduction's combining function, combine(a, b).
func combine(k *ir.Kernel) string {
	var b strings.Builder
	b.WriteString("float combine(float a, float b) {\n")
	b.WriteString(codegen.Indent(codegen.Combine(Lang, k.Reduce, "a", "b", "m"), 1))
	b.WriteString("\treturn m;\n}\n")
	return b.String()
}

// leaf renders the prologue at padded leaf g, the identity past each
// output's n real leaves.
func leaf(k *ir.Kernel, red ir.Reduction) string {
	var b strings.Builder
	n := red.Leaves
	p, _ := codegen.SumBlock(n, 1)
	b.WriteString("float leaf(uint g) {\n")
	if red.Outputs > 1 {
		fmt.Fprintf(&b, "\tuint o = g / %s;\n\tuint r = g %% %s;\n", Lang.Uint(p), Lang.Uint(p))
	} else {
		b.WriteString("\tuint r = g;\n")
	}
	fmt.Fprintf(&b, "\tif (r >= %s) {\n\t\treturn %s;\n\t}\n", Lang.Uint(n), Lang.Bits(k.Reduce.Info().Identity))
	fmt.Fprintf(&b, "\tuint %s = %s;\n", indexVar, codegen.LeafIndex(Lang, red, "o", "r"))
	b.WriteString(codegen.Indent(codegen.Prologue(Lang, k, load), 1))
	fmt.Fprintf(&b, "\treturn %s;\n}\n", codegen.Value(int(k.Stores[0])))
	return b.String()
}

// tree renders the pairwise combination of leaves i*fan … i*fan+fan-1
// into o0: level l holds fan>>l values t<l>_<j> = combine(t<l-1>_<2j>,
// t<l-1>_<2j+1>).
func tree(fan int) string {
	var b strings.Builder
	for j := 0; j < fan; j++ {
		fmt.Fprintf(&b, "\tfloat t0_%d = leaf(%s * %s + %s);\n", j, indexVar, Lang.Uint(fan), Lang.Uint(j))
	}
	l := 0
	for w := fan / 2; w >= 1; w /= 2 {
		l++
		for j := 0; j < w; j++ {
			fmt.Fprintf(&b, "\tfloat t%d_%d = combine(t%d_%d, t%d_%d);\n", l, j, l-1, 2*j, l-1, 2*j+1)
		}
	}
	fmt.Fprintf(&b, "\to0 = t%d_0;\n", l)
	return b.String()
}

// life emits one toroidal Game of Life step: count the live (x > 0) cells
// among the eight wrapped neighbours, then apply the rule.
func (pl *Plan) life(ki int, k *ir.Kernel) {
	h, w := k.Shape[0], k.Shape[1]
	u := Lang.Uint
	b := header(k.Name)
	pl.declare(b, k, 1)
	fmt.Fprintf(b, "float alive(uint r, uint c) {\n\treturn load0(r * %s + c) > %s ? 1.0 : 0.0;\n}\n", u(w), Lang.Float(0))
	b.WriteString("void main() {\n")
	b.WriteString(fragIndex(pl.Textures[k.Outputs[0]].Width))
	fmt.Fprintf(b, "\tuint r = i / %s;\n\tuint c = i %% %s;\n", u(w), u(w))
	// Adding h-1 (w-1) modulo h (w) steps back one row (column) without
	// going below zero.
	fmt.Fprintf(b, "\tuint up = (r + %s) %% %s;\n\tuint down = (r + 1u) %% %s;\n", u(h-1), u(h), u(h))
	fmt.Fprintf(b, "\tuint left = (c + %s) %% %s;\n\tuint right = (c + 1u) %% %s;\n", u(w-1), u(w), u(w))
	b.WriteString("\tfloat live = alive(up, left) + alive(up, c) + alive(up, right)\n")
	b.WriteString("\t\t+ alive(r, left) + alive(r, right)\n")
	b.WriteString("\t\t+ alive(down, left) + alive(down, c) + alive(down, right);\n")
	fmt.Fprintf(b, "\tbool next = live == 3.0 || (live == 2.0 && alive(r, c) == 1.0);\n")
	fmt.Fprintf(b, "\to0 = next ? %s : %s;\n}\n", Lang.Float(1), Lang.Float(0))
	pl.add(k.Name, ki, b.String(), inputs(k), k.Outputs)
}
