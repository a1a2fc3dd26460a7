package passes

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/gpucc/gpucc/ir"
)

func TestLookupProfile(t *testing.T) {
	p, err := LookupProfile("")
	if err != nil || p.Name != "webgpu-default" {
		t.Fatalf("default profile: %+v, %v", p, err)
	}
	if _, err := LookupProfile("h200"); err == nil || !strings.Contains(err.Error(), "have webgpu-default") {
		t.Errorf("unknown profile: %v", err)
	}
	want := Options{Limits: ir.DefaultLimits(), MaxBindings: 8, MaxInvocations: 256, MaxWorkgroupStorage: 16384, SplitSums: true}
	if diff := cmp.Diff(want, p.Options(ir.DefaultLimits()), cmp.FilterPath(func(p cmp.Path) bool { return p.String() == "Dump" }, cmp.Ignore())); diff != "" {
		t.Errorf("Options (-want +got):\n%s", diff)
	}
}

// TestProfileCheck: a device meets a profile when every limit is at least
// the profile's (0 is unbounded); each shortfall is named, at the boundary.
func TestProfileCheck(t *testing.T) {
	p := WebGPUDefault
	tests := []struct {
		name   string
		device func(*Profile)
		short  []string
	}{
		{"equal", func(*Profile) {}, nil},
		{"unbounded", func(d *Profile) { *d = Profile{Name: "wasm"} }, nil},
		{"larger", func(d *Profile) { d.MaxInvocations, d.MaxBindingSize = 1024, 1<<40 }, nil},
		{"one binding short", func(d *Profile) { d.MaxStorageBuffers = 7 }, []string{"maxStorageBuffersPerShaderStage 7 < 8"}},
		{"two short", func(d *Profile) { d.MaxWorkgroupStorage, d.MaxWorkgroupSize[2] = 16383, 32 },
			[]string{"maxComputeWorkgroupSizeZ 32 < 64", "maxComputeWorkgroupStorageSize 16383 < 16384"}},
		{"binding size", func(d *Profile) { d.MaxBindingSize = 128<<20 - 4 }, []string{"maxStorageBufferBindingSize 134217724 < 134217728"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := p
			d.Name = "dev"
			tt.device(&d)
			err := p.Check(d)
			if tt.short == nil {
				if err != nil {
					t.Errorf("refused: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatal("accepted")
			}
			if e, ok := err.(*ir.Error); !ok || e.Code != ir.CodeBackendUnavailable {
				t.Errorf("error %v, want backend_unavailable", err)
			}
			for _, s := range tt.short {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("%v does not name %q", err, s)
				}
			}
		})
	}
}

// TestProfileFits: a buffer of exactly the binding size fits; one element
// more is limit_exceeded, naming the node.
func TestProfileFits(t *testing.T) {
	p := Profile{Name: "small", MaxBindingSize: 64, MaxBufferSize: 128}
	prog := &ir.Program{Buffers: []ir.Buffer{{Len: 16, Shape: ir.Shape{16}, Node: 3}}}
	if err := p.Fits(prog); err != nil {
		t.Errorf("64 bytes refused: %v", err)
	}
	prog.Buffers = append(prog.Buffers, ir.Buffer{Len: 17, Shape: ir.Shape{17}, Node: 5})
	err := p.Fits(prog)
	if e, ok := err.(*ir.Error); !ok || e.Code != ir.CodeLimitExceeded || e.Node != 5 || !strings.Contains(err.Error(), "68 bytes; profile small binds at most 64") {
		t.Errorf("68 bytes: %v", err)
	}
}
