package aot

import (
	"context"
	"crypto/sha256"
	"encoding/hex"

	lib "github.com/gpucc/gpucc"
	"github.com/gpucc/gpucc/codegen"
	"github.com/gpucc/gpucc/codegen/c"
	"github.com/gpucc/gpucc/codegen/glsl"
	"github.com/gpucc/gpucc/codegen/wgsl"
	"github.com/gpucc/gpucc/ir"
	"github.com/gpucc/gpucc/passes"
	"github.com/gpucc/gpucc/runtime/wasm"
)

// Manifest describes a build: where the graph came from, what it was
// compiled for and by, and every kernel and file. It holds no timings, so
// that building twice gives the same bytes. It is manifest.json.
type Manifest struct {
	Graph       string           `json:"graph"`
	GraphSHA256 string           `json:"graphSHA256"` // of the graph's canonical encoding (ir.Encode); no graph.json is written
	Profile     passes.Profile   `json:"profile"`
	Gpucc       string           `json:"gpucc"` // the gpucc version that built it
	Targets     []string         `json:"targets"`
	Kernels     []ManifestKernel `json:"kernels"`
	Outputs     []ManifestOutput `json:"outputs"`
	Files       []ManifestFile   `json:"files"`
}

// ManifestKernel is one kernel of the program, as its WGSL runs it.
type ManifestKernel struct {
	Name      string            `json:"name"`
	Kind      string            `json:"kind"`
	File      string            `json:"file,omitempty"` // its .wgsl, when wgsl is a target
	Nodes     []ir.NodeID       `json:"nodes"`
	Bindings  []ManifestBinding `json:"bindings"`
	Workgroup [3]int            `json:"workgroup"`
	Dispatch  [3]int            `json:"dispatch"`
	// Flops, BytesRead and BytesWrite are the kernel's passes.Cost: its
	// operations and the bytes of the buffers it binds.
	Flops      int64    `json:"flops"`
	BytesRead  int64    `json:"bytesRead"`
	BytesWrite int64    `json:"bytesWritten"`
	Tile       *ir.Tile `json:"tile,omitempty"` // a matmul or conv kernel's (ir.Tile)
	SHA256     string   `json:"sha256"`         // of its WGSL
}

// ManifestBinding is one buffer binding of a kernel.
type ManifestBinding struct {
	Binding int    `json:"binding"`
	Kind    string `json:"kind"`
	Buffer  int    `json:"buffer,omitempty"`
	Node    int    `json:"node"`
	// Strides, when the kernel does not read the buffer plainly, map the
	// operand's multi-index to a buffer element (ir.Operand.Strides).
	Strides []int `json:"strides,omitempty"`
}

// ManifestOutput says where a named output comes from.
type ManifestOutput struct {
	Name   string   `json:"name"`
	Shape  []int    `json:"shape"`
	Buffer int      `json:"buffer"`
	Const  *float32 `json:"const,omitempty"`
}

// ManifestFile is one file the build wrote besides the manifest.
type ManifestFile struct {
	Name   string `json:"name"`
	Target string `json:"target"` // a kernel target, or "plan" or "go"
	SHA256 string `json:"sha256"`
}

// newResult generates the WGSL of every kernel (the manifest describes
// each kernel by it) and the manifest.
func newResult(g *ir.Graph, plan *lib.Plan, graphName, version string) (*Result, error) {
	sp, err := plan.Sealed()
	if err != nil {
		return nil, err
	}
	p := sp.Program()
	sum := sha256.Sum256(ir.Encode(g))
	b := &Result{Plan: plan, Manifest: &Manifest{
		Graph: graphName, GraphSHA256: hex.EncodeToString(sum[:]), Profile: plan.Profile, Gpucc: version,
		Targets: []string{}, Kernels: []ManifestKernel{}, Files: []ManifestFile{}}}
	shaders, err := wgsl.Target{}.Emit(sp)
	if err != nil {
		return nil, err
	}
	b.shaders = shaders
	for i, s := range shaders {
		b.Manifest.Kernels = append(b.Manifest.Kernels, describeKernel(p, &p.Kernels[i], s))
	}
	for _, o := range p.Outputs {
		mo := ManifestOutput{Name: o.Name, Shape: append([]int{}, o.Shape...), Buffer: o.Buffer}
		if o.Buffer < 0 {
			c := o.Const
			mo.Const = &c
		}
		b.Manifest.Outputs = append(b.Manifest.Outputs, mo)
	}
	return b, nil
}

func describeKernel(p *ir.Program, k *ir.Kernel, s codegen.Shader) ManifestKernel {
	sum := sha256.Sum256([]byte(s.Source))
	cost := passes.KernelCost(p, k)
	mk := ManifestKernel{Name: k.Name, Kind: k.Kind.String(), Nodes: k.Nodes,
		Workgroup: s.Workgroup, Dispatch: s.Groups, SHA256: hex.EncodeToString(sum[:]),
		Flops: cost.Flops, BytesRead: cost.BytesRead, BytesWrite: cost.BytesWritten}
	if k.Kind.Info().Tiled {
		mk.Tile = &k.Tile
	}
	for j, kind := range s.Bindings {
		b := ManifestBinding{Binding: j, Kind: bindingName(kind), Node: -1}
		switch {
		case j < len(k.Inputs):
			in := k.Inputs[j]
			b.Buffer, b.Node = in.Buffer, int(p.Buffers[in.Buffer].Node)
			if !in.Plain() {
				b.Strides = in.Strides
			}
		case j < len(k.Inputs)+len(k.Outputs):
			o := k.Outputs[j-len(k.Inputs)]
			b.Buffer, b.Node = o, int(p.Buffers[o].Node)
		}
		mk.Bindings = append(mk.Bindings, b)
	}
	return mk
}

func bindingName(k codegen.BindingKind) string {
	return [...]string{"read-only-storage", "storage", "uniform"}[k]
}

// addTarget generates the kernels of one target: a .wgsl per kernel, a
// .glsl per WebGL2 pass, one kernels.c, and kernels.wasm built from it
// (backend_unavailable when no Clang is found).
func (b *Result) addTarget(target string) error {
	program, err := b.Plan.Sealed()
	if err != nil {
		return err
	}
	switch target {
	case "wgsl":
		for i, s := range b.shaders {
			b.Manifest.Kernels[i].File = wgslFile(s)
			b.add(wgslFile(s), target, []byte(s.Source))
			s.Params = nil // the runtime computes them from the program
			b.Plan.WGSL = append(b.Plan.WGSL, s)
		}
	case "glsl":
		pl, err := glsl.Target{}.Emit(program)
		if err != nil {
			return ir.Errorf(ir.CodeInternal, -1, "", "generating GLSL: %v", err)
		}
		for _, ps := range pl.Passes {
			b.add(KernelDir+ps.Name+".glsl", target, []byte(ps.Source))
		}
	case "c", "wasm":
		u, err := c.Target{}.Emit(program)
		if err != nil {
			return ir.Errorf(ir.CodeInternal, -1, "", "generating C: %v", err)
		}
		if target == "c" {
			b.add(CFile, target, []byte(u.Source))
			b.Plan.C = u
			break
		}
		// wasm comes after c (normalTargets adds c): the plan has the unit.
		mod, err := wasm.BuildModule(context.Background(), u.Source)
		if err != nil {
			return &lib.Error{Code: ir.CodeBackendUnavailable, Backend: "wasm", Err: err}
		}
		b.add(WasmFile, target, mod)
		b.Plan.Wasm = mod
	default:
		return ir.Errorf(ir.CodeUsage, -1, "targets", "no target %q", target)
	}
	b.Manifest.Targets = append(b.Manifest.Targets, target)
	return nil
}

// wgslFile is the file of one WGSL kernel.
func wgslFile(s codegen.Shader) string { return KernelDir + s.Name + ".wgsl" }
