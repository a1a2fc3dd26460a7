package main

import (
	"os"
	"path/filepath"
	"testing"
)

func TestBenchCLI(t *testing.T) {
	dir := t.TempDir()
	_, v, code := gpucc(t, "", "bench", "--quick", "--backends", "cpu", "-o", dir)
	if code != 0 {
		t.Fatalf("exit %d: %v", code, v)
	}
	if n, _ := v["cases"].(float64); n == 0 {
		t.Errorf("no cases: %v", v)
	}
	if _, ok := v["wall_s"].(float64); !ok {
		t.Errorf("wall_s = %#v, want a number like results.json's", v["wall_s"])
	}
	for _, f := range []string{"results.json", "results.md", "report.html"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Error(err)
		}
	}
}

// TestBenchCLIErrors: a bench that cannot measure anything fails with one
// JSON error object, before writing a report.
func TestBenchCLIErrors(t *testing.T) {
	tests := []struct {
		name string
		args []string
		code string
	}{
		{"unknown backend", []string{"--backends", "cpu,nope"}, "usage"},
		{"nothing measured", []string{"--backends", "cpu", "--budget", "1ns"}, "internal"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "out")
			_, v, code := gpucc(t, "", append([]string{"bench", "--quick", "-o", dir}, tt.args...)...)
			if code == 0 || errorCode(v) != tt.code {
				t.Errorf("exit %d, %v; want error code %s", code, v, tt.code)
			}
			if _, err := os.Stat(dir); err == nil {
				t.Errorf("a failed bench wrote %s", dir)
			}
		})
	}
}
