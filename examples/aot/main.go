// Command aot runs a small MLP that gpucc built ahead of time: go generate
// turns mlp.json into the Go package ./mlp, and this program calls it.
//
//	go generate && go run . [-backend auto|webgpu|wasm|native|cpu]
package main

//go:generate go tool gpucc build mlp.json -o mlp --package mlp --quiet

import (
	"context"
	"flag"
	"fmt"
	"log"

	"example.com/aot/mlp"
	"github.com/gpucc/gpucc"
	"github.com/gpucc/gpucc/ir"
	_ "github.com/gpucc/gpucc/runtime/all"
)

func main() {
	backend := flag.String("backend", "auto", "auto, or one of: "+fmt.Sprint(gpucc.Backends()))
	flag.Parse()
	ctx := context.Background()
	rt, err := gpucc.Open(ctx, gpucc.Options{Backend: *backend, AllowSoftware: true})
	if err != nil {
		log.Fatal(err)
	}
	defer rt.Close()
	exe, err := mlp.Compile(ctx, rt) // loads the embedded kernels: no code generation
	if err != nil {
		log.Fatal(err)
	}
	// The weights stay as built; each run takes a new batch of 4 rows of 8.
	for step := range 3 {
		x := make([]float32, 4*8)
		for i := range x {
			x[i] = float32((i+step)%7-3) / 4
		}
		out, err := exe.Run(ctx, mlp.Inputs{X: gpucc.NewTensor(ir.Shape{4, 8}, x)})
		if err != nil {
			log.Fatal(err)
		}
		fmt.Printf("%s batch %d: logits %v\n", rt.Backend(), step, out.Logits)
	}
}
