package onnx_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"log"
	"math"
	"os"
	"slices"

	"github.com/gpucc/gpucc"
	"github.com/gpucc/gpucc/ir"
	"github.com/gpucc/gpucc/onnx"
	_ "github.com/gpucc/gpucc/runtime/all" // every backend this build supports
)

// Example runs a model PyTorch exported (testdata/models/digits.onnx: a
// two-layer classifier of 8×8 digits at PyTorch's seeded initialisation,
// input x [32,64], output y, the log-probabilities of the ten classes) on
// the data export.py gave it, and compares with PyTorch's output there:
// onnx.Load imports the model keeping its own names, and a run binds the
// input by that name (left out, an input keeps its embedded zeros).
func Example() {
	ctx := context.Background()
	model, err := os.ReadFile("testdata/models/digits.onnx")
	if err != nil {
		log.Fatal(err)
	}
	// The signature says what to give: each input's name, type and shape.
	sig, err := onnx.ReadSignature(bytes.NewReader(model), ir.Limits{})
	if err != nil {
		log.Fatal(err)
	}
	for _, in := range sig.Inputs {
		fmt.Printf("input %s %s %v\n", in.Name, in.Type, in.Shape)
	}
	g, err := onnx.Load(bytes.NewReader(model), onnx.Options{})
	if err != nil {
		log.Fatal(err)
	}

	// 32 digits' pixels, 0..16, as float32 (little-endian, row-major).
	raw, err := os.ReadFile("testdata/models/digits.input.bin")
	if err != nil {
		log.Fatal(err)
	}
	x := make([]float32, len(raw)/4)
	if err := binary.Read(bytes.NewReader(raw), binary.LittleEndian, x); err != nil {
		log.Fatal(err)
	}

	rt, err := gpucc.Open(ctx, gpucc.Options{Backend: "cpu"}) // or "auto": webgpu, then native, wasm, cpu
	if err != nil {
		log.Fatal(err)
	}
	defer rt.Close()
	exe, err := rt.Compile(ctx, g) // once; each Run binds new data
	if err != nil {
		log.Fatal(err)
	}
	defer exe.Release()
	res, err := exe.Run(ctx, gpucc.Inputs{"x": gpucc.NewTensor(ir.Shape{32, 64}, x)})
	if err != nil {
		log.Fatal(err)
	}
	y := res.Outputs["y"]
	fmt.Println("y", y.Shape)
	var classes []int
	for r := range y.Shape[0] {
		row := y.Data[r*10 : (r+1)*10]
		classes = append(classes, slices.Index(row, slices.Max(row)))
	}
	fmt.Println("classes", classes)
	fmt.Printf("first digit's log-probabilities %.4f\n", y.Data[:10])

	// PyTorch's own output on the same x (testdata/models/digits.output32.bin).
	raw, err = os.ReadFile("testdata/models/digits.output32.bin")
	if err != nil {
		log.Fatal(err)
	}
	torch := make([]float32, len(raw)/4)
	if err := binary.Read(bytes.NewReader(raw), binary.LittleEndian, torch); err != nil {
		log.Fatal(err)
	}
	worst := 0.0
	for i, v := range y.Data {
		worst = max(worst, math.Abs(float64(v-torch[i])))
	}
	fmt.Printf("largest difference from PyTorch: %.1e\n", worst)
	// Output:
	// input x float32 [32 64]
	// y [32 10]
	// classes [2 4 9 3 2 2 9 9 2 9 9 9 9 9 2 2 2 2 3 9 2 9 2 4 4 2 2 4 9 9 3 3]
	// first digit's log-probabilities [-3.4627 -2.8725 -1.5215 -2.1868 -2.5260 -2.6013 -2.7060 -2.1654 -2.3168 -1.9160]
	// largest difference from PyTorch: 4.8e-07
}
