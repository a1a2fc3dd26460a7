package main

import (
	"context"
	"flag"
	"math"

	lib "github.com/gpucc/gpucc"
)

func init() {
	commands["train"] = command{summary: "run SGD steps on a graph's loss, print losses and final parameters as JSON", run: trainCmd}
}

// trainCmd runs --steps SGD steps (grad.Step, through gpucc.Runtime.Train) and
// prints the losses and final parameters.
func trainCmd(args []string) int {
	fs := newFlags("train", "train [--backend auto|BACKEND] [--allow-software] --steps N --lr X [--loss NAME] GRAPH.json")
	limits, options := runtimeFlags(fs)
	steps := fs.Int("steps", 0, "SGD steps to run (at least 1)")
	lr := fs.Float64("lr", 0, "learning rate (required): each step does p -= lr * grad in float32")
	loss := fs.String("loss", "loss", "name of the scalar output to minimise")
	if err := parseInterspersed(fs, args); err != nil {
		return flagError(fs, err)
	}
	if fs.NArg() != 1 {
		return usageError("train: want exactly one GRAPH.json argument, got %d", fs.NArg())
	}
	if *steps < 1 {
		return usageError("train: --steps must be at least 1, got %d", *steps)
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if !set["lr"] {
		return usageError("train: --lr is required")
	}
	if math.IsNaN(*lr) || math.Abs(*lr) > math.MaxFloat32 {
		return usageError("train: --lr must be a finite float32, got %v", *lr)
	}
	ctx := context.Background()
	g, err := readGraph(fs.Arg(0), *limits)
	if err != nil {
		return fail(err)
	}
	opts, err := options()
	if err != nil {
		return fail(err)
	}
	rt, err := lib.Open(ctx, opts)
	if err != nil {
		return fail(err)
	}
	defer rt.Close()
	res, err := rt.Train(ctx, g, *loss, float32(*lr), *steps)
	if err != nil {
		return fail(err)
	}
	writeJSON(res)
	return 0
}
