package glsl

import (
	"fmt"
	"strings"

	"github.com/gpucc/gpucc/codegen"
	"github.com/gpucc/gpucc/ir"
)

// nested emits kernel k, written from its nest (codegen.NestOf), as
// elementwise passes whose accumulator is the nest's function (nestFunc).
func nested(pl *Plan, ki int, k *ir.Kernel) {
	n := codegen.NestOf(k)
	pl.elementwise(ki, k, func(k *ir.Kernel) string { return nestFunc(k, n) }, n.Name)
}

// nestFunc renders kernel k's nest (codegen.Nest) as the function
// "float <name>(uint i)" of output element i, after the nest's tables.
func nestFunc(k *ir.Kernel, n *codegen.Nest) string {
	var b strings.Builder
	b.WriteString(codegen.Indent(n.TableDecls(Lang), 0))
	fmt.Fprintf(&b, "float %s(uint %s) {\n", n.Name, indexVar)
	b.WriteString(codegen.Indent(codegen.Coords(Lang, n.Dims, k.Shape, 0, indexVar), 1))
	b.WriteString(codegen.Indent(n.Render(Lang, k), 1))
	fmt.Fprintf(&b, "\treturn %s;\n}\n", n.Acc)
	return b.String()
}

// glslDecl, glslFor, glslLoad and glslTable are GLSL ES's rows of the nest
// tables (codegen.Lang). Loads go through load<j>, which takes the
// operand's logical row-major element and applies its strides.
func glslDecl(t, name, expr string, _ bool) string { return t + " " + name + " = " + expr + ";" }

func glslFor(t, name, n string) string {
	return "for (" + t + " " + name + " = 0u; " + name + " < " + n + "; " + name + "++) {"
}

func glslLoad(l codegen.Lang, j int, op ir.Operand, idx []string) string {
	return fmt.Sprintf("load%d(%s)", j, codegen.Offset(l, ir.PlainOperand(op.Buffer, op.Shape), idx))
}

func glslTable(name string, vals []uint32) string {
	s := make([]string, len(vals))
	for i, v := range vals {
		s[i] = fmt.Sprintf("%du", v)
	}
	return fmt.Sprintf("const uint %s[%d] = uint[%d](%s);", name, len(vals), len(vals), strings.Join(s, ", "))
}

func glslArray(t, name string, n int) string {
	return t + " " + name + "[" + fmt.Sprint(n) + "];"
}
