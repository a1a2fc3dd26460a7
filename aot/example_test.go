package aot_test

import (
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/gpucc/gpucc/aot"
	"github.com/gpucc/gpucc/ir"
)

// Build a graph of one add ahead of time into WGSL and C kernels and a Go
// package named addnet, and write them to a directory; `go generate` with
// `gpucc build` does the same.
func Example() {
	g := &ir.Graph{
		Nodes: []ir.Node{
			{Op: ir.OpInput, Name: "x", Shape: ir.Shape{4}, Data: []float32{1, 2, 3, 4}},
			{Op: ir.OpInput, Name: "y", Shape: ir.Shape{4}, Data: []float32{10, 20, 30, 40}},
			{Op: ir.OpAdd, Args: []ir.NodeID{0, 1}, Shape: ir.Shape{4}},
		},
		Outputs: []ir.Output{{Name: "sum", ID: 2}},
	}
	b, err := aot.Build(g, aot.Options{GraphName: "add.json", Targets: []string{"wgsl", "c"}, Package: "addnet"})
	if err != nil {
		log.Fatal(err)
	}
	dir, err := os.MkdirTemp("", "addnet")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	if err := b.Write(dir); err != nil {
		log.Fatal(err)
	}
	fmt.Println("kernels:", len(b.Manifest.Kernels), "targets:", b.Manifest.Targets)
	for _, f := range b.Files {
		if _, err := os.Stat(filepath.Join(dir, f.Name)); err == nil {
			fmt.Println(f.Target, f.Name)
		}
	}
	// Output:
	// kernels: 1 targets: [wgsl c]
	// wgsl kernels/elementwise_0.wgsl
	// c kernels/kernels.c
	// plan plan.gob
	// go addnet.go
}
