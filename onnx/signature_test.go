package onnx_test

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/gpucc/gpucc/ir"
	"github.com/gpucc/gpucc/onnx"
)

// TestReadSignature: a model's inputs (without its initializers, which
// IR version < 4 lists as inputs too) and outputs, dynamic dimensions as
// -1 with their dim_param, and a malformed or oversized model refused
// with Load's codes.
func TestReadSignature(t *testing.T) {
	legacy := model(13, graph(
		[]msg{node("Add", "add", []string{"x", "c"}, []string{"y"})},
		[]msg{floats("c", []int64{2}, 1, 2)},
		[]msg{valueInfo("x", 2), valueInfo("c", 2)},
		[]msg{valueInfo("y", 2)},
	))
	digits, err := os.ReadFile(filepath.Join("testdata", "models", "digits.onnx"))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name  string
		model []byte
		want  *onnx.Signature
	}{
		{"dynamic batch", mlpModel(), &onnx.Signature{
			Inputs:  []onnx.Port{{Name: "x", Type: "float32", Shape: []int{-1, 3}, DimParams: []string{"N", ""}}},
			Outputs: []onnx.Port{{Name: "y", Type: "float32", Shape: []int{-1, 2}, DimParams: []string{"N", ""}}},
		}},
		{"initializer listed as input", legacy, &onnx.Signature{
			Inputs:  []onnx.Port{{Name: "x", Type: "float32", Shape: []int{2}, DimParams: []string{""}}},
			Outputs: []onnx.Port{{Name: "y", Type: "float32", Shape: []int{2}, DimParams: []string{""}}},
		}},
		{"exported digits", digits, &onnx.Signature{
			Inputs:  []onnx.Port{{Name: "x", Type: "float32", Shape: []int{32, 64}, DimParams: []string{"", ""}}},
			Outputs: []onnx.Port{{Name: "y", Type: "float32", Shape: []int{32, 10}, DimParams: []string{"", ""}}},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := onnx.ReadSignature(bytes.NewReader(tt.model), ir.Limits{})
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("signature (-want +got):\n%s", diff)
			}
		})
	}
	for _, tt := range []struct {
		name  string
		model []byte
		l     ir.Limits
		code  ir.Code
	}{
		{"truncated", mlpModel()[:20], ir.Limits{}, ir.CodeInvalidGraph},
		{"no graph", model(13, nil)[:0], ir.Limits{}, ir.CodeInvalidGraph},
		{"over the byte limit", mlpModel(), ir.Limits{MaxGraphBytes: 64}, ir.CodeLimitExceeded},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := onnx.ReadSignature(bytes.NewReader(tt.model), tt.l)
			var ie *ir.Error
			if !errors.As(err, &ie) || ie.Code != tt.code {
				t.Errorf("ReadSignature = %v, want code %s", err, tt.code)
			}
		})
	}
}
