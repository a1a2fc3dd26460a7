package bench

// BenchmarkONNXModels: issue 22's exported PyTorch models, imported with
// package onnx and run with their inputs and weights resident and the
// output kept on the device, so that dispatch-ms is the kernels and the
// wall time per op is a warm call. The models are those of
// onnx/testdata/models with an input fixture (NAME.onnx, NAME.input.bin
// bound to the graph input "x"), plus those of GPUCC_BENCH_MODELS, a
// directory of the same layout (the H200 visit points it at .dev/models).
//
//	GPUCC_BENCH_BACKEND  backend (default webgpu)
//	GPUCC_BENCH_MODELS   another directory of models (optional)

import (
	"bytes"
	"context"
	"encoding/binary"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/gpucc/gpucc"
	"github.com/gpucc/gpucc/ir"
	"github.com/gpucc/gpucc/onnx"
)

// benchModels lists NAME → directory for every NAME.onnx with a
// NAME.input.bin beside it; a later directory's model replaces an
// earlier one of the same name.
func benchModels(dirs ...string) (names []string, dir map[string]string) {
	dir = map[string]string{}
	for _, d := range dirs {
		if d == "" {
			continue
		}
		found, _ := filepath.Glob(filepath.Join(d, "*.onnx"))
		for _, f := range found {
			name := strings.TrimSuffix(filepath.Base(f), ".onnx")
			if _, err := os.Stat(filepath.Join(d, name+".input.bin")); err != nil {
				continue
			}
			if _, seen := dir[name]; !seen {
				names = append(names, name)
			}
			dir[name] = d
		}
	}
	sort.Strings(names)
	return names, dir
}

func BenchmarkONNXModels(b *testing.B) {
	names, dirs := benchModels(filepath.Join("..", "onnx", "testdata", "models"), os.Getenv("GPUCC_BENCH_MODELS"))
	if len(names) == 0 {
		b.Skip("no models with an input fixture")
	}
	ctx := context.Background()
	for _, name := range names {
		b.Run(name, func(b *testing.B) {
			dir := dirs[name]
			raw, err := os.ReadFile(filepath.Join(dir, name+".onnx"))
			if err != nil {
				b.Fatal(err)
			}
			// The transformer block is 1.1e8 operations, past the default
			// MaxOps; the rest of the limits stay the defaults.
			g, err := onnx.Load(bytes.NewReader(raw), onnx.Options{Limits: ir.Limits{MaxOps: 1 << 40}})
			if err != nil {
				b.Fatalf("%s does not import: %v", name, err)
			}
			xr, err := os.ReadFile(filepath.Join(dir, name+".input.bin"))
			if err != nil {
				b.Fatal(err)
			}
			x := make([]float32, len(xr)/4)
			for i := range x {
				x[i] = math.Float32frombits(binary.LittleEndian.Uint32(xr[4*i:]))
			}
			if err := g.SetInput("x", x); err != nil {
				b.Fatal(err)
			}
			if len(g.Outputs) != 1 {
				b.Fatalf("%s has %d outputs; the benchmark keeps one", name, len(g.Outputs))
			}
			rt := openEngine(b)
			exe, err := rt.Compile(ctx, g)
			if err != nil {
				b.Fatal(err)
			}
			in := gpucc.Inputs{}
			for _, p := range g.Nodes {
				if p.Op != ir.OpInput || p.Name == "" {
					continue
				}
				t, err := rt.Upload(ctx, p.Shape, p.Data)
				if err != nil {
					b.Fatal(err)
				}
				defer t.Release()
				in[p.Name] = t
			}
			benchResident(b, exe, in, g.Outputs[0].Name)
			b.ReportMetric(float64(exe.Kernels()), "kernels")
		})
	}
}
