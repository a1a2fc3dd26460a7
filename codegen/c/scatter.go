package c

import (
	"fmt"
	"strings"

	"github.com/gpucc/gpucc/codegen"
	"github.com/gpucc/gpucc/ir"
)

// emitScatter writes scatter node i (ir/scatter.go) as the reference
// computes it: data copied, every index checked (the first outside its
// dimension faults with FaultIndex before anything is written), then the
// updates applied one at a time in row-major order, each to the element
// ir.ScatterOf names, stored (none) or combined by the reduction's row
// and stored at the dtype (a narrow float rounded, an integer wrapped,
// bool 0 or 1) after each. It costs the data plus the updates.
func emitScatter(b *strings.Builder, g *ir.Graph, i int) error {
	n := &g.Nodes[i]
	s := ir.ScatterOf(g, n)
	t := n.DType
	ptr := func(id ir.NodeID) string {
		return fmt.Sprintf("((%s *)b[%d])", StorageType(g.Nodes[id].DType), id)
	}
	x, u, idx, y := ptr(n.Args[0]), ptr(n.Args[1]), ptr(n.Args[2]), fmt.Sprintf("((%s *)b[%d])", StorageType(t), i)
	k := len(s.Steps)
	fmt.Fprintf(b, "\tfor (t_i64 i = 0; i < %d; i++) %s[i] = %s[i];\n", n.Shape.Len(), y, x)
	var bounds []string
	for _, d := range s.Bounds {
		bounds = append(bounds, fmt.Sprint(d))
	}
	fmt.Fprintf(b, "\t{\n\t\tstatic const t_i64 bound[%d] = {%s};\n", k, strings.Join(bounds, ", "))
	fmt.Fprintf(b, "\t\tfor (t_i64 e = 0; e < %d; e++) { t_i64 v = (t_i64)%s[e], d = bound[e %% %d]; if (v < -d || v >= d) { fault[0] = %d; fault[1] = %d; return; } }\n\t}\n",
		g.Nodes[n.Args[2]].Shape.Len(), idx, k, FaultIndex, i)
	var body strings.Builder
	body.WriteString("t_i64 at = s;")
	for j, step := range s.Steps {
		fmt.Fprintf(&body, " { t_i64 v = (t_i64)%s[p + %d]; if (v < 0) v += %d; at += v * %d; }", idx, j, s.Bounds[j], step)
	}
	val := typedLoad(t, u+"[i]")
	if comb := s.Reduction.Combine(); comb != ir.OpInvalid {
		old := typedLoad(t, y+"[at]")
		switch {
		case t.IsFloat64():
			val = float64Rows[comb](old, val)
		case t.IsFloat():
			val = floatRows[comb](old, val)
		default:
			val = codegen.RenderIntRow(&intLang, comb, t, old, val)
		}
	}
	if t == ir.Bool {
		val = "(" + val + ") != 0"
	}
	fmt.Fprintf(&body, " %s[at] = %s;", y, typedStore(t, val))
	strided(b, s.Base.Shape, []string{"s", "p"}, [][]int{s.Base.Strides, s.Index.Strides}, body.String())
	return nil
}
