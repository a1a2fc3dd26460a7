package ir_test

import (
	"reflect"
	"strings"
	"testing"

	"github.com/gpucc/gpucc/ir"
)

// TestLimitFlagsCoverLimits: every numeric Limits field has exactly one row in
// ir.LimitFlags, with a flag, and every row names a field; an error of a
// limit says the field and the flag that raise it.
func TestLimitFlagsCoverLimits(t *testing.T) {
	typ := reflect.TypeOf(ir.Limits{})
	rows := map[string]int{}
	for _, r := range ir.LimitFlags {
		rows[r.Field]++
		if _, ok := typ.FieldByName(r.Field); !ok {
			t.Errorf("row %q names no Limits field", r.Field)
		}
		if r.Flag == "" || strings.HasPrefix(r.Flag, "-") || r.Usage == "" {
			t.Errorf("row %q: flag %q, usage %q", r.Field, r.Flag, r.Usage)
		}
	}
	for i := range typ.NumField() {
		f := typ.Field(i)
		if f.Type.Kind() == reflect.Bool {
			continue // a policy (NonFinite), not a bound to raise
		}
		if rows[f.Name] != 1 {
			t.Errorf("Limits.%s has %d rows in ir.LimitFlags, want 1", f.Name, rows[f.Name])
		}
		if k := f.Type.Kind(); k != reflect.Int && k != reflect.Int64 {
			t.Errorf("Limits.%s is a %v; the flags set int and int64", f.Name, k)
		}
	}
	err := ir.LimitErrorf("MaxNodes", -1, "nodes", "600 nodes exceed the limit of 512")
	if err.Code != ir.CodeLimitExceeded || err.Limit != "MaxNodes" || !strings.HasSuffix(err.Error(), "; raise Limits.MaxNodes (gpucc --max-nodes)") {
		t.Errorf("LimitErrorf: %+v %q", err, err)
	}
	// Decode's node limit is one such error.
	_, derr := ir.DecodeBytes([]byte(`{"version":1,"nodes":[{"id":0,"op":"input","shape":[1],"data":[1]},{"id":1,"op":"relu","a":0}],"outputs":[{"name":"y","id":1}]}`), ir.Limits{MaxNodes: 1})
	if derr == nil || !strings.Contains(derr.Error(), "raise Limits.MaxNodes (gpucc --max-nodes)") {
		t.Errorf("a graph of 2 nodes under MaxNodes 1: %v", derr)
	}
}

// TestFit: the sized limits are FitHeadroom times what the graph needs,
// within the caps, never below the limits given, and only for the fields
// asked.
func TestFit(t *testing.T) {
	b := ir.NewBuilder()
	x := b.Input(ir.Shape{1000, 1000}, make([]float32, 1000*1000))
	b.Output("y", x.Relu())
	g, err := b.Build(ir.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	need := ir.Need(g)
	if need.MaxNodes != 2 || need.MaxElements != 1e6 || need.MaxStorageBytes != 8e6 || need.MaxOutputs != 1 || need.MaxOutputBytes != 4e6 {
		t.Errorf("Need: %+v", need)
	}
	l := ir.Limits{MaxNodes: 512, MaxElements: 1 << 20, MaxStorageBytes: 1 << 20, MaxOps: 10}
	caps := ir.Limits{MaxNodes: 1 << 20, MaxElements: 1 << 30, MaxStorageBytes: 12e6, MaxOps: 1 << 40}
	got := ir.Fit(g, l, caps, map[string]bool{"MaxNodes": true, "MaxElements": true, "MaxStorageBytes": true})
	want := ir.Limits{MaxNodes: 512, MaxElements: 2e6, MaxStorageBytes: 12e6, MaxOps: 10}
	if got != want {
		t.Errorf("Fit = %+v, want %+v", got, want)
	}
}
