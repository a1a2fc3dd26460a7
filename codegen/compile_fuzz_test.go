package codegen_test

import (
	"errors"
	"testing"

	"github.com/gpucc/gpucc/codegen/c"
	"github.com/gpucc/gpucc/codegen/glsl"
	"github.com/gpucc/gpucc/codegen/wgsl"
	"github.com/gpucc/gpucc/ir"
	"github.com/gpucc/gpucc/ir/irtest"
	"github.com/gpucc/gpucc/passes"
)

// compileLimits keep fuzzed graphs small enough to compile quickly.
var compileLimits = ir.Limits{MaxNodes: 64, MaxElements: 1 << 12, MaxStorageBytes: 1 << 18, MaxOps: 1 << 22, MaxGraphBytes: 1 << 16}

// compile runs the whole compile path on a document: decode and validate,
// the pass pipeline under opts, the program's own validation, and every
// code generator. Any failure after Decode accepted the graph must be a
// user error with a code (a limit, say), never a panic or an internal one.
func compile(t *testing.T, doc []byte, opts passes.Options) {
	t.Helper()
	g, err := ir.DecodeBytes(doc, compileLimits)
	if err != nil {
		checkCode(t, "decode", err)
		return
	}
	opts.Limits = compileLimits
	p, _, err := passes.Compile(g, opts)
	if err != nil {
		checkCode(t, "passes", err)
		return
	}
	if err := ir.ValidateProgram(p.Program()); err != nil {
		t.Fatalf("the pipeline made an invalid program: %v\n%s", err, g)
	}
	if _, err := (wgsl.Target{}).Emit(p); err != nil {
		checkCode(t, "wgsl", err) // a loop over the budget is a limit
	}
	if _, err := (glsl.Target{}).Emit(p); err != nil {
		checkCode(t, "glsl", err) // a texture over the profile's size is a limit
	}
	if _, err := (c.Target{}).Emit(p); err != nil {
		t.Fatalf("c: %v\n%s", err, g)
	}
}

func checkCode(t *testing.T, stage string, err error) {
	t.Helper()
	var e *ir.Error
	if !errors.As(err, &e) || e.Code == "" || e.Code == ir.CodeInternal {
		t.Fatalf("%s: error without a user code: %v", stage, err)
	}
}

// FuzzCompile is the whole compile path on arbitrary documents, under
// device-like options (bindings, workgroup limits, split sums) drawn from
// the fuzzer too.
func FuzzCompile(f *testing.F) {
	for _, c := range irtest.Suite() {
		if doc := ir.Encode(c.Graph); len(doc) < 1<<14 {
			f.Add(doc, uint8(8), true)
		}
	}
	for seed := range 32 {
		f.Add(ir.Encode(irtest.RandomViews(uint64(seed), 12)), uint8(seed), seed%2 == 0)
	}
	for seed := range 64 { // every op of the table (irtest.TestRandomOpsCoversTheTable)
		f.Add(ir.Encode(irtest.RandomOps(uint64(seed), 12)), uint8(seed+1), seed%2 == 1)
	}
	f.Fuzz(func(t *testing.T, doc []byte, bindings uint8, gpu bool) {
		opts := passes.Options{MaxBindings: 3 + int(bindings%8), NoFuse: bindings&128 != 0}
		if gpu {
			opts.MaxInvocations, opts.MaxWorkgroupStorage, opts.SplitSums = 256, 16<<10, true
		}
		compile(t, doc, opts)
	})
}
