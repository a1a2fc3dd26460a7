package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestStep: a step past GPUCC_PROGRESS_AFTER says so while it runs and
// when it ends (done or failed); a quicker one prints nothing, and
// without a progress writer nothing is printed at all.
func TestStep(t *testing.T) {
	t.Setenv(progressEnv, "30ms")
	var buf bytes.Buffer
	progress = &buf
	defer func() { progress = nil }()
	slow := func() error { time.Sleep(150 * time.Millisecond); return nil }
	if err := step("compiling a fake model for native", slow); err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`^gpucc: compiling a fake model for native: 0\.\d s so far\ngpucc: compiling a fake model for native: done in 0\.\d s\n$`).MatchString(buf.String()) {
		t.Errorf("a 150 ms step past 30 ms printed %q", buf.String())
	}
	buf.Reset()
	if err := step("fails", func() error { time.Sleep(100 * time.Millisecond); return errors.New("x") }); err == nil || !strings.Contains(buf.String(), "fails: failed in") {
		t.Errorf("a failing slow step: %v, printed %q", err, buf.String())
	}
	buf.Reset()
	if err := step("quick", func() error { return nil }); err != nil || buf.Len() != 0 {
		t.Errorf("a quick step printed %q", buf.String())
	}
	progress = nil
	if err := step("silent", slow); err != nil {
		t.Fatal(err)
	}
}

// TestRunProgress: gpucc run --verbose prints the compile's progress lines
// on stderr once it passes GPUCC_PROGRESS_AFTER (a real compile: the
// native or wasm backend's C compiler with no cache), never on stdout,
// and not without --verbose; the result's timings still count the
// start-up and the compile.
func TestRunProgress(t *testing.T) {
	for _, backend := range []string{"native", "wasm"} {
		t.Run(backend, func(t *testing.T) {
			run := func(args ...string) (string, string, error) {
				cmd := exec.Command(binary, append([]string{"run", "--backend", backend, "--cache-dir", "off"}, args...)...)
				cmd.Dir = workDir
				cmd.Env = env(progressEnv + "=1ms")
				var o, e bytes.Buffer
				cmd.Stdout, cmd.Stderr = &o, &e
				err := cmd.Run()
				return o.String(), e.String(), err
			}
			out, stderr, err := run("--verbose", example("mlp.json"))
			if err != nil {
				if strings.Contains(out, "backend_unavailable") && os.Getenv("GPUCC_REQUIRE_"+strings.ToUpper(backend)) == "" {
					t.Skipf("%s is not available here", backend)
				}
				t.Fatalf("%v: %s %s", err, out, stderr)
			}
			if !strings.Contains(stderr, "gpucc: compiling mlp.json (") || !strings.Contains(stderr, "for "+backend+": done in ") {
				t.Errorf("stderr has no progress line of the compile:\n%s", stderr)
			}
			if strings.Contains(out, "so far") || !strings.HasPrefix(out, "{") {
				t.Errorf("stdout is not the result alone: %s", out)
			}
			if !regexp.MustCompile(`"compileMs":[1-9]`).MatchString(out) || !strings.Contains(out, `"startupMs":`) {
				t.Errorf("the result's timings lack the compile or the start-up: %s", out)
			}
			if _, quiet, _ := run(example("mlp.json")); strings.Contains(quiet, "gpucc: compiling") {
				t.Errorf("progress without --verbose:\n%s", quiet)
			}
		})
	}
}
