package wgsl

import (
	"fmt"
	"strings"

	"github.com/gpucc/gpucc/codegen"
	"github.com/gpucc/gpucc/ir"
)

// nested emits kernel k from its nest (codegen.NestOf): see nestKernel.
func nested(b *strings.Builder, k *ir.Kernel, s *codegen.Shader) {
	nestKernel(b, k, s, codegen.NestOf(k))
}

// nestLoops is the loop cost of a kernel written from its nest: the
// nest's loops (codegen.Nest.LoopCost).
func nestLoops(k *ir.Kernel) int { return codegen.NestOf(k).LoopCost() }

// nestKernel emits kernel k from its nest (codegen.Nest), one thread per
// element of k.Shape: the nest's tables as private arrays (naga indexes a
// const array only by constants; each invocation initialises its copy, a
// cost per thread of the tables' length), the element's coordinates, the
// nest, then the epilogue and the stores at the same element.
func nestKernel(b *strings.Builder, k *ir.Kernel, s *codegen.Shader, n *codegen.Nest) {
	total := k.Shape.Len()
	s.Workgroup = [3]int{ElementwiseThreads, 1, 1}
	s.Groups = codegen.Groups1D((total+ElementwiseThreads-1)/ElementwiseThreads, maxGroupsPerDim)
	b.WriteString(codegen.Indent(n.TableDecls(Lang), 0))
	fmt.Fprintf(b, "@compute @workgroup_size(%d)\n", ElementwiseThreads)
	b.WriteString("fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {\n")
	fmt.Fprintf(b, "\tlet i = gid.x + gid.y * nwg.x * %du;\n", ElementwiseThreads)
	fmt.Fprintf(b, "\tif (i >= %s) { return; }\n", Lang.Uint(total))
	b.WriteString(codegen.Indent(codegen.Coords(Lang, n.Dims, k.Shape, 0, "i"), 1))
	b.WriteString(codegen.Indent(n.Render(Lang, k), 1))
	b.WriteString(codegen.Indent(codegen.Body(Lang, k, load(k, "i"), n.Acc), 1))
	b.WriteString(codegen.Indent(stores(k, "i"), 1))
	b.WriteString("}\n")
}

// wgslDecl, wgslFor, wgslOpaque and wgslTable are WGSL's rows of the nest
// tables (codegen.Lang).
func wgslDecl(t, name, expr string, mutable bool) string {
	if mutable {
		return "var " + name + ": " + t + " = " + expr + ";"
	}
	return "let " + name + ": " + t + " = " + expr + ";"
}

func wgslFor(t, name, n string) string {
	return "for (var " + name + ": " + t + " = 0u; " + name + " < " + n + "; " + name + "++) {"
}

// wgslOpaque makes +0 from Params.zero and any other constant by setting
// its bits in Params.zero's (Tint also refuses an infinite constant
// expression).
func wgslOpaque(b uint32) string {
	if b == 0 {
		return "params.zero"
	}
	return fmt.Sprintf("bitcast<f32>(0x%08xu | bitcast<u32>(params.zero))", b)
}

func wgslTable(name string, vals []uint32) string {
	s := make([]string, len(vals))
	for i, v := range vals {
		s[i] = fmt.Sprintf("%du", v)
	}
	return fmt.Sprintf("var<private> %s: array<u32, %d> = array<u32, %d>(%s);", name, len(vals), len(vals), strings.Join(s, ", "))
}

func wgslArray(t, name string, n int) string {
	return "var " + name + ": array<" + t + ", " + fmt.Sprint(n) + ">;"
}
