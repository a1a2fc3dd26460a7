package ir_test

import (
	"encoding/json"
	"os"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gpucc/gpucc/ir"
	"github.com/gpucc/gpucc/ir/irtest"
)

// TestOpTableComplete walks every op and fails on a row that misses a
// part: names, the shape and cost rules, the expression of an elementwise
// op, the gradient rule or the reason there is none, and the wire name
// that decodes back to the op. It also checks that the shared test suite
// uses every op, so every backend's tests run it.
func TestOpTableComplete(t *testing.T) {
	used := map[ir.Op]bool{}
	for _, c := range irtest.Suite() {
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
		if r.Args > 0 && !r.Elementwise && !r.View && r.Kernel == ir.KernelElementwise {
			t.Errorf("%v: neither elementwise nor a view, but names no kernel kind", op)
		}
		if !used[op] {
			t.Errorf("%v: no graph of irtest.Suite uses it", op)
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

// TestBuilderBroadcasts: the Builder broadcasts a trailing-suffix operand
// of any binary elementwise op, as protocol v1 does ([4,16] + [16] was
// refused), for either operand.
func TestBuilderBroadcasts(t *testing.T) {
	b := ir.NewBuilder()
	x := b.Input(ir.Shape{4, 16}, make([]float32, 64))
	row := b.Input(ir.Shape{16}, make([]float32, 16))
	for _, y := range []ir.Tensor{x.Add(row), row.Sub(x), x.Div(b.Full(ir.Shape{}, 2)), row.Maximum(x)} {
		if !y.Shape().Equal(ir.Shape{4, 16}) {
			t.Errorf("shape %v, want [4,16]", y.Shape())
		}
	}
	x.Add(b.Input(ir.Shape{4}, make([]float32, 4)))
	if _, err := b.Build(ir.Limits{}); err == nil {
		t.Error("[4,16] + [4] built; want a shape error")
	}
}
