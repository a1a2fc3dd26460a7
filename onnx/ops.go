package onnx

import (
	"maps"
	"slices"

	"github.com/gpucc/gpucc/ir"
)

// rule imports one ONNX op: the opset it is supported from, the
// attributes it reads (any other is refused) and the function that maps
// the current node onto table ops, composites and folding.
type rule struct {
	since int64
	attrs []string
	fn    func(c *importer) ([]value, *ir.Error)
	// bare: the op takes no inputs (Constant). Every other rule may read
	// input 0 without a check: node refuses a node that lacks it.
	bare bool
	// graphs: the rule reads graph attributes (If's branches); any other
	// rule refuses one.
	graphs bool
}

// rules is the ONNX op table. Each run-time op is written as the float32
// operations ONNX's reference (onnx/backend/test/case/node) computes, in
// its order, so that the result differs from it only where a table op
// rounds differently (exp, log, tanh, and matmul's and sum's order).
var rules map[string]rule

// Supported returns the ONNX ops Load imports, sorted.
func Supported() []string {
	ops := make([]string, 0, len(rules))
	for op := range rules {
		ops = append(ops, op)
	}
	slices.Sort(ops)
	return ops
}

func init() {
	rules = map[string]rule{
		"Identity": {fn: func(c *importer) ([]value, *ir.Error) { return one(*c.in(0)) }},
		"Constant": {bare: true, attrs: []string{"value", "value_float", "value_floats", "value_int", "value_ints"}, fn: constantOp},
		"Shape":    {attrs: []string{"start", "end"}, fn: shapeOp},
		"Size": {fn: func(c *importer) ([]value, *ir.Error) {
			t, err := c.newConst(Int64, nil)
			if err != nil {
				return nil, err
			}
			n := 1
			for _, d := range c.in(0).shape() {
				n *= d
			}
			t.Int64[0] = int64(n)
			return one(constValue(t))
		}},
		"Cast":            {attrs: []string{"to", "saturate"}, fn: castOp},
		"CastLike":        {since: 15, attrs: []string{"saturate"}, fn: castLikeOp},
		"Reshape":         {since: 5, attrs: []string{"allowzero"}, fn: reshapeOp},
		"Flatten":         {attrs: []string{"axis"}, fn: flattenOp},
		"Squeeze":         {attrs: []string{"axes"}, fn: squeezeOp},
		"Unsqueeze":       {attrs: []string{"axes"}, fn: unsqueezeOp},
		"Expand":          {since: 8, fn: expandOp},
		"Transpose":       {attrs: []string{"perm"}, fn: transposeOp},
		"ConstantOfShape": {since: 9, attrs: []string{"value"}, fn: constantOfShapeOp},
		"Range":           {since: 11, fn: rangeOp},
		"Gather":          {attrs: []string{"axis"}, fn: gatherOp},
		"Concat":          {since: 4, attrs: []string{"axis"}, fn: concatOp},
		"Slice":           {attrs: []string{"starts", "ends", "axes"}, fn: sliceOp},
		"DepthToSpace":    {since: 11, attrs: []string{"blocksize", "mode"}, fn: depthToSpaceOp},
		"SpaceToDepth":    {attrs: []string{"blocksize"}, fn: spaceToDepthOp},
		"Compress":        {since: 9, attrs: []string{"axis"}, fn: compressOp},
		"Tile":            {since: 6, fn: tileOp},
		"Split":           {since: 2, attrs: []string{"axis", "split", "num_outputs"}, fn: splitOp},
		"Dropout":         {attrs: []string{"ratio", "seed", "is_test"}, fn: dropoutOp},

		"Add": {since: 7, fn: arith(ir.OpAdd, func(a, b int64) int64 { return a + b })},
		"Sub": {since: 7, fn: arith(ir.OpSub, func(a, b int64) int64 { return a - b })},
		"Mul": {since: 7, fn: arith(ir.OpMul, func(a, b int64) int64 { return a * b })},
		"Div": {since: 7, fn: arith(ir.OpDiv, nil)},

		"BitwiseAnd": {since: 18, fn: bitwiseOp(ir.OpBitAnd)},
		"BitwiseOr":  {since: 18, fn: bitwiseOp(ir.OpBitOr)},
		"BitwiseXor": {since: 18, fn: bitwiseOp(ir.OpBitXor)},
		"BitwiseNot": {since: 18, fn: bitwiseOp(ir.OpBitNot)},
		"BitShift":   {since: 11, attrs: []string{"direction"}, fn: bitwiseOp(ir.OpShiftLeft)},

		"Equal":          {since: 7, fn: compare(func(x, y number, f bool) bool { return eq(x, y, f) }, ir.OpEqual, false)},
		"Less":           {since: 7, fn: compare(func(x, y number, f bool) bool { return lt(x, y, f) }, ir.OpGreater, true)},
		"Greater":        {since: 7, fn: compare(func(x, y number, f bool) bool { return lt(y, x, f) }, ir.OpGreater, false)},
		"LessOrEqual":    {since: 12, fn: compare(func(x, y number, f bool) bool { return lt(x, y, f) || eq(x, y, f) }, ir.OpGreaterEqual, true)},
		"GreaterOrEqual": {since: 12, fn: compare(func(x, y number, f bool) bool { return lt(y, x, f) || eq(x, y, f) }, ir.OpGreaterEqual, false)},
		"Not":            {fn: logic(1, func(x []bool) bool { return !x[0] }, func(x []ir.Tensor) ir.Tensor { return not(x[0]) })},
		"And":            {since: 7, fn: logic(2, func(x []bool) bool { return x[0] && x[1] }, func(x []ir.Tensor) ir.Tensor { return x[0].Mul(x[1]) })},
		"Or":             {since: 7, fn: logic(2, func(x []bool) bool { return x[0] || x[1] }, func(x []ir.Tensor) ir.Tensor { return x[0].Maximum(x[1]) })},
		"Xor":            {since: 7, fn: logic(2, func(x []bool) bool { return x[0] != x[1] }, func(x []ir.Tensor) ir.Tensor { return not(x[0].Apply(ir.OpEqual, x[1])) })},
		"Where":          {since: 9, fn: whereOp},
		"If":             {attrs: []string{"then_branch", "else_branch"}, graphs: true, fn: ifOp},
		"Loop":           {bare: true, attrs: []string{"body"}, graphs: true, fn: loopOp},
		"Scan":           {bare: true, attrs: []string{"body", "num_scan_inputs", "scan_input_axes", "scan_input_directions", "scan_output_axes", "scan_output_directions"}, graphs: true, fn: scanOp},

		"Neg":   {since: 6, fn: unaryInt(func(b *ir.Builder, x ir.Tensor) ir.Tensor { return x.Neg() }, func(x int64) int64 { return -x })},
		"Relu":  {since: 6, fn: unary(func(b *ir.Builder, x ir.Tensor) ir.Tensor { return x.Relu() })},
		"Exp":   {since: 6, fn: unary(func(b *ir.Builder, x ir.Tensor) ir.Tensor { return x.Exp() })},
		"Log":   {since: 6, fn: unary(func(b *ir.Builder, x ir.Tensor) ir.Tensor { return x.Log() })},
		"Tanh":  {since: 6, fn: unary(func(b *ir.Builder, x ir.Tensor) ir.Tensor { return x.Tanh() })},
		"Sqrt":  {since: 6, fn: unary(func(b *ir.Builder, x ir.Tensor) ir.Tensor { return x.Sqrt() })},
		"Floor": {since: 6, fn: unary(func(b *ir.Builder, x ir.Tensor) ir.Tensor { return x.Apply(ir.OpFloor) })},
		"Round": {since: 11, fn: unary(func(b *ir.Builder, x ir.Tensor) ir.Tensor { return x.Apply(ir.OpRound) })},
		"Ceil":  {since: 6, fn: unary(func(b *ir.Builder, x ir.Tensor) ir.Tensor { return x.Apply(ir.OpCeil) })},
		"Erf":   {since: 9, fn: unary(func(b *ir.Builder, x ir.Tensor) ir.Tensor { return x.Apply(ir.OpErf) })},
		"Sin":   {since: 7, fn: unary(func(b *ir.Builder, x ir.Tensor) ir.Tensor { return x.Apply(ir.OpSin) })},
		"Cos":   {since: 7, fn: unary(func(b *ir.Builder, x ir.Tensor) ir.Tensor { return x.Apply(ir.OpCos) })},
		"Tan":   {since: 7, fn: unary(func(b *ir.Builder, x ir.Tensor) ir.Tensor { return x.Apply(ir.OpTan) })},
		"Asin":  {since: 7, fn: unary(func(b *ir.Builder, x ir.Tensor) ir.Tensor { return x.Apply(ir.OpAsin) })},
		"Acos":  {since: 7, fn: unary(func(b *ir.Builder, x ir.Tensor) ir.Tensor { return x.Apply(ir.OpAcos) })},
		"Atan":  {since: 7, fn: unary(func(b *ir.Builder, x ir.Tensor) ir.Tensor { return x.Apply(ir.OpAtan) })},
		"Sinh":  {since: 9, fn: unary(func(b *ir.Builder, x ir.Tensor) ir.Tensor { return x.Apply(ir.OpSinh) })},
		"Cosh":  {since: 9, fn: unary(func(b *ir.Builder, x ir.Tensor) ir.Tensor { return x.Apply(ir.OpCosh) })},
		"Asinh": {since: 9, fn: unary(func(b *ir.Builder, x ir.Tensor) ir.Tensor { return x.Apply(ir.OpAsinh) })},
		"Acosh": {since: 9, fn: unary(func(b *ir.Builder, x ir.Tensor) ir.Tensor { return x.Apply(ir.OpAcosh) })},
		"Atanh": {since: 9, fn: unary(func(b *ir.Builder, x ir.Tensor) ir.Tensor { return x.Apply(ir.OpAtanh) })},
		// |x| = max(x, -x): exact, NaN for NaN.
		"Abs": {since: 6, fn: unaryInt(func(b *ir.Builder, x ir.Tensor) ir.Tensor { return x.Maximum(x.Neg()) }, func(x int64) int64 { return max(x, -x) })},
		// 1/x, correctly rounded (numpy's reciprocal).
		"Reciprocal": {since: 6, fn: unary(func(b *ir.Builder, x ir.Tensor) ir.Tensor { return b.Full(x.Shape(), 1).Div(x) })},
		// The activations (rnn.go's activationFns, shared with the
		// recurrent layers).
		"Sigmoid":   {since: 6, fn: activationOp("Sigmoid")},
		"Softsign":  {fn: activationOp("Softsign")},
		"Softplus":  {fn: activationOp("Softplus")},
		"LeakyRelu": {since: 6, attrs: []string{"alpha"}, fn: activationOp("LeakyRelu")},
		"Elu":       {since: 6, attrs: []string{"alpha"}, fn: activationOp("Elu")},
		// relu(x)·gamma + (e^min(x,0)·alpha - alpha)·gamma.
		"Selu": {since: 6, attrs: []string{"alpha", "gamma"}, fn: func(c *importer) ([]value, *ir.Error) {
			alpha, gamma := c.attrFloat("alpha", 1.67326319217681884765625), c.attrFloat("gamma", 1.05070102214813232421875)
			return c.unaryOp(func(b *ir.Builder, x ir.Tensor) ir.Tensor {
				return x.Relu().MulScalar(gamma).Add(x.MinimumScalar(0).Exp().MulScalar(alpha).SubScalar(alpha).MulScalar(gamma))
			})
		}},
		"HardSigmoid": {since: 6, attrs: []string{"alpha", "beta"}, fn: activationOp("HardSigmoid")},
		// relu(x) + min(x, 0)·slope, slope broadcast.
		"PRelu": {since: 7, fn: func(c *importer) ([]value, *ir.Error) {
			x, err := c.rtIn(0)
			if err != nil {
				return nil, err
			}
			slope, err := c.rtIn(1)
			if err != nil {
				return nil, err
			}
			return one(rtValue(x.Relu().Add(x.MinimumScalar(0).Mul(slope))))
		}},
		"Sign":            {since: 9, fn: signOp},
		"IsNaN":           {since: 9, fn: isNaNOp},
		"IsInf":           {since: 10, attrs: []string{"detect_positive", "detect_negative"}, fn: isInfOp},
		"Celu":            {since: 12, attrs: []string{"alpha"}, fn: celuOp},
		"HardSwish":       {since: 14, fn: hardSwishOp},
		"ThresholdedRelu": {since: 10, attrs: []string{"alpha"}, fn: activationOp("ThresholdedRelu")},
		"Shrink":          {since: 9, attrs: []string{"bias", "lambd"}, fn: shrinkOp},
		"Trilu":           {since: 14, attrs: []string{"upper"}, fn: triluOp},
		"Clip":            {since: 6, attrs: []string{"min", "max"}, fn: clipOp},

		"Sum":  {since: 8, fn: variadic(ir.OpAdd, false, func(a, b int64) int64 { return a + b })},
		"Mean": {since: 8, fn: variadic(ir.OpAdd, true, nil)},
		"Max":  {since: 8, fn: variadic(ir.OpMaximum, false, func(a, b int64) int64 { return max(a, b) })},
		"Min":  {since: 8, fn: variadic(ir.OpMinimum, false, func(a, b int64) int64 { return min(a, b) })},

		"MatMul": {since: 1, fn: matmulOp},
		"Gemm":   {since: 7, attrs: []string{"alpha", "beta", "transA", "transB"}, fn: gemmOp},

		"Softmax":    {attrs: []string{"axis"}, fn: softmaxOp(false)},
		"LogSoftmax": {attrs: []string{"axis"}, fn: softmaxOp(true)},

		"ReduceSum":       {attrs: reduceAttrs, fn: reduceOp(func(x ir.Tensor, k bool, ax []int) ir.Tensor { return x.SumAxes(k, ax...) })},
		"ReduceMax":       {attrs: reduceAttrs, fn: reduceOp(func(x ir.Tensor, k bool, ax []int) ir.Tensor { return x.MaxAxes(k, ax...) })},
		"ReduceProd":      {attrs: reduceAttrs, fn: reduceOp(func(x ir.Tensor, k bool, ax []int) ir.Tensor { return x.ProdAxes(k, ax...) })},
		"ReduceMin":       {attrs: reduceAttrs, fn: reduceOp(func(x ir.Tensor, k bool, ax []int) ir.Tensor { return x.Neg().MaxAxes(k, ax...).Neg() })},
		"ReduceMean":      {attrs: reduceAttrs, fn: reduceOp(func(x ir.Tensor, k bool, ax []int) ir.Tensor { return x.Mean(k, ax...) })},
		"ReduceSumSquare": {attrs: reduceAttrs, fn: reduceOp(func(x ir.Tensor, k bool, ax []int) ir.Tensor { return x.Mul(x).SumAxes(k, ax...) })},
		"ReduceL1":        {attrs: reduceAttrs, fn: reduceOp(func(x ir.Tensor, k bool, ax []int) ir.Tensor { return x.Maximum(x.Neg()).SumAxes(k, ax...) })},
		"ReduceL2":        {attrs: reduceAttrs, fn: reduceOp(func(x ir.Tensor, k bool, ax []int) ir.Tensor { return x.Mul(x).SumAxes(k, ax...).Sqrt() })},
		"ReduceLogSum":    {attrs: reduceAttrs, fn: reduceOp(func(x ir.Tensor, k bool, ax []int) ir.Tensor { return x.SumAxes(k, ax...).Log() })},
		"ReduceLogSumExp": {attrs: reduceAttrs, fn: reduceOp(func(x ir.Tensor, k bool, ax []int) ir.Tensor { return x.Exp().SumAxes(k, ax...).Log() })},

		"GatherElements":            {since: 11, attrs: []string{"axis"}, fn: gatherElementsOp},
		"GatherND":                  {since: 11, attrs: []string{"batch_dims"}, fn: gatherNDOp},
		"GridSample":                {since: 16, attrs: []string{"align_corners", "mode", "padding_mode"}, fn: gridSampleOp},
		"TfIdfVectorizer":           {since: 9, attrs: []string{"max_gram_length", "max_skip_count", "min_gram_length", "mode", "ngram_counts", "ngram_indexes", "pool_int64s", "pool_strings", "weights"}, fn: tfIdfVectorizerOp},
		"TopK":                      {since: 10, attrs: []string{"axis", "largest", "sorted"}, fn: topKOp},
		"ScatterElements":           {since: 11, attrs: []string{"axis", "reduction"}, fn: scatterElementsOp},
		"Scatter":                   {since: 9, attrs: []string{"axis"}, fn: scatterElementsOp},
		"ScatterND":                 {since: 11, attrs: []string{"reduction"}, fn: scatterNDOp},
		"ReverseSequence":           {since: 10, attrs: []string{"batch_axis", "time_axis"}, fn: reverseSequenceOp},
		"ArgMax":                    {attrs: []string{"axis", "keepdims", "select_last_index"}, fn: argOp(true)},
		"ArgMin":                    {attrs: []string{"axis", "keepdims", "select_last_index"}, fn: argOp(false)},
		"Hardmax":                   {attrs: []string{"axis"}, fn: hardmaxOp},
		"NegativeLogLikelihoodLoss": {since: 12, attrs: []string{"reduction", "ignore_index"}, fn: nllLossOp},
		"SoftmaxCrossEntropyLoss":   {since: 12, attrs: []string{"reduction", "ignore_index"}, fn: sceLossOp},

		"BatchNormalization":        {since: 9, attrs: []string{"epsilon", "momentum", "training_mode"}, fn: batchNormOp},
		"InstanceNormalization":     {since: 6, attrs: []string{"epsilon"}, fn: instanceNormOp},
		"MeanVarianceNormalization": {since: 9, attrs: []string{"axes"}, fn: mvnOp},
		"CumSum":                    {since: 11, attrs: []string{"exclusive", "reverse"}, fn: cumSumOp},
		"Einsum":                    {since: 12, attrs: []string{"equation"}, fn: einsumOp},
		"Unique":                    {since: 11, attrs: []string{"axis", "sorted"}, fn: uniqueOp},
		"NonZero":                   {since: 9, fn: nonZeroOp},
		"NonMaxSuppression":         {since: 10, attrs: []string{"center_point_box"}, fn: nmsOp},
		"OneHot":                    {since: 9, attrs: []string{"axis"}, fn: oneHotOp},
		"EyeLike":                   {since: 9, attrs: []string{"dtype", "k"}, fn: eyeLikeOp},
		"Mod":                       {since: 10, attrs: []string{"fmod"}, fn: modOp},
		"Pow":                       {since: 7, fn: powOp},
		"MatMulInteger":             {since: 10, fn: integerOp(false)},
		"Det":                       {since: 11, fn: detOp},
		"DFT":                       {since: 17, attrs: []string{"axis", "inverse", "onesided"}, fn: dftOp},
		"Upsample":                  {since: 7, attrs: []string{"mode", "scales"}, fn: upsampleOp},
		"LRN":                       {since: 1, attrs: []string{"alpha", "beta", "bias", "size"}, fn: lrnOp},
		"DequantizeLinear":          {since: 10, attrs: []string{"axis"}, fn: dequantizeLinearOp},
		"QuantizeLinear":            {since: 10, attrs: []string{"axis"}, fn: quantizeLinearOp},
		"DynamicQuantizeLinear":     {since: 11, fn: dynamicQuantizeLinearOp},
		"HannWindow":                {since: 17, attrs: []string{"output_datatype", "periodic"}, fn: windowOp(0.5, 0.5, 0)},
		"HammingWindow":             {since: 17, attrs: []string{"output_datatype", "periodic"}, fn: windowOp(25.0/46, 21.0/46, 0)},
		"BlackmanWindow":            {since: 17, attrs: []string{"output_datatype", "periodic"}, fn: windowOp(0.42, 0.5, 0.08)},

		"LayerNormalization": {since: 17, attrs: []string{"axis", "epsilon", "stash_type"}, fn: layerNormOp},
	}
	maps.Copy(rules, convRules)        // conv.go
	maps.Copy(rules, rnnRules)         // rnn.go
	rules["Attention"] = attentionRule // attention.go
}

// reduceAttrs are every reduction's attributes: noop_with_empty_axes
// (opset 13 for ReduceSum, 18 for the others) is what every opset-18
// PyTorch export writes, with its default 0.
var reduceAttrs = []string{"axes", "keepdims", "noop_with_empty_axes"}
