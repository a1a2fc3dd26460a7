package onnx

// SetBuilderNodes makes m's later imports stop their builder when it
// would hold more than n nodes (Options.builderNodes; 0: the limits'),
// so that a test stops an import at each of its builder steps.
func SetBuilderNodes(m *Model, n int) { m.opts.builderNodes = n }
