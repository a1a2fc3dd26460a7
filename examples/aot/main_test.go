package main

import (
	"os"
	"testing"

	"example.com/aot/mlp"
)

// TestGenerated fails when mlp.json was edited without go generate.
func TestGenerated(t *testing.T) {
	doc, err := os.ReadFile("mlp.json")
	if err != nil {
		t.Fatal(err)
	}
	if err := mlp.CheckGraph(doc); err != nil {
		t.Fatal(err)
	}
}
