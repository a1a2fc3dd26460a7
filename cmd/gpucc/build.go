package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"go/token"
	"math"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strings"

	lib "github.com/gpucc/gpucc"
	"github.com/gpucc/gpucc/codegen"
	"github.com/gpucc/gpucc/codegen/c"
	"github.com/gpucc/gpucc/codegen/glsl"
	"github.com/gpucc/gpucc/codegen/wgsl"
	"github.com/gpucc/gpucc/ir"
	"github.com/gpucc/gpucc/passes"
	"github.com/gpucc/gpucc/runtime/wasm"
)

func init() {
	commands["build"] = command{summary: "compile a graph ahead of time into kernels, a manifest and a Go package", run: buildCmd}
}

// Targets are the kernel targets build can write, in the order it writes them.
var Targets = []string{"wgsl", "glsl", "c", "wasm"}

// Manifest describes a build: where the graph came from, what it was
// compiled for and by, and every kernel and file. It holds no timings, so
// that building twice gives the same bytes.
type Manifest struct {
	Graph       string           `json:"graph"`
	GraphSHA256 string           `json:"graphSHA256"` // of graph.json, the graph's canonical encoding
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
	Tile       *ir.Tile `json:"tile,omitempty"`
	SHA256     string   `json:"sha256"` // of its WGSL
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
	Target string `json:"target"` // a kernel target, or "graph" or "go"
	SHA256 string `json:"sha256"`
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
	dumpAfter := fs.String("dump-after", "", "print the IR after this pass: "+strings.Join(passes.PassNames(), ", "))
	explain := fs.Bool("explain", false, "print the kernel plan")
	quiet := fs.Bool("quiet", false, "print nothing on success (for //go:generate lines)")
	pkg := fs.String("package", "", "also write a Go package of this name that runs the build")
	targetList := fs.String("targets", "", "kernel targets to write, comma-separated: "+strings.Join(Targets, ", ")+" (default: all; wasm only when clang is present)")
	profileName := fs.String("profile", passes.DefaultProfile, "device-limit profile to compile for: "+strings.Join(passes.ProfileNames(), ", "))
	limits := limitFlags(fs)
	inputShapeFlags(fs)
	if err := parseInterspersed(fs, args); err != nil {
		return flagError(fs, err)
	}
	if fs.NArg() != 1 || *out == "" {
		return usageError("build: want GRAPH.json and -o DIR")
	}
	if *dumpAfter != "" && !slices.Contains(passes.PassNames(), *dumpAfter) {
		return usageError("build: --dump-after %q: no such pass (have %s)", *dumpAfter, strings.Join(passes.PassNames(), ", "))
	}
	if *pkg != "" {
		if err := checkPackageName(*pkg); err != nil {
			return usageError("build: --package %q: %v", *pkg, err)
		}
	}
	targets, explicit, err := parseTargets(*targetList)
	if err != nil {
		return usageError("build: --targets: %v", err)
	}
	profile, err := passes.LookupProfile(*profileName)
	if err != nil {
		return usageError("build: --profile: %v", err)
	}
	g, err := readGraph(fs.Arg(0), *limits)
	if err != nil {
		return fail(err)
	}
	b, err := makeBuild(g, buildOptions{graphName: filepath.Base(fs.Arg(0)), version: gpuccVersion(), profile: profile,
		limits: *limits, targets: targets, allTargets: !explicit, pkg: *pkg, dumpAfter: *dumpAfter})
	if err != nil {
		return fail(err)
	}
	if err := b.write(*out); err != nil {
		return fail(err)
	}
	if *explain {
		fmt.Print(explainPlan(b.program, b.manifest))
		return 0
	}
	// Rounded to the microsecond, like every time gpucc prints.
	res := buildResult{Dir: *out, Manifest: filepath.Join(*out, "manifest.json"), Skipped: b.skipped, PassesMs: math.Round(b.plan.PassesMs*1e3) / 1e3}
	for _, f := range b.files {
		res.Files = append(res.Files, filepath.Join(*out, f.name))
	}
	if *dumpAfter == "" && !*quiet {
		writeJSON(res)
	}
	return 0
}

// buildOptions say what makeBuild makes.
type buildOptions struct {
	graphName  string // the graph's file name, for the manifest
	version    string // the gpucc version recorded
	profile    passes.Profile
	limits     ir.Limits
	targets    []string
	allTargets bool   // the default target list: leave out wasm when no Clang is found
	pkg        string // Go package name, or "" for none
	dumpAfter  string // print the IR after this pass on stdout
}

// makeBuild seals g for o.profile, through lib.Seal as `gpucc run`
// does, and generates every file of the build in memory.
func makeBuild(g *ir.Graph, o buildOptions) (*build, error) {
	plan, err := lib.Seal(g, o.limits, o.profile, passes.Options{DumpAfter: o.dumpAfter, Dump: os.Stdout})
	if err != nil {
		return nil, err
	}
	b, err := newBuild(g, plan, o.graphName, o.version)
	if err != nil {
		return nil, err
	}
	for _, t := range o.targets {
		if err := b.addTarget(t); err != nil {
			if o.allTargets && t == "wasm" && lib.CodeOf(err) == ir.CodeBackendUnavailable {
				b.skipped = append(b.skipped, "wasm: "+err.Error())
				continue
			}
			return nil, err
		}
	}
	b.plan.BindKernels() // Load refuses these kernels under any other program
	if o.pkg != "" {
		if err := b.addPackage(o.pkg, o.limits); err != nil {
			return nil, err
		}
	}
	return b, nil
}

// checkPackageName says why name cannot name the generated package: it
// must be a Go identifier, not a keyword, not the blank identifier, and not
// main (the package is imported, not run).
func checkPackageName(name string) error {
	switch {
	case name == "main":
		return fmt.Errorf("the generated package is imported by a program, so it cannot be main")
	case name == "_":
		return fmt.Errorf("the blank identifier cannot name a package")
	case token.IsKeyword(name):
		return fmt.Errorf("%s is a Go keyword", name)
	case !token.IsIdentifier(name):
		return fmt.Errorf("not a Go identifier (letters, digits and _, not starting with a digit)")
	}
	return nil
}

// parseTargets parses --targets; explicit is false for the default (all).
func parseTargets(list string) (targets []string, explicit bool, err error) {
	if list == "" {
		return Targets, false, nil
	}
	for _, t := range strings.Split(list, ",") {
		t = strings.TrimSpace(t)
		if !slices.Contains(Targets, t) {
			return nil, true, fmt.Errorf("no target %q (have %s)", t, strings.Join(Targets, ", "))
		}
		if !slices.Contains(targets, t) {
			targets = append(targets, t)
		}
	}
	if slices.Contains(targets, "wasm") && !slices.Contains(targets, "c") {
		targets = append(targets, "c") // the module is built from it, and loading it needs its kernel table
	}
	slices.SortFunc(targets, func(a, b string) int { return slices.Index(Targets, a) - slices.Index(Targets, b) })
	return targets, true, nil
}

// gpuccVersion names the running gpucc: its module version and, for a
// binary built from a checkout, the commit (with "+dirty" when the tree
// had changes).
func gpuccVersion() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown"
	}
	v := bi.Main.Version
	if v == "" {
		v = "(devel)"
	}
	var rev, dirty string
	for _, s := range bi.Settings {
		switch {
		case s.Key == "vcs.revision":
			rev = s.Value
		case s.Key == "vcs.modified" && s.Value == "true":
			dirty = "+dirty"
		}
	}
	if rev != "" {
		v += " " + rev + dirty
	}
	return v
}

// build is one build in memory: the sealed plan, its manifest and the
// files to write, in the order they were added. The plan carries the
// kernels of the targets built so far.
type build struct {
	graph    *ir.Graph
	plan     *lib.Plan
	program  *ir.Program // plan.Program
	manifest *Manifest
	shaders  []codegen.Shader // WGSL of each kernel
	files    []buildFile
	skipped  []string // targets left out, and why
}

type buildFile struct {
	name   string
	target string
	data   []byte
}

// newBuild generates the WGSL of every kernel (the manifest describes
// each kernel by it) and the manifest.
func newBuild(g *ir.Graph, plan *lib.Plan, graphName, version string) (*build, error) {
	p := plan.Program
	sum := sha256.Sum256(ir.Encode(g))
	b := &build{graph: g, plan: plan, program: p, manifest: &Manifest{
		Graph: graphName, GraphSHA256: hex.EncodeToString(sum[:]), Profile: plan.Profile, Gpucc: version,
		Targets: []string{}, Kernels: []ManifestKernel{}, Files: []ManifestFile{}}}
	shaders, err := wgsl.Target{}.Emit(p)
	if err != nil {
		return nil, err
	}
	b.shaders = shaders
	for i, s := range shaders {
		b.manifest.Kernels = append(b.manifest.Kernels, describeKernel(p, &p.Kernels[i], s))
	}
	for _, o := range p.Outputs {
		mo := ManifestOutput{Name: o.Name, Shape: append([]int{}, o.Shape...), Buffer: o.Buffer}
		if o.Buffer < 0 {
			c := o.Const
			mo.Const = &c
		}
		b.manifest.Outputs = append(b.manifest.Outputs, mo)
	}
	return b, nil
}

func describeKernel(p *ir.Program, k *ir.Kernel, s codegen.Shader) ManifestKernel {
	sum := sha256.Sum256([]byte(s.Source))
	cost := passes.KernelCost(p, k)
	mk := ManifestKernel{Name: k.Name, Kind: k.Kind.String(), Nodes: k.Nodes,
		Workgroup: s.Workgroup, Dispatch: s.Groups, SHA256: hex.EncodeToString(sum[:]),
		Flops: cost.Flops, BytesRead: cost.BytesRead, BytesWrite: cost.BytesWritten}
	if k.Kind == ir.KernelMatmul {
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

// add records a file of the build.
func (b *build) add(name, target string, data []byte) {
	sum := sha256.Sum256(data)
	b.files = append(b.files, buildFile{name: name, target: target, data: data})
	b.manifest.Files = append(b.manifest.Files, ManifestFile{Name: name, Target: target, SHA256: hex.EncodeToString(sum[:])})
}

// addTarget generates the kernels of one target: a .wgsl per kernel, a
// .glsl per WebGL2 pass, one kernels.c, and kernels.wasm built from it
// (backend_unavailable when no Clang is found).
func (b *build) addTarget(target string) error {
	switch target {
	case "wgsl":
		for i, s := range b.shaders {
			b.manifest.Kernels[i].File = wgslFile(s)
			b.add(wgslFile(s), target, []byte(s.Source))
			s.Params = nil // the runtime computes them from the program
			b.plan.WGSL = append(b.plan.WGSL, s)
		}
	case "glsl":
		pl, err := glsl.Target{}.Emit(b.program)
		if err != nil {
			return ir.Errorf(ir.CodeInternal, -1, "", "generating GLSL: %v", err)
		}
		for _, ps := range pl.Passes {
			b.add(kernelDir+ps.Name+".glsl", target, []byte(ps.Source))
		}
	case "c", "wasm":
		u, err := c.Target{}.Emit(b.program)
		if err != nil {
			return ir.Errorf(ir.CodeInternal, -1, "", "generating C: %v", err)
		}
		if target == "c" {
			b.add(cFile, target, []byte(u.Source))
			b.plan.C = u
			break
		}
		// wasm comes after c (parseTargets adds c): the plan has the unit.
		mod, err := wasm.BuildModule(context.Background(), u.Source)
		if err != nil {
			return &lib.Error{Code: ir.CodeBackendUnavailable, Backend: "wasm", Err: err}
		}
		b.add(wasmFile, target, mod)
		b.plan.Wasm = mod
	default:
		return ir.Errorf("usage", -1, "targets", "no target %q", target)
	}
	b.manifest.Targets = append(b.manifest.Targets, target)
	return nil
}

// kernelDir is the subdirectory of the build's kernels: kept apart from
// the Go package, whose directory may not hold C files.
const (
	kernelDir = "kernels/"
	cFile     = kernelDir + "kernels.c"
	wasmFile  = kernelDir + "kernels.wasm"
)

// wgslFile is the file of one WGSL kernel.
func wgslFile(s codegen.Shader) string { return kernelDir + s.Name + ".wgsl" }

// write writes every file and then the manifest into dir.
func (b *build) write(dir string) error {
	if err := os.MkdirAll(filepath.Join(dir, kernelDir), 0o755); err != nil {
		return ir.Errorf(ir.CodeIO, -1, "", "%v", err)
	}
	for _, f := range b.files {
		if err := os.WriteFile(filepath.Join(dir, f.name), f.data, 0o644); err != nil {
			return ir.Errorf(ir.CodeIO, -1, "", "%v", err)
		}
	}
	if err := b.removeStale(dir); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "manifest.json"), b.manifestJSON(), 0o644); err != nil {
		return ir.Errorf(ir.CodeIO, -1, "", "%v", err)
	}
	return nil
}

// removeStale deletes what an earlier build into dir wrote and this one
// does not: the files its manifest lists (kernels of a graph that had more,
// a target left out now). It removes only regular files under dir that
// manifest names, never anything else found there.
func (b *build) removeStale(dir string) error {
	old, err := os.ReadFile(filepath.Join(dir, "manifest.json"))
	if err != nil {
		return nil // no earlier build
	}
	var m Manifest
	if json.Unmarshal(old, &m) != nil {
		return nil // not a manifest gpucc wrote: leave everything as it is
	}
	written := map[string]bool{}
	for _, f := range b.files {
		written[f.name] = true
	}
	for _, f := range m.Files {
		if written[f.Name] || !filepath.IsLocal(f.Name) {
			continue
		}
		path := filepath.Join(dir, f.Name)
		if st, err := os.Lstat(path); err != nil || !st.Mode().IsRegular() {
			continue
		}
		if err := os.Remove(path); err != nil {
			return ir.Errorf(ir.CodeIO, -1, "", "removing %s of the earlier build: %v", f.Name, err)
		}
	}
	return nil
}

func (b *build) manifestJSON() []byte {
	doc, _ := json.MarshalIndent(b.manifest, "", "  ")
	return append(doc, '\n')
}

// explainPlan renders the plan for people: one paragraph per kernel,
// each with its operations and bytes (passes.Cost), and their totals.
func explainPlan(p *ir.Program, m *Manifest) string {
	var b strings.Builder
	fmt.Fprintf(&b, "kernels: %d, buffers: %d, profile: %s\n", len(p.Kernels), len(p.Buffers), m.Profile.Name)
	total := passes.ProgramCost(p)
	fmt.Fprintf(&b, "total: %d flops, %d bytes read, %d written\n", total.Flops, total.BytesRead, total.BytesWritten)
	for i, k := range p.Kernels {
		mk := m.Kernels[i]
		fmt.Fprintf(&b, "\n%s: %s over %v, fuses nodes %v\n", k.Name, k.Kind, k.Shape, k.Nodes)
		for j, in := range k.Inputs {
			t := ""
			switch {
			case in.Transposed():
				t = " (read transposed in place)"
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
			fmt.Fprintf(&b, "  tile   %dx%d per workgroup, %dx%d per thread, k-step %d\n", t.BM, t.BN, t.TM, t.TN, t.BK)
		}
		if k.Kind == ir.KernelRows {
			b.WriteString(explainRows(&k))
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
