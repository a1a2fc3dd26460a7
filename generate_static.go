package gpucc

import (
	"fmt"
	"math"
	"slices"

	"github.com/gpucc/gpucc/ir"
	"github.com/gpucc/gpucc/onnx"
	"github.com/gpucc/gpucc/passes"
)

// The static-cache rewrite (issue 33): a step model whose cache grows by
// one row a step, as optimum and transformers.js export decoders
// (present.N.key = Concat(past_key_values.N.key, this step's row) along
// axis 2, [batch, heads, past_len + 1, head_dim]), would need a compile
// for every length, and cannot take the first step at all (a past of 0
// rows is an empty tensor). NewDecoder rewrites it into the static
// convention instead, so that one executable serves every step:
//
//   - capacity: the cache keeps DecoderOptions.MaxLen rows (positions 0
//     to MaxLen-1), fixed when the Decoder is made; nothing is evicted, and
//     Generate refuses a prompt and token count past it (invalid_input);
//   - each past becomes [batch, heads, MaxLen, head_dim], and its present
//     is the past with row `position` replaced by the step's row (a
//     select, mask(row == position, new) + mask(row != position, past),
//     which keeps every other row's bits);
//   - every attention that reads the cache adds a length mask, -Inf for
//     the keys past `position` and -0 for the others: attention's order
//     sums its keys in ascending order from +0, so the masked keys' exact
//     zeros leave each sum's bits as the grown cache's shorter row gives.
//
// The write is a select over the whole cache, computed in float32 (one
// cast of the position, then equal and greater against a slots constant
// per cache, so that no comparison is shared between caches and stored at
// the cache's size): each present is one elementwise kernel reading its
// past and writing it whole, O(cache) bytes a step (gpt2kv_grow at 128
// rows: 131,072 of the step's 139,264 bytes written on native and wasm,
// whose float segments keep the cache). With DecoderOptions.ScatterCache,
// where the backend runs the typed graph on the device (webgpu), each
// present is instead a scatter of the
// row into its past along axis 2 at the position (the same bits), and the
// step donates its pasts (RunOptions.Donate): the scatter then runs in
// place in the past's buffer, which becomes the present's, and writes the
// row alone, O(row) (gpt2kv_grow: 11,788 bytes a step, the rows 1,024 of
// them, where the select wrote 140,548 on webgpu). It is off by default:
// each scatter is typed code between float32 islands, and each island and
// typed stretch is a submission (ScatterCache's doc); on the H200 on
// 2026-12-05 a gpt2kv_grow step took 0.491 ms with it and 0.473 without,
// both under the typed queue's one wait, and GPT-2 small's 4.01 and 4.15.
//
// It is refused (unsupported, naming why) unless the model is exactly
// that: each present is the concatenation of its past and one new row,
// only fused attention nodes (ir.FuseAttention) read the cache, as keys or
// values (through views: permutes, reshapes, and the broadcasts of
// grouped-query heads), not causal, any mask of their own spanning the keys (the length
// mask is added to it: m + -0 is m, m + -Inf is -Inf), and nothing else
// in the graph depends on the cache's length (the model specialized to
// two lengths differs only in shapes).

// cacheRewrite names what the rewrite of one graph found.
type cacheRewrite struct {
	g         *ir.Graph // the rewritten graph
	capacity  int
	caches    int  // pasts rewritten
	attention int  // attention nodes given the length mask
	scatter   bool // each present a scatter of its row (staticCache's scatter)
}

// staticCache rewrites g, the growing model specialized to pasts of
// capacity-1 rows (so its presents have capacity rows), into the static
// convention; other is the same model specialized to another length, to
// check that nothing but shapes depends on it.
//
// With addPosition (the attention_mask convention, generate_hf.go) the
// graph has no position input: the rewrite adds one, named position, int64
// [1], for its write and length mask.
//
// With scatter (a backend that runs the typed graph on the device and
// computes a scatter of a donated input in place: webgpu), each present is
// scatter_elements(past, the position broadcast to the row, row) along
// axis 2 instead of the select: the same bits (the select's -0 masks
// leave every value's bits too), and, the past donated by the step
// (RunOptions.Donate), only the row is written.
func staticCache(g, other *ir.Graph, pairs []CachePair, capacity int, addPosition, scatter bool) (cacheRewrite, error) {
	rw := cacheRewrite{capacity: capacity, caches: len(pairs)}
	refuse := func(format string, a ...any) (cacheRewrite, error) {
		return rw, ir.Errorf(ir.CodeUnsupported, -1, "model", "decoding: a cache that grows a row a step is rewritten to a static one only as generate_static.go says: "+format, a...)
	}
	nodes := g.Nodes
	users := make([]int, len(nodes))
	for _, n := range nodes {
		for _, a := range n.Args {
			users[a]++
		}
	}
	outputs := map[string]ir.NodeID{}
	for _, o := range g.Outputs {
		users[o.ID]++
		outputs[o.Name] = o.ID
	}
	pos := g.Input(StepPosition)
	if pos < 0 && !addPosition {
		return refuse("the graph computes nothing from %s", ir.Quote(StepPosition))
	}
	// The concatenation, as the importer writes Concat: the past padded
	// with one -0 row after it, plus the new row padded with capacity-1
	// rows before it (v + -0 is v).
	type concat struct{ past, pastPad, row, rowPad, present ir.NodeID }
	var cats []concat
	isPad := func(id ir.NodeID, before, after int) bool {
		n := &nodes[id]
		if n.Op != ir.OpPad || len(n.Shape) != 4 || users[id] != 1 {
			return false
		}
		want := []int{0, 0, before, 0, 0, 0, after, 0}
		vb := ir.OpPad.Attr(n.Attrs, "value_bits")
		return slices.Equal(ir.OpPad.Attr(n.Attrs, "pads"), want) && ir.OpPad.Attr(n.Attrs, "mode")[0] == ir.PadConstant &&
			uint32(vb[0])<<16|uint32(vb[1]) == math.Float32bits(float32(math.Copysign(0, -1)))
	}
	for _, p := range pairs {
		past, present := g.Input(p.Past), outputs[p.Present]
		q := &nodes[present]
		found := false
		for side := range 2 {
			if q.Op != ir.OpAdd || past < 0 {
				break
			}
			a, b := q.Args[side], q.Args[1-side]
			if isPad(a, 0, 1) && nodes[a].Args[0] == past && users[past] == 1 && isPad(b, capacity-1, 0) && nodes[nodes[b].Args[0]].Shape[2] == 1 {
				cats = append(cats, concat{past: past, pastPad: a, row: nodes[b].Args[0], rowPad: b, present: present})
				found = true
				break
			}
		}
		if !found {
			return refuse("%s is not the concatenation of %s and one new row along axis 2", ir.Quote(p.Present), ir.Quote(p.Past))
		}
	}
	pads := map[ir.NodeID]bool{}
	for _, c := range cats {
		pads[c.pastPad], pads[c.rowPad] = true, true
	}
	// Nothing but shapes (and the concatenations' pads) depends on the
	// cache's length.
	if len(other.Nodes) != len(nodes) || len(other.Outputs) != len(g.Outputs) {
		return refuse("the graph's nodes depend on the cache's length (%d nodes at one length, %d at another)", len(nodes), len(other.Nodes))
	}
	for i := range nodes {
		a, b := &nodes[i], &other.Nodes[i]
		same := a.Op == b.Op && slices.Equal(a.Args, b.Args) && a.DType == b.DType && a.Name == b.Name && a.Param == b.Param &&
			math.Float32bits(a.Scalar) == math.Float32bits(b.Scalar) && (pads[ir.NodeID(i)] || slices.Equal(a.Attrs, b.Attrs))
		if a.Name == "" { // a run-time input's values are the run's
			same = same && slices.Equal(a.Ints, b.Ints) && len(a.Data) == len(b.Data)
		}
		for k := 0; same && a.Name == "" && k < len(a.Data); k++ {
			same = math.Float32bits(a.Data[k]) == math.Float32bits(b.Data[k])
		}
		if !same {
			return refuse("node %d (%v) depends on the cache's length beyond its shape", i, a.Op)
		}
	}
	// What reads the cache: views of it, and attention as keys or values.
	reads := make([]bool, len(nodes))
	for _, c := range cats {
		reads[c.present] = true
	}
	live := make([]bool, len(nodes)) // what the outputs need: FuseAttention leaves the softmax it fused
	for _, o := range g.Outputs {
		live[o.ID] = true
	}
	for i := len(nodes) - 1; i >= 0; i-- {
		for _, a := range nodes[i].Args {
			live[a] = live[a] || live[i]
		}
	}
	masked := map[ir.NodeID]bool{}
	for i := range nodes {
		n := &nodes[i]
		if reads[i] || !live[i] {
			continue
		}
		for k, a := range n.Args {
			if !reads[a] {
				continue
			}
			switch {
			case n.Op == ir.OpPermute || n.Op == ir.OpReshape || n.Op == ir.OpBroadcast: // views: a broadcast repeats grouped-query heads (ir.GroupAttention)
				reads[i] = true
			case n.Op == ir.OpAttention && (k == 1 || k == 2):
				m := &nodes[n.Args[3]]
				if ir.AttentionOf(argShapes(nodes, n), n.Attrs).Causal {
					return refuse("attention node %d reads the cache with a causal mask", i)
				}
				own := m.Op != ir.OpFull || len(m.Shape) != 0 || m.Scalar != 0 || !math.Signbit(float64(m.Scalar))
				if ms := m.Shape; own && (len(ms) == 0 || len(ms) > len(n.Shape) || ms[len(ms)-1] != capacity && ms[len(ms)-1] != 1) {
					return refuse("attention node %d reads the cache with a mask of shape %v, which does not span its %d keys", i, ms, capacity)
				}
				masked[ir.NodeID(i)] = own
			default:
				return refuse("node %d (%v) reads the cache; only fused attention (as keys or values) may", i, n.Op)
			}
		}
	}
	rw.attention = len(masked)
	hidden := func(id ir.NodeID) bool { _, ok := masked[id]; return ok }
	// The rewritten graph.
	out := &ir.Graph{Nodes: make([]ir.Node, 0, len(nodes)+16+4*len(cats))}
	at := make([]ir.NodeID, len(nodes))
	emit := func(n ir.Node) ir.NodeID {
		out.Nodes = append(out.Nodes, n)
		return ir.NodeID(len(out.Nodes) - 1)
	}
	posShape, posAt := ir.Shape{1}, ir.NodeID(-1) // posAt: the added position input
	if addPosition {
		posAt = emit(ir.Node{Op: ir.OpInput, Name: StepPosition, DType: ir.I64, Shape: posShape, Ints: []int64{0}})
	} else {
		posShape = nodes[pos].Shape
	}
	// The position as float32 (exact: positions are below capacity, far
	// below 2^24), the one typed node the rewrite adds; everything after
	// it is float32, so it runs in the step's float kernels.
	posF := ir.NodeID(-1)
	position := func(s ir.Shape) ir.NodeID {
		if posF < 0 {
			if posAt < 0 {
				posAt = at[pos]
			}
			f := emit(ir.Node{Op: ir.OpCast, Args: []ir.NodeID{posAt}, Shape: slices.Clone(posShape)})
			posF = emit(ir.Node{Op: ir.OpReshape, Args: []ir.NodeID{f}, Shape: ir.Shape{1}})
		}
		r := emit(ir.Node{Op: ir.OpReshape, Args: []ir.NodeID{posF}, Shape: ones(len(s))})
		return emit(ir.Node{Op: ir.OpBroadcast, Args: []ir.NodeID{r}, Shape: slices.Clone(s)})
	}
	// slots returns a new constant of the rows' indices 0 … capacity-1
	// along axis 2 of s, broadcast to s: each cache its own input, which
	// passes.cse never merges, so that no comparison with the position is
	// shared between caches (a shared one is stored at the cache's size
	// and read back by each: a broadcast with several readers stays a
	// buffer).
	slots := func(s ir.Shape, axis int) ir.NodeID {
		rs := ones(len(s))
		rs[axis] = capacity
		data := make([]float32, capacity)
		for i := range data {
			data[i] = float32(i)
		}
		in := emit(ir.Node{Op: ir.OpInput, Shape: rs, Data: data})
		if rs.Equal(s) {
			return in
		}
		return emit(ir.Node{Op: ir.OpBroadcast, Args: []ir.NodeID{in}, Shape: slices.Clone(s)})
	}
	hide := ir.NodeID(-1)
	rowIndex := map[string]ir.NodeID{} // by row shape: the position broadcast to it (scatter)
	catOf := map[ir.NodeID]concat{}
	for _, c := range cats {
		catOf[c.present] = c
	}
	for i, n := range nodes {
		id := ir.NodeID(i)
		if pads[id] {
			continue
		}
		n.Args = slices.Clone(n.Args)
		for k, a := range n.Args {
			n.Args[k] = at[a]
		}
		switch c, ok := catOf[id]; {
		case ok && scatter && (posAt >= 0 || pos >= 0 && int(pos) < i && (nodes[pos].DType == ir.I64 || nodes[pos].DType == ir.I32)):
			// present = scatter_elements(past, position, row) along axis 2:
			// the row stored at the position, every other row the past's.
			if posAt < 0 {
				posAt = at[pos]
			}
			rs := slices.Clone(nodes[c.row].Shape) // [batch, heads, 1, head_dim]
			idx, seen := rowIndex[fmt.Sprint(rs)]  // one for the caches of a shape
			if !seen {
				pt := out.Nodes[posAt].DType
				r := emit(ir.Node{Op: ir.OpReshape, Args: []ir.NodeID{posAt}, Shape: ones(len(rs)), DType: pt})
				idx = emit(ir.Node{Op: ir.OpBroadcast, Args: []ir.NodeID{r}, Shape: rs, DType: pt})
				rowIndex[fmt.Sprint(rs)] = idx
			}
			at[i] = emit(ir.Node{Op: ir.OpScatterElements, Args: []ir.NodeID{at[c.past], at[c.row], idx}, Attrs: []int{2, int(ir.ScatterNone)}, Shape: slices.Clone(n.Shape)})
			rw.scatter = true
		case ok:
			// present = mask(row == position, row) + mask(1 - it, past):
			// one elementwise kernel a cache, reading the past, the row, the
			// slots and the position through views and writing the present.
			s := slices.Clone(n.Shape) // [batch, heads, capacity, head_dim]
			rs := ones(len(s))
			rs[2] = capacity
			sl, p := slots(rs, 2), position(rs)
			w := emit(ir.Node{Op: ir.OpEqual, Args: []ir.NodeID{sl, p}, Shape: rs})
			w = emit(ir.Node{Op: ir.OpBroadcast, Args: []ir.NodeID{w}, Shape: s})
			gt := emit(ir.Node{Op: ir.OpGreater, Args: []ir.NodeID{sl, p}, Shape: rs})
			lt := emit(ir.Node{Op: ir.OpGreater, Args: []ir.NodeID{p, sl}, Shape: rs})
			keep := emit(ir.Node{Op: ir.OpAdd, Args: []ir.NodeID{gt, lt}, Shape: rs}) // 1 where slot ≠ position
			keep = emit(ir.Node{Op: ir.OpBroadcast, Args: []ir.NodeID{keep}, Shape: s})
			row := emit(ir.Node{Op: ir.OpBroadcast, Args: []ir.NodeID{at[c.row]}, Shape: s})
			a := emit(ir.Node{Op: ir.OpMask, Args: []ir.NodeID{w, row}, Shape: s})
			b := emit(ir.Node{Op: ir.OpMask, Args: []ir.NodeID{keep, at[c.past]}, Shape: s})
			at[i] = emit(ir.Node{Op: ir.OpAdd, Args: []ir.NodeID{a, b}, Shape: s})
		case n.Op == ir.OpInput && slices.ContainsFunc(cats, func(c concat) bool { return c.past == id }):
			n.Shape = slices.Clone(n.Shape)
			n.Shape[2] = capacity
			n.Data = make([]float32, n.Shape.Len())
			at[i] = emit(n)
		case hidden(id):
			if hide < 0 { // -Inf for the keys past the position: slot - position > 0
				ks := ir.Shape{capacity}
				d := emit(ir.Node{Op: ir.OpSub, Args: []ir.NodeID{slots(ks, 0), position(ks)}, Shape: ks})
				inf := emit(ir.Node{Op: ir.OpFull, Shape: ir.Shape{}, Scalar: float32(math.Inf(-1))})
				inf = emit(ir.Node{Op: ir.OpBroadcast, Args: []ir.NodeID{inf}, Shape: ks})
				hide = emit(ir.Node{Op: ir.OpMask, Args: []ir.NodeID{d, inf}, Shape: ks})
			}
			if masked[id] { // the model's own mask plus the length mask: m + -0 is m, m + -Inf is -Inf
				n.Args[3] = ownMask(emit, nodes[nodes[i].Args[3]].Shape, n.Args[3], hide, len(n.Shape), capacity)
			} else {
				n.Args[3] = hide
			}
			at[i] = emit(n)
		default:
			at[i] = emit(n)
		}
	}
	for _, o := range g.Outputs {
		o.ID = at[o.ID]
		out.Outputs = append(out.Outputs, o)
	}
	rw.g = out
	return rw, nil
}

// ownMask emits mask + hide, an attention's own mask (of shape ms, which
// broadcasts to its scores of rank r) plus the length mask hide
// ([capacity]), both read through their broadcast to ms with its last axis
// the keys', and returns the sum.
func ownMask(emit func(ir.Node) ir.NodeID, ms ir.Shape, mask, hide ir.NodeID, r, capacity int) ir.NodeID {
	full := make(ir.Shape, r)
	for k := range full {
		full[k] = 1
	}
	copy(full[r-len(ms):], ms)
	if len(ms) != r {
		mask = emit(ir.Node{Op: ir.OpReshape, Args: []ir.NodeID{mask}, Shape: slices.Clone(full)})
	}
	out := slices.Clone(full)
	out[r-1] = capacity
	if full[r-1] != capacity {
		mask = emit(ir.Node{Op: ir.OpBroadcast, Args: []ir.NodeID{mask}, Shape: slices.Clone(out)})
	}
	hs := make(ir.Shape, r)
	for k := range hs {
		hs[k] = 1
	}
	hs[r-1] = capacity
	h := emit(ir.Node{Op: ir.OpReshape, Args: []ir.NodeID{hide}, Shape: hs})
	if !hs.Equal(out) {
		h = emit(ir.Node{Op: ir.OpBroadcast, Args: []ir.NodeID{h}, Shape: slices.Clone(out)})
	}
	return emit(ir.Node{Op: ir.OpAdd, Args: []ir.NodeID{mask, h}, Shape: out})
}

// growing reports whether g, a step model specialized to pasts of
// pairs' shapes, has a cache that grows: every present one row longer than
// its past along axis 2, which the signature leaves dynamic.
func growing(g *ir.Graph, sig *onnx.Signature, pairs []CachePair) bool {
	dynamic := map[string]bool{}
	for _, p := range sig.Inputs {
		dynamic[p.Name] = len(p.Shape) == 4 && p.Shape[2] < 0
	}
	shapes := map[string]ir.Shape{}
	for _, o := range g.Outputs {
		shapes[o.Name] = g.Nodes[o.ID].Shape
	}
	for _, p := range pairs {
		want := slices.Clone(p.Shape)
		want[2]++
		if !dynamic[p.Past] || !shapes[p.Present].Equal(want) {
			return false
		}
	}
	return len(pairs) > 0
}

// ones returns the shape of r dimensions of 1.
func ones(r int) ir.Shape {
	s := make(ir.Shape, r)
	for k := range s {
		s[k] = 1
	}
	return s
}

// argShapes returns the shapes of n's arguments.
func argShapes(nodes []ir.Node, n *ir.Node) []ir.Shape {
	s := make([]ir.Shape, len(n.Args))
	for k, a := range n.Args {
		s[k] = nodes[a].Shape
	}
	return s
}

// String says what the rewrite did, for --explain.
func (rw cacheRewrite) String() string {
	how := "each present written whole, a select of the row at the position"
	if rw.scatter {
		how = "each present the past with the row scattered at the position, the past donated: only the row written"
	}
	return fmt.Sprintf("the model's cache grows a row a step (present = Concat(past, row)); rewritten to a static cache of %d rows (the capacity: max_len, fixed at load; nothing is evicted), %d caches written at the step's position, %d attention nodes masking the keys past it: one executable for every step; %s", rw.capacity, rw.caches, rw.attention, how)
}

// Explain says how the Decoder keeps its cache (the model's own static
// cache, or the rewrite of a growing one and its capacity policy) and how
// many of the step's attentions run fused, one line each.
func (d *Decoder) Explain() string {
	c := fmt.Sprintf("cache: the model's own static cache of %d rows (max_len), written at the step's position by the model", d.maxLen)
	if d.grown != nil {
		c = "cache: " + d.grown.String()
	}
	e := d.convention() + "\n" + c + fmt.Sprintf("\nattention: %d fused attention nodes (softmax(q·kᵀ·s + mask)·v as one kernel; the patterns ir.FuseAttention recognizes)", d.attention)
	if sc, ok := d.stepCost(); ok {
		e += fmt.Sprintf("\nstep: %d kernels in %d compiled segments, writing %d bytes and reading %d (the caches: %d bytes, each present written whole)", sc.kernels, sc.segments, sc.cost.BytesWritten, sc.cost.BytesRead, sc.caches)
	} else if n := d.exe.Kernels(); n > 0 {
		e += fmt.Sprintf("\nstep: %d kernels (the backend's typed code runs the step; its bytes are not counted here)", n)
	}
	return e
}

// stepCost is what one decoding step's compiled kernels do, counted from
// their plans (passes.KernelCost): kernels, bytes written and read.
type stepCost struct {
	kernels, segments int
	cost              passes.Cost
	caches            int64 // the bytes of the presents
}

// stepCost counts the step's kernels and bytes where its plans are known
// here: a float32 graph's plan, or a typed graph's compiled float segments
// (native, wasm: the typed segments' few gathers and casts are not
// counted); not a backend that runs the whole typed graph itself (webgpu,
// cpu), for which ok is false.
func (d *Decoder) stepCost() (sc stepCost, ok bool) {
	var plans []*Plan
	switch e := d.exe; {
	case e.split != nil:
		for _, s := range e.split.segs {
			if s.plan != nil && len(s.plan.Program.Kernels) > 0 {
				plans = append(plans, s.plan)
			}
		}
	case e.plan != nil:
		plans = append(plans, e.plan)
	default:
		return sc, false
	}
	for _, p := range plans {
		sc.segments++
		sc.kernels += len(p.Program.Kernels)
		sc.cost = sc.cost.Add(passes.ProgramCost(p.Program))
	}
	for _, p := range d.pairs {
		sc.caches += 4 * int64(p.Shape.Len())
	}
	return sc, true
}
