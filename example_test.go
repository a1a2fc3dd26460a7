package gpucc_test

import (
	"context"
	"fmt"

	"github.com/gpucc/gpucc"
	"github.com/gpucc/gpucc/ir"
	_ "github.com/gpucc/gpucc/runtime/all"
)

// relu(a*b+c) over three named inputs.
func fmaRelu(n int) *ir.Graph {
	b := ir.NewBuilder()
	shape := ir.Shape{n}
	zeros := make([]float32, n)
	a := b.NamedInput("a", shape, zeros)
	x := b.NamedInput("b", shape, zeros)
	c := b.NamedInput("c", shape, zeros)
	b.Output("y", a.Mul(x).Add(c).Relu())
	g, err := b.Build(ir.Limits{})
	if err != nil {
		panic(err)
	}
	return g
}

// Compile a graph once and run it many times with new inputs.
func Example() {
	ctx := context.Background()
	rt, err := gpucc.Open(ctx, gpucc.Options{Backend: "cpu"})
	if err != nil {
		panic(err)
	}
	defer rt.Close()
	exe, err := rt.Compile(ctx, fmaRelu(3))
	if err != nil {
		panic(err)
	}
	for _, scale := range []float32{1, 2} {
		res, err := exe.Run(ctx, gpucc.Inputs{
			"a": gpucc.NewTensor(ir.Shape{3}, []float32{-2, 3, 4}),
			"b": gpucc.NewTensor(ir.Shape{3}, []float32{scale, scale, scale}),
			"c": gpucc.NewTensor(ir.Shape{3}, []float32{1, 1, 1}),
		})
		if err != nil {
			panic(err)
		}
		fmt.Println(res.Outputs["y"].Data)
	}
	// Output:
	// [0 4 5]
	// [0 7 9]
}

// Keep data on the device: upload a weight once, chain two runs through a
// kept output, and read the result back into a caller slice.
func ExampleRunOptions_keep() {
	ctx := context.Background()
	rt, err := gpucc.Open(ctx, gpucc.Options{Backend: "cpu"})
	if err != nil {
		panic(err)
	}
	defer rt.Close()
	exe, err := rt.Compile(ctx, fmaRelu(2))
	if err != nil {
		panic(err)
	}
	w, err := rt.Upload(ctx, ir.Shape{2}, []float32{2, 3})
	if err != nil {
		panic(err)
	}
	defer w.Release()
	one := gpucc.NewTensor(ir.Shape{2}, []float32{1, 1})
	res, err := exe.RunWith(ctx, gpucc.Inputs{"a": w, "b": one, "c": one}, gpucc.RunOptions{Keep: []string{"y"}})
	if err != nil {
		panic(err)
	}
	h := res.Kept["y"] // relu(w+1), still on the device
	defer h.Release()
	res, err = exe.Run(ctx, gpucc.Inputs{"a": h, "b": w, "c": one})
	if err != nil {
		panic(err)
	}
	fmt.Println(res.Outputs["y"].Data, res.Timings.UploadBytes)
	out := make([]float32, 2)
	if _, err := h.Read(ctx, out); err != nil {
		panic(err)
	}
	fmt.Println(out)
	// Output:
	// [7 13] 8
	// [3 4]
}

// Train a one-weight model with its parameter resident: after the first
// step, a step uploads nothing and reads back only the loss.
func ExampleRuntime_NewTrainer() {
	ctx := context.Background()
	rt, err := gpucc.Open(ctx, gpucc.Options{Backend: "cpu"})
	if err != nil {
		panic(err)
	}
	defer rt.Close()
	// loss = sum((w*x - y)²) for y = 2x: w goes to 2 (each element on its
	// own: x = 2 makes the second converge in one step).
	b := ir.NewBuilder()
	x := b.NamedInput("x", ir.Shape{2}, []float32{1, 2})
	y := b.NamedInput("y", ir.Shape{2}, []float32{2, 4})
	w := b.Param("w", ir.Shape{2}, []float32{0, 0})
	d := w.Mul(x).Sub(y)
	b.Output("loss", d.Mul(d).Sum())
	g, err := b.Build(ir.Limits{})
	if err != nil {
		panic(err)
	}
	tr, err := rt.NewTrainer(ctx, g, "loss", 0.125)
	if err != nil {
		panic(err)
	}
	defer tr.Close()
	for range 3 {
		r, err := tr.Step(ctx, nil)
		if err != nil {
			panic(err)
		}
		fmt.Println(r.Loss, r.Timings.UploadBytes, r.Timings.ReadbackBytes)
	}
	params, err := tr.Params(ctx)
	if err != nil {
		panic(err)
	}
	fmt.Println(params["w"].Data)
	// Output:
	// 20 24 4
	// 2.25 0 4
	// 1.265625 0 4
	// [1.15625 2]
}
