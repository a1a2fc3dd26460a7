package c

import (
	"fmt"
	"strings"

	"github.com/gpucc/gpucc/codegen"
	"github.com/gpucc/gpucc/ir"
)

// nested writes kernel k from its nest (codegen.NestOf): see nestKernel.
func nested(b *strings.Builder, k *ir.Kernel, _ *Kernel) int {
	return nestKernel(b, k, codegen.NestOf(k))
}

// nestKernel writes kernel k from its nest (codegen.Nest): a tile is one
// index of k's leading axes (all but the last two), each tile loops over
// the last two, and at each element (at, row-major over k.Shape) runs the
// nest, then the epilogue and the stores. Elements are independent, so
// any split of the tiles gives the same bits.
func nestKernel(b *strings.Builder, k *ir.Kernel, n *codegen.Nest) int {
	lead := max(len(k.Shape)-2, 0)
	tiles := k.Shape[:lead].Len()
	b.WriteString(codegen.Indent(n.TableDecls(Lang), 1))
	b.WriteString("\tfor (idx tl = t0; tl < t1; tl++) {\n")
	b.WriteString(codegen.Indent(codegen.Coords(Lang, n.Dims[:lead], k.Shape[:lead], 0, "tl"), 2))
	fmt.Fprintf(b, "\t\tidx at = tl * %s;\n", Lang.Uint(k.Shape[lead:].Len()))
	for d := lead; d < len(k.Shape); d++ {
		fmt.Fprintf(b, "\t\tfor (idx %s = 0; %s < %s; %s++)", n.Dims[d], n.Dims[d], Lang.Uint(k.Shape[d]), n.Dims[d])
		if d < len(k.Shape)-1 {
			b.WriteString("\n")
		}
	}
	b.WriteString(" {\n")
	load := func(j int) string {
		return fmt.Sprintf("in%d[%s]", j, codegen.Index(Lang, k.Inputs[j], "at"))
	}
	b.WriteString(codegen.Indent(n.Render(Lang, k), 3))
	b.WriteString(codegen.Indent(codegen.Body(Lang, k, load, n.Acc), 3))
	b.WriteString(codegen.Indent(stores(k, "at"), 3))
	b.WriteString("\t\t\tat++;\n\t\t}\n\t}\n")
	return tiles
}

// cDecl, cFor and cTable are C's rows of the nest tables (codegen.Lang).
func cDecl(t, name, expr string, mutable bool) string {
	if mutable {
		return t + " " + name + " = " + expr + ";"
	}
	return "const " + t + " " + name + " = " + expr + ";"
}

func cFor(t, name, n string) string {
	return "for (" + t + " " + name + " = 0; " + name + " < " + n + "; " + name + "++) {"
}

func cTable(name string, vals []uint32) string {
	s := make([]string, len(vals))
	for i, v := range vals {
		s[i] = fmt.Sprintf("%du", v)
	}
	return fmt.Sprintf("static const u32 %s[%d] = {%s};", name, len(vals), strings.Join(s, ", "))
}

func cArray(t, name string, n int) string {
	return t + " " + name + "[" + fmt.Sprint(n) + "];"
}
