package aot

import (
	"context"
	"crypto/sha256"
	"encoding/hex"

	lib "github.com/gpucc/gpucc"
	"github.com/gpucc/gpucc/ir"
	"github.com/gpucc/gpucc/passes"
	"github.com/gpucc/gpucc/runtime/backend"
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
	// Offset is the buffer element of the operand's multi-index 0, where
	// the kernel reads a slice of the buffer (ir.Operand.Offset).
	Offset int `json:"offset,omitempty"`
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

// backendOf names the backend whose Exporter makes each target's files
// and artifact.
var backendOf = map[string]string{"wgsl": "webgpu", "glsl": "webgl2", "c": "native", "wasm": "wasm"}

// export returns what target's backend exports of the plan's program,
// once per build.
func (b *Result) export(target string) (*backend.Export, error) {
	if ex, ok := b.exports[target]; ok {
		return ex, nil
	}
	name := backendOf[target]
	e, ok := backend.ExporterOf(name)
	if !ok {
		return nil, ir.Errorf(ir.CodeUsage, -1, "targets", "no target %q", target)
	}
	sp, err := b.Plan.Sealed()
	if err != nil {
		return nil, err
	}
	ex, err := e.Export(context.Background(), sp)
	if err != nil {
		if lib.CodeOf(err) == ir.CodeInternal {
			return nil, ir.Errorf(ir.CodeInternal, -1, "", "exporting %s for %s: %v", target, name, err)
		}
		return nil, err
	}
	if b.exports == nil {
		b.exports = map[string]*backend.Export{}
	}
	b.exports[target] = ex
	return ex, nil
}

// newResult describes every kernel as the webgpu backend dispatches it
// (its exporter's WGSL) in the manifest.
func newResult(g *ir.Graph, plan *lib.Plan, graphName, version string) (*Result, error) {
	p := plan.Program
	sum := sha256.Sum256(ir.Encode(g))
	b := &Result{Plan: plan, Manifest: &Manifest{
		Graph: graphName, GraphSHA256: hex.EncodeToString(sum[:]), Profile: plan.Profile, Gpucc: version,
		Targets: []string{}, Kernels: []ManifestKernel{}, Files: []ManifestFile{}}}
	ex, err := b.export("wgsl")
	if err != nil {
		return nil, err
	}
	for i, kd := range ex.Kernels {
		b.Manifest.Kernels = append(b.Manifest.Kernels, describeKernel(p, &p.Kernels[i], kd))
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

func describeKernel(p *ir.Program, k *ir.Kernel, kd backend.KernelDesc) ManifestKernel {
	sum := sha256.Sum256(kd.Source)
	cost := passes.KernelCost(p, k)
	mk := ManifestKernel{Name: k.Name, Kind: k.Kind.String(), Nodes: k.Nodes,
		Workgroup: kd.Workgroup, Dispatch: kd.Dispatch, SHA256: hex.EncodeToString(sum[:]),
		Flops: cost.Flops, BytesRead: cost.BytesRead, BytesWrite: cost.BytesWritten}
	if k.Kind.Info().Tiled {
		mk.Tile = &k.Tile
	}
	for j, kind := range kd.Bindings {
		b := ManifestBinding{Binding: j, Kind: kind, Node: -1}
		switch {
		case j < len(k.Inputs):
			in := k.Inputs[j]
			b.Buffer, b.Node = in.Buffer, int(p.Buffers[in.Buffer].Node)
			if !in.Plain() {
				b.Strides, b.Offset = in.Strides, in.Offset
			}
		case j < len(k.Inputs)+len(k.Outputs):
			o := k.Outputs[j-len(k.Inputs)]
			b.Buffer, b.Node = o, int(p.Buffers[o].Node)
		}
		mk.Bindings = append(mk.Bindings, b)
	}
	return mk
}

// addTarget adds one target's files, as its backend's exporter makes them
// (a .wgsl per kernel, a .glsl per WebGL2 pass, kernels.c, kernels.wasm,
// the last backend_unavailable when no Clang is found), under KernelDir,
// and its backend's artifact to the plan.
func (b *Result) addTarget(target string) error {
	if _, ok := backendOf[target]; !ok {
		return ir.Errorf(ir.CodeUsage, -1, "targets", "no target %q", target)
	}
	ex, err := b.export(target)
	if err != nil {
		return err
	}
	for _, f := range ex.Files {
		b.add(KernelDir+f.Name, target, f.Data)
	}
	if target == "wgsl" {
		for i, kd := range ex.Kernels {
			b.Manifest.Kernels[i].File = KernelDir + kd.File
		}
	}
	if ex.Prebuilt != nil {
		if b.Plan.Prebuilt == nil {
			b.Plan.Prebuilt = map[string][]byte{}
		}
		b.Plan.Prebuilt[backendOf[target]] = ex.Prebuilt
	}
	b.Manifest.Targets = append(b.Manifest.Targets, target)
	return nil
}
