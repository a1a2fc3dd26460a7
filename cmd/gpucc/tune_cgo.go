//go:build cgo

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/signal"
	"strings"

	"github.com/gpucc/gpucc/ir"
	"github.com/gpucc/gpucc/runtime/gpu"
	"github.com/gpucc/gpucc/runtime/gpu/tune"
)

func parseShapes(list string) ([]tune.Shape, error) {
	var out []tune.Shape
	for _, f := range strings.Split(list, ",") {
		s, err := tune.ParseShape(strings.TrimSpace(f))
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, nil
}

// tuneCmd runs the matmul tuner on the webgpu device and prints its report
// as JSON: per shape, the tiling pass's default, the best exact and fast
// candidates, and the candidates that failed their check.
func tuneCmd(o *tuneOpts, allowSW bool) int {
	shapes, err := parseShapes(o.shapes)
	if err != nil {
		return fail(ir.Errorf(ir.CodeUsage, -1, "tune-shapes", "%v", err))
	}
	// The table is the file --tune-table names, or the cache directory's
	// sealed one, which the webgpu backend reads.
	path := o.table
	load, save := func() (*tune.Table, error) { return tune.Load(path) }, func(t *tune.Table) error { return t.Save(path) }
	if path == "" {
		c, err := openCache("")
		if err != nil {
			return fail(err)
		}
		path = tune.PathIn(c.Dir()) // "" for a memory-only cache: nothing is saved
		load, save = func() (*tune.Table, error) { return tune.LoadCache(c) }, func(t *tune.Table) error { return t.SaveCache(c) }
	}
	tab, err := load()
	if err != nil {
		return fail(ir.Errorf(ir.CodeIO, -1, "tune-table", "%v", err))
	}
	dev, err := gpu.Open(gpu.Options{AllowSoftware: allowSW, Upload: gpu.UploadStaging})
	if err != nil {
		return fail(ir.Errorf(ir.CodeBackendUnavailable, -1, "", "%v", err))
	}
	defer dev.Close()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	progress := func(r tune.ShapeReport) { // a line per shape on stderr, for long runs
		b, _ := json.Marshal(r)
		fmt.Fprintf(os.Stderr, "%s\n", b)
	}
	reps, err := tune.Run(ctx, dev, tab, shapes, o.fast, tune.Options{Reps: o.reps, Budget: o.budget, Progress: progress})
	saved := ""
	if path != "" && len(reps) > 0 {
		if serr := save(tab); serr != nil {
			return fail(ir.Errorf(ir.CodeIO, -1, "tune-table", "%v", serr))
		}
		saved = path
	}
	if err != nil {
		return fail(ir.Errorf(ir.CodeExecutionFailed, -1, "", "tune: %v", err))
	}
	writeJSON(map[string]any{"adapter": dev.Info(), "table": saved, "shapes": reps})
	return 0
}
