package main

import (
	"testing"

	"github.com/google/go-cmp/cmp"
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
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, v, code := gpucc(t, "", append([]string{"train", "--backend", "cpu"}, tt.args...)...)
			if code == 0 || errorCode(v) != tt.code {
				t.Errorf("exit %d, %v; want error code %s", code, v, tt.code)
			}
		})
	}
}
