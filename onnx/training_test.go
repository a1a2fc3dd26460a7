package onnx_test

import (
	"bytes"
	"context"
	"math"
	"testing"

	"github.com/gpucc/gpucc"
	"github.com/gpucc/gpucc/ir"
	"github.com/gpucc/gpucc/onnx"
)

// TestOptimizers: Adagrad, Adam and Momentum (ai.onnx.preview.training)
// compute one update step as ONNX's reference writes it, with T = 0 (no
// bias correction, Momentum's beta replaced by 1) and T = 3, against the
// formulas in float64 within float32's rounding; another op of the
// domain is refused by name.
func TestOptimizers(t *testing.T) {
	x, g, v, h := []float32{1.2, -2.8}, []float32{-0.94, 2.5}, []float32{1.7, -3.6}, []float32{0.1, 0.4}
	const r, norm, alpha, beta, eps, decay = 0.1, 0.001, 0.95, 0.1, 1e-5, 0.1
	run := func(t *testing.T, op string, ins []string, outs []string, attrs []msg, tv int64, vals map[string][]float32) map[string][]float32 {
		t.Helper()
		var infos []msg
		for _, n := range ins {
			switch n {
			case "R":
				infos = append(infos, valueInfo("R"))
			case "T":
				infos = append(infos, typedValueInfo("T", int64(onnx.Int64)))
			default:
				infos = append(infos, valueInfo(n, 2))
			}
		}
		var outInfos []msg
		for _, n := range outs {
			outInfos = append(outInfos, valueInfo(n))
		}
		nd := node(op, "o", ins, outs, attrs...).str(7, "ai.onnx.preview.training")
		doc := msg(nil).varint(1, 7).bytes(7, graph([]msg{nd}, nil, infos, outInfos)).
			bytes(8, msg(nil).str(1, "ai.onnx.preview.training").varint(2, 1))
		gr, err := onnx.Load(bytes.NewReader(doc), onnx.Options{})
		if err != nil {
			t.Fatal(err)
		}
		gr.Nodes[gr.Input("R")].Data = []float32{r}
		gr.Nodes[gr.Input("T")].Ints = []int64{tv}
		for n, d := range vals {
			if id := gr.Input(n); id >= 0 { // the op's own inputs
				gr.Nodes[id].Data = d
			}
		}
		res, err := gpucc.Run(context.Background(), gr, gpucc.Options{Backend: "cpu"})
		if err != nil {
			t.Fatal(err)
		}
		got := map[string][]float32{}
		for n, o := range res.Outputs {
			got[n] = o.Data
		}
		return got
	}
	near := func(t *testing.T, what string, got []float32, want []float64) {
		t.Helper()
		for i := range want {
			if d := math.Abs(float64(got[i]) - want[i]); d > 4e-7*math.Abs(want[i])+1e-7 {
				t.Errorf("%s[%d] = %v, want %v", what, i, got[i], want[i])
			}
		}
	}
	vals := map[string][]float32{"X": x, "G": g, "V": v, "H": h}
	for _, tv := range []int64{0, 3} {
		ta := float64(tv)
		// Adagrad.
		got := run(t, "Adagrad", []string{"R", "T", "X", "G", "H"}, []string{"X_new", "H_new"},
			[]msg{attrFloat("decay_factor", decay), attrFloat("epsilon", eps), attrFloat("norm_coefficient", norm)}, tv, vals)
		var wx, wh []float64
		for i := range x {
			gr := float64(float32(norm))*float64(x[i]) + float64(g[i])
			hn := float64(h[i]) + gr*gr
			rr := r / (1 + ta*float64(float32(decay)))
			wx = append(wx, float64(x[i])-rr*gr/(math.Sqrt(hn)+float64(float32(eps))))
			wh = append(wh, hn)
		}
		near(t, "Adagrad X_new", got["X_new"], wx)
		near(t, "Adagrad H_new", got["H_new"], wh)
		// Adam.
		got = run(t, "Adam", []string{"R", "T", "X", "G", "V", "H"}, []string{"X_new", "V_new", "H_new"},
			[]msg{attrFloat("alpha", alpha), attrFloat("beta", beta), attrFloat("epsilon", eps), attrFloat("norm_coefficient", norm)}, tv, vals)
		wx, wh = nil, nil
		var wv []float64
		a, b := float64(float32(alpha)), float64(float32(beta))
		for i := range x {
			gr := float64(float32(norm))*float64(x[i]) + float64(g[i])
			vn := a*float64(v[i]) + (1-a)*gr
			hn := b*float64(h[i]) + (1-b)*gr*gr
			rr := float64(float32(r))
			if tv > 0 {
				rr = rr * math.Sqrt(1-math.Pow(b, ta)) / (1 - math.Pow(a, ta))
			}
			wx = append(wx, float64(x[i])-rr*(vn/(math.Sqrt(hn)+float64(float32(eps)))))
			wv, wh = append(wv, vn), append(wh, hn)
		}
		near(t, "Adam X_new", got["X_new"], wx)
		near(t, "Adam V_new", got["V_new"], wv)
		near(t, "Adam H_new", got["H_new"], wh)
		// Momentum, standard and nesterov.
		for _, mode := range []string{"standard", "nesterov"} {
			got = run(t, "Momentum", []string{"R", "T", "X", "G", "V"}, []string{"X_new", "V_new"},
				[]msg{attrFloat("alpha", alpha), attrFloat("beta", beta), attrStr("mode", mode), attrFloat("norm_coefficient", norm)}, tv, vals)
			wx, wv = nil, nil
			for i := range x {
				gr := float64(float32(norm))*float64(x[i]) + float64(g[i])
				bb := 1.0
				if tv > 0 {
					bb = b
				}
				vn := a*float64(v[i]) + bb*gr
				step := vn
				if mode == "nesterov" {
					step = gr + a*vn
				}
				wx, wv = append(wx, float64(x[i])-float64(float32(r))*step), append(wv, vn)
			}
			near(t, "Momentum "+mode+" X_new", got["X_new"], wx)
			near(t, "Momentum "+mode+" V_new", got["V_new"], wv)
		}
	}
	nd := node("Gradient", "o", []string{"X"}, []string{"Y"}).str(7, "ai.onnx.preview.training")
	doc := msg(nil).varint(1, 7).bytes(7, graph([]msg{nd}, nil, []msg{valueInfo("X", 2)}, []msg{valueInfo("Y")})).
		bytes(8, msg(nil).str(1, "ai.onnx.preview.training").varint(2, 1))
	if _, err := onnx.Load(bytes.NewReader(doc), onnx.Options{}); gpucc.CodeOf(err) != ir.CodeUnsupported {
		t.Errorf("Gradient of the training domain: %v, want unsupported", err)
	}
}
