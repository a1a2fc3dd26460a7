package onnx_test

import (
	"slices"
	"testing"

	"github.com/gpucc/gpucc/onnx"
)

// TestTfIdfModes: TfIdfVectorizer's TF counts, IDF's weight where a count
// is positive, TFIDF's count · weight, over unigrams and bigrams with a
// skip of 1, and a pool token outside int32's range that matches nothing.
func TestTfIdfModes(t *testing.T) {
	x := []int64{4, 9, 4, 9, 9, 4}
	for _, c := range []struct {
		mode string
		want []float32
	}{{"TF", []float32{3, 3, 3, 0}}, {"IDF", []float32{0.5, 2, 7, 0}}, {"TFIDF", []float32{1.5, 6, 21, 0}}} {
		raw := model(9, graph([]msg{node("TfIdfVectorizer", "t", []string{"x"}, []string{"y"}, attrInt("min_gram_length", 1), attrInt("max_gram_length", 2),
			attrInt("max_skip_count", 1), attrStr("mode", c.mode), attrInts("ngram_counts", 0, 2), attrInts("ngram_indexes", 0, 3, 2, 1),
			attrInts("pool_int64s", 4, 1<<40, 9, 4, 4, 9), attrFloats("weights", 0.5, 2, 7, 1))}, nil,
			[]msg{typedValueInfo("x", int64(onnx.Int32), 6)}, []msg{valueInfo("y", 4)}))
		res, err := runModel(t, raw, nil, map[string][]int64{"x": x})
		if err != nil {
			t.Fatal(err)
		}
		if got := res.Outputs["y"].Data; !slices.Equal(got, c.want) {
			t.Errorf("%s: %v, want %v", c.mode, got, c.want)
		}
	}
}
