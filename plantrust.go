package gpucc

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"maps"
	"math"
	"slices"
	"strconv"

	"github.com/gpucc/gpucc/ir"
	"github.com/gpucc/gpucc/runtime/backend"
)

// BindKernels records in KernelsSHA256 the digest that ties the plan's
// prebuilt artifacts to its Program. Call it after setting them
// (gpucc build does, before it writes plan.gob); Load refuses a plan that
// carries kernels under another digest.
func (p *Plan) BindKernels() {
	p.KernelsSHA256 = kernelsDigest(p)
}

// kernelsDigest is the SHA-256 of the program's structure (Key), its
// buffers (but their input data), outputs and constants, and every field
// artifact the plan carries, as opaque bytes by backend name. Each field is length-prefixed, so no two
// plans share an encoding. TestKernelsDigestCoversEveryField changes each
// field by reflection: a new one must be added here.
func kernelsDigest(p *Plan) string {
	h := sha256.New()
	var b []byte
	u := func(vs ...int) {
		for _, v := range vs {
			b = binary.AppendVarint(b, int64(v))
		}
	}
	str := func(s string) { u(len(s)); b = append(b, s...) }
	shape := func(s ir.Shape) { u(len(s)); u(s...) }
	flush := func() { h.Write(b); b = b[:0] }
	str("gpucc plan kernels v2")
	prog := p.Program
	key := prog.Key()
	u(len(key))
	b = append(b, key...)
	buffer := func(buf ir.Buffer) { // all but Data: no kernel depends on input data
		u(buf.Len, int(buf.Node), b1(buf.Input), int(buf.DType))
		shape(buf.Shape)
	}
	u(len(prog.Buffers))
	for _, buf := range prog.Buffers {
		buffer(buf)
	}
	u(len(prog.Outputs))
	for _, o := range prog.Outputs {
		str(o.Name)
		u(o.Buffer, int(math.Float32bits(o.Const)))
		shape(o.Shape)
	}
	var kernel func(k *ir.Kernel) // what Key leaves out: constants, and scratch buffers' Input and DType
	kernel = func(k *ir.Kernel) {
		for _, in := range k.Body {
			u(int(math.Float32bits(in.Scalar)))
		}
		u(len(k.Scratch))
		for _, s := range k.Scratch {
			buffer(s)
		}
		u(len(k.Parts))
		for i := range k.Parts {
			kernel(&k.Parts[i])
		}
	}
	for i := range prog.Kernels {
		kernel(&prog.Kernels[i])
	}
	flush()
	names := slices.Sorted(maps.Keys(p.Prebuilt)) // opaque bytes, by backend
	u(len(names))
	for _, name := range names {
		str(name)
		u(len(p.Prebuilt[name]))
		flush()
		h.Write(p.Prebuilt[name])
	}
	flush()
	return hex.EncodeToString(h.Sum(nil))
}

func b1(v bool) int {
	if v {
		return 1
	}
	return 0
}

// check validates a plan before any backend sees it, for a plan may come
// from a file (a generated package's plan.gob) that was edited, or mixed
// with another build's kernels. Beyond the program's invariants
// (ir.ValidateProgram: every operand's reach inside its buffer), it checks
// every shape against limits, that Inputs name each input buffer once with
// its node and shape, that each output's shape fits its buffer, that
// embedded data is the buffer's length and finite (unless limits allow
// NonFinite), and that the artifacts
// it carries are the ones BindKernels recorded for this program (each
// backend checks that its own fits the program's buffers when it decodes
// it). A plan that fails is invalid_graph (a
// tensor past limits, limit_exceeded), never a panic or a read out of
// bounds later.
//
// The digest guards against mixing, not forgery: whoever rewrites
// plan.gob, its kernels and the digest together can as well write C that
// does anything in-process, so the native backend trusts the author of
// the plan's C as it trusts the author of the program that links it.
func (p *Plan) check(limits ir.Limits) (*ir.Sealed, error) {
	sp := p.trusted(limits)
	if sp == nil {
		var err error
		if sp, err = p.checkProgram(limits); err != nil {
			return nil, err
		}
	}
	return sp, p.checkKernels(sp)
}

// checkProgram is check's part for a plan Seal did not make: the program,
// its inputs and outputs, which it returns sealed.
func (p *Plan) checkProgram(limits ir.Limits) (*ir.Sealed, error) {
	bad := func(format string, a ...any) error {
		return ir.Errorf(ir.CodeInvalidGraph, -1, "plan", format, a...)
	}
	maxElems := limits.MaxElements
	if maxElems <= 0 {
		maxElems = ir.DefaultLimits().MaxElements
	}
	shapeOK := func(what string, s ir.Shape) error {
		if s.Elements(math.MaxInt32) < 0 {
			return bad("%s has shape %v: a dimension is not positive or the size overflows", what, s)
		}
		if n := s.Elements(maxElems); n < 0 {
			return ir.LimitErrorf("MaxElements", -1, "plan", "%s has shape %v, past this runtime's %d elements per tensor", what, s, maxElems)
		}
		return nil
	}
	prog := p.Program
	for i, buf := range prog.Buffers {
		if err := shapeOK("buf"+strconv.Itoa(i), buf.Shape); err != nil {
			return nil, err
		}
		if buf.Data != nil && (!buf.Input || len(buf.Data) != buf.Len) {
			return nil, bad("buf%d carries %d values for %d elements (input: %v)", i, len(buf.Data), buf.Len, buf.Input)
		}
		if j := slices.IndexFunc(buf.Data, func(v float32) bool { return !finite32(v) }); j >= 0 && !limits.NonFinite {
			return nil, bad("buf%d value %d is %v; embedded data must be finite", i, j, buf.Data[j])
		}
	}
	for _, k := range prog.Kernels {
		if err := shapeOK("kernel "+k.Name, k.Shape); err != nil {
			return nil, err
		}
		if k.Keep != nil {
			if err := shapeOK("kernel "+k.Name+" keep", k.Keep); err != nil {
				return nil, err
			}
		}
		for _, in := range k.Inputs {
			if err := shapeOK("an operand of kernel "+k.Name, in.Shape); err != nil {
				return nil, err
			}
		}
	}
	sp, err := ir.Seal(prog)
	if err != nil {
		return nil, bad("the program: %v", err)
	}
	names := map[string]bool{}
	for i, o := range prog.Outputs {
		if err := shapeOK("output "+ir.Quote(o.Name), o.Shape); err != nil {
			return nil, err
		}
		if o.Name == "" || names[o.Name] {
			return nil, bad("output %d has an empty or repeated name %q", i, o.Name)
		}
		names[o.Name] = true
		if o.Buffer >= 0 && prog.Buffers[o.Buffer].Len != o.Shape.Len() {
			return nil, bad("output %q of shape %v reads buf%d of %d elements", o.Name, o.Shape, o.Buffer, prog.Buffers[o.Buffer].Len)
		}
		if o.Buffer < 0 && (o.Buffer != -1 || !finite32(o.Const) && !limits.NonFinite) {
			return nil, bad("output %q is constant %v in buf%d; want -1 and a finite constant (unless limits allow NonFinite)", o.Name, o.Const, o.Buffer)
		}
	}
	names = map[string]bool{}
	held := make([]bool, len(prog.Buffers))
	for i, in := range p.Inputs {
		if err := shapeOK("input "+ir.Quote(in.Name), in.Shape); err != nil {
			return nil, err
		}
		if in.Name == "" || names[in.Name] {
			return nil, bad("input %d has an empty or repeated name %q", i, in.Name)
		}
		names[in.Name] = true
		if in.Buffer == -1 {
			continue
		}
		if in.Buffer < 0 || in.Buffer >= len(prog.Buffers) {
			return nil, bad("input %q names buf%d; the program has %d buffers", in.Name, in.Buffer, len(prog.Buffers))
		}
		buf := prog.Buffers[in.Buffer]
		if !buf.Input || buf.Node != in.Node || !buf.Shape.Equal(in.Shape) || held[in.Buffer] {
			return nil, bad("input %q (node %d, shape %v) names buf%d, which holds node %d of shape %v (input: %v, named before: %v)",
				in.Name, in.Node, in.Shape, in.Buffer, buf.Node, buf.Shape, buf.Input, held[in.Buffer])
		}
		held[in.Buffer] = true
	}
	for i, buf := range prog.Buffers {
		if buf.Input && !held[i] {
			return nil, bad("input buf%d (node %d) is no input's", i, buf.Node)
		}
	}
	return sp, nil
}

// checkKernels is check's part for the artifacts a plan carries: that
// they are the ones BindKernels recorded for its program, and that each
// fits it (its backend's Exporter.Check).
func (p *Plan) checkKernels(sp *ir.Sealed) error {
	bad := func(format string, a ...any) error {
		return ir.Errorf(ir.CodeInvalidGraph, -1, "plan", format, a...)
	}
	if len(p.Prebuilt) == 0 {
		return nil
	}
	if p.KernelsSHA256 != kernelsDigest(p) {
		return bad("its kernels were not generated for its program (digest %.12s, recorded %.12s): they belong to another build", kernelsDigest(p), p.KernelsSHA256)
	}
	for _, name := range slices.Sorted(maps.Keys(p.Prebuilt)) {
		if e, ok := backend.ExporterOf(name); ok { // an artifact of a backend not linked in runs nowhere here
			if err := e.Check(sp, p.Prebuilt[name]); err != nil {
				return bad("the %s artifact: %v", name, err)
			}
		}
	}
	return nil
}

func finite32(v float32) bool { return !math.IsNaN(float64(v)) && !math.IsInf(float64(v), 0) }
