package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"math"
	"os"
	"os/signal"
	"strings"
	"syscall"

	lib "github.com/gpucc/gpucc"
	"github.com/gpucc/gpucc/aot"
	"github.com/gpucc/gpucc/ir"
)

func init() {
	commands["train"] = command{summary: "run SGD steps on a graph's loss, print losses and final parameters as JSON", run: trainCmd}
}

// exitInterrupted is train's exit status when an interrupt or --timeout
// stopped it after a step: it still prints the result of the steps done.
const exitInterrupted = 130

// trainCmd runs --steps SGD steps (grad.Step, through gpucc.Runtime.TrainWith) and
// prints the losses and final parameters. An interrupt (SIGINT, SIGTERM) or
// --timeout stops it between steps or inside one: it prints the result so
// far, with "interrupted": true, and exits 130. --progress prints each
// step as a JSON line on stderr as it ends.
func trainCmd(args []string) int {
	fs := newFlags("train", "train [--backend auto|BACKEND] [--allow-software] --steps N --lr X [--loss NAME] [--timeout D] [--progress] GRAPH.json\n       train --explain [--profile NAME] --lr X [--loss NAME] GRAPH.json")
	limits, options := runtimeFlags(fs)
	steps := fs.Int("steps", 0, fmt.Sprintf("SGD steps to run (1 to %d)", lib.MaxTrainSteps))
	lr := fs.Float64("lr", 0, "learning rate (required, above 0): each step does p -= lr * grad in float32")
	loss := fs.String("loss", "loss", "name of the scalar output to minimise")
	timeout := fs.Duration("timeout", 0, "stop after this long (0: no limit) and print the steps done, as an interrupt does")
	progress := fs.Bool("progress", false, "print each step's loss and transfers as a JSON line on stderr as it ends")
	explain := fs.Bool("explain", false, "print the kernel plan of one step (gpucc.StepGraph), with each kernel's flops and bytes, and run nothing")
	profileName := fs.String("profile", aot.DefaultProfile, "with --explain, the device-limit profile to plan for: "+strings.Join(aot.ProfileNames(), ", "))
	if err := parseInterspersed(fs, args); err != nil {
		return flagError(fs, err)
	}
	if fs.NArg() != 1 {
		return usageError("train: want exactly one GRAPH.json argument, got %d", fs.NArg())
	}
	if !*explain && (*steps < 1 || *steps > lib.MaxTrainSteps) {
		return usageError("train: --steps must be 1 to %d, got %d", lib.MaxTrainSteps, *steps)
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if !set["lr"] {
		return usageError("train: --lr is required")
	}
	if set["profile"] && !*explain {
		return usageError("train: --profile plans a step for --explain; a run plans for its backend's device")
	}
	if !(*lr > 0) || *lr > math.MaxFloat32 || float32(*lr) == 0 {
		return usageError("train: --lr must be a finite float32 above 0, got %v", *lr)
	}
	if *timeout < 0 {
		return usageError("train: --timeout must not be negative, got %v", *timeout)
	}
	onnxParams = true // an .onnx model's initializers are what it trains (import.go)
	g, err := readGraph(fs.Arg(0), *limits)
	if err != nil {
		return fail(err)
	}
	if *explain {
		return explainStep(g, *loss, float32(*lr), *profileName, *limits)
	}
	opts, err := options()
	if err != nil {
		return fail(err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	rt, err := lib.Open(ctx, opts)
	if err != nil {
		return fail(err)
	}
	defer rt.Close()
	if *timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, *timeout)
		defer cancel()
	}
	var to lib.TrainOptions
	if *progress {
		to.Progress = func(s lib.StepStats) {
			b, _ := json.Marshal(s)
			fmt.Fprintf(os.Stderr, "%s\n", b)
		}
	}
	res, err := rt.TrainWith(ctx, g, *loss, float32(*lr), *steps, to)
	if res != nil && res.Interrupted {
		writeJSON(res)
		return exitInterrupted
	}
	if err != nil && (errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)) {
		return fail(ir.Errorf(ir.CodeTimeout, -1, "", "train: stopped before the first step finished: %v", err))
	}
	if err != nil {
		return fail(err)
	}
	writeJSON(res)
	return 0
}

// explainStep prints the plan of one SGD step of g (gpucc.StepGraph) for
// the profile named, as `gpucc build --explain` prints a graph's.
func explainStep(g *ir.Graph, loss string, lr float32, profile string, limits ir.Limits) int {
	text, err := stepPlan(g, loss, lr, profile, limits)
	if err != nil {
		return fail(err)
	}
	fmt.Print(text)
	return 0
}

// stepPlan is the --explain text of one SGD step of g: its graph built
// ahead of time for no target, which seals it as a Trainer would.
func stepPlan(g *ir.Graph, loss string, lr float32, profile string, limits ir.Limits) (string, error) {
	sg, err := lib.StepGraph(g, loss, lr)
	if err != nil {
		return "", err
	}
	b, err := aot.Build(sg, aot.Options{Profile: profile, Limits: limits, Targets: []string{}})
	if err != nil {
		return "", err
	}
	return explainPlan(b.Plan.Program, b.Manifest), nil
}
