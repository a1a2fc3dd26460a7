//go:build !js

package gpu

import (
	"fmt"
	"strings"
	"testing"
)

// TestGrantsAdapterStorage: the device is granted its adapter's workgroup
// storage (lavapipe: 32768 bytes), where asking for the maximum of
// wgpu.DefaultLimits' "undefined" and the adapter's asked for WebGPU's
// default 16384.
func TestGrantsAdapterStorage(t *testing.T) {
	d, err := Open(Options{AllowSoftware: true})
	if err != nil {
		t.Skip(err)
	}
	defer d.Close()
	have := d.adapter.GetLimits().Limits.MaxComputeWorkgroupStorageSize
	got := d.Info().Limits.MaxComputeWorkgroupStorageSize
	t.Logf("%s: adapter %d bytes, device %d", d.Info().Name, have, got)
	if got != max(have, 16384) {
		t.Errorf("device granted %d bytes of workgroup storage, the adapter has %d", got, have)
	}
}

// TestWorkgroupArrays: every workgroup array the device's granted storage
// admits compiles and runs, alone and beside others: one array of vec4,
// of f32 and of vec4 rows, at 16 KiB, 32 KiB, 32 KiB and one element, and
// the whole grant; and the online attention tile online16x16b4w's three
// arrays at d 64 (34816 + 8192 + 4096 bytes). That tile failed to compile
// on the H100's driver on 2026-12-05 ("error C1058: too much data in
// initialization": wgpu zero-fills workgroup memory), where the two-row
// layouts of the same size compiled; each layout's verdict is logged, so a
// visit shows where the driver's limit lies. Each thread writes its
// elements, and after a barrier reads a neighbour's: the values read back
// are checked.
func TestWorkgroupArrays(t *testing.T) {
	d := openDevice(t)
	grant := int(d.Info().Limits.MaxComputeWorkgroupStorageSize)
	type array struct {
		elem string // vec4<f32> or f32
		n    int    // elements (rows of 17 vec4 where rows)
		rows bool
	}
	bytes := func(a array) int {
		if a.rows {
			return 16 * 17 * a.n
		}
		return map[string]int{"f32": 4, "vec4<f32>": 16}[a.elem] * a.n
	}
	var layouts [][]array
	seen := map[int]bool{}
	for _, size := range []int{16384, 32768, 32768 + 16, grant} {
		if size > grant || seen[size] {
			continue
		}
		seen[size] = true
		layouts = append(layouts, []array{{"vec4<f32>", size / 16, false}}, []array{{"f32", size / 4, false}})
		if size/(16*17) > 0 {
			layouts = append(layouts, []array{{"vec4<f32>", size / (16 * 17), true}})
		}
	}
	if b4w := []array{{"vec4<f32>", 2176, false}, {"f32", 2048, false}, {"f32", 1024, false}}; 34816+8192+4096 <= grant {
		layouts = append(layouts, b4w)
	}
	var failed []string
	for _, l := range layouts {
		var decl, write, read strings.Builder
		total := 0
		for i, a := range l {
			total += bytes(a)
			typ := fmt.Sprintf("array<%s, %d>", a.elem, a.n)
			if a.rows {
				typ = fmt.Sprintf("array<array<%s, 17>, %d>", a.elem, a.n)
			}
			fmt.Fprintf(&decl, "var<workgroup> w%d: %s;\n", i, typ)
			n := a.n
			at := func(e string) string { return fmt.Sprintf("w%d[%s]", i, e) }
			if a.rows {
				n = 17 * a.n
				at = func(e string) string { return fmt.Sprintf("w%d[(%s) / 17u][(%s) %% 17u]", i, e, e) }
			}
			val, get := "f32(e)", ""
			if a.elem == "vec4<f32>" {
				val, get = "vec4<f32>(f32(e))", ".w"
			}
			fmt.Fprintf(&write, "\tfor (var e = t; e < %du; e += 256u) { %s = %s; }\n", n, at("e"), val)
			fmt.Fprintf(&read, "\tsum += %s%s;\n", at(fmt.Sprintf("(t * 7u + 3u) %% %du", n)), get)
		}
		name := fmt.Sprintf("%d-bytes", total)
		for _, a := range l {
			name += fmt.Sprintf("/%s[%d]", a.elem, a.n)
			if a.rows {
				name += "x17"
			}
		}
		src := fmt.Sprintf(`@group(0) @binding(0) var<storage, read_write> dst: array<f32>;
%s
@compute @workgroup_size(256)
fn main(@builtin(local_invocation_index) t: u32) {
%s	workgroupBarrier();
	var sum = 0.0;
%s	dst[t] = sum;
}
`, decl.String(), write.String(), read.String())
		p, err := d.Compile(src, "main", []BindingKind{Storage})
		if err != nil {
			t.Logf("%s: does not compile: %v", name, err)
			failed = append(failed, name)
			continue
		}
		out := mustBuffer(t, d, 4*256, "dst")
		if err := d.Run([]Dispatch{{Pipeline: p, Buffers: []*Buffer{out}, Groups: [3]uint32{1, 1, 1}}}); err != nil {
			t.Fatal(err)
		}
		got := make([]float32, 256)
		if err := d.Read(out, got); err != nil {
			t.Fatal(err)
		}
		out.Release()
		p.Release()
		for tid := range 256 {
			want := float32(0)
			for _, a := range l {
				n := a.n
				if a.rows {
					n = 17 * a.n
				}
				want += float32((tid*7 + 3) % n)
			}
			if got[tid] != want {
				t.Fatalf("%s: thread %d read %v, want %v", name, tid, got[tid], want)
			}
		}
		t.Logf("%s: compiles and runs", name)
	}
	if len(failed) > 0 {
		t.Errorf("%s (granted %d bytes of workgroup storage): %d layouts within the grant do not compile: %v", d.Info().Name, grant, len(failed), failed)
	}
}
