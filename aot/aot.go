// Package aot builds a graph ahead of time: it seals the graph for a
// device-limit profile (gpucc.Seal, as a runtime's Compile does), generates
// the kernels of each target asked for, and optionally a Go package that
// embeds the sealed plan and those kernels behind a typed API, so that a
// program loads them with no passes and no code generation.
//
// Build makes every file in memory and describes them in a Manifest; Write
// puts them in a directory. `gpucc build` is Build followed by Write:
//
//	b, err := aot.Build(g, aot.Options{GraphName: "mlp.json", Package: "mlp"})
//	...
//	err = b.Write("mlp")
//
// A build holds no timings, so building the same graph twice with the same
// options gives the same bytes, file for file.
package aot

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"go/token"
	"io"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strings"

	lib "github.com/gpucc/gpucc"
	"github.com/gpucc/gpucc/ir"
	"github.com/gpucc/gpucc/passes"
	_ "github.com/gpucc/gpucc/runtime/all" // every backend's Exporter, which makes the targets' files
	"github.com/gpucc/gpucc/runtime/backend"
)

// Targets are the kernel targets a build can write, in the order it writes
// them: a .wgsl per kernel (webgpu), a .glsl per WebGL2 pass (webgl2), one
// kernels.c (native, and the source of wasm) and kernels.wasm (wasm,
// compiled by Clang).
var Targets = []string{"wgsl", "glsl", "c", "wasm"}

// The files of a build besides the Go package: the kernels are kept in a
// subdirectory, apart from the Go package, whose directory may not hold C
// files.
const (
	ManifestName = "manifest.json"
	PlanFile     = "plan.gob" // the sealed plan with its backends' artifacts (gpucc.EncodePlan)
	KernelDir    = "kernels/"
	CFile        = KernelDir + "kernels.c"
	WasmFile     = KernelDir + "kernels.wasm"
)

// Options say what Build makes. The zero Options build every target for
// the default profile under the default limits, with no Go package.
type Options struct {
	// GraphName is the graph's file name, recorded in the manifest and the
	// generated package's doc.
	GraphName string
	// Version is the gpucc version recorded; "" is Version().
	Version string
	// Profile names the device-limit profile to compile for; "" is the
	// default (ProfileNames lists them).
	Profile string
	// Limits are the host limits the graph is validated and compiled
	// under (zero fields are the defaults, as everywhere); the generated
	// package's CheckGraph decodes graphs under them too.
	Limits ir.Limits
	// Targets are the kernel targets to write, each one of Targets. Nil
	// is every target, leaving out wasm, with a note in Result.Skipped,
	// when no Clang is found; an empty list is none (the plan alone).
	// wasm brings c (the module is built from it, and loading it needs
	// its kernel table).
	Targets []string
	// Package, when not "", also generates a Go package of this name that
	// runs the build (see CheckPackageName).
	Package string
	// DumpAfter names a pass (PassNames) after which the IR is printed
	// on Dump.
	DumpAfter string
	Dump      io.Writer
}

// Check reports the first option that Build would refuse, as a usage
// error naming it in its Field: a package name that cannot name an
// imported Go package, an unknown target, profile or pass.
func (o Options) Check() error {
	if o.Package != "" {
		if err := CheckPackageName(o.Package); err != nil {
			return ir.Errorf(ir.CodeUsage, -1, "package", "package %q: %v", o.Package, err)
		}
	}
	for _, t := range o.Targets {
		if !slices.Contains(Targets, t) {
			return ir.Errorf(ir.CodeUsage, -1, "targets", "no target %q (have %s)", t, strings.Join(Targets, ", "))
		}
	}
	if _, err := passes.LookupProfile(o.Profile); err != nil {
		return ir.Errorf(ir.CodeUsage, -1, "profile", "%v", err)
	}
	if o.DumpAfter != "" && !slices.Contains(passes.PassNames(), o.DumpAfter) {
		return ir.Errorf(ir.CodeUsage, -1, "dump-after", "no such pass %q (have %s)", o.DumpAfter, strings.Join(passes.PassNames(), ", "))
	}
	return nil
}

// ProfileNames returns the names Options.Profile takes, sorted.
func ProfileNames() []string { return passes.ProfileNames() }

// DefaultProfile is the profile an Options.Profile of "" names.
const DefaultProfile = passes.DefaultProfile

// PassNames returns the names Options.DumpAfter takes, in pipeline order.
func PassNames() []string { return passes.PassNames() }

// Result is one build in memory: the sealed plan, its manifest and the
// files to write, in the order they were made. The plan carries the
// kernels of the targets built, bound to its program.
type Result struct {
	Plan     *lib.Plan
	Manifest *Manifest
	Files    []File
	// Skipped are the targets left out, each with why.
	Skipped []string

	exports map[string]*backend.Export // by target, each made once
}

// File is one file of a build: its path relative to the build directory,
// the target it belongs to (a kernel target, "plan" or "go") and its bytes.
type File struct {
	Name   string
	Target string
	Data   []byte
}

// Build validates g under o.Limits, seals it for o.Profile and generates
// every file of the build in memory. Errors carry the stable codes of
// gpucc.Seal; bad options are usage errors (Options.Check);
// backend_unavailable is a wasm target asked for explicitly without Clang.
func Build(g *ir.Graph, o Options) (*Result, error) {
	if err := o.Check(); err != nil {
		return nil, err
	}
	profile, _ := passes.LookupProfile(o.Profile)
	targets, all := normalTargets(o.Targets)
	if o.Version == "" {
		o.Version = Version()
	}
	plan, err := lib.Seal(g, o.Limits, profile, passes.Options{DumpAfter: o.DumpAfter, Dump: o.Dump})
	if err != nil {
		return nil, err
	}
	b, err := newResult(g, plan, o.GraphName, o.Version)
	if err != nil {
		return nil, err
	}
	for _, t := range targets {
		if err := b.addTarget(t); err != nil {
			if all && t == "wasm" && lib.CodeOf(err) == ir.CodeBackendUnavailable {
				b.Skipped = append(b.Skipped, "wasm: "+err.Error())
				continue
			}
			return nil, err
		}
	}
	b.Plan.BindKernels() // Load refuses these kernels under any other program
	if o.Package != "" {
		if err := b.addPackage(o.Package, o.Limits); err != nil {
			return nil, err
		}
	}
	return b, nil
}

// normalTargets returns the targets to build, without repeats, in the
// order of Targets, with c added for wasm; all reports the default list.
func normalTargets(list []string) (targets []string, all bool) {
	if list == nil {
		return Targets, true
	}
	for _, t := range list {
		if !slices.Contains(targets, t) {
			targets = append(targets, t)
		}
	}
	if slices.Contains(targets, "wasm") && !slices.Contains(targets, "c") {
		targets = append(targets, "c")
	}
	slices.SortFunc(targets, func(a, b string) int { return slices.Index(Targets, a) - slices.Index(Targets, b) })
	return targets, false
}

// ParseTargets parses a comma-separated target list, as `gpucc build
// --targets` takes it; "" is nil, every target.
func ParseTargets(list string) ([]string, error) {
	if list == "" {
		return nil, nil
	}
	var targets []string
	for _, t := range strings.Split(list, ",") {
		t = strings.TrimSpace(t)
		if !slices.Contains(Targets, t) {
			return nil, fmt.Errorf("no target %q (have %s)", t, strings.Join(Targets, ", "))
		}
		targets = append(targets, t)
	}
	return targets, nil
}

// CheckPackageName says why name cannot name the generated package: it
// must be a Go identifier, not a keyword, not the blank identifier, and not
// main (the package is imported, not run).
func CheckPackageName(name string) error {
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

// Version names the running gpucc: its module version and, for a binary
// built from a checkout, the commit (with "+dirty" when the tree had
// changes).
func Version() string {
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

// add records a file of the build.
func (b *Result) add(name, target string, data []byte) {
	sum := sha256.Sum256(data)
	b.Files = append(b.Files, File{Name: name, Target: target, Data: data})
	b.Manifest.Files = append(b.Manifest.Files, ManifestFile{Name: name, Target: target, SHA256: hex.EncodeToString(sum[:])})
}

// Write writes every file and then the manifest into dir, creating it, and
// removes what an earlier build into dir listed and this one does not
// write. I/O errors carry the io code.
func (b *Result) Write(dir string) error {
	if err := os.MkdirAll(filepath.Join(dir, KernelDir), 0o755); err != nil {
		return ir.Errorf(ir.CodeIO, -1, "", "%v", err)
	}
	for _, f := range b.Files {
		if err := os.WriteFile(filepath.Join(dir, f.Name), f.Data, 0o644); err != nil {
			return ir.Errorf(ir.CodeIO, -1, "", "%v", err)
		}
	}
	if err := b.removeStale(dir); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, ManifestName), b.ManifestJSON(), 0o644); err != nil {
		return ir.Errorf(ir.CodeIO, -1, "", "%v", err)
	}
	return nil
}

// removeStale deletes what an earlier build into dir wrote and this one
// does not: the files its manifest lists (kernels of a graph that had more,
// a target left out now). It removes only regular files under dir that
// manifest names, never anything else found there.
func (b *Result) removeStale(dir string) error {
	old, err := os.ReadFile(filepath.Join(dir, ManifestName))
	if err != nil {
		return nil // no earlier build
	}
	var m Manifest
	if json.Unmarshal(old, &m) != nil {
		return nil // not a manifest gpucc wrote: leave everything as it is
	}
	written := map[string]bool{}
	for _, f := range b.Files {
		written[f.Name] = true
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

// ManifestJSON is manifest.json: the manifest, indented, with a final
// newline.
func (b *Result) ManifestJSON() []byte {
	doc, _ := json.MarshalIndent(b.Manifest, "", "  ")
	return append(doc, '\n')
}
