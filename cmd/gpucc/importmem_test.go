package main

import (
	"flag"
	"os"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"sync"
	"testing"
	"time"

	"github.com/gpucc/gpucc/internal/visionnet"
)

// TestImportHoldsModelOnce reads ResNet-18 (46.7 MB, internal/visionnet)
// from a file as gpucc run reads an .onnx model, its limits sized to it,
// and bounds what the read and the import allocate (runtime.MemStats'
// TotalAlloc, which bounds the peak): the file's bytes once, the weights
// once as float32, and 5% of the model for the rest. Each reader (the
// sizing's signature, --const's, the import) decoding a copy of the bytes
// allocated 4.02× the model (2026-12-05).
func TestImportHoldsModelOnce(t *testing.T) {
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
	stop, peak := heapPeak()
	g, err := readGraph(path, *limits)
	runtime.ReadMemStats(&after)
	held := peak() - int64(before.HeapAlloc)
	stop()
	if err != nil {
		t.Fatal(err)
	}
	runtime.KeepAlive(g)
	alloc := after.TotalAlloc - before.TotalAlloc
	t.Logf("a %d-byte model: read and import allocated %d bytes (%.2f×); the heap's objects peaked %d bytes above the start (%.2f×, sampled)",
		size, alloc, float64(alloc)/float64(size), held, float64(held)/float64(size))
	if alloc > 2*size+size/20 {
		t.Errorf("reading and importing a %d-byte model allocated %d bytes (%.2f×); want at most 2.05×: its bytes once, its weights once", size, alloc, float64(alloc)/float64(size))
	}
}

// heapPeak samples the heap's object bytes (live and not yet swept) every
// 100 µs until stop, and peak returns the largest seen.
func heapPeak() (stop func(), peak func() int64) {
	var mu sync.Mutex
	var max int64
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
		for {
			metrics.Read(s)
			mu.Lock()
			if v := int64(s[0].Value.Uint64()); v > max {
				max = v
			}
			mu.Unlock()
			select {
			case <-done:
				return
			case <-time.After(100 * time.Microsecond):
			}
		}
	}()
	return func() { close(done); wg.Wait() }, func() int64 { mu.Lock(); defer mu.Unlock(); return max }
}
