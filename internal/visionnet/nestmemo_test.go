package visionnet_test

import (
	"bytes"
	"reflect"
	"runtime"
	"sync"
	"testing"

	"github.com/gpucc/gpucc"
	"github.com/gpucc/gpucc/codegen"
	"github.com/gpucc/gpucc/codegen/wgsl"
	"github.com/gpucc/gpucc/internal/visionnet"
	"github.com/gpucc/gpucc/ir"
	"github.com/gpucc/gpucc/onnx"
	"github.com/gpucc/gpucc/passes"
)

// TestMemoNests: while a generator holds ViT-Tiny's sealed program
// (codegen.MemoNests), each kernel's nest is built once, every NestOf of
// it returns that one nest, from any goroutine, equal to a fresh build; a
// second holder of the same kernels (two generations of one program at
// once) gets the same nest; after release, NestOf builds afresh (the memo
// keeps nothing).
func TestMemoNests(t *testing.T) {
	lim := limits
	lim.NonFinite = true
	g, err := onnx.Load(bytes.NewReader(visionnet.ViTTiny()), onnx.Options{Limits: lim})
	if err != nil {
		t.Fatal(err)
	}
	plan, err := gpucc.Seal(g, lim, passes.WebGPUDefault, passes.Options{})
	if err != nil {
		t.Fatal(err)
	}
	sp, err := plan.Sealed()
	if err != nil {
		t.Fatal(err)
	}
	ks := sp.Program().Kernels
	var nested []*ir.Kernel
	attention := 0
	for i := range ks {
		if codegen.HasNest(ks[i].Kind) {
			nested = append(nested, &ks[i])
			if ks[i].Kind == ir.KernelAttention {
				attention++
			}
		}
	}
	if attention == 0 {
		t.Fatal("ViT-Tiny sealed without an attention kernel")
	}
	fresh := make([]*codegen.Nest, len(nested))
	for i, k := range nested {
		if fresh[i] = codegen.NestOf(k); codegen.NestOf(k) == fresh[i] {
			t.Fatalf("kernel %s (%v): NestOf outside MemoNests returned one nest twice", k.Name, k.Kind)
		}
	}
	release := codegen.MemoNests(ks)
	second := codegen.MemoNests(ks)
	got := make([][8]*codegen.Nest, len(nested))
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i, k := range nested {
				got[i][w] = codegen.NestOf(k)
			}
		}()
	}
	wg.Wait()
	for i, k := range nested {
		for w := range got[i] {
			if got[i][w] != got[i][0] {
				t.Fatalf("kernel %s (%v): goroutine %d got another nest than goroutine 0", k.Name, k.Kind, w)
			}
		}
		if !reflect.DeepEqual(fresh[i], got[i][0]) {
			t.Fatalf("kernel %s (%v): the held nest differs from a fresh build", k.Name, k.Kind)
		}
	}
	second()
	if codegen.NestOf(nested[0]) != got[0][0] {
		t.Error("the second holder's release dropped the first's nests")
	}
	release()
	for i, k := range nested {
		if codegen.NestOf(k) == got[i][0] {
			t.Errorf("kernel %s (%v): NestOf after release returned the held nest (the memo kept it)", k.Name, k.Kind)
		}
	}
}

// TestEmitAllocs bounds what WGSL generation allocates for ViT-Tiny, one
// kernel at a time: 27.4 MB at 43964f6, where rebuilding the attention
// nest at every Render took 94.7 (2026-12-05). The bound, 60 MB, leaves
// room for kernels that grow, and fails on a nest or an expression walked
// afresh per use again.
func TestEmitAllocs(t *testing.T) {
	lim := limits
	lim.NonFinite = true
	g, err := onnx.Load(bytes.NewReader(visionnet.ViTTiny()), onnx.Options{Limits: lim})
	if err != nil {
		t.Fatal(err)
	}
	plan, err := gpucc.Seal(g, lim, passes.WebGPUDefault, passes.Options{})
	if err != nil {
		t.Fatal(err)
	}
	sp, err := plan.Sealed()
	if err != nil {
		t.Fatal(err)
	}
	defer func(w int) { codegen.Workers = w }(codegen.Workers)
	codegen.Workers = 1
	if _, err := (wgsl.Target{}).Emit(sp); err != nil { // the expressions' plans, made once a process
		t.Fatal(err)
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	if _, err := (wgsl.Target{}).Emit(sp); err != nil {
		t.Fatal(err)
	}
	runtime.ReadMemStats(&after)
	if got := after.TotalAlloc - before.TotalAlloc; got > 60<<20 {
		t.Errorf("ViT-Tiny's WGSL Emit allocated %.1f MB, over the 60 MB bound", float64(got)/(1<<20))
	} else {
		t.Logf("ViT-Tiny's WGSL Emit allocated %.1f MB", float64(got)/(1<<20))
	}
}
