package gpucc

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"time"

	"github.com/gpucc/gpucc/cpuref"
	"github.com/gpucc/gpucc/ir"
)

// A typed graph on native or wasm runs as segments (issue 32; a device
// whose typed code runs float32 islands itself, backend.Info.TypedIslands
// as webgpu's does, on the device, gets the whole graph):
// the float32 work (matmuls, row ops, convolutions) through the compiler,
// fused and tiled as any float32 graph, and the typed work (token ids,
// gathers, casts, masks) through the backend's typed code
// (backend.TypedDevice), which is node by node. A text transformer is
// typed only at its edges (int64 ids into an embedding gather, an int64
// mask cast to float), so almost all of its time is in the float segments.
//
// Each node goes to a segment by its kind (float: a float32 value of a row
// the compiler has, every argument float32; typed: the others): segment s
// holds float nodes for even s and typed ones for odd s, and a node goes to
// the first segment of its kind at or after its arguments' (a later one
// when an argument is of the other kind). Inputs and fulls (leaves) are
// copied into every segment that reads them: a model's weights are not
// passed from segment to segment. A value that a later segment reads is an
// output of its segment and an input of the reader's, passed as a host
// tensor. Every segment computes its nodes as the reference does, so the
// outputs are cpuref.EvalTyped's, bit for bit.
//
// The host's policy on non-finite values (ir.Limits.NonFinite) applies at
// the graph's edges, its inputs and outputs, as for one graph: the values
// passed between segments are intermediates, which may hold ±Inf and NaN
// (a -Inf mask) under either policy.

// split is a typed graph's segments, in the order they run.
type split struct {
	segs []*Executable
	// inputs maps each input of the graph, by its name, to its copies:
	// (segment, the copy's name there).
	inputs map[string][]splitUse
	// passes maps, per segment, each input that an earlier segment
	// computes to (that segment, its output's name there).
	passes [][]splitPass
	// outputs maps each output of the graph to its segment and name there.
	outputs []splitOut
	// nodes maps, per segment, its node ids to the graph's, so that an
	// error names the graph's node.
	nodes [][]ir.NodeID
	g     *ir.Graph
	// reads lists, per segment, the graph inputs it reads, by name.
	reads [][]string
	// cache holds, per segment, its result in a run where it read nothing
	// that run gave (no graph input given, every value passed to it from
	// such a segment): the graph's embedded data only, so the same values
	// in every such run, which reuse it instead of running it again (a
	// transformer's first float segment computes its position table and
	// causal mask from weights alone). cacheDev holds such a segment's
	// float32 values passed to a float segment on the device, by pass
	// name, uploaded once. Both are freed with the executable.
	cache    []*Result
	cacheDev map[string]*DeviceTensor
}

type splitUse struct {
	seg  int
	name string
}

type splitPass struct {
	name     string // the input's name in the reading segment
	from     int    // the computing segment
	fromName string // its output's name there
}

type splitOut struct {
	name string
	seg  int
	from string
}

// floatNode reports whether node i of g is float work: a float32 value of
// a row the compiler has, whose arguments are float32.
func floatNode(g *ir.Graph, i int) bool {
	n := g.Nodes[i]
	if n.DType != ir.F32 || n.Op.Info().Typed {
		return false
	}
	for _, a := range n.Args {
		if g.Nodes[a].DType != ir.F32 {
			return false
		}
	}
	return true
}

func leaf(n ir.Node) bool { return n.Op == ir.OpInput || n.Op == ir.OpFull }

// segmentsOf returns each node's segment (-1 for a leaf no segment reads
// or returns) and the number of segments.
func segmentsOf(g *ir.Graph) ([]int, int) {
	seg := make([]int, len(g.Nodes))
	for i, n := range g.Nodes {
		if leaf(n) {
			seg[i] = -1
			continue
		}
		kind := 1
		if floatNode(g, i) {
			kind = 0
		}
		s := 0
		for _, a := range n.Args {
			if leaf(g.Nodes[a]) {
				continue
			}
			t := seg[a]
			if t%2 != kind {
				t++
			}
			s = max(s, t)
		}
		if s%2 != kind {
			s++
		}
		seg[i] = s
	}
	count := 0
	for _, s := range seg {
		count = max(count, s+1)
	}
	for _, o := range g.Outputs { // an input returned as it is: its kind's first segment
		if n := g.Nodes[o.ID]; leaf(n) && n.DType != ir.F32 {
			count = max(count, 2)
		}
	}
	return seg, max(count, 1)
}

// splitGraph returns g's segments as graphs, and how they connect.
func splitGraph(g *ir.Graph) (*split, []*ir.Graph) {
	seg, count := segmentsOf(g)
	sp := &split{inputs: map[string][]splitUse{}, passes: make([][]splitPass, count), nodes: make([][]ir.NodeID, count), g: g}
	graphs := make([]*ir.Graph, count)
	maps := make([]map[ir.NodeID]ir.NodeID, count)
	for s := range graphs {
		graphs[s] = &ir.Graph{}
		maps[s] = map[ir.NodeID]ir.NodeID{}
	}
	internal := func(id ir.NodeID) string { return "gpucc.v" + strconv.Itoa(int(id)) }
	userName := func(id ir.NodeID) string {
		if n := g.Nodes[id]; n.Name != "" {
			return n.Name
		}
		return ir.DefaultInputName(int(id))
	}
	// local returns node id's copy in segment s, making it: a leaf copied
	// (an input renamed, mapped from the graph's name), or a value of an
	// earlier segment as an input passed to s.
	var local func(s int, id ir.NodeID) ir.NodeID
	local = func(s int, id ir.NodeID) ir.NodeID {
		if l, ok := maps[s][id]; ok {
			return l
		}
		n := g.Nodes[id]
		c := n
		c.Args = nil
		if leaf(n) {
			if n.Op == ir.OpInput {
				c.Name = internal(id)
				sp.inputs[userName(id)] = append(sp.inputs[userName(id)], splitUse{s, c.Name})
			}
		} else {
			from := seg[id]
			out := internal(id)
			if !slices.ContainsFunc(graphs[from].Outputs, func(o ir.Output) bool { return o.Name == out }) {
				graphs[from].Outputs = append(graphs[from].Outputs, ir.Output{Name: out, ID: maps[from][id]})
			}
			c = ir.Node{Op: ir.OpInput, Shape: n.Shape, DType: n.DType, Name: out}
			if n.DType.IsFloat() { // placeholder data (an input holds its values); each run gives the value
				c.Data = make([]float32, n.Shape.Len())
			} else {
				c.Ints = make([]int64, n.Shape.Len())
			}
			sp.passes[s] = append(sp.passes[s], splitPass{name: out, from: from, fromName: out})
		}
		l := ir.NodeID(len(graphs[s].Nodes))
		graphs[s].Nodes = append(graphs[s].Nodes, c)
		sp.nodes[s] = append(sp.nodes[s], id)
		maps[s][id] = l
		return l
	}
	for i, n := range g.Nodes {
		s := seg[i]
		if s < 0 {
			continue
		}
		args := make([]ir.NodeID, len(n.Args))
		for k, a := range n.Args {
			args[k] = local(s, a)
		}
		c := n
		c.Args = args
		maps[s][ir.NodeID(i)] = ir.NodeID(len(graphs[s].Nodes))
		graphs[s].Nodes = append(graphs[s].Nodes, c)
		sp.nodes[s] = append(sp.nodes[s], ir.NodeID(i))
	}
	for _, o := range g.Outputs {
		s := seg[o.ID]
		if s < 0 { // an input or a full returned as it is
			s = 0
			if g.Nodes[o.ID].DType != ir.F32 {
				s = 1
			}
		}
		l := local(s, o.ID)
		name := "gpucc.out." + o.Name
		graphs[s].Outputs = append(graphs[s].Outputs, ir.Output{Name: name, ID: l})
		sp.outputs = append(sp.outputs, splitOut{name: o.Name, seg: s, from: name})
	}
	// A typed node that nothing reads still runs, as the reference runs
	// it: it may fault (a cast of NaN to an integer). It is an output of
	// its segment, read by no one, so that its segment and the float
	// values it reads are computed.
	used := make([]bool, len(g.Nodes))
	for _, n := range g.Nodes {
		for _, a := range n.Args {
			used[a] = true
		}
	}
	for _, o := range g.Outputs {
		used[o.ID] = true
	}
	for i, s := range seg {
		if s >= 0 && s%2 == 1 && !used[i] {
			graphs[s].Outputs = append(graphs[s].Outputs, ir.Output{Name: "gpucc.unread" + strconv.Itoa(i), ID: maps[s][ir.NodeID(i)]})
		}
	}
	// Drop segments with nothing to do (a graph that starts typed has no
	// float work before it), keeping the order.
	var keep []*ir.Graph
	renum := make([]int, count)
	for s, sg := range graphs {
		renum[s] = -1
		if len(sg.Outputs) > 0 {
			renum[s] = len(keep)
			keep = append(keep, sg)
		}
	}
	fix := func(s int) int { return renum[s] }
	var passes [][]splitPass
	var nodes [][]ir.NodeID
	for s := range graphs {
		if renum[s] < 0 {
			continue
		}
		ps := sp.passes[s]
		for k := range ps {
			ps[k].from = fix(ps[k].from)
		}
		passes = append(passes, ps)
		nodes = append(nodes, sp.nodes[s])
	}
	sp.passes, sp.nodes = passes, nodes
	sp.reads, sp.cache, sp.cacheDev = make([][]string, len(keep)), make([]*Result, len(keep)), map[string]*DeviceTensor{}
	for name, uses := range sp.inputs {
		var kept []splitUse
		for _, u := range uses {
			if renum[u.seg] >= 0 {
				kept = append(kept, splitUse{renum[u.seg], u.name})
				sp.reads[renum[u.seg]] = append(sp.reads[renum[u.seg]], name)
			}
		}
		sp.inputs[name] = kept
	}
	for k := range sp.outputs {
		sp.outputs[k].seg = fix(sp.outputs[k].seg)
	}
	return sp, keep
}

// lowerWheres returns g with each float32 where(c, x, y) written as
// mask(cast(c), x) + mask(1 - cast(c), y), the float32 form that the
// compiler fuses (mask gives x or -0, and v + -0 = v for every v, -0,
// NaN and ±Inf included, so the bits are where's): a causal mask's where
// then costs one typed cast of the condition, which an earlier segment
// computes, not a typed segment between two float ones. Node ids change;
// ids maps the new graph's to g's (a node a where became maps to it).
func lowerWheres(g *ir.Graph) (*ir.Graph, []ir.NodeID) {
	if !slices.ContainsFunc(g.Nodes, func(n ir.Node) bool { return n.Op == ir.OpWhere && n.DType == ir.F32 }) {
		ids := make([]ir.NodeID, len(g.Nodes))
		for i := range ids {
			ids[i] = ir.NodeID(i)
		}
		return g, ids
	}
	out := &ir.Graph{}
	var ids []ir.NodeID
	newID := make([]ir.NodeID, len(g.Nodes))
	add := func(n ir.Node, from int) ir.NodeID {
		out.Nodes = append(out.Nodes, n)
		ids = append(ids, ir.NodeID(from))
		return ir.NodeID(len(out.Nodes) - 1)
	}
	for i, n := range g.Nodes {
		args := make([]ir.NodeID, len(n.Args))
		for k, a := range n.Args {
			args[k] = newID[a]
		}
		n.Args = args
		if n.Op != ir.OpWhere || n.DType != ir.F32 {
			newID[i] = add(n, i)
			continue
		}
		sh := n.Shape
		c := add(ir.Node{Op: ir.OpCast, Args: args[:1], Shape: sh, DType: ir.F32}, i)
		notC := add(ir.Node{Op: ir.OpAddScalar, Args: []ir.NodeID{add(ir.Node{Op: ir.OpMulScalar, Args: []ir.NodeID{c}, Shape: sh, Scalar: -1}, i)}, Shape: sh, Scalar: 1}, i)
		x := add(ir.Node{Op: ir.OpMask, Args: []ir.NodeID{c, args[1]}, Shape: sh}, i)
		y := add(ir.Node{Op: ir.OpMask, Args: []ir.NodeID{notC, args[2]}, Shape: sh}, i)
		newID[i] = add(ir.Node{Op: ir.OpAdd, Args: []ir.NodeID{x, y}, Shape: sh}, i)
	}
	for _, o := range g.Outputs {
		out.Outputs = append(out.Outputs, ir.Output{Name: o.Name, ID: newID[o.ID]})
	}
	return out, ids
}

// segmentLimits are the limits of one segment: the Runtime's, except that
// the values passed between segments are not the graph's inputs and
// outputs, which the whole graph's validation counted.
func (rt *Runtime) segmentLimits() ir.Limits {
	l := rt.opts.Limits.WithDefaults()
	l.MaxOutputs, l.MaxOutputBytes = math.MaxInt32, l.MaxStorageBytes
	return l
}

// compileSplit compiles a validated typed graph as segments; with one
// segment, it is compileTyped's executable.
func (rt *Runtime) compileSplit(ctx context.Context, g *ir.Graph) (*Executable, error) {
	if err := ir.Validate(g, rt.opts.Limits); err != nil {
		return nil, err
	}
	lowered, ids := lowerWheres(g)
	sp, graphs := splitGraph(lowered)
	if len(graphs) == 1 && Typed(graphs[0]) {
		return rt.compileTyped(ctx, g)
	}
	sp.g = g
	for _, nodes := range sp.nodes {
		for k, id := range nodes {
			nodes[k] = ids[id]
		}
	}
	e := &Executable{rt: rt, split: sp}
	limits := rt.segmentLimits()
	for s, sg := range graphs {
		var x *Executable
		var err error
		if Typed(sg) {
			x, err = rt.compileTypedWith(ctx, sg, limits)
		} else {
			x, err = rt.compileFloat(ctx, sg, limits)
		}
		if err != nil {
			for _, y := range sp.segs {
				y.Release()
			}
			return nil, sp.graphErr(s, err)
		}
		x.segment = true
		sp.segs = append(sp.segs, x)
	}
	return e, nil
}

// graphErr gives err, from segment s, the graph's node id.
func (sp *split) graphErr(s int, err error) error {
	var ie *ir.Error
	if errors.As(err, &ie) && ie.Node >= 0 && ie.Node < len(sp.nodes[s]) {
		c := *ie
		c.Node = int(sp.nodes[s][ie.Node])
		return &c
	}
	return err
}

// runErr is the error of segment s's failed run. A fault (a run with no
// right answer: integer_fault, an index outside its axis) is answered with
// the reference's own error for the whole graph, so that the node named is
// the first that faults in the graph's order, as on the cpu backend, not
// the first in the segments' order.
func (sp *split) runErr(ctx context.Context, s int, err error, in Inputs, nonFinite bool) error {
	var ie *ir.Error
	if !errors.As(err, &ie) || (ie.Code != ir.CodeIntegerFault && ie.Code != ir.CodeInvalidInput) {
		return sp.graphErr(s, err)
	}
	g := &ir.Graph{Nodes: slices.Clone(sp.g.Nodes), Outputs: sp.g.Outputs}
	for name, v := range in {
		id := inputNamed(g, name)
		if id < 0 {
			continue
		}
		t, ok := v.(Tensor)
		if d, dev := v.(*DeviceTensor); dev { // checked live by the run
			h, rerr := d.readRaw(ctx)
			if rerr != nil {
				return rerr
			}
			t, ok, nonFinite = h, true, true
		}
		if !ok {
			continue
		}
		if serr := setTypedInput(&g.Nodes[id], name, t, nonFinite); serr != nil {
			return serr
		}
	}
	if _, ref := cpuref.EvalTyped(g); ref != nil {
		return ref
	}
	return sp.graphErr(s, err)
}

// readRaw is hostLocked taking the runtime's lock.
func (t *DeviceTensor) readRaw(ctx context.Context) (Tensor, error) {
	t.rt.mu.Lock()
	defer t.rt.mu.Unlock()
	if err := t.checkLocked(t.rt, "read"); err != nil {
		return Tensor{}, err
	}
	return t.hostLocked(ctx)
}

// runSplit runs the segments in order: each given the graph's inputs it
// reads (a host Tensor, or a DeviceTensor of the input's dtype, which a
// float segment binds where it is) and the values earlier segments passed
// it. A kept output is kept by the segment that computes it (on the
// device where that segment's backend holds it), an Into slice filled by
// it; opts are checked against the graph's outputs first (typedDests).
func (e *Executable) runSplit(ctx context.Context, in Inputs, opts RunOptions) (*Result, error) {
	start := time.Now()
	rt, sp := e.rt, e.split
	rt.mu.Lock()
	closed := rt.dead()
	rt.mu.Unlock()
	if closed { // before the cache, which could answer without the device
		return nil, rt.errClosed()
	}
	if sp.segs == nil {
		return nil, ir.Errorf(ir.CodeInvalidInput, -1, "", "run: the executable was released")
	}
	keep, err := typedDests(sp.g, opts)
	if err != nil {
		return nil, err
	}
	segIn := make([]Inputs, len(sp.segs))
	segOpts := make([]RunOptions, len(sp.segs))
	for s := range segIn {
		segIn[s] = Inputs{}
	}
	for name, v := range in {
		uses, ok := sp.inputs[name]
		id := inputNamed(sp.g, name)
		if !ok && id < 0 {
			return nil, ir.Errorf(ir.CodeInvalidInput, -1, name, "the graph has no input named %s", ir.Quote(name))
		}
		n := sp.g.Nodes[id] // the graph's own checks, with its node ids
		switch t := v.(type) {
		case Tensor:
			if err := setTypedInput(&n, name, t, rt.opts.Limits.NonFinite); err != nil {
				return nil, err
			}
		case *DeviceTensor:
			rt.mu.Lock()
			err := checkTypedDevice(rt, n, name, t)
			rt.mu.Unlock()
			if err != nil {
				return nil, err
			}
		case nil:
			return nil, ir.Errorf(ir.CodeInvalidInput, -1, name, "input %s is nil", ir.Quote(name))
		default:
			return nil, ir.Errorf(ir.CodeInvalidInput, -1, name, "input %s: unsupported value %T", ir.Quote(name), v)
		}
		for _, u := range uses {
			segIn[u.seg][u.name] = v
		}
	}
	for _, o := range sp.outputs {
		if keep[o.name] {
			segOpts[o.seg].Keep = append(segOpts[o.seg].Keep, o.from)
		}
		if s, ok := opts.Into[o.name]; ok {
			if segOpts[o.seg].Into == nil {
				segOpts[o.seg].Into = map[string][]float32{}
			}
			segOpts[o.seg].Into[o.from] = s
		}
		if s, ok := opts.IntoInts[o.name]; ok {
			if segOpts[o.seg].IntoInts == nil {
				segOpts[o.seg].IntoInts = map[string][]int64{}
			}
			segOpts[o.seg].IntoInts[o.from] = s
		}
	}
	res := &Result{Backend: rt.info.Name, Adapter: &rt.info.Adapter, Outputs: map[string]Tensor{}, Exact: true,
		FallbackAttempts: slices.Clone(rt.attempts)}
	if res.FallbackAttempts == nil {
		res.FallbackAttempts = []Attempt{}
	}
	if len(keep) > 0 {
		res.Kept = map[string]*DeviceTensor{}
	}
	results := make([]*Result, len(sp.segs))
	fail := func(err error) (*Result, error) {
		for _, r := range results {
			if r != nil {
				for _, t := range r.Kept {
					t.Release()
				}
			}
		}
		return nil, err
	}
	pure := make([]bool, len(sp.segs)) // the segment reads nothing this run gives (sp.cache)
	for s, x := range sp.segs {
		pure[s] = len(segOpts[s].Keep) == 0 && len(segOpts[s].Into) == 0 && len(segOpts[s].IntoInts) == 0 &&
			!slices.ContainsFunc(sp.reads[s], func(name string) bool { _, ok := in[name]; return ok })
		for _, p := range sp.passes[s] {
			pure[s] = pure[s] && pure[p.from]
		}
		rt.mu.Lock() // the cache is the executable's, shared by concurrent runs
		cached := sp.cache[s]
		rt.mu.Unlock()
		if pure[s] && cached != nil {
			results[s] = cached
			continue
		}
		for _, p := range sp.passes[s] {
			v, err := sp.passed(ctx, rt, p, results[p.from], pure[p.from] && x.typed == nil)
			if err != nil {
				return fail(err)
			}
			segIn[s][p.name] = v
		}
		r, err := x.RunWith(ctx, segIn[s], segOpts[s])
		if err != nil {
			return fail(sp.runErr(ctx, s, err, in, rt.opts.Limits.NonFinite))
		}
		results[s] = r
		if pure[s] {
			rt.mu.Lock()
			if sp.cache[s] == nil && sp.segs != nil {
				sp.cache[s] = r
			}
			rt.mu.Unlock()
		}
		res.Kernels += r.Kernels
		res.Timings.Add(r.Timings)
		res.Exact = res.Exact && r.Exact
		res.ErrorBound = max(res.ErrorBound, r.ErrorBound)
	}
	for _, o := range sp.outputs {
		if keep[o.name] {
			res.Kept[o.name] = results[o.seg].Kept[o.from]
			continue
		}
		t := results[o.seg].Outputs[o.from]
		if pure[o.seg] { // the cache's: the caller's own copy
			t.Data, t.Ints = slices.Clone(t.Data), slices.Clone(t.Ints)
		}
		if t.DType.IsFloat() {
			if rt.opts.Limits.NonFinite {
				canonicalNaN(t.Data)
			} else if err := checkFinite(rt.info.Name, fmt.Sprintf("output %q", o.name), t.Data); err != nil {
				return fail(err)
			}
		}
		if s, ok := opts.Into[o.name]; ok && len(s) > 0 && &s[0] != &t.Data[0] { // a segment's constant output is its own slice
			copy(s, t.Data)
			t.Data = s
		}
		if s, ok := opts.IntoInts[o.name]; ok && len(s) > 0 && &s[0] != &t.Ints[0] {
			copy(s, t.Ints)
			t.Ints = s
		}
		res.Outputs[o.name] = t
	}
	res.Timings.TotalMs = ms(time.Since(start))
	return res, nil
}

// passed returns the value of pass p for its reader: the computing
// segment's host output, or, where onDevice (a float32 value of a cached
// segment, read by a float segment), a DeviceTensor of it, uploaded by
// the first run that needs it and kept with the cache.
func (sp *split) passed(ctx context.Context, rt *Runtime, p splitPass, from *Result, onDevice bool) (Value, error) {
	t := from.Outputs[p.fromName]
	if !onDevice || t.DType != ir.F32 {
		return t, nil
	}
	rt.mu.Lock()
	defer rt.mu.Unlock()
	if rt.dead() {
		return nil, rt.errClosed()
	}
	if d := sp.cacheDev[p.name]; d != nil {
		return d, nil
	}
	if sp.segs == nil {
		return nil, ir.Errorf(ir.CodeInvalidInput, -1, "", "run: the executable was released")
	}
	d, err := rt.newTensorLocked(ctx, slices.Clone(ir.Shape(t.Shape)), t.Data) // an intermediate: not checked finite
	if err != nil {
		return nil, err
	}
	sp.cacheDev[p.name] = d
	return d, nil
}

// releaseSplit releases the segments and the cache; rt.mu held.
func (e *Executable) releaseSplitLocked() {
	for _, x := range e.split.segs {
		x.releaseLocked()
	}
	e.split.segs = nil
	for name, d := range e.split.cacheDev {
		d.releaseLocked()
		delete(e.split.cacheDev, name)
	}
	clear(e.split.cache)
}
