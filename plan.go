package gpucc

import (
	"bytes"
	"encoding/gob"
	"io"
	"maps"
	"reflect"
	"slices"

	"github.com/gpucc/gpucc/internal/gobcheck"
	"github.com/gpucc/gpucc/internal/negzero"
	"github.com/gpucc/gpucc/ir"
	"github.com/gpucc/gpucc/passes"
)

// Plan is a sealed program: a validated graph lowered by the passes for a
// device Profile. It is what Seal returns and Runtime.Load compiles; `gpucc
// run` and `gpucc build` both make theirs with Seal. A Plan is immutable
// once made, and may be loaded on many Runtimes. A Plan that Seal made is
// trusted: Load checks its program again only when it was not (a plan
// decoded from bytes, say: see Load).
type Plan struct {
	// Program is the lowered program. Its input buffers carry the graph's
	// embedded data, the default of each input a run does not give.
	Program *ir.Program
	// Inputs lists every input of the graph, in node order, with the name
	// runs give it by.
	Inputs []PlanInput
	// Profile is the device profile the passes planned for; Load refuses a
	// device that cannot meet it.
	Profile Profile
	// PassesMs is how long the passes took.
	PassesMs float64
	// Prebuilt holds, by backend name, the artifacts each backend's
	// Exporter made of Program ahead of time (gpucc build embeds them): a
	// backend given its own generates nothing. They are opaque here; only
	// the backend that made one reads it (backend.Program.Prebuilt).
	Prebuilt map[string][]byte
	// KernelsSHA256 ties Prebuilt to Program: the digest BindKernels
	// records of the program and every artifact. Load refuses a plan
	// carrying artifacts under another digest (invalid_graph), so that
	// kernels generated for another program never run over this one's
	// buffers.
	KernelsSHA256 string

	// sealed is Program sealed, when the plan is Seal's, under limits:
	// such a plan is trusted by a Runtime of the same limits, and Load
	// checks only a plan that is not (one decoded from bytes, or built by
	// hand).
	sealed *ir.Sealed
	limits ir.Limits
}

// Sealed returns the plan's program sealed: Seal's, when Seal made the
// plan, else the program sealed now (ir.Seal validates it).
func (p *Plan) Sealed() (*ir.Sealed, error) {
	if p.sealed != nil && p.sealed.Program() == p.Program {
		return p.sealed, nil
	}
	return ir.Seal(p.Program)
}

// trusted returns the sealed form of the plan's program when Seal made it
// under limits (and Program is still the program it sealed), else nil.
func (p *Plan) trusted(limits ir.Limits) *ir.Sealed {
	if p.sealed != nil && p.sealed.Program() == p.Program && p.limits == limits {
		return p.sealed
	}
	return nil
}

// PlanInput is one input of a sealed graph.
type PlanInput struct {
	// Name is the input's name: the graph's (Decode names an unnamed
	// input after its wire id, see ir.DefaultInputName), or, for an input
	// a graph built in Go leaves unnamed, "input<Node>". No two inputs
	// share a name (ir.Validate refuses a graph where they would).
	Name  string
	Node  ir.NodeID // its node in the source graph
	Shape ir.Shape
	Param bool // a trainable parameter
	// Buffer is the program buffer holding it, or -1 when no output
	// depends on it (a run then checks and ignores its value).
	Buffer int
}

// Input returns the input named name.
func (p *Plan) Input(name string) (PlanInput, bool) {
	for _, in := range p.Inputs {
		if in.Name == name {
			return in, true
		}
	}
	return PlanInput{}, false
}

// Seal validates g against limits and lowers it for a device of profile
// prof under popts (see sealOptions: the profile fills popts' zero device
// fields; every other field is taken as it is). A profile with buffer-size limits refuses a program
// with a larger buffer (limit_exceeded). g is not modified; the Plan
// shares its input data.
func Seal(g *ir.Graph, limits ir.Limits, prof Profile, popts passes.Options) (*Plan, error) {
	if g == nil {
		return nil, ir.Errorf(ir.CodeInvalidGraph, -1, "", "nil graph")
	}
	if err := ir.Validate(g, limits); err != nil {
		return nil, err
	}
	o := sealOptions(limits, prof, popts)
	sp, timings, err := passes.Compile(g, o)
	if err != nil {
		return nil, err
	}
	prog := sp.Program()
	if prof.MaxBindingSize > 0 && prof.MaxBufferSize > 0 {
		if err := prof.Fits(prog); err != nil {
			return nil, err
		}
	}
	plan := &Plan{Program: prog, Profile: prof, sealed: sp, limits: limits}
	for _, t := range timings {
		plan.PassesMs += t.Millis
	}
	bufOf := map[ir.NodeID]int{}
	for i, b := range prog.Buffers {
		if b.Input {
			bufOf[b.Node] = i
		}
	}
	for i, n := range g.Nodes {
		if n.Op != ir.OpInput {
			continue
		}
		in := PlanInput{Name: n.Name, Node: ir.NodeID(i), Shape: n.Shape, Param: n.Param, Buffer: -1}
		if in.Name == "" { // a graph built in Go; Validate refused another input of this name
			in.Name = ir.DefaultInputName(i)
		}
		if b, ok := bufOf[ir.NodeID(i)]; ok {
			in.Buffer = b
		}
		plan.Inputs = append(plan.Inputs, in)
	}
	return plan, nil
}

// prebuiltEntry is one backend's artifact in EncodePlan's encoding.
type prebuiltEntry struct {
	Backend string
	Data    []byte
}

// EncodePlan gob-encodes p: the plan, then its prebuilt artifacts in
// backend order, so that the same plan always gives the same bytes (gob
// writes a map in no fixed order). DecodePlan reads it back.
func EncodePlan(p *Plan) ([]byte, error) {
	q := *p
	q.Prebuilt, q.sealed = nil, nil
	var entries []prebuiltEntry
	for _, name := range slices.Sorted(maps.Keys(p.Prebuilt)) {
		entries = append(entries, prebuiltEntry{name, p.Prebuilt[name]})
	}
	var buf bytes.Buffer
	enc := gob.NewEncoder(&buf)
	if err := enc.Encode(&q); err != nil {
		return nil, ir.Errorf(ir.CodeInternal, -1, "", "encoding the plan: %v", err)
	}
	if err := enc.Encode(entries); err != nil {
		return nil, ir.Errorf(ir.CodeInternal, -1, "", "encoding the plan: %v", err)
	}
	// gob leaves out a field equal to its zero value, and -0 == 0: the
	// program's -0 floats (an Instr's Scalar, an output's Const) go as
	// paths, which DecodePlan sets again.
	if err := enc.Encode(negzero.Paths(p.Program)); err != nil {
		return nil, ir.Errorf(ir.CodeInternal, -1, "", "encoding the plan: %v", err)
	}
	return buf.Bytes(), nil
}

// DecodePlan reads a plan EncodePlan wrote (invalid_graph when it cannot).
// Such a plan is not trusted: Load checks it in full.
func DecodePlan(b []byte) (*Plan, error) {
	if err := checkPlan(b); err != nil {
		return nil, ir.Errorf(ir.CodeInvalidGraph, -1, "plan", "the plan is refused before decoding: %v", err)
	}
	dec := gob.NewDecoder(bytes.NewReader(b))
	var p Plan
	var entries []prebuiltEntry
	if err := dec.Decode(&p); err != nil {
		return nil, ir.Errorf(ir.CodeInvalidGraph, -1, "plan", "decoding the plan: %v", err)
	}
	if err := dec.Decode(&entries); err != nil {
		return nil, ir.Errorf(ir.CodeInvalidGraph, -1, "plan", "decoding the plan's artifacts: %v", err)
	}
	var negZeros [][]int
	if err := dec.Decode(&negZeros); err != nil && err != io.EOF { // a plan before the paths has none
		return nil, ir.Errorf(ir.CodeInvalidGraph, -1, "plan", "decoding the plan's -0 floats: %v", err)
	}
	if err := negzero.Set(p.Program, negZeros); err != nil {
		return nil, ir.Errorf(ir.CodeInvalidGraph, -1, "plan", "the plan's -0 floats: %v", err)
	}
	for _, e := range entries {
		if p.Prebuilt == nil {
			p.Prebuilt = map[string][]byte{}
		}
		p.Prebuilt[e.Backend] = e.Data
	}
	return &p, nil
}

// planTypes are the values EncodePlan writes, in order; a plan written
// before the -0 paths has the first two.
var planTypes = []reflect.Type{reflect.TypeFor[Plan](), reflect.TypeFor[[]prebuiltEntry](), reflect.TypeFor[[][]int]()}

// checkPlan holds a plan's bytes to what gob may decode safely
// (gobcheck): EncodePlan's types field for field, nesting 16 deep (a plan
// needs 9), and 8 bytes allocated a byte plus 1 MiB (its data take 4 at
// most, a float32 of 0 being one byte). Without it, a plan nesting a
// kernel's Parts 2^21 deep (10 MB) ended the process with a fatal stack
// overflow, which no recover catches.
func checkPlan(b []byte) error {
	lim := gobcheck.Limits{MaxDepth: 16, MaxBytes: 8*int64(len(b)) + 1<<20}
	_, _, err := gobcheck.Check(b, lim, planTypes...)
	if err != nil {
		if _, rest, err2 := gobcheck.Check(b, lim, planTypes[:2]...); err2 == nil && rest == 0 {
			return nil
		}
	}
	return err
}

// sealOptions is popts with the device fields it leaves zero taken from
// prof (passes.Profile.Options) and the host limits set: MaxBindings,
// MaxWorkgroupStorage, and MaxInvocations with SplitSums (explicit
// workgroup limits split sums only when popts asks). Every other field (NoFuse, Tile, TileFor,
// SpreadConv, CheckEach, DumpAfter, Dump, and any added later) is popts'
// own: until 2026-12-05 Seal copied a list of fields instead, and
// Options.Passes.SpreadConv never reached the tiling pass.
func sealOptions(limits ir.Limits, prof Profile, popts passes.Options) passes.Options {
	d := prof.Options(limits)
	o := popts
	o.Limits = d.Limits
	if o.MaxBindings == 0 {
		o.MaxBindings = d.MaxBindings
	}
	if o.MaxInvocations == 0 {
		o.MaxInvocations, o.SplitSums = d.MaxInvocations, d.SplitSums
	}
	if o.MaxWorkgroupStorage == 0 {
		o.MaxWorkgroupStorage = d.MaxWorkgroupStorage
	}
	return o
}
