package main

import (
	"flag"
	"time"
)

// tuneOpts are bench's --tune flags.
type tuneOpts struct {
	tune   bool
	fast   bool
	shapes string
	budget time.Duration
	reps   int
	table  string
}

func tuneFlags(fs *flag.FlagSet) *tuneOpts {
	o := &tuneOpts{}
	fs.BoolVar(&o.tune, "tune", false, "tune the webgpu matmul for this device instead of benchmarking; the winners go to the tuning table (see --tune-table)")
	fs.BoolVar(&o.fast, "fast", false, "with --tune: also tune fast mode (contracted multiply-add, inexact, error bound measured against float64)")
	fs.StringVar(&o.shapes, "tune-shapes", "256,1024,4096,4096x64x4096,64x4096x64,1x4096x4096,1000x1000x1000", "with --tune: shapes, N (N³) or MxKxN[ta][tb] (ta, tb: A, B read through a transpose), comma-separated")
	fs.DurationVar(&o.budget, "tune-budget", 0, "with --tune: time per shape and mode (0: every candidate)")
	fs.IntVar(&o.reps, "tune-reps", 5, "with --tune: timed runs per candidate")
	fs.StringVar(&o.table, "tune-table", "", "with --tune: the table file (default: tune/matmul.json under the cache directory)")
	return o
}
