//go:build unix

package gpu

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// TestNoRuntimeDirNoise: a Go program that opens a device without
// XDG_RUNTIME_DIR prints no "XDG_RUNTIME_DIR is invalid" lines from Mesa
// on stderr (issue 36: the CLI set one, the library did not). The test
// runs itself as a child with the variable removed.
func TestNoRuntimeDirNoise(t *testing.T) {
	if os.Getenv("GPUCC_TEST_RUNDIR_CHILD") != "" {
		d, err := Open(Options{AllowSoftware: true})
		if err != nil {
			t.Skipf("no WebGPU device: %v", err)
		}
		d.Close()
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestNoRuntimeDirNoise$", "-test.v")
	cmd.Env = []string{"GPUCC_TEST_RUNDIR_CHILD=1", "TMPDIR=" + t.TempDir()}
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "XDG_RUNTIME_DIR=") && !strings.HasPrefix(kv, "TMPDIR=") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%v: %s\n%s", err, out, stderr.String())
	}
	if strings.Contains(string(out), "SKIP") {
		if os.Getenv("GPUCC_REQUIRE_WEBGPU") != "" {
			t.Fatalf("GPUCC_REQUIRE_WEBGPU is set but the child could not open a device: %s", out)
		}
		t.Skipf("no WebGPU device: %s", out)
	}
	if strings.Contains(stderr.String()+string(out), "XDG_RUNTIME_DIR") {
		t.Errorf("the child's output:\n%s\n%s", out, stderr.String())
	}
}
