package wasm

import (
	"bytes"
	"context"
	"encoding/gob"
	"errors"
	"math"
	"os"
	"slices"
	"testing"

	"github.com/gpucc/gpucc/codegen/c"
	"github.com/gpucc/gpucc/cpuref"
	"github.com/gpucc/gpucc/ir"
	"github.com/gpucc/gpucc/ir/irtest"
	"github.com/gpucc/gpucc/passes"
	"github.com/gpucc/gpucc/runtime/internal/cbuild"
)

// TestServeBuild: ServeBuild answers a program without its data with the C
// the page generates itself (a -0 scalar included, which gob alone turns
// into +0) and its module, scalar or SIMD128 as asked;
// the SIMD128 module (run by wazero's interpreter, which implements SIMD
// right) gives cpuref's bits, as the scalar one does; a request of neither
// a program nor a graph, or of bytes that do not decode, is invalid_graph.
func TestServeBuild(t *testing.T) {
	if _, err := cbuild.Find(); err != nil {
		if os.Getenv("GPUCC_REQUIRE_WASM") != "" {
			t.Fatal(err)
		}
		t.Skip(err)
	}
	bl := ir.NewBuilder()
	a := bl.Input(ir.Shape{16, 24}, irtest.Values(1, 16*24, 3))
	b := bl.Input(ir.Shape{24, 40}, irtest.Values(2, 24*40, 3))
	bias := bl.Input(ir.Shape{40}, irtest.Values(3, 40, 3))
	s := a.MatMul(b).Add(bias).Relu()
	bl.Output("s", s)
	bl.Output("t", s.Mul(s).Sum())
	bl.Output("m", s.Neg().MinimumScalar(float32(math.Copysign(0, -1)))) // an Instr's Scalar of -0, which gob drops
	g, err := bl.Build(ir.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	p, _, err := passes.Compile(g, passes.Options{})
	if err != nil {
		t.Fatal(err)
	}
	unit, err := c.Target{}.Emit(p)
	if err != nil {
		t.Fatal(err)
	}
	want := cpuref.Eval(g)
	ctx := context.Background()
	for _, simd := range []bool{false, true} {
		req, err := BuildRequest{Program: p.WithoutData().Program(), SIMD: simd}.Encode()
		if err != nil {
			t.Fatal(err)
		}
		out, err := ServeBuild(ctx, bytes.NewReader(req), ir.Limits{})
		if err != nil {
			t.Fatal(err)
		}
		var r BuildResponse
		if err := gob.NewDecoder(bytes.NewReader(out)).Decode(&r); err != nil {
			t.Fatal(err)
		}
		if r.Source != unit.Source {
			t.Fatalf("simd %v: the server generated other C than the page's", simd)
		}
		feats, err := cbuild.Features(r.Module)
		if err != nil {
			t.Fatal(err)
		}
		if slices.Contains(feats, "+simd128") != simd {
			t.Errorf("simd %v: the module's features are %v", simd, feats)
		}
		got, err := runPrebuilt(ctx, wazeroDevice(false), p, unit, r.Module)
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range g.Outputs {
			for i, v := range want[o.ID] {
				if math.Float32bits(v) != math.Float32bits(got[o.Name][i]) {
					t.Fatalf("simd %v: %s[%d] = %v, cpuref %v", simd, o.Name, i, got[o.Name][i], v)
				}
			}
		}
	}
	var empty bytes.Buffer
	gob.NewEncoder(&empty).Encode(BuildRequest{SIMD: true})
	for _, body := range [][]byte{empty.Bytes(), []byte("int main() { return 0; }")} {
		if _, err := ServeBuild(ctx, bytes.NewReader(body), ir.Limits{}); !errors.Is(err, ir.ErrInvalidGraph) {
			t.Errorf("request %q: %v, want invalid_graph", body[:min(len(body), 24)], err)
		}
	}
}
