package ir_test

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gpucc/gpucc/cpuref"
	"github.com/gpucc/gpucc/ir"
	"github.com/gpucc/gpucc/ir/irtest"
)

// TestOpTableComplete walks every op and fails on a row that misses a
// part: names, the shape and cost rules, the expression of an elementwise
// op, the float64 meaning of an elementwise op or a reduction, the gradient rule or the reason there is none, and the wire name
// that decodes back to the op. It also checks that the shared test suite
// uses every op, so every backend's tests run it.
func TestOpTableComplete(t *testing.T) {
	used := map[ir.Op]bool{}
	for _, c := range append(irtest.Suite(), irtest.Typed()...) {
		for _, n := range c.Graph.Nodes {
			used[n.Op] = true
		}
	}
	for _, op := range ir.Ops() {
		r := op.Info()
		if r.Name == "" || r.Wire == "" {
			t.Errorf("%v: missing Name or Wire", op)
		}
		if r.Shape == nil || r.Cost == nil {
			t.Errorf("%v: missing the shape or cost rule", op)
		}
		if r.Args > 0 && (r.Grad == nil) == (r.NoGrad == "") {
			t.Errorf("%v: needs exactly one of a gradient rule and NoGrad", op)
		}
		wire, form, ok := ir.WireOp(r.Wire)
		if !ok || wire != op && form != op {
			t.Errorf("%v: wire name %q decodes to %v/%v", op, r.Wire, wire, form)
		}
		if r.Types.In == 0 {
			t.Errorf("%v: no type rule (the dtypes it takes)", op)
		}
		if r.Typed { // no float32 kernel: cpuref.EvalTyped defines it
			if !r.Elementwise && !r.Types.Index || r.Expr != nil || r.F64 != nil || r.Grad != nil && !r.Types.Index {
				t.Errorf("%v: a typed row is elementwise or indexed, without an expression, a float64 meaning or (but an indexed row's, a scatter) a gradient", op)
			}
			if r.Elementwise && r.Types.Out == ir.OutSame && !r.Types.Cond && r.Int == nil {
				t.Errorf("%v: a typed row over integers without an integer rule", op)
			}
			if !used[op] {
				t.Errorf("%v: no graph of irtest.Typed uses it", op)
			}
			continue
		}
		if r.Elementwise && r.Int == nil && r.Types.In&ir.IntTypes != 0 {
			t.Errorf("%v: takes integers %v but has no integer rule", op, r.Types.In)
		}
		if reduction := r.Kernel == ir.KernelReduce; (r.Elementwise || reduction) != (r.F64 != nil) {
			t.Errorf("%v: elementwise or a reduction = %v but has a float64 meaning = %v", op, r.Elementwise || reduction, r.F64 != nil)
		}
		if f := r.ScalarOf; f != 0 && r.F64 == nil != (f.Info().F64 == nil) {
			t.Errorf("%v: the float64 meaning is not derived from %v's", op, f)
		}
		if r.Elementwise != (r.Expr != nil) {
			t.Errorf("%v: elementwise = %v but has expression = %v", op, r.Elementwise, r.Expr != nil)
		}
		if x := r.Expr; x != nil {
			if x.Type() != ir.XFloat32 {
				t.Errorf("%v: expression has type %v, want float", op, x.Type())
			}
			operands := r.Args
			if r.Scalar {
				operands++
			}
			for _, n := range x.Nodes() {
				if n.Op == ir.XArg && n.Arg >= operands {
					t.Errorf("%v: expression reads operand %d of %d", op, n.Arg, operands)
				}
			}
		}
		if f := r.ScalarForm; f != 0 && (f.Info().ScalarOf != op || f.Info().Expr != r.Expr) {
			t.Errorf("%v: scalar form %v is not derived from it", op, f)
		}
		if op.IsReduction() != (r.Kernel == ir.KernelReduce) {
			t.Errorf("%v: has a Combine = %v but kernel kind %v", op, op.IsReduction(), r.Kernel)
		}
		if op.IsReduction() {
			checkReductionRow(t, op)
		}
		if r.Args > 0 && !r.Elementwise && !r.View && r.Kernel == ir.KernelElementwise {
			t.Errorf("%v: neither elementwise nor a view, but names no kernel kind", op)
		}
		if !used[op] {
			t.Errorf("%v: no graph of irtest.Suite uses it", op)
		}
	}
}

// checkReductionRow checks what a reduction's row must say for its tree to
// be derived from it (see ir.OpInfo.Combine): one argument and a target
// shape, a binary elementwise Combine, and an Identity that Combine leaves
// every value unchanged by, on either side, bit for bit.
func checkReductionRow(t *testing.T, op ir.Op) {
	t.Helper()
	r, c := op.Info(), op.Info().Combine.Info()
	if r.Args != 1 || !r.Shaped || c.Args != 2 || !c.Elementwise || c.Scalar {
		t.Errorf("%v: want one argument, a target shape and a binary elementwise Combine, got %d, %v, %v", op, r.Args, r.Shaped, r.Combine)
		return
	}
	id := math.Float32frombits(r.Identity)
	for _, x := range append(irtest.Extremes(1, 256), float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1))) {
		for _, got := range []float32{cpuref.Binary(r.Combine, x, id), cpuref.Binary(r.Combine, id, x)} {
			if math.Float32bits(got) != math.Float32bits(x) {
				t.Errorf("%v: %v(%v, identity %#08x) = %v, want %v", op, r.Combine, x, r.Identity, got, x)
			}
		}
	}
}

// TestSchemaListsEveryOp: the published JSON schema names exactly the op
// table's wire names.
func TestSchemaListsEveryOp(t *testing.T) {
	raw, err := os.ReadFile("../docs/schema/graph-v1.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Defs struct {
			Node struct {
				Properties struct {
					Op struct {
						Enum []string `json:"enum"`
					} `json:"op"`
				} `json:"properties"`
			} `json:"node"`
		} `json:"$defs"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{}
	for _, op := range ir.Ops() {
		want[op.Info().Wire] = true
	}
	got := map[string]bool{}
	for _, w := range doc.Defs.Node.Properties.Op.Enum {
		got[w] = true
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("schema op names (-table +schema):\n%s", diff)
	}
}

// TestSchemaOpClasses: each rule of the schema's node allOf names its ops
// by a list (the ops that take axes, that take b or scalar, …); each list
// is exactly the class of the op table that the rule is about, so a new
// row cannot leave the schema refusing or mis-describing it.
func TestSchemaOpClasses(t *testing.T) {
	raw, err := os.ReadFile("../docs/schema/graph-v1.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Defs struct {
			Node struct {
				AllOf []struct {
					If struct {
						Not        *opCondition `json:"not"`
						Properties struct {
							Op opList `json:"op"`
						} `json:"properties"`
					} `json:"if"`
				} `json:"allOf"`
			} `json:"node"`
		} `json:"$defs"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	wires := func(keep func(ir.Op, ir.OpInfo) bool) []string {
		var out []string
		for _, op := range ir.Ops() {
			if r := op.Info(); r.ScalarOf == 0 && keep(op, r) {
				out = append(out, r.Wire)
			}
		}
		slices.Sort(out)
		return out
	}
	classes := map[string][]string{
		"reductions (axes, keepdims)":  wires(func(op ir.Op, _ ir.OpInfo) bool { return op.IsReduction() }),
		"input":                        {"input"},
		"full":                         {"full"},
		"binary with a scalar form":    wires(func(_ ir.Op, r ir.OpInfo) bool { return r.ScalarForm != 0 }),
		"unary":                        wires(func(_ ir.Op, r ir.OpInfo) bool { return r.Args == 1 && !r.Shaped }),
		"binary without a scalar form": wires(func(_ ir.Op, r ir.OpInfo) bool { return r.Args == 2 && r.ScalarForm == 0 }),
		"views to a target shape":      wires(func(_ ir.Op, r ir.OpInfo) bool { return r.View && r.Shaped }),
		"ternary":                      wires(func(_ ir.Op, r ir.OpInfo) bool { return r.Args == 3 }),
		"quaternary":                   wires(func(_ ir.Op, r ir.OpInfo) bool { return r.Args == 4 }),
	}
	// Each attribute's rule refuses it on the ops that do not declare it.
	// A required attribute (no default) has a rule that requires it.
	var attrClasses [][]string
	for _, name := range attrNames() {
		attrClasses = append(attrClasses, wires(func(_ ir.Op, r ir.OpInfo) bool {
			return slices.ContainsFunc(r.Attrs, func(a ir.AttrSpec) bool { return a.Name == name })
		}))
		if req := wires(func(_ ir.Op, r ir.OpInfo) bool {
			return slices.ContainsFunc(r.Attrs, func(a ir.AttrSpec) bool { return a.Name == name && a.Default == nil })
		}); len(req) > 0 {
			attrClasses = append(attrClasses, req)
		}
	}
	var got, want [][]string
	for _, rule := range doc.Defs.Node.AllOf {
		l := rule.If.Properties.Op
		if rule.If.Not != nil {
			l = rule.If.Not.Properties.Op
		}
		got = append(got, l.names())
	}
	for _, c := range classes {
		want = append(want, c)
	}
	order := func(a, b []string) int { return slices.Compare(a, b) }
	slices.SortFunc(got, order)
	// The reductions' list appears twice: the rule that refuses axes on
	// other ops, and the rule of the reductions' own fields.
	want = append(want, classes["reductions (axes, keepdims)"])
	want = append(want, attrClasses...)
	slices.SortFunc(want, order)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("the schema's op lists (-op table classes +schema):\n%s", diff)
	}
	var all []string
	for _, c := range classes {
		all = append(all, c...)
	}
	slices.Sort(all)
	if diff := cmp.Diff(wires(func(ir.Op, ir.OpInfo) bool { return true }), slices.Compact(all)); diff != "" {
		t.Errorf("ops that no class of the schema's rules covers (-table +classes):\n%s", diff)
	}
}

// opCondition is a schema "if" on the op property.
type opCondition struct {
	Properties struct {
		Op opList `json:"op"`
	} `json:"properties"`
}

// opList is {"const": op} or {"enum": [ops]}.
type opList struct {
	Const string   `json:"const"`
	Enum  []string `json:"enum"`
}

func (l opList) names() []string {
	out := slices.Clone(l.Enum)
	if l.Const != "" {
		out = append(out, l.Const)
	}
	slices.Sort(out)
	return out
}

// ulps is |got - want| in units of the float32 ULP at want (2⁻¹⁴⁹ in the
// subnormal range), with 0 for a matching infinity and +Inf for a NaN, an
// infinity or a zero's sign that want does not have.
func ulps(got float32, want float64) float64 {
	switch {
	case math.IsNaN(want) || math.IsNaN(float64(got)):
		if math.IsNaN(want) && math.IsNaN(float64(got)) {
			return 0
		}
		return math.Inf(1)
	case want == 0 && (got != 0 || math.Signbit(want) != math.Signbit(float64(got))):
		return math.Inf(1)
	case float32(want) == got:
		return 0 // also a want that rounds to ±Inf, and ±Inf itself
	case math.IsInf(float64(got), 0) || math.IsInf(want, 0):
		return math.Inf(1)
	}
	_, e := math.Frexp(want)
	return math.Abs(float64(got)-want) / math.Ldexp(1, max(e-24, -149))
}

// TestOpMeaning ties the two definitions in each elementwise row: the
// float32 expression (cpuref's bits) is within 2 ULP (pow: 2 + max(2|ln x^y|, |y|)) of the float64
// meaning F64, with the same NaNs, infinities and signed zeros, over
// random float32 bit patterns, irtest.Extremes and the special values.
// A row whose F64 means another function, or whose Expr drifts from it,
// fails here.
func TestOpMeaning(t *testing.T) {
	special := []float32{float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.NaN())}
	operands := func(seed uint64, n int) []float32 {
		r := rand.New(rand.NewPCG(seed, 5))
		out := append(irtest.Extremes(seed, n), special...)
		for range n {
			out = append(out, math.Float32frombits(r.Uint32()), float32(r.NormFloat64()*4))
		}
		return out
	}
	for _, op := range ir.Ops() {
		r := op.Info()
		if !r.Elementwise || r.Typed {
			continue
		}
		t.Run(op.String(), func(t *testing.T) {
			a := operands(uint64(op), 600)
			b := operands(uint64(op)+1000, 600)
			if r.Scalar { // a scalar operand is a finite float32 from the wire
				b = irtest.Extremes(uint64(op)+2000, len(a))
			}
			worst, bad := 0.0, 0
			for i, x := range a {
				y := b[i]
				if r.Args == 1 && !r.Scalar {
					y = 0
				}
				got, want := cpuref.EvalX(r.Expr, x, y, false), r.F64(float64(x), float64(y))
				allowed := 2.0
				if op == ir.OpPow { // ln|x|'s rounding grows by y·ln|x| = ln|want|, squaring's by |y| (ir/xtrig.go)
					allowed += max(2*math.Abs(math.Log(math.Abs(want))), math.Abs(float64(y)))
				}
				if d := ulps(got, want); d > allowed {
					if bad++; bad <= 5 {
						t.Errorf("%v(%g, %g) = %g (%#08x), float64 meaning %g: %.3g ULP", op, x, y, got, math.Float32bits(got), want, d)
					}
				} else {
					worst = max(worst, d)
				}
			}
			t.Logf("%v: worst %.3f ULP over %d inputs, %d over 2 ULP", op, worst, len(a), bad)
		})
	}
}

// attrNames returns every attribute name of the op table, sorted.
func attrNames() []string {
	var names []string
	for _, op := range ir.Ops() {
		for _, a := range op.Info().Attrs {
			if !slices.Contains(names, a.Name) {
				names = append(names, a.Name)
			}
		}
	}
	slices.Sort(names)
	return names
}

// TestSchemaAttributes: every attribute of the op table is a property of
// the schema's node of the type its rows declare (an integer for Len 1,
// else a list of integers, of exactly Len items when every row declaring
// it fixes the same Len), with a rule that refuses it on other ops
// (checked by TestSchemaOpClasses); and the schema has no attribute-like
// property the table lacks.
func TestSchemaAttributes(t *testing.T) {
	raw, err := os.ReadFile("../docs/schema/graph-v1.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	type prop struct {
		Type     string `json:"type"`
		MinItems *int   `json:"minItems"`
		MaxItems *int   `json:"maxItems"`
		Items    *struct {
			Type string `json:"type"`
		} `json:"items"`
	}
	var doc struct {
		Defs struct {
			Node struct {
				Properties map[string]prop `json:"properties"`
			} `json:"node"`
		} `json:"$defs"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	nodeFields := []string{"id", "op", "a", "b", "c", "d", "dtype", "shape", "data", "value", "scalar", "name", "param", "axes", "keepdims"}
	for key := range doc.Defs.Node.Properties {
		if !slices.Contains(nodeFields, key) && !slices.Contains(attrNames(), key) {
			t.Errorf("schema property %q is neither a node field nor an attribute of the op table", key)
		}
	}
	for _, name := range attrNames() {
		lens := map[int]bool{}
		for _, op := range ir.Ops() {
			for _, a := range op.Info().Attrs {
				if a.Name == name {
					lens[a.Len] = true
				}
			}
		}
		p, ok := doc.Defs.Node.Properties[name]
		if !ok {
			t.Errorf("attribute %q: not a property of the schema's node", name)
			continue
		}
		want := prop{Type: "array"}
		switch {
		case len(lens) == 1 && lens[1]:
			want = prop{Type: "integer"}
		case len(lens) == 1 && !lens[0]:
			for n := range lens {
				want.MinItems, want.MaxItems = &n, &n
			}
		}
		if want.Type == "array" {
			want.Items = &struct {
				Type string `json:"type"`
			}{"integer"}
		}
		if diff := cmp.Diff(want, p); diff != "" {
			t.Errorf("attribute %q's schema property (-rows +schema):\n%s", name, diff)
		}
	}
}
