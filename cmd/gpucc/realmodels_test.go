package main

import (
	"maps"
	"os"
	"slices"
	"testing"

	"github.com/gpucc/gpucc/internal/testmodels"
)

// TestRealModelsCLI runs every model of internal/testmodels (the 20
// pretrained models npm packages ship) with gpucc run as a user would: no
// limit flag (the limits are sized to the model), dynamic dimensions bound
// by --input-shape, Silero's sample rate fixed by --const sr=16000, and
// PaddleOCR at issue 34's sizes (a 640×640 page, a 48×640 line). Each
// must print its outputs (onnx's TestRealModels checks their values
// against ONNX Runtime and across backends).
func TestRealModelsCLI(t *testing.T) {
	args := map[string][]string{
		"silero_vad_v5":          {"--input-shape", "input=1,512", "--input-shape", "state=2,1,128", "--const", "sr=16000"},
		"silero_vad_v6":          {"--input-shape", "input=1,512", "--input-shape", "state=2,1,128", "--const", "sr=16000"},
		"silero_vad_legacy":      {"--input-shape", "input=1,512", "--input-shape", "h=2,1,64", "--input-shape", "c=2,1,64", "--const", "sr=16000"},
		"silero_vad_16k_op15":    {"--input-shape", "input=1,512", "--input-shape", "state=2,1,128", "--const", "sr=16000"},
		"silero_vad_half":        {"--input-shape", "input=1,512", "--input-shape", "state=2,1,128"},
		"silero_vad_op18_ifless": {"--input-shape", "input=1,512", "--input-shape", "state=2,1,128", "--const", "sr=16000"},
		"melspectrogram":         {"--input-shape", "input=1,1760"},
		"embedding_model":        {"--input-shape", "input_1=1,76,32,1"},
		"ppocr_v2_cls":           {"--input-shape", "x=1,3,48,192"},
		"ppocr_v4_rec":           {"--input-shape", "x=1,3,48,640"},
		"ppocr_v4_det":           {"--input-shape", "x=1,3,640,640"},
	}
	for _, m := range testmodels.Models {
		t.Run(m.Name, func(t *testing.T) {
			path := testmodels.Path(t, m.Name)
			a := append(append([]string{"run", "--backend", "native"}, args[m.Name]...), path)
			_, v, code := gpucc(t, "", a...)
			if code != 0 {
				if errorCode(v) == "backend_unavailable" && os.Getenv("GPUCC_REQUIRE_NATIVE") == "" {
					t.Skip("native is unavailable here")
				}
				t.Fatalf("gpucc %v: exit %d, %v", a, code, v)
			}
			outs, _ := v["outputs"].(map[string]any)
			if len(outs) == 0 {
				t.Fatalf("gpucc %v printed no outputs: %v", a, v)
			}
			t.Logf("outputs %v", slices.Sorted(maps.Keys(outs)))
		})
	}
}
