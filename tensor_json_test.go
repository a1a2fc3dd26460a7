package gpucc_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/gpucc/gpucc"
	"github.com/gpucc/gpucc/ir"
)

// TestTensorJSON: a tensor's shape and data encode as arrays, never null,
// whether the slices are nil or empty: a scalar's shape is [].
func TestTensorJSON(t *testing.T) {
	for _, c := range []struct {
		name string
		in   gpucc.Tensor
		want string
	}{
		{"scalar, nil shape", gpucc.Tensor{Data: []float32{2.5}}, `{"shape":[],"data":[2.5]}`},
		{"scalar, empty shape", gpucc.Tensor{Shape: []int{}, Data: []float32{-1}}, `{"shape":[],"data":[-1]}`},
		{"zero value", gpucc.Tensor{}, `{"shape":[],"data":[]}`},
		{"vector", gpucc.NewTensor(ir.Shape{2}, []float32{1, 2}), `{"shape":[2],"data":[1,2]}`},
		{"matrix", gpucc.NewTensor(ir.Shape{1, 2}, []float32{0, 3}), `{"shape":[1,2],"data":[0,3]}`},
	} {
		b, err := json.Marshal(c.in)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if string(b) != c.want {
			t.Errorf("%s: %s, want %s", c.name, b, c.want)
		}
	}
}

// TestScalarOutputJSON: a run's scalar output and a trainer's scalar
// parameter come out with "shape":[] (the published schema's array).
func TestScalarOutputJSON(t *testing.T) {
	ctx := context.Background()
	b := ir.NewBuilder()
	w := b.Param("w", ir.Shape{}, []float32{1.5})
	x := b.NamedInput("x", ir.Shape{3}, []float32{1, 2, 3})
	b.Output("loss", x.Mul(w).Sum())
	g, err := b.Build(ir.DefaultLimits())
	if err != nil {
		t.Fatal(err)
	}
	rt, err := gpucc.Open(ctx, gpucc.Options{Backend: "cpu"})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	res, err := rt.Run(ctx, g)
	if err != nil {
		t.Fatal(err)
	}
	out, _ := json.Marshal(res.Outputs)
	if want := `{"loss":{"shape":[],"data":[9]}}`; string(out) != want {
		t.Errorf("outputs %s, want %s", out, want)
	}
	tr, err := rt.Train(ctx, g, "loss", 0.01, 1)
	if err != nil {
		t.Fatal(err)
	}
	params, _ := json.Marshal(tr.Params)
	if want := `{"w":{"shape":[],"data":[1.44]}}`; string(params) != want {
		t.Errorf("params %s, want %s", params, want)
	}
}

// TestUploadShape: Upload refuses a shape no graph input can have (a zero
// or negative dimension) with invalid_input, as it refuses a wrong length.
func TestUploadShape(t *testing.T) {
	ctx := context.Background()
	rt, err := gpucc.Open(ctx, gpucc.Options{Backend: "cpu"})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	for _, tt := range []struct {
		shape ir.Shape
		data  []float32
		ok    bool
	}{
		{ir.Shape{0}, nil, false},
		{ir.Shape{2, 0}, nil, false},
		{ir.Shape{-1}, nil, false},
		{ir.Shape{2}, []float32{1}, false},
		{nil, []float32{1}, true}, // a scalar
		{ir.Shape{1, 2}, []float32{1, 2}, true},
	} {
		dt, err := rt.Upload(ctx, tt.shape, tt.data)
		switch {
		case tt.ok && err != nil:
			t.Errorf("Upload(%v): %v", tt.shape, err)
		case !tt.ok && gpucc.CodeOf(err) != ir.CodeInvalidInput:
			t.Errorf("Upload(%v, %d values) = %v, %v; want invalid_input", tt.shape, len(tt.data), dt, err)
		}
		if dt != nil {
			dt.Release()
		}
	}
}
