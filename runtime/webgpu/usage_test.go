//go:build cgo && !js

package webgpu

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/gpucc/gpucc/ir"
	"github.com/gpucc/gpucc/ir/irtest"
	"github.com/gpucc/gpucc/runtime/backend"
)

// TestCompileKeepsUsage: a malformed GPUCC_FAST_PATHS or GPUCC_ATTN_TILE
// (read at start-up, so each runs in a child of this test) makes Compile
// fail with usage, the caller's error, naming the variable, where it
// said execution_failed, the device's.
func TestCompileKeepsUsage(t *testing.T) {
	if v := os.Getenv("GPUCC_TEST_USAGE_CHILD"); v != "" {
		d := openDevice(t)
		bl := ir.NewBuilder()
		bl.Output("y", bl.Input(ir.Shape{8}, irtest.Values(1, 8, 1)).Exp())
		g, err := bl.Build(ir.Limits{})
		if err != nil {
			t.Fatal(err)
		}
		_, err = d.Compile(context.Background(), program(t, g), &backend.Stats{})
		var be *backend.Error
		if !errors.As(err, &be) || be.Code != ir.CodeUsage || !strings.Contains(err.Error(), v) {
			t.Fatalf("Compile under %s: %v, want a usage error naming it", v, err)
		}
		return
	}
	for _, env := range []string{"GPUCC_FAST_PATHS=yes", "GPUCC_ATTN_TILE=16x16"} {
		t.Run(env, func(t *testing.T) {
			name, _, _ := strings.Cut(env, "=")
			cmd := exec.Command(os.Args[0], "-test.run=^TestCompileKeepsUsage$", "-test.v")
			cmd.Env = append(os.Environ(), env, "GPUCC_TEST_USAGE_CHILD="+name)
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("%v:\n%s", err, out)
			}
			if strings.Contains(string(out), "--- SKIP") {
				if os.Getenv("GPUCC_REQUIRE_WEBGPU") != "" {
					t.Fatalf("GPUCC_REQUIRE_WEBGPU is set but the child skipped:\n%s", out)
				}
				t.Skipf("no WebGPU device:\n%s", out)
			}
		})
	}
}
