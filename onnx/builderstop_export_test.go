package onnx

import "github.com/gpucc/gpucc/ir"

// SetBuilderNodes makes m's later imports stop their builder when it
// would hold more than n nodes (Options.builderNodes; 0: the limits'),
// so that a test stops an import at each of its builder steps.
func SetBuilderNodes(m *Model, n int) { m.opts.builderNodes = n }

// PanicRule makes op's rule panic, as a bug would, until restore.
func PanicRule(op string) (restore func()) {
	old := rules[op]
	r := old
	r.fn = func(*importer) ([]value, *ir.Error) { panic("a test's rule panics") }
	rules[op] = r
	return func() { rules[op] = old }
}
