package ir

import (
	"fmt"
	"strings"
)

// String returns the graph's text form, one node per line:
//
//	%2 = mul %0, %1 : [3]
//	%3 = add_scalar %2, 1.5 : [3]
//	%5 = conv2d %3, %4 strides=[1,1] … group=1 : [1,8,6,6]
//	out "values" = %3
//
// Input data is summarised, not printed.
func (g *Graph) String() string {
	var b strings.Builder
	for i, n := range g.Nodes {
		fmt.Fprintf(&b, "%%%d = %s", i, n.Op)
		sep := " "
		for _, a := range n.Args {
			fmt.Fprintf(&b, "%s%%%d", sep, a)
			sep = ", "
		}
		if n.Op.Info().Scalar {
			fmt.Fprintf(&b, "%s%s", sep, FormatFloat(n.Scalar))
		}
		if len(n.Op.Info().Attrs) > 0 {
			b.WriteString(attrsText(n.Op, n.Attrs))
		}
		if n.Name != "" {
			fmt.Fprintf(&b, " %q", n.Name)
		}
		if n.Param {
			b.WriteString(" param")
		}
		if n.Op == OpInput {
			fmt.Fprintf(&b, " (%d values)", len(n.Data))
		}
		fmt.Fprintf(&b, " : %v\n", n.Shape)
	}
	for _, o := range g.Outputs {
		fmt.Fprintf(&b, "out %q = %%%d\n", o.Name, o.ID)
	}
	return b.String()
}
