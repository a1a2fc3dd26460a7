package onnx

// TopKPairsUpTo lets a test take TopK's pairwise form or its k passes on
// one input (topKPairsUpTo).
var TopKPairsUpTo = &topKPairsUpTo
