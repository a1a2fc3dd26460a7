package gpucc_test

import (
	"strings"
	"testing"

	"github.com/gpucc/gpucc"
	"github.com/gpucc/gpucc/ir"
	"github.com/gpucc/gpucc/ir/irtest"
)

// TestScatterBackends: the scatter rows (ir/scatter.go) give cpu's bits on
// every backend with typed code, and fail where cpu fails with its code
// and message: every dtype through every reduction with repeated and
// negative indices (irtest.Typed's scatter graphs), the limits
// (irtest.ScatterLimits: wrap-around, ±0, subnormals, ±3e38, float16's
// rounding after each update, bool's or and and, NaN payloads and -Inf
// under the non-finite policy), indices outside their dimension
// (irtest.ScatterFaults) and random graphs whose every other node may be
// a scatter.
func TestScatterBackends(t *testing.T) {
	var cases []irtest.Case
	for _, c := range irtest.Typed() {
		if strings.HasSuffix(c.Name, "/scatter") {
			cases = append(cases, c)
		}
	}
	cases = append(append(cases, irtest.ScatterLimits()...), irtest.ScatterFaults()...)
	for seed := range 16 {
		cases = append(cases, irtest.Case{Name: "random/" + itoa(seed), Graph: irtest.RandomScatters(uint64(seed))})
	}
	nonFinite := func(o *gpucc.Options) { o.Limits = ir.Limits{NonFinite: true} }
	cpu := open(t, "cpu", nonFinite)
	for _, name := range typedBackends {
		t.Run(name, func(t *testing.T) {
			rt := open(t, name, nonFinite)
			for _, c := range cases {
				t.Run(c.Name, func(t *testing.T) { sameTyped(t, cpu, rt, c.Graph) })
			}
		})
	}
}
