package onnx_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/gpucc/gpucc"
	"github.com/gpucc/gpucc/onnx"
)

// TestCrafted loads the crafted models of testdata/crafted (make.py
// writes them; an outside attack on 2026-12-04 found each a crash, a
// hang or a memory blow-up of the importer) with the default limits: each
// imports or is refused with the code expect.json gives, allocating at
// most 64 MiB and within 5 s.
func TestCrafted(t *testing.T) {
	b, err := os.ReadFile("testdata/crafted/expect.json")
	if err != nil {
		t.Fatal(err)
	}
	var want map[string]string
	if err := json.Unmarshal(b, &want); err != nil {
		t.Fatal(err)
	}
	files, _ := filepath.Glob("testdata/crafted/*.onnx")
	if len(files) != len(want) {
		t.Errorf("%d models, %d expectations", len(files), len(want))
	}
	for name, code := range want {
		t.Run(name, func(t *testing.T) {
			f, err := os.Open(filepath.Join("testdata/crafted", name))
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			start := time.Now()
			got := func() (code string) {
				defer func() {
					if r := recover(); r != nil {
						code = fmt.Sprintf("panic: %v", r)
					}
				}()
				if _, err := onnx.Load(f, onnx.Options{}); err != nil {
					t.Logf("%v", err)
					return string(gpucc.CodeOf(err))
				}
				return "ok"
			}()
			runtime.ReadMemStats(&after)
			if got != code {
				t.Errorf("Load: %s, want %s", got, code)
			}
			if d := after.TotalAlloc - before.TotalAlloc; d > 64<<20 {
				t.Errorf("Load allocated %d MiB", d>>20)
			}
			if d := time.Since(start); d > 5*time.Second {
				t.Errorf("Load took %v", d)
			}
		})
	}
}
