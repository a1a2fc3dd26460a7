package ir

// Need is what graph g takes of each limit: its nodes, largest tensor,
// summed storage and estimated operations (as Validate counts them), its
// outputs and their bytes, and its most attribute values on one node.
// The fields Need does not measure (MaxKernelOps, a property of the
// compiled kernels, and MaxGraphBytes, of the document) are zero.
func Need(g *Graph) Limits {
	n := Limits{MaxNodes: len(g.Nodes), MaxOutputs: len(g.Outputs)}
	for i := range g.Nodes {
		nd := &g.Nodes[i]
		e := int64(nd.Shape.Len())
		n.MaxElements = max(n.MaxElements, e)
		n.MaxStorageBytes = SatAdd(n.MaxStorageBytes, SatMul(int64(nd.DType.Size()), e))
		n.MaxOps = SatAdd(n.MaxOps, EstimateOps(g, nd))
		n.MaxAttrValues = max(n.MaxAttrValues, len(nd.Attrs))
	}
	for _, o := range g.Outputs {
		if o.ID >= 0 && int(o.ID) < len(g.Nodes) {
			nd := &g.Nodes[o.ID]
			n.MaxOutputBytes = SatAdd(n.MaxOutputBytes, SatMul(int64(nd.DType.Size()), int64(nd.Shape.Len())))
		}
	}
	return n
}

// FitHeadroom is how much more than an imported model needs its sized
// limits allow: the passes rewrite the graph between checks (a composite
// split, a scratch buffer), so a graph exactly at its limits could be
// refused while compiling.
const FitHeadroom = 2

// Fit returns l with each field in fit (a Limits field name) raised to
// FitHeadroom times what g needs of it, never past caps' value of that
// field (nor lowered below l's): the limits sized to a model that was
// imported under caps.
func Fit(g *Graph, l, caps Limits, fit map[string]bool) Limits {
	need := Need(g)
	for _, r := range LimitFlags {
		if !fit[r.Field] {
			continue
		}
		switch p := r.Of(&l).(type) {
		case *int:
			want := min(max(*p, FitHeadroom**r.Of(&need).(*int)), *r.Of(&caps).(*int))
			*p = max(*p, want)
		case *int64:
			want := min(max(*p, SatMul(FitHeadroom, *r.Of(&need).(*int64))), *r.Of(&caps).(*int64))
			*p = max(*p, want)
		}
	}
	return l
}
