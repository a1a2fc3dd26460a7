package main

import (
	"flag"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/gpucc/gpucc/internal/visionnet"
)

// TestRunReadsModelOnce: gpucc run's read of an .onnx model
// (loadWithInputs: the inputs' sizing, then the import) allocates what
// readGraph's import alone does, at most 2.05× ResNet-18's 46.7 MB: its
// bytes once, its weights once. It read the file twice, once to size the
// inputs' reads and once to import it: 3.03× (2026-12-05).
func TestRunReadsModelOnce(t *testing.T) {
	path := filepath.Join(t.TempDir(), "resnet18.onnx")
	if err := os.WriteFile(path, visionnet.ResNet18(), 0o644); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	size := uint64(fi.Size())
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	limits := limitFlags(fs) // no flag set: each limit sized to the model
	defer func() { cliLimits, cliFlags = nil, nil }()
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	g, err := loadWithInputs(path, limits)
	runtime.ReadMemStats(&after)
	if err != nil {
		t.Fatal(err)
	}
	runtime.KeepAlive(g)
	alloc := after.TotalAlloc - before.TotalAlloc
	t.Logf("a %d-byte model: gpucc run's read and import allocated %d bytes (%.2f×)", size, alloc, float64(alloc)/float64(size))
	if alloc > 2*size+size/20 {
		t.Errorf("gpucc run's read of a %d-byte model allocated %d bytes (%.2f×); want at most 2.05×: its bytes once, its weights once", size, alloc, float64(alloc)/float64(size))
	}
}
