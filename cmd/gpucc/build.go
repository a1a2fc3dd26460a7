package main

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"

	"github.com/gpucc/gpucc/aot"
	"github.com/gpucc/gpucc/ir"
)

func init() {
	commands["build"] = command{summary: "compile a graph ahead of time into kernels, a manifest and a Go package", run: buildCmd}
}

// buildResult is what build prints when not asked to explain.
type buildResult struct {
	Dir      string   `json:"dir"`
	Manifest string   `json:"manifest"`
	Files    []string `json:"files"`
	Skipped  []string `json:"skipped,omitempty"` // targets left out, and why
	PassesMs float64  `json:"passesMs"`
}

func buildCmd(args []string) int {
	fs := newFlags("build", "build GRAPH.json -o DIR [--package NAME] [--targets wgsl,glsl,c,wasm] [--profile NAME] [--explain] [--dump-after PASS] [--quiet]")
	out := fs.String("o", "", "output directory (required)")
	dumpAfter := fs.String("dump-after", "", "print the IR after this pass: "+strings.Join(aot.PassNames(), ", "))
	explain := fs.Bool("explain", false, "print the kernel plan")
	quiet := fs.Bool("quiet", false, "print nothing on success (for //go:generate lines)")
	pkg := fs.String("package", "", "also write a Go package of this name that runs the build")
	targetList := fs.String("targets", "", "kernel targets to write, comma-separated: "+strings.Join(aot.Targets, ", ")+" (default: all; wasm only when clang is present)")
	profile := fs.String("profile", aot.DefaultProfile, "device-limit profile to compile for: "+strings.Join(aot.ProfileNames(), ", "))
	limits := limitFlags(fs)
	inputShapeFlags(fs)
	if err := parseInterspersed(fs, args); err != nil {
		return flagError(fs, err)
	}
	if fs.NArg() != 1 || *out == "" {
		return usageError("build: want GRAPH.json and -o DIR")
	}
	targets, err := aot.ParseTargets(*targetList)
	if err != nil {
		return usageError("build: --targets: %v", err)
	}
	o := aot.Options{GraphName: filepath.Base(fs.Arg(0)), Profile: *profile, Limits: *limits,
		Targets: targets, Package: *pkg, DumpAfter: *dumpAfter, Dump: os.Stdout}
	if err := o.Check(); err != nil { // before reading the graph: a bad flag is the first thing to say
		return fail(err)
	}
	g, err := readGraph(fs.Arg(0), *limits)
	if err != nil {
		return fail(err)
	}
	o.Limits = *limits // an .onnx model's, sized to it
	b, err := aot.Build(g, o)
	if err != nil {
		return fail(err)
	}
	if err := b.Write(*out); err != nil {
		return fail(err)
	}
	if *explain {
		fmt.Print(explainPlan(b.Plan.Program, b.Manifest))
		return 0
	}
	// Rounded to the microsecond, like every time gpucc prints.
	res := buildResult{Dir: *out, Manifest: filepath.Join(*out, aot.ManifestName), Skipped: b.Skipped, PassesMs: math.Round(b.Plan.PassesMs*1e3) / 1e3}
	for _, f := range b.Files {
		res.Files = append(res.Files, filepath.Join(*out, f.Name))
	}
	if *dumpAfter == "" && !*quiet {
		writeJSON(res)
	}
	return 0
}

// explainPlan renders the plan for people: one paragraph per kernel,
// each with its operations and bytes (passes.Cost, as the manifest
// records them), and their totals.
func explainPlan(p *ir.Program, m *aot.Manifest) string {
	var b strings.Builder
	fmt.Fprintf(&b, "kernels: %d, buffers: %d, profile: %s\n", len(p.Kernels), len(p.Buffers), m.Profile.Name)
	var flops, read, written int64 // passes.ProgramCost, from the manifest
	for _, mk := range m.Kernels {
		flops, read, written = ir.SatAdd(flops, mk.Flops), ir.SatAdd(read, mk.BytesRead), ir.SatAdd(written, mk.BytesWrite)
	}
	fmt.Fprintf(&b, "total: %d flops, %d bytes read, %d written\n", flops, read, written)
	for i, k := range p.Kernels {
		mk := m.Kernels[i]
		fmt.Fprintf(&b, "\n%s: %s over %v, fuses nodes %v\n", k.Name, k.Kind, k.Shape, k.Nodes)
		for j, in := range k.Inputs {
			t := ""
			switch {
			case in.Transposed():
				t = " (read transposed in place)"
			case in.Offset != 0:
				t = fmt.Sprintf(" (read in place through strides %v from element %d)", in.Strides, in.Offset)
			case !in.Plain():
				t = fmt.Sprintf(" (read in place through strides %v)", in.Strides)
			}
			fmt.Fprintf(&b, "  reads  buf%d = node %d %v%s [binding %d]\n", in.Buffer, p.Buffers[in.Buffer].Node, in.Shape, t, j)
		}
		for j, o := range k.Outputs {
			fmt.Fprintf(&b, "  writes buf%d = node %d %v [binding %d]\n", o, p.Buffers[o].Node, p.Buffers[o].Shape, len(k.Inputs)+j)
		}
		for _, mb := range mk.Bindings {
			if mb.Kind == "uniform" {
				fmt.Fprintf(&b, "  params uniform: one, zero and the kernel's constants [binding %d]\n", mb.Binding)
			}
		}
		if k.Kind == ir.KernelMatmul {
			t := k.Tile
			fmt.Fprintf(&b, "  tile   %dx%d per workgroup, %dx%d per thread, k-step %d%s\n", t.BM, t.BN, t.TM, t.TN, t.BK, tileForm(t))
		}
		if k.Kind == ir.KernelRows {
			b.WriteString(explainRows(&k))
		}
		if k.Kind == ir.KernelAttention {
			fmt.Fprintf(&b, "  order  %s\n", ir.AttentionKernel(&k).Order())
			if k.Blocks > 1 {
				fmt.Fprintf(&b, "  parts  each part of each row tile a workgroup, written undivided (o, m, l) for the next kernel to combine\n")
			}
		}
		if k.Kind == ir.KernelAttentionCombine {
			fmt.Fprintf(&b, "  order  the split order's combine of %d parts: M, then L and O over the parts ascending, O / L\n", k.Inputs[0].Shape[len(k.Shape)-1])
		}
		if k.Kind == ir.KernelConv {
			c := ir.Conv2DOf(k.Inputs[0].Shape, k.Inputs[1].Shape, k.Attrs)
			fmt.Fprintf(&b, "  conv   %dx%d kernel, strides [%d,%d], pads [%d,%d,%d,%d], dilations [%d,%d], group %d: %d products per output, (c, kh, kw) ascending\n",
				c.KH, c.KW, c.SH, c.SW, c.PT, c.PL, c.PB, c.PR, c.DH, c.DW, c.Group, c.Taps())
			b.WriteString(explainConvTile(c, k.Tile))
		}
		fmt.Fprintf(&b, "  workgroup %v, dispatch %v, %d flops, %d bytes read, %d written\n", mk.Workgroup, mk.Dispatch, mk.Flops, mk.BytesRead, mk.BytesWrite)
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

// explainRows says how a rows kernel runs: its rows and passes, and the
// kernels GLSL ES (WebGL2) runs instead, which cannot keep a row resident.
func explainRows(k *ir.Kernel) string {
	red := ir.ReductionOf(k.Shape, k.Keep)
	var parts []string
	for _, q := range k.Parts {
		parts = append(parts, q.Kind.String())
	}
	return fmt.Sprintf("  rows   %d of %d leaves, %d passes over each; webgl2 runs it unfused, as %d kernels (%s)\n",
		red.Outputs, red.Leaves, k.Passes(), len(k.Parts), strings.Join(parts, ", "))
}

// explainConvTile says how a workgroup backend (WGSL) runs a conv kernel
// with tile t (ir.Tile): an implicit GEMM or, for a depthwise
// convolution, the window kernel. The other backends do not tile.
func explainConvTile(c ir.Conv2D, t ir.Tile) string {
	if t.Windowed() {
		h, w := c.Window(t.BM, t.BN)
		return fmt.Sprintf("  tile   window (WGSL): %dx%d outputs of one channel per workgroup, %dx1 per thread; the %dx%d input window staged in workgroup memory\n",
			t.BM, t.BN, t.TM, h, w)
	}
	m, n, k := c.GEMM()
	return fmt.Sprintf("  tile   implicit GEMM (WGSL), groups %d, each %d pixels x %d channels x %d taps: %dx%d per workgroup, %dx%d per thread, k-step %d%s; patches read from x in place (no im2col buffer)\n",
		c.Group, m, n, k, t.BM, t.BN, t.TM, t.TN, t.BK, tileForm(t))
}

// tileForm names a tile's load form beyond its sizes: vec4 loads, and
// workgroup memory double-buffered (ir.Tile.Stages 2) or staged once.
func tileForm(t ir.Tile) string {
	s := ""
	if t.Vector == 4 {
		s += ", vec4 loads"
	}
	switch t.Stages {
	case 1:
		s += ", staged"
	case 2:
		s += ", double-buffered"
	}
	return s
}
