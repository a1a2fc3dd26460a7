package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/gpucc/gpucc/aot"
	"github.com/gpucc/gpucc/bench"
)

var fixture = example("../testdata/fixtures/mlp_train_public.graph.json")

func TestTrainCLI(t *testing.T) {
	_, v, code := gpucc(t, "", "train", "--backend", "cpu", "--steps", "3", "--lr", "0.1", fixture)
	if code != 0 {
		t.Fatalf("exit %d: %v", code, v)
	}
	losses, _ := v["losses"].([]any)
	params, _ := v["params"].(map[string]any)
	if len(losses) != 3 || len(params) != 4 || v["backend"] != "cpu" {
		t.Fatalf("want 3 losses, 4 params on cpu; got %v", v)
	}
	w1, _ := params["w1"].(map[string]any)
	if diff := cmp.Diff([]any{4.0, 16.0}, w1["shape"]); diff != "" {
		t.Errorf("w1 shape (-want +got):\n%s", diff)
	}
	if _, ok := v["fallbackAttempts"]; !ok {
		t.Error("no fallbackAttempts")
	}
	// Parameters and batch stay on the device: after the first step, a
	// step uploads nothing and reads back only its loss.
	steps, _ := v["perStep"].([]any)
	if len(steps) != 3 {
		t.Fatalf("perStep = %v, want 3 steps", v["perStep"])
	}
	for i, s := range steps {
		m, _ := s.(map[string]any)
		up, rb := m["uploadBytes"], m["readbackBytes"]
		if m["loss"] != losses[i] || rb != 4.0 || (i > 0) != (up == 0.0) {
			t.Errorf("step %d: %v; want its loss, readbackBytes 4 and uploadBytes 0 after step 1", i+1, m)
		}
	}
}

func TestTrainCLIErrors(t *testing.T) {
	tests := []struct {
		name string
		args []string
		code string
	}{
		{"no lr", []string{"--steps", "1", fixture}, "usage"},
		{"no steps", []string{"--lr", "0.1", fixture}, "usage"},
		{"NaN lr", []string{"--steps", "1", "--lr", "NaN", fixture}, "usage"},
		{"two graphs", []string{"--steps", "1", "--lr", "0.1", fixture, fixture}, "usage"},
		{"unknown loss", []string{"--steps", "1", "--lr", "0.1", "--loss", "nope", fixture}, "invalid_graph"},
		{"loss not scalar", []string{"--steps", "1", "--lr", "0.1", "--loss", "prediction", fixture}, "invalid_graph"},
		{"zero lr", []string{"--steps", "1", "--lr", "0", fixture}, "usage"},
		{"negative lr", []string{"--steps", "1", "--lr", "-1", fixture}, "usage"},
		{"lr below float32", []string{"--steps", "1", "--lr", "1e-50", fixture}, "usage"},
		{"too many steps", []string{"--steps", "1000000000", "--lr", "0.1", fixture}, "usage"},
		{"negative timeout", []string{"--steps", "1", "--lr", "0.1", "--timeout", "-1s", fixture}, "usage"},
		{"no parameters", []string{"--steps", "1", "--lr", "0.1", "-"}, "invalid_graph"},
		{"diverges", []string{"--steps", "3", "--lr", "3e38", fixture}, "non_finite_output"},
		{"explain without lr", []string{"--explain", fixture}, "usage"},
		{"explain for no profile", []string{"--explain", "--lr", "0.1", "--profile", "nope", fixture}, "usage"},
		{"explain, unknown loss", []string{"--explain", "--lr", "0.1", "--loss", "nope", fixture}, "invalid_graph"},
		{"explain, no parameters", []string{"--explain", "--lr", "0.1", "-"}, "invalid_graph"},
		{"profile without explain", []string{"--steps", "1", "--lr", "0.1", "--profile", "webgpu-default", fixture}, "usage"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			stdin := strings.Replace(scalarParamGraph, `"param":true,`, "", 1) // for "-": no parameter
			_, v, code := gpucc(t, stdin, append([]string{"train", "--backend", "cpu"}, tt.args...)...)
			if code == 0 || errorCode(v) != tt.code {
				t.Errorf("exit %d, %v; want error code %s", code, v, tt.code)
			}
		})
	}
}

// TestTrainInterrupted: a long train stops on SIGINT (it once ran, printing
// nothing, until killed) or at --timeout, prints the result of the steps
// done, valid under the schema, with "interrupted": true, and exits 130.
// --progress prints each step as it ends.
func TestTrainInterrupted(t *testing.T) {
	args := []string{"train", "--backend", "cpu", "--steps", "1000000", "--lr", "0.01", "--progress", fixture}
	check := func(t *testing.T, stdout []byte, err error) {
		t.Helper()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != exitInterrupted {
			t.Fatalf("exit: %v, want status %d\n%s", err, exitInterrupted, stdout)
		}
		if errs := resultSchema(t, "#/$defs/train").Validate(stdout); len(errs) > 0 {
			t.Errorf("%s\n%s", strings.Join(errs, "; "), stdout)
		}
		var v struct {
			Steps       int
			Losses      []float32
			Interrupted bool
		}
		if err := json.Unmarshal(stdout, &v); err != nil {
			t.Fatal(err)
		}
		if !v.Interrupted || v.Steps < 1 || v.Steps >= 1000000 || len(v.Losses) != v.Steps {
			t.Errorf("interrupted %v after %d steps with %d losses", v.Interrupted, v.Steps, len(v.Losses))
		}
	}
	t.Run("SIGINT", func(t *testing.T) {
		cmd := exec.Command(binary, args...)
		cmd.Dir, cmd.Env = workDir, env()
		var stdout bytes.Buffer
		cmd.Stdout = &stdout
		stderr, err := cmd.StderrPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		lines := bufio.NewScanner(stderr)
		if !lines.Scan() || !strings.HasPrefix(lines.Text(), `{"step":1,`) {
			cmd.Process.Kill()
			t.Fatalf("first stderr line %q, want step 1's progress", lines.Text())
		}
		cmd.Process.Signal(syscall.SIGINT)
		go func() {
			for lines.Scan() {
			}
		}()
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case err := <-done:
			check(t, stdout.Bytes(), err)
		case <-time.After(time.Minute):
			cmd.Process.Kill()
			t.Fatal("train has not stopped a minute after SIGINT")
		}
	})
	t.Run("timeout", func(t *testing.T) {
		cmd := exec.Command(binary, append([]string{"train", "--timeout", "2s"}, args[1:]...)...)
		cmd.Dir, cmd.Env = workDir, env()
		var stdout bytes.Buffer
		cmd.Stdout = &stdout
		start := time.Now()
		err := cmd.Run()
		check(t, stdout.Bytes(), err)
		if d := time.Since(start); d > time.Minute {
			t.Errorf("--timeout 2s took %v", d)
		}
	})
}

// TestTrainExplain compares the --explain plans of SGD steps, each
// kernel with its flops and bytes, with the golden files in
// testdata/train (-update rewrites them): the fixture's MLP through the
// command line, and the benchmark's MLP step (BenchmarkMLPTrainStep at
// the device visit's size, batch 4096, 1024→1024→1024→16), whose kernel
// count and costs issue 21 tracks.
func TestTrainExplain(t *testing.T) {
	cases := []struct {
		name string
		plan func(t *testing.T) string
	}{
		{"fixture", func(t *testing.T) string {
			out, v, code := gpucc(t, "", "train", "--explain", "--lr", "0.1", fixture)
			if code != 0 {
				t.Fatalf("exit %d: %s %v", code, out, v)
			}
			return out
		}},
		{"mlp4096", func(t *testing.T) string {
			out, err := stepPlan(bench.MLP(4096, 1024, 1024, 16), "loss", 0.01, aot.DefaultProfile, bench.Limits())
			if err != nil {
				t.Fatal(err)
			}
			return out
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out := c.plan(t)
			golden := filepath.Join("testdata", "train", c.name+".explain")
			if *update {
				if err := os.MkdirAll(filepath.Dir(golden), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(golden, []byte(out), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run with -update to create it)", err)
			}
			if diff := cmp.Diff(string(want), out); diff != "" {
				t.Errorf("--explain differs from %s (-want +got):\n%s", golden, diff)
			}
		})
	}
}
