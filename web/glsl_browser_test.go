package web

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"

	"github.com/gpucc/gpucc/cpuref"
	"github.com/gpucc/gpucc/ir"
)

// TestAddChainPage: ((x·k) + c1) + c2 and ((x·k) - c1) - c2 over 4096
// values on every browser backend give cpuref's bits. ANGLE on SwiftShader
// reassociates float adds: without codegen.Lang.KeepSums the page's webgl2
// computed x·k + (c1 + c2), 1 ULP off on about one value in eight, as on
// PaddleOCR's detector (a batch norm's shift, then hard-swish's + 3).
func TestAddChainPage(t *testing.T) {
	const n = 4096
	r := rand.New(rand.NewPCG(34, 1))
	data := make([]string, n)
	for i := range data {
		data[i] = strconv.FormatFloat(float64(float32(r.Float64()*8-4)), 'g', -1, 32)
	}
	graph := fmt.Sprintf(`{"version":1,"nodes":[
		{"id":0,"op":"input","shape":[%d],"data":[%s]},
		{"id":1,"op":"full","shape":[],"value":0.9171},
		{"id":2,"op":"full","shape":[],"value":0.1234567},
		{"id":3,"op":"full","shape":[],"value":3},
		{"id":4,"op":"mul","a":0,"b":1},
		{"id":5,"op":"add","a":4,"b":2},
		{"id":6,"op":"add","a":5,"b":3},
		{"id":7,"op":"sub","a":4,"b":2},
		{"id":8,"op":"sub","a":7,"b":3}
	],"outputs":[{"name":"sum","id":6},{"name":"diff","id":8}]}`, n, strings.Join(data, ","))
	g, err := ir.DecodeBytes([]byte(graph), ir.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	want := cpuref.Eval(g)
	ctx := page(t, "?life=0", pageDeadline)
	for _, backend := range browserBackends {
		t.Run(backend, func(t *testing.T) {
			res := run(t, ctx, []byte(graph), backend, true)
			if res.Error != nil {
				t.Fatalf("%s: %s", res.Error.Code, res.Error.Message)
			}
			for _, o := range g.Outputs {
				bad, first := 0, -1
				for i, b := range res.Outputs[o.Name].Bits {
					if b != math.Float32bits(want[o.ID][i]) {
						bad++
						if first < 0 {
							first = i
						}
					}
				}
				if bad > 0 {
					t.Errorf("%s: %d of %d values are not cpuref's bits; [%d] = %v, cpuref %v", o.Name, bad, n,
						first, math.Float32frombits(res.Outputs[o.Name].Bits[first]), want[o.ID][first])
				}
			}
		})
	}
}
