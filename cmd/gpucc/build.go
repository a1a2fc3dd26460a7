package main

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/gpucc/gpucc/codegen"
	"github.com/gpucc/gpucc/codegen/wgsl"
	"github.com/gpucc/gpucc/ir"
	"github.com/gpucc/gpucc/passes"
)

func init() {
	commands["build"] = command{summary: "compile a graph ahead of time into WGSL kernels, a manifest and a Go package", run: buildCmd}
}

// Manifest describes a build: every kernel and how long each pass took.
type Manifest struct {
	Graph   string           `json:"graph"`
	Kernels []ManifestKernel `json:"kernels"`
	Outputs []ManifestOutput `json:"outputs"`
	Passes  []passes.Timing  `json:"passes"`
}

// ManifestKernel is one generated kernel.
type ManifestKernel struct {
	Name       string            `json:"name"`
	Kind       string            `json:"kind"`
	File       string            `json:"file"`
	Nodes      []ir.NodeID       `json:"nodes"`
	Bindings   []ManifestBinding `json:"bindings"`
	Workgroup  [3]int            `json:"workgroup"`
	Dispatch   [3]int            `json:"dispatch"`
	BytesRead  int64             `json:"bytesRead"`
	BytesWrite int64             `json:"bytesWritten"`
	Tile       *ir.Tile          `json:"tile,omitempty"`
	SHA256     string            `json:"sha256"`
}

// ManifestBinding is one buffer binding of a kernel.
type ManifestBinding struct {
	Binding    int    `json:"binding"`
	Kind       string `json:"kind"`
	Buffer     int    `json:"buffer,omitempty"`
	Node       int    `json:"node"`
	Transposed bool   `json:"transposed,omitempty"`
	Broadcast  int    `json:"broadcast,omitempty"` // read repeated: index i % this length
}

// ManifestOutput says where a named output comes from.
type ManifestOutput struct {
	Name   string   `json:"name"`
	Shape  []int    `json:"shape"`
	Buffer int      `json:"buffer"`
	Const  *float32 `json:"const,omitempty"`
}

func buildCmd(args []string) int {
	fs := newFlags("build", "build GRAPH.json -o DIR [--explain] [--dump-after PASS] [--package NAME]")
	out := fs.String("o", "", "output directory (required)")
	dumpAfter := fs.String("dump-after", "", "print the IR after this pass: "+strings.Join(passes.PassNames(), ", "))
	explain := fs.Bool("explain", false, "print the kernel plan")
	pkg := fs.String("package", "", "also write a Go package of this name embedding the kernels")
	limits := limitFlags(fs)
	if err := parseInterspersed(fs, args); err != nil {
		return flagError(fs, err)
	}
	if fs.NArg() != 1 || *out == "" {
		return usageError("build: want GRAPH.json and -o DIR")
	}
	if *dumpAfter != "" && !slices.Contains(passes.PassNames(), *dumpAfter) {
		return usageError("build: --dump-after %q: no such pass (have %s)", *dumpAfter, strings.Join(passes.PassNames(), ", "))
	}
	g, err := readGraph(fs.Arg(0), *limits)
	if err != nil {
		return fail(err)
	}
	p, timings, err := passes.Compile(g, passes.Options{Limits: *limits, DumpAfter: *dumpAfter, Dump: os.Stdout})
	if err != nil {
		return fail(err)
	}
	m, sources, err := manifest(p, timings)
	if err != nil {
		return fail(err)
	}
	m.Graph = filepath.Base(fs.Arg(0))
	if err := writeBuild(*out, m, sources); err != nil {
		return fail(err)
	}
	if *pkg != "" {
		if err := writePackage(*out, *pkg, g, *limits, m, sources); err != nil {
			return fail(err)
		}
	}
	if *explain {
		fmt.Print(explainPlan(p, m))
	}
	return 0
}

// manifest generates every kernel's WGSL and describes it.
func manifest(p *ir.Program, timings []passes.Timing) (*Manifest, []string, error) {
	m := &Manifest{Passes: timings, Kernels: []ManifestKernel{}}
	var sources []string
	for i := range p.Kernels {
		k := &p.Kernels[i]
		s, err := wgsl.Generate(p, k)
		if err != nil {
			return nil, nil, err
		}
		sum := sha256.Sum256([]byte(s.Source))
		mk := ManifestKernel{Name: k.Name, Kind: k.Kind.String(), File: k.Name + ".wgsl", Nodes: k.Nodes,
			Workgroup: s.Workgroup, Dispatch: s.Groups, SHA256: hex.EncodeToString(sum[:])}
		if k.Kind == ir.KernelMatmul {
			mk.Tile = &k.Tile
		}
		for j, kind := range s.Bindings {
			b := ManifestBinding{Binding: j, Kind: bindingName(kind), Node: -1}
			switch {
			case j < len(k.Inputs):
				in := k.Inputs[j]
				b.Buffer, b.Node, b.Transposed, b.Broadcast = in.Buffer, int(p.Buffers[in.Buffer].Node), in.Transposed, in.Broadcast
				mk.BytesRead += int64(p.Buffers[in.Buffer].Len) * 4
			case j < len(k.Inputs)+len(k.Outputs):
				o := k.Outputs[j-len(k.Inputs)]
				b.Buffer, b.Node = o, int(p.Buffers[o].Node)
				mk.BytesWrite += int64(p.Buffers[o].Len) * 4
			}
			mk.Bindings = append(mk.Bindings, b)
		}
		m.Kernels = append(m.Kernels, mk)
		sources = append(sources, s.Source)
	}
	for _, o := range p.Outputs {
		mo := ManifestOutput{Name: o.Name, Shape: append([]int{}, o.Shape...), Buffer: o.Buffer}
		if o.Buffer < 0 {
			c := o.Const
			mo.Const = &c
		}
		m.Outputs = append(m.Outputs, mo)
	}
	return m, sources, nil
}

func bindingName(k codegen.BindingKind) string {
	return [...]string{"read-only-storage", "storage", "uniform"}[k]
}

func writeBuild(dir string, m *Manifest, sources []string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return ir.Errorf(ir.CodeExecutionFailed, -1, "", "%v", err)
	}
	for i, k := range m.Kernels {
		if err := os.WriteFile(filepath.Join(dir, k.File), []byte(sources[i]), 0o644); err != nil {
			return ir.Errorf(ir.CodeExecutionFailed, -1, "", "%v", err)
		}
	}
	doc, _ := json.MarshalIndent(m, "", "  ")
	if err := os.WriteFile(filepath.Join(dir, "manifest.json"), append(doc, '\n'), 0o644); err != nil {
		return ir.Errorf(ir.CodeExecutionFailed, -1, "", "%v", err)
	}
	return nil
}

// explainPlan renders the plan for people: one paragraph per kernel.
func explainPlan(p *ir.Program, m *Manifest) string {
	var b strings.Builder
	fmt.Fprintf(&b, "kernels: %d, buffers: %d\n", len(p.Kernels), len(p.Buffers))
	for i, k := range p.Kernels {
		mk := m.Kernels[i]
		fmt.Fprintf(&b, "\n%s: %s over %v, fuses nodes %v\n", k.Name, k.Kind, k.Shape, k.Nodes)
		for j, in := range k.Inputs {
			t := ""
			if in.Transposed {
				t = " (read transposed in place)"
			}
			if in.Broadcast > 0 {
				t = " (read broadcast in place)"
			}
			fmt.Fprintf(&b, "  reads  buf%d = node %d %v%s [binding %d]\n", in.Buffer, p.Buffers[in.Buffer].Node, in.Shape, t, j)
		}
		for j, o := range k.Outputs {
			fmt.Fprintf(&b, "  writes buf%d = node %d %v [binding %d]\n", o, p.Buffers[o].Node, p.Buffers[o].Shape, len(k.Inputs)+j)
		}
		if k.Kind == ir.KernelMatmul {
			t := k.Tile
			fmt.Fprintf(&b, "  tile   %dx%d per workgroup, %dx%d per thread, k-step %d\n", t.BM, t.BN, t.TM, t.TN, t.BK)
		}
		fmt.Fprintf(&b, "  workgroup %v, dispatch %v, %d bytes read, %d written\n", mk.Workgroup, mk.Dispatch, mk.BytesRead, mk.BytesWrite)
	}
	for _, o := range p.Outputs {
		if o.Buffer < 0 {
			fmt.Fprintf(&b, "\noutput %q: constant %s (folded at compile time)\n", o.Name, ir.FormatFloat(o.Const))
		} else {
			fmt.Fprintf(&b, "\noutput %q: buf%d %v\n", o.Name, o.Buffer, o.Shape)
		}
	}
	return b.String()
}
