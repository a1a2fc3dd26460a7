package wgsl_test

import (
	"regexp"
	"strconv"
	"testing"

	"github.com/gpucc/gpucc/codegen/wgsl"
	"github.com/gpucc/gpucc/ir/irtest"
	"github.com/gpucc/gpucc/passes"
)

// workgroupVar is a workgroup variable's declaration: an array of 4-byte
// elements and its length, or one 4-byte scalar or atomic.
var workgroupVar = regexp.MustCompile(`var<workgroup> \w+: (?:array<(?:f32|u32|i32), (\d+)>|f32|u32|i32|atomic<u32>);`)

// TestWorkgroupStorage: no kernel of the composites and the row suites
// declares more workgroup storage than the 16384 bytes WebGPU guarantees,
// counting each variable rounded up to 16 bytes as Tint lays them out,
// with wgsl.RowVec4 (contiguous runs: no leaf in workgroup memory) and
// without.
// gelu over a 4096-leaf row declared 16400 (its 4096 leaves and the
// root's hand-over) and Chromium refused the kernel.
func TestWorkgroupStorage(t *testing.T) {
	cases := append(irtest.Composites(), irtest.Rows()...)
	defer func(v bool) { wgsl.RowVec4 = v }(wgsl.RowVec4)
	for _, vec4 := range []bool{false, true} {
		wgsl.RowVec4 = vec4
		workgroupStorage(t, cases)
	}
}

// workgroupStorage is TestWorkgroupStorage over cases under the knobs as
// they are.
func workgroupStorage(t *testing.T, cases []irtest.Case) {
	t.Helper()
	vec4 := wgsl.RowVec4
	for _, c := range cases {
		sp, _, err := passes.Compile(c.Graph, passes.Options{MaxInvocations: 256, MaxWorkgroupStorage: 16384})
		if err != nil {
			t.Fatalf("%s: %v", c.Name, err)
		}
		shaders, err := wgsl.Target{}.Emit(sp)
		if err != nil {
			t.Fatalf("%s: %v", c.Name, err)
		}
		for _, sh := range shaders {
			bytes := 0
			for _, m := range workgroupVar.FindAllStringSubmatch(sh.Source, -1) {
				n := 1
				if m[1] != "" {
					n, _ = strconv.Atoi(m[1])
				}
				bytes += (4*n + 15) / 16 * 16
			}
			if bytes > 16384 {
				t.Errorf("%s (RowVec4 %t): kernel %s declares %d bytes of workgroup storage, over WebGPU's 16384", c.Name, vec4, sh.Name, bytes)
			}
		}
	}
}
