package aot

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"go/token"
	"maps"
	"slices"
	"strconv"
	"strings"
	"unicode"

	"github.com/dave/jennifer/jen"
	lib "github.com/gpucc/gpucc"
	"github.com/gpucc/gpucc/ir"
)

const modulePath = "github.com/gpucc/gpucc"

var (
	gpuccPkg = modulePath
	irPkg    = modulePath + "/ir"
)

// field is one field of the generated Inputs or Outputs struct.
type field struct {
	goName string // Go field name
	name   string // the graph's name for it
	shape  ir.Shape
	param  bool
}

// addPackage adds plan.gob and NAME.go, a Go package that embeds the
// sealed plan, the kernels of the targets built and the manifest, and
// gives them a typed API: Inputs and Outputs structs, Compile, and
// Executable.Run.
func (b *Result) addPackage(name string, limits ir.Limits) error {
	ins, outs, err := packageFields(b.Plan)
	if err != nil {
		return err
	}
	plan, err := encodePlan(b.Plan)
	if err != nil {
		return err
	}
	b.add(PlanFile, "plan", plan)
	embedded := map[string]string{}
	for _, f := range b.Manifest.Files {
		if f.Target == "plan" || f.Target == "wgsl" || f.Target == "c" || f.Target == "wasm" {
			embedded[f.Name] = f.SHA256
		}
	}
	src, err := generatePackage(name, b.Manifest, limits, embedded, ins, outs)
	if err != nil {
		return err
	}
	b.add(name+".go", "go", src)
	return nil
}

// encodePlan encodes p as the package embeds it (gpucc.EncodePlan, its
// artifacts with it), without its timing, so that two builds give the
// same bytes.
func encodePlan(p *lib.Plan) ([]byte, error) {
	q := *p
	q.PassesMs = 0 // a timing: it would make two builds differ
	return lib.EncodePlan(&q)
}

// packageFields returns the struct fields for the plan's inputs (in node
// order; an unnamed input has the plan's generated name) and its outputs
// (in output order), named by goNames.
func packageFields(p *lib.Plan) (ins, outs []field, err error) {
	var inNames, outNames []string
	for _, in := range p.Inputs {
		inNames = append(inNames, in.Name)
	}
	for _, o := range p.Program.Outputs {
		outNames = append(outNames, o.Name)
	}
	inIDs, outIDs := goNames(inNames), goNames(outNames)
	for i, in := range p.Inputs {
		ins = append(ins, field{goName: inIDs[i], name: in.Name, shape: in.Shape, param: in.Param})
	}
	for i, o := range p.Program.Outputs {
		outs = append(outs, field{goName: outIDs[i], name: o.Name, shape: o.Shape})
	}
	return ins, outs, nil
}

// goNames gives each of names (distinct graph names of one struct's
// fields) a distinct exported Go identifier: its exportedName where no
// other name has the same, else that followed by _ and the first hex
// digits of the name's SHA-256 (4, more where two would still agree), so
// that ONNX's "l1.weight" and "l1_weight" become L1Weight_3c64 and
// L1Weight_a0ba whatever else the model holds, build after build. The
// suffixed names cannot clash with an unsuffixed one, which never holds
// an underscore.
func goNames(names []string) []string {
	base := make([]string, len(names))
	count := map[string]int{}
	for i, n := range names {
		base[i] = exportedName(n)
		count[base[i]]++
	}
	out := make([]string, len(names))
	used := map[string]bool{}
	for i := range names {
		if count[base[i]] == 1 {
			out[i] = base[i]
			used[out[i]] = true
		}
	}
	for i, n := range names {
		if count[base[i]] == 1 {
			continue
		}
		sum := sha256.Sum256([]byte(n))
		h := hex.EncodeToString(sum[:])
		for k := 4; ; k++ {
			id := base[i] + "_" + h[:min(k, len(h))]
			if k > len(h) { // the same name twice: never in a plan
				id += "_" + strconv.Itoa(i)
			}
			if !used[id] {
				out[i] = id
				used[id] = true
				break
			}
		}
	}
	return out
}

// exportedName turns a graph name into an exported Go identifier: letters
// and digits are kept, anything else starts a new word ("hidden_1" is
// Hidden1, "w" is W), and a name that would not be exported gets an X.
func exportedName(name string) string {
	var b strings.Builder
	up := true
	for _, r := range name {
		if !unicode.IsLetter(r) && !unicode.IsDigit(r) {
			up = true
			continue
		}
		if up {
			r = unicode.ToUpper(r)
		}
		b.WriteRune(r)
		up = false
	}
	id := b.String()
	if !token.IsExported(id) {
		id = "X" + id
	}
	return id
}

// describe is a field's doc comment.
func (f field) describe(kind string) string {
	if len(f.shape) == 0 {
		return fmt.Sprintf("%s is %s %q: a scalar, 1 value.", f.goName, kind, f.name)
	}
	return fmt.Sprintf("%s is %s %q: shape %v, %d values.", f.goName, kind, f.name, f.shape, f.shape.Len())
}

// generatePackage renders the package's Go source. It depends only on its
// arguments, so that generating twice gives the same bytes. embedded maps
// each file the package embeds to its SHA-256 (which the source does not
// hold: the package reads them from its manifest, so that a change of the
// kernels changes no Go).
func generatePackage(name string, m *Manifest, limits ir.Limits, embedded map[string]string, ins, outs []field) ([]byte, error) {
	f := jen.NewFile(name)
	f.HeaderComment("Code generated by gpucc build; DO NOT EDIT.")
	names := slices.Sorted(maps.Keys(embedded))
	var kinds []string
	for _, t := range m.Targets {
		if t != "glsl" { // WebGL2 runs only in the browser
			kinds = append(kinds, t)
		}
	}
	targets := "no kernels"
	if len(kinds) > 0 {
		targets = strings.Join(kinds, ", ") + " kernels"
	}
	doc := fmt.Sprintf(`Package %s runs %s, built ahead of time by gpucc build (gpucc %s)
for the device-limit profile %s: %d kernels, with its %s embedded.

Compile loads the embedded plan and kernels on a runtime: no passes run,
and a backend whose kernels are embedded generates none (on wasm, Clang
builds nothing). The Executable it returns runs many times. The runtime has the
backends its program imports (github.com/gpucc/gpucc/runtime/all: every one).`,
		name, m.Graph, m.Gpucc, m.Profile.Name, len(m.Kernels), targets)
	for _, line := range strings.Split(doc, "\n") {
		f.PackageComment(line)
	}
	f.ImportNames(map[string]string{gpuccPkg: "gpucc", irPkg: "ir"})

	f.Const().Defs(
		jen.Comment("GraphSHA256 is the SHA-256 of the graph's canonical encoding (ir.Encode)."),
		jen.Id("GraphSHA256").Op("=").Lit(m.GraphSHA256),
		jen.Comment("Profile names the device-limit profile the build was compiled for."),
		jen.Id("Profile").Op("=").Lit(m.Profile.Name),
		jen.Comment("GpuccVersion is the gpucc that generated this package."),
		jen.Id("GpuccVersion").Op("=").Lit(m.Gpucc),
	)
	f.Comment("Manifest is manifest.json: the build's profile, kernels and files.")
	f.Line().Comment("//go:embed manifest.json")
	f.Var().Id("Manifest").Index().Byte()
	f.Line().Comment("//go:embed " + strings.Join(names, " "))
	f.Var().Id("files").Qual("embed", "FS")

	f.Comment("buildLimits are the host limits the graph was built under.")
	f.Var().Id("buildLimits").Op("=").Qual(irPkg, "Limits").Values(jen.Dict{
		jen.Id("MaxNodes"):        jen.Lit(limits.MaxNodes),
		jen.Id("MaxElements"):     jen.Lit(int(limits.MaxElements)),
		jen.Id("MaxStorageBytes"): jen.Lit(int(limits.MaxStorageBytes)),
		jen.Id("MaxOps"):          jen.Lit(int(limits.MaxOps)),
		jen.Id("MaxOutputs"):      jen.Lit(limits.MaxOutputs),
	})

	var inFields, outFields []jen.Code
	for _, in := range ins {
		kind := "input"
		if in.param {
			kind = "parameter"
		}
		inFields = append(inFields, jen.Comment(in.describe(kind)), jen.Id(in.goName).Qual(gpuccPkg, "Value"))
	}
	for _, o := range outs {
		outFields = append(outFields, jen.Comment(o.describe("output")), jen.Id(o.goName).Index().Float32())
	}
	f.Comment("Inputs are the graph's inputs. Each is host data, gpucc.NewTensor(shape, data)")
	f.Comment("with the input's shape (a nil shape is a scalar's, as everywhere in gpucc),")
	f.Comment("or a *gpucc.DeviceTensor, which stays on the device across runs; a nil")
	f.Comment("field keeps the data the graph was built with.")
	f.Type().Id("Inputs").Struct(inFields...)
	f.Comment("Outputs are the graph's outputs, in row-major order.")
	f.Type().Id("Outputs").Struct(outFields...)

	f.Comment("Executable is the build loaded on one runtime. It is safe for concurrent")
	f.Comment("use; the runtime serialises runs.")
	f.Type().Id("Executable").Struct(jen.Id("exe").Op("*").Qual(gpuccPkg, "Executable"))

	errRet := func(v jen.Code) *jen.Statement {
		return jen.If(jen.Err().Op("!=").Nil()).Block(jen.Return(v, jen.Err()))
	}
	f.Comment("Compile loads the embedded plan and kernels on rt. It refuses, with")
	f.Comment("backend_unavailable, a runtime whose device cannot meet Profile, and, with")
	f.Comment("invalid_graph, an embedded file edited after generation.")
	f.Func().Id("Compile").Params(
		jen.Id("ctx").Qual("context", "Context"),
		jen.Id("rt").Op("*").Qual(gpuccPkg, "Runtime"),
	).Params(jen.Op("*").Id("Executable"), jen.Error()).Block(
		jen.List(jen.Id("plan"), jen.Err()).Op(":=").Id("Plan").Call(),
		errRet(jen.Nil()),
		jen.List(jen.Id("exe"), jen.Err()).Op(":=").Id("rt").Dot("Load").Call(jen.Id("ctx"), jen.Id("plan")),
		jen.If(jen.Err().Op("!=").Nil()).Block(
			jen.Return(jen.Nil(), jen.Qual("fmt", "Errorf").Call(jen.Lit(name+": %w"), jen.Err())),
		),
		jen.Return(jen.Op("&").Id("Executable").Values(jen.Dict{jen.Id("exe"): jen.Id("exe")}), jen.Nil()),
	)

	var kernels []jen.Code // the kernel files, checked though the plan carries its artifacts
	for _, n := range names {
		if n != PlanFile {
			kernels = append(kernels, jen.Lit(n))
		}
	}
	plan := []jen.Code{
		jen.List(jen.Id("doc"), jen.Err()).Op(":=").Id("file").Call(jen.Lit(PlanFile)),
		errRet(jen.Nil()),
		// No ir.Seal here: a plan decoded from bytes is not trusted, so
		// gpucc.Runtime.Load checks it in full (and seals its program) once.
		jen.List(jen.Id("plan"), jen.Err()).Op(":=").Qual(gpuccPkg, "DecodePlan").Call(jen.Id("doc")),
		jen.If(jen.Err().Op("!=").Nil()).Block(
			jen.Return(jen.Nil(), jen.Qual("fmt", "Errorf").Call(jen.Lit(name+": %w"), jen.Err())),
		),
	}
	if len(kernels) > 0 {
		plan = append(plan, jen.For(jen.List(jen.Id("_"), jen.Id("name")).Op(":=").Range().Index().String().Values(kernels...)).Block(
			jen.If(jen.List(jen.Id("_"), jen.Err()).Op(":=").Id("file").Call(jen.Id("name")), jen.Err().Op("!=").Nil()).Block(
				jen.Return(jen.Nil(), jen.Err())),
		))
	}
	plan = append(plan, jen.Return(jen.Id("plan"), jen.Nil()))
	f.Comment("Plan returns the embedded plan with its kernels' artifacts, each embedded")
	f.Comment("file checked against its hash; gpucc.Runtime.Load compiles it.")
	f.Func().Id("Plan").Params().Params(jen.Op("*").Qual(gpuccPkg, "Plan"), jen.Error()).Block(plan...)

	f.Comment("file returns the embedded file name, refusing one whose SHA-256 is not")
	f.Comment("the one manifest.json records.")
	f.Func().Id("file").Params(jen.Id("name").String()).Params(jen.Index().Byte(), jen.Error()).Block(
		jen.Var().Id("m").Struct(
			jen.Id("Files").Index().Struct(
				jen.Id("Name").String().Tag(map[string]string{"json": "name"}),
				jen.Id("SHA256").String().Tag(map[string]string{"json": "sha256"}),
			).Tag(map[string]string{"json": "files"}),
		),
		jen.If(jen.Err().Op(":=").Qual("encoding/json", "Unmarshal").Call(jen.Id("Manifest"), jen.Op("&").Id("m")), jen.Err().Op("!=").Nil()).Block(
			jen.Return(jen.Nil(), jen.Qual(irPkg, "Errorf").Call(jen.Qual(irPkg, "CodeInvalidGraph"), jen.Lit(-1), jen.Lit("manifest.json"),
				jen.Lit(name+": %v"), jen.Err())),
		),
		jen.List(jen.Id("b"), jen.Err()).Op(":=").Id("files").Dot("ReadFile").Call(jen.Id("name")),
		errRet(jen.Nil()),
		jen.Id("sum").Op(":=").Qual("crypto/sha256", "Sum256").Call(jen.Id("b")),
		jen.For(jen.List(jen.Id("_"), jen.Id("f")).Op(":=").Range().Id("m").Dot("Files")).Block(
			jen.If(jen.Id("f").Dot("Name").Op("==").Id("name").Op("&&").Id("f").Dot("SHA256").Op("==").Qual("encoding/hex", "EncodeToString").Call(jen.Id("sum").Index(jen.Op(":")))).Block(
				jen.Return(jen.Id("b"), jen.Nil()),
			),
		),
		jen.Return(jen.Nil(), jen.Qual(irPkg, "Errorf").Call(jen.Qual(irPkg, "CodeInvalidGraph"), jen.Lit(-1), jen.Id("name"),
			jen.Lit(name+": %s has SHA-256 %x, which manifest.json does not record for it: it was edited after generation; run go generate"),
			jen.Id("name"), jen.Id("sum"))),
	)

	f.Comment("CheckGraph reports whether doc, a graph document (protocol v1 JSON), is")
	f.Comment("still the graph this package was generated from: call it from a test with")
	f.Comment("the source file, and an edit without go generate fails that test.")
	f.Func().Id("CheckGraph").Params(jen.Id("doc").Index().Byte()).Error().Block(
		jen.List(jen.Id("g"), jen.Err()).Op(":=").Qual(irPkg, "DecodeBytes").Call(jen.Id("doc"), jen.Id("buildLimits")),
		jen.If(jen.Err().Op("!=").Nil()).Block(jen.Return(jen.Err())),
		jen.If(
			jen.Id("sum").Op(":=").Qual("crypto/sha256", "Sum256").Call(jen.Qual(irPkg, "Encode").Call(jen.Id("g"))),
			jen.Qual("encoding/hex", "EncodeToString").Call(jen.Id("sum").Index(jen.Op(":"))).Op("!=").Id("GraphSHA256"),
		).Block(
			jen.Return(jen.Qual(irPkg, "Errorf").Call(jen.Qual(irPkg, "CodeInvalidGraph"), jen.Lit(-1), jen.Lit(""),
				jen.Lit(name+": the graph has SHA-256 %x, but the package was generated from %s: run go generate"),
				jen.Id("sum"), jen.Id("GraphSHA256"))),
		),
		jen.Return(jen.Nil()),
	)

	run := []jen.Code{
		jen.Id("args").Op(":=").Qual(gpuccPkg, "Inputs").Values(),
	}
	for _, in := range ins {
		shape := make([]jen.Code, len(in.shape))
		for i, d := range in.shape {
			shape[i] = jen.Lit(d)
		}
		run = append(run, jen.If(
			jen.Err().Op(":=").Id("arg").Call(jen.Id("args"), jen.Lit("Inputs."+in.goName), jen.Lit(in.name),
				jen.Qual(irPkg, "Shape").Values(shape...), jen.Id("in").Dot(in.goName)),
			jen.Err().Op("!=").Nil(),
		).Block(jen.Return(jen.Id("Outputs").Values(), jen.Err())))
	}
	res := jen.Id("res")
	if len(outs) == 0 {
		res = jen.Id("_")
	}
	outVals := jen.Dict{}
	for _, o := range outs {
		outVals[jen.Id(o.goName)] = jen.Id("res").Dot("Outputs").Index(jen.Lit(o.name)).Dot("Data")
	}
	run = append(run,
		jen.List(res, jen.Err()).Op(":=").Id("e").Dot("exe").Dot("Run").Call(jen.Id("ctx"), jen.Id("args")),
		errRet(jen.Id("Outputs").Values()),
		jen.Return(jen.Id("Outputs").Values(outVals), jen.Nil()),
	)
	f.Comment("Run runs the build once with the inputs in in; call it as often as needed.")
	f.Comment("An input whose shape or length is not its input's is refused, with")
	f.Comment("invalid_input and an error naming the field.")
	f.Func().Params(jen.Id("e").Op("*").Id("Executable")).Id("Run").Params(
		jen.Id("ctx").Qual("context", "Context"),
		jen.Id("in").Id("Inputs"),
	).Params(jen.Id("Outputs"), jen.Error()).Block(run...)

	f.Comment("Executable returns the loaded gpucc.Executable, for RunWith (outputs kept")
	f.Comment("on the device or read into given slices), CompileTimings and Release.")
	f.Func().Params(jen.Id("e").Op("*").Id("Executable")).Id("Executable").Params().Op("*").Qual(gpuccPkg, "Executable").Block(
		jen.Return(jen.Id("e").Dot("exe")),
	)

	badShape := func(format string, args ...jen.Code) jen.Code {
		return jen.Return(jen.Qual(irPkg, "Errorf").Call(append([]jen.Code{jen.Qual(irPkg, "CodeInvalidInput"), jen.Lit(-1), jen.Id("field"),
			jen.Lit(name + ": %s " + format), jen.Id("field")}, args...)...))
	}
	f.Comment("arg puts v, the value of field, in args as the input named name, after")
	f.Comment("checking it against the input's shape; a nil v is left out.")
	f.Func().Id("arg").Params(
		jen.Id("args").Qual(gpuccPkg, "Inputs"),
		jen.List(jen.Id("field"), jen.Id("name")).String(),
		jen.Id("shape").Qual(irPkg, "Shape"),
		jen.Id("v").Qual(gpuccPkg, "Value"),
	).Error().Block(
		jen.Switch(jen.Id("t").Op(":=").Id("v").Assert(jen.Type())).Block(
			jen.Case(jen.Nil()).Block(jen.Return(jen.Nil())),
			jen.Case(jen.Qual(gpuccPkg, "Tensor")).Block(
				jen.If(jen.Len(jen.Id("t").Dot("Data")).Op("!=").Id("shape").Dot("Len").Call()).Block(
					badShape("has %d values; input %q of shape %v takes %d", jen.Len(jen.Id("t").Dot("Data")), jen.Id("name"), jen.Id("shape"), jen.Id("shape").Dot("Len").Call()),
				),
				jen.If(jen.Op("!").Id("shape").Dot("Equal").Call(jen.Id("t").Dot("Shape"))).Block(
					badShape("has shape %v; input %q takes %v", jen.Qual(irPkg, "Shape").Call(jen.Id("t").Dot("Shape")), jen.Id("name"), jen.Id("shape")),
				),
				jen.Id("v").Op("=").Id("t"),
			),
			jen.Case(jen.Op("*").Qual(gpuccPkg, "DeviceTensor")).Block(
				jen.If(jen.Id("t").Op("==").Nil()).Block(badShape("is a nil *gpucc.DeviceTensor")),
				jen.If(jen.Op("!").Id("shape").Dot("Equal").Call(jen.Id("t").Dot("Shape").Call())).Block(
					badShape("has shape %v; input %q takes %v", jen.Id("t").Dot("Shape").Call(), jen.Id("name"), jen.Id("shape")),
				),
			),
		),
		jen.Id("args").Index(jen.Id("name")).Op("=").Id("v"),
		jen.Return(jen.Nil()),
	)

	var buf bytes.Buffer
	if err := f.Render(&buf); err != nil {
		return nil, ir.Errorf(ir.CodeInternal, -1, "", "rendering the Go package: %v", err)
	}
	return buf.Bytes(), nil
}
