// Package wgsl generates WGSL compute shaders from lowered kernels.
//
// Every kernel binds its input operands (read-only storage), then its
// outputs (read-write storage), then a uniform Params block, whose contents
// come with the Shader. The driver liberties we found are defeated through
// it (bench/RESULTS.md has the evidence):
//
//   - relu and positive take their 0 and 1 results from Params.zero and
//     Params.one: drivers rewrite select(0, 1, c) * k to select(0, k, c),
//     losing the sign of 0 * -k.
//   - matmul accumulators start at Params.zero: a driver that sees a
//     literal +0 folds +0 + p into p, which keeps a -0 the reference turns
//     into +0 (the H200's does).
//   - Params.one is always 1.0: products are multiplied by it so that no
//     driver can contract `a*b + c` into a fused multiply-add (it would round
//     once where the reference rounds twice; the H200's driver does this
//     silently). A product times a runtime 1.0 is exact, and so is an FMA
//     formed from it. Subtrahends are multiplied by it too, so that no
//     driver folds x - x to +0 (lavapipe's does; it is NaN for infinite x).
//   - The kernel's float constants live in Params.k, not in the source:
//     drivers that treat arithmetic as reassociable (lavapipe's NIR does)
//     fold (x + c1) - c2 into x + (c1 - c2) when they can see c1 and c2.
//
// As a bonus the WGSL of a kernel does not depend on its constants, so the
// pipeline cache serves every graph of the same structure.
package wgsl

import (
	"encoding/binary"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/gpucc/gpucc/codegen"
	"github.com/gpucc/gpucc/ir"
)

// Config names the generator's tuning knobs that change its output without
// changing the kernel (Vectorise, VectorsPerThread, VectorThreads, RowThreads, RowCheapThreads, RowRootOnce, RowDivFast, RowDivNear, RowPartsLazy, RowMaxKeys, RowMaxAtomic,
// RowContiguous, RowVec4, AttentionTile, AttentionOnlineTile, MatmulEpilogueLoop), and ir.AttentionOnlineFrom and
// ir.AttentionSplit, which pick attention's rounding order from its shapes and are not in the
// program's key: caches of generated code must include them in their keys.
func Config() string {
	return fmt.Sprintf("vec=%t,vpt=%d,threads=%d,rowthreads=%d,cheapthreads=%d,rootonce=%t,divfast=%t,divnear=%t,partslazy=%t,maxkeys=%t,maxatomic=%t,contig=%t,rowvec4=%t,att=%s,online=%s,onlinefrom=%d,split=%d,mmloop=%t",
		Vectorise, VectorsPerThread, VectorThreads, RowThreads, RowCheapThreads, RowRootOnce, RowDivFast, RowDivNear, RowPartsLazy, RowMaxKeys, RowMaxAtomic, RowContiguous, RowVec4, AttentionTile, AttentionOnlineTile, ir.AttentionOnlineFrom,
		ir.AttentionSplit, MatmulEpilogueLoop)
}

// Workgroup sizes.
const (
	ElementwiseThreads = 64  // the seed's @workgroup_size(64)
	SumThreads         = 256 // threads of a workgroup reducing one block of a sum
	maxGroupsPerDim    = 65535
)

// Lang is WGSL's syntax for the shared renderer.
var Lang = codegen.Lang{
	Let:       func(_ ir.XType, name, expr string) string { return "let " + name + " = " + expr + ";" },
	Bits:      wgslBits,
	Select:    func(cond, t, f string) string { return "select(" + f + ", " + t + ", " + cond + ")" },
	Keep:      func(p string) string { return "(" + p + ") * params.one" },
	Uint:      func(n int) string { return fmt.Sprintf("%du", n) },
	UBits:     func(v uint32) string { return fmt.Sprintf("0x%08xu", v) },
	FloatBits: func(f string) string { return "bitcast<u32>(" + f + ")" },
	BitsFloat: func(u string) string { return "bitcast<f32>(" + u + ")" },
	Const:     func(slot int) string { return fmt.Sprintf("params.k[%d][%d]", slot/4, slot%4) },
	Zero:      "params.zero",
	One:       "params.one",
	Func:      func(name string, ps []string) string { return wgslFunc(name, ps, "f32") },
	Index:     "u32",
	Types:     []string{codegen.F32: "f32"},
	Decl:      wgslDecl,
	For:       wgslFor,
	Opaque:    wgslOpaque,
	Table:     wgslTable,
	Array:     wgslArray,
}

// wgslBits renders a float32 of bits b. A non-finite one (±Inf, NaN) is
// made opaque, its bits or'd with params.zero's (+0): Tint, Chromium's
// WGSL compiler, refuses a constant expression that is no finite f32
// ("value nan cannot be represented as 'f32'", as 634a89a's -Inf was),
// where naga takes it.
func wgslBits(b uint32) string {
	if b&0x7f800000 == 0x7f800000 {
		return fmt.Sprintf("bitcast<f32>(0x%08xu | bitcast<u32>(params.zero))", b)
	}
	return fmt.Sprintf("bitcast<f32>(0x%08xu)", b)
}

// wgslFunc renders a function head over floats of type t.
func wgslFunc(name string, ps []string, t string) string {
	typed := make([]string, len(ps))
	for i, p := range ps {
		typed[i] = p + ": " + t
	}
	return "fn " + name + "(" + strings.Join(typed, ", ") + ") -> " + t + " {"
}

// vecLang renders elementwise bodies over vec4<f32>, four elements per
// thread: the wide loads and stores a memory-bound kernel needs to get near
// the memory's bandwidth. Arithmetic is lane by lane, so results are the
// scalar kernel's, bit for bit.
var vecLang = codegen.Lang{
	Let:       Lang.Let,
	Bits:      func(b uint32) string { return "vec4<f32>(" + Lang.Bits(b) + ")" },
	Select:    Lang.Select,
	Keep:      Lang.Keep,
	Uint:      Lang.Uint,
	UBits:     func(v uint32) string { return "vec4<u32>(" + Lang.UBits(v) + ")" },
	FloatBits: func(f string) string { return "bitcast<vec4<u32>>(" + f + ")" },
	BitsFloat: func(u string) string { return "bitcast<vec4<f32>>(" + u + ")" },
	Const:     func(slot int) string { return "vec4<f32>(" + Lang.Const(slot) + ")" },
	Zero:      "vec4<f32>(params.zero)",
	One:       "vec4<f32>(params.one)",
	Func:      func(name string, ps []string) string { return wgslFunc(name, ps, "vec4<f32>") },
}

// vectorised reports whether an elementwise kernel runs four elements per
// thread: its length is a multiple of 4 and every operand reads whole
// aligned vec4s (see vec4Operand), and Vectorise allows it.
func vectorised(k *ir.Kernel) bool {
	if !Vectorise || k.Kind != ir.KernelElementwise || k.Shape.Len()%4 != 0 {
		return false
	}
	for _, in := range k.Inputs {
		if _, ok := vec4Operand(in); !ok {
			return false
		}
	}
	return true
}

// vec4Operand returns the operand that reads vec4 j of op's buffer where
// op reads its elements 4j..4j+3, when there is one: op's innermost
// coalesced dimension is contiguous (stride 1) and a multiple of 4 long,
// and every other stride and the offset are multiples of 4 (a plain
// operand, or a broadcast of rows of a multiple of 4 elements, or a slice
// starting at a multiple of 4, say).
func vec4Operand(op ir.Operand) (ir.Operand, bool) {
	c := op.Coalesced()
	last := len(c.Shape) - 1
	if last < 0 || c.Strides[last] != 1 || c.Shape[last]%4 != 0 || c.Offset%4 != 0 {
		return c, false
	}
	q := ir.Operand{Buffer: c.Buffer, Shape: slices.Clone(c.Shape), Strides: make([]int, len(c.Strides)), Offset: c.Offset / 4}
	q.Shape[last] /= 4
	q.Strides[last] = 1
	for d, s := range c.Strides[:last] {
		if s%4 != 0 {
			return c, false
		}
		q.Strides[d] = s / 4
	}
	return q, true
}

// Params returns kernel k's uniform block: one = 1.0 and zero = 0.0 in the
// first 16-byte row, then k's constants (codegen.Constants), four per row,
// at least one row of them. It is all a cached shader needs to serve a
// graph that differs only in constants.
func Params(k *ir.Kernel) []byte {
	consts := codegen.Constants(k)
	rows := 1 + max(1, (len(consts)+3)/4) // WGSL arrays are never empty
	out := make([]byte, 16*rows)
	binary.LittleEndian.PutUint32(out, math.Float32bits(1))
	for i, c := range consts {
		binary.LittleEndian.PutUint32(out[16+4*i:], math.Float32bits(c))
	}
	return out
}

// Target is the WGSL generator: one Shader per kernel, in program order.
// With Fast, matmul products are left contractable (see GenerateFast's
// doc in matmul.go): results are then not cpuref's. With Fused, the
// device's fma() rounds once (a probe at device open saw it: see
// runtime/webgpu's fmaprobe.go), and division, tanh's division and the
// rows kernels' division by a per-row divisor take their fused twins
// (ir.Fused, ir.DivRowFastFused): cpuref's bits, fewer instructions. Never
// set it for a device whose fma was not proved fused: rounded twice, the
// twins give other bits (ir's TestFusedNeedsOneRounding). With FastPaths,
// exp, tanh and sigmoid take their fast paths (fast.go): only for a device
// whose fast-path probe (FastProbe) passed, with the same Fused.
// Storage is the device's maxComputeWorkgroupStorageSize in bytes, which
// a kernel may fill only where a knob asks for it (an online attention
// tile's w flag); 0, or anything below WebGPU's default 16 KiB, is the
// default, so that kernels exported for any device (gpucc build, the
// page) stay within it.
type Target struct {
	Fast, Fused, FastPaths bool
	Storage                int
}

// storage is the workgroup storage t's kernels may use: Storage, or
// WebGPU's default where it is less.
func (t Target) storage() int { return max(t.Storage, attStorage) }

var _ codegen.Target[[]codegen.Shader] = Target{}

// Name returns "wgsl/" and the generator's tuning (Config).
func (t Target) Name() string {
	name := "wgsl/"
	if t.Fast {
		name += "fast/"
	}
	if t.Fused {
		name += "fma/"
	}
	if t.FastPaths {
		name += "paths/"
	}
	if t.storage() > attStorage && AttentionOnlineTile.Wide {
		// The only knob whose text depends on the device's storage.
		name += fmt.Sprintf("storage=%d/", t.storage())
	}
	return name + Config()
}

// Emit returns the shaders of a sealed program, one per kernel.
func (t Target) Emit(sp *ir.Sealed) ([]codegen.Shader, error) {
	if attTileEnv != nil {
		return nil, attTileEnv
	}
	if fastPathsEnv != nil {
		return nil, fastPathsEnv
	}
	p := sp.Program()
	defer codegen.MemoNests(p.Kernels)()
	for i := range p.Kernels {
		if err := checkLoops(&p.Kernels[i]); err != nil {
			return nil, err
		}
	}
	shaders := make([]codegen.Shader, len(p.Kernels))
	codegen.Each(len(p.Kernels), func(i int) { shaders[i] = generate(&p.Kernels[i], t) })
	return shaders, nil
}

// generate returns the shader of kernel k.
func generate(k *ir.Kernel, t Target) codegen.Shader {
	s := codegen.Shader{Name: k.Name, Entry: "main"}
	var b strings.Builder
	b.WriteString("// Code generated by gpucc. DO NOT EDIT.\n")
	fmt.Fprintf(&b, "// kernel %s (%s), nodes %v\n\n", k.Name, k.Kind, k.Nodes)
	consts := codegen.Constants(k)
	s.Params = Params(k)
	fmt.Fprintf(&b, "struct Params { one: f32, zero: f32, k: array<vec4<f32>, %d> }\n\n", max(1, (len(consts)+3)/4))
	binding := 0
	elem := "f32"
	if vectorised(k) {
		elem = "vec4<f32>"
	}
	for i := range k.Inputs {
		elem := elem
		if e := attInputElem(k, i); e != "" {
			elem = e
		}
		if e := matmulInputElem(k, i); e != "" {
			elem = e
		}
		if e := rowsInputElem(k, i); e != "" {
			elem = e
		}
		fmt.Fprintf(&b, "@group(0) @binding(%d) var<storage, read> in%d: array<%s>;\n", binding, i, elem)
		s.Bindings = append(s.Bindings, codegen.ReadOnly)
		binding++
	}
	for i := range k.Outputs {
		elem := elem
		if e := rowsOutputElem(k, i); e != "" {
			elem = e
		}
		fmt.Fprintf(&b, "@group(0) @binding(%d) var<storage, read_write> out%d: array<%s>;\n", binding, i, elem)
		s.Bindings = append(s.Bindings, codegen.ReadWrite)
		binding++
	}
	fmt.Fprintf(&b, "@group(0) @binding(%d) var<uniform> params: Params;\n\n", binding)
	s.Bindings = append(s.Bindings, codegen.Uniform)
	lang := Lang
	if vectorised(k) {
		lang = vecLang
	}
	if t.Fused {
		lang = fusedLang(lang)
	}
	funcs := codegen.Funcs(lang, k)
	if t.FastPaths {
		funcs = withFastPaths(funcs, lang, t.Fused)
	}
	b.WriteString(codegen.Indent(funcs, 0))
	writerOf(k.Kind).emit(&b, k, &s, t)
	s.Source = b.String()
	return s
}

// load renders the read of operand j at element index i.
func load(k *ir.Kernel, i string) func(int) string {
	return func(j int) string {
		return fmt.Sprintf("in%d[%s]", j, codegen.Index(Lang, k.Inputs[j], i))
	}
}

func stores(k *ir.Kernel, i string) []string {
	var lines []string
	for j, v := range k.Stores {
		lines = append(lines, fmt.Sprintf("out%d[%s] = %s;", j, i, codegen.Value(int(v))))
	}
	return lines
}

// VectorsPerThread is how many vec4s each thread of a large vectorised
// elementwise kernel handles: more bytes in flight per thread, which a
// memory-bound kernel needs to approach bandwidth, and more registers,
// which a kernel of many operations an element pays for in occupancy.
// The vec4s of one workgroup are contiguous, so every access stays
// coalesced. Two: on the H200 (2026-11-30) relu(a*b+c) over 64M took
// 0.256 ms at 2 or 4 and 0.296 at 1; on the H100 (2026-12-06), [8192,1024]
// at 4, 2 and 1 took exp 0.0333, 0.0302, 0.0291 ms, tanh 0.0406, 0.0358,
// 0.0355, sigmoid 0.0363, 0.0324, 0.0307 and GELU 0.0440, 0.0385, 0.0386.
var VectorsPerThread = 2

// Vectorise lets elementwise kernels whose operands allow it take vec4s
// (vectorised); off, every one takes single elements, as those whose
// operands do not allow it do. A knob for the benchmarks (Config names
// it): the same bits.
var Vectorise = true

// VectorThreads is the workgroup size of large elementwise kernels, of
// vec4s or of single elements.
var VectorThreads = 256

// elementwise emits an elementwise kernel. Each thread of a workgroup of
// VectorThreads takes per items (vec4s where the kernel is vectorised, else
// single elements), VectorThreads apart, so that every access stays
// coalesced; every item's loads are issued before any arithmetic or store,
// so they are all in flight at once, and the tail clamps its reads and
// guards its writes. A thread takes VectorsPerThread vec4s, or four times
// as many elements: the same bytes in flight. Until 2026-12-06 a kernel
// that could not take vec4s (a length or a view not a multiple of 4) gave
// each element its own thread, in workgroups of 64: on the H100 tanh over
// [8192,1024] so took 0.124 ms against 0.036 with vec4s, whatever the
// operation, with too few bytes in flight for the memory.
func elementwise(b *strings.Builder, k *ir.Kernel, s *codegen.Shader) {
	lang, width, per := Lang, 1, 4*VectorsPerThread
	operand := func(in ir.Operand) ir.Operand { return in }
	if vectorised(k) {
		lang, width, per = vecLang, 4, VectorsPerThread
		operand = func(in ir.Operand) ir.Operand { q, _ := vec4Operand(in); return q }
	}
	n := k.Shape.Len() / width
	if n < VectorThreads*per*64 { // small: more workgroups serve better
		per = 1
	}
	span := VectorThreads * per
	s.Workgroup = [3]int{VectorThreads, 1, 1}
	s.Groups = codegen.Groups1D((n+span-1)/span, maxGroupsPerDim)
	fmt.Fprintf(b, "@compute @workgroup_size(%d)\n", VectorThreads)
	b.WriteString("fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {\n")
	fmt.Fprintf(b, "\tlet base = (wg.x + wg.y * nwg.x) * %du + lid.x;\n", span)
	for j := 0; j < per; j++ {
		fmt.Fprintf(b, "\tlet i%d = base + %du;\n", j, j*VectorThreads)
		for op, in := range k.Inputs {
			q := operand(in)
			i := fmt.Sprintf("i%d", j)
			if len(q.Strides) > 0 && q.Strides[0] != 0 { // the outermost index is not reduced modulo anything
				i = fmt.Sprintf("min(i%d, %du)", j, n-1)
			}
			fmt.Fprintf(b, "\tlet l%d_%d = in%d[%s];\n", j, op, op, codegen.Index(Lang, q, i))
		}
	}
	for j := 0; j < per; j++ {
		fmt.Fprintf(b, "\tif (i%d < %du) {\n", j, n)
		preloaded := func(op int) string { return fmt.Sprintf("l%d_%d", j, op) }
		b.WriteString(codegen.Indent(codegen.Body(lang, k, preloaded, ""), 2))
		b.WriteString(codegen.Indent(stores(k, fmt.Sprintf("i%d", j)), 2))
		b.WriteString("\t}\n")
	}
	b.WriteString("}\n")
}

// sum emits a reduction (sum or max) that reproduces cpuref's tree. Each
// workgroup reduces one aligned block of one output's leaves (all of them,
// or with k.Blocks > 1 one of its Blocks blocks): a block of at most
// rowGroup·SumThreads leaves is read coalesced and reduced through
// workgroup memory (stagedSum); in a longer one each thread folds a
// contiguous run of leaves with a binary counter (the pairwise tree of
// that run), then the threads' partials are combined in workgroup memory
// by the same contiguous tree. Leaves past the end are the identity (-0,
// -Inf). Outputs of fewer than SumThreads leaves each get a thread instead
// (rows), and column reductions tiles of adjacent outputs (columns).
func sum(b *strings.Builder, k *ir.Kernel, s *codegen.Shader) {
	red := ir.ReductionOf(k.Shape, k.Keep)
	if perThread(k) {
		rows(b, k, s, red)
		return
	}
	if columnar(k, red) {
		columns(b, k, s, red)
		return
	}
	n := red.Leaves
	p, _ := codegen.SumBlock(n, SumThreads)
	blocks := max(k.Blocks, 1)
	leaves := p / blocks // per workgroup, a power of two
	per := max(leaves/SumThreads, 1)
	s.Workgroup = [3]int{SumThreads, 1, 1}
	s.Groups = codegen.Groups1D(red.Outputs*blocks, maxGroupsPerDim)
	if per <= rowGroup {
		stagedSum(b, k, red, leaves, blocks)
		return
	}
	levels := codegen.Log2(per)
	combine(b, k)
	fmt.Fprintf(b, "var<workgroup> part: array<f32, %d>;\n\n", SumThreads)
	fmt.Fprintf(b, "@compute @workgroup_size(%d)\n", SumThreads)
	b.WriteString("fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {\n")
	b.WriteString("\tlet t = lid.x;\n\tlet g = wg.x + wg.y * nwg.x;\n")
	if red.Outputs > 1 {
		fmt.Fprintf(b, "\tlet o = g / %du;\n\tlet block = g %% %du;\n", blocks, blocks)
	} else {
		b.WriteString("\tlet block = g;\n")
	}
	fmt.Fprintf(b, "\tvar st: array<f32, %d>;\n", levels+1)
	fmt.Fprintf(b, "\tfor (var j = 0u; j < %du; j++) {\n", per)
	fmt.Fprintf(b, "\t\tlet r = block * %du + t * %du + j;\n", leaves, per)
	fmt.Fprintf(b, "\t\tvar leaf = %s; // the padding leaf\n", identity(k))
	cond := fmt.Sprintf("r < %du", n)
	if leaves < SumThreads && blocks > 1 { // threads past the block's leaves hold padding
		cond += fmt.Sprintf(" && t < %du", leaves)
	}
	fmt.Fprintf(b, "\t\tif (%s) {\n", cond)
	fmt.Fprintf(b, "\t\t\tlet i = %s;\n", codegen.LeafIndex(Lang, red, "o", "r"))
	b.WriteString(codegen.Indent(codegen.Prologue(Lang, k, load(k, "i")), 3))
	fmt.Fprintf(b, "\t\t\tleaf = %s;\n\t\t}\n", codegen.Value(int(k.Stores[0])))
	b.WriteString(codegen.Indent(codegen.CounterPush(Lang, "leaf", "j", "combine"), 2) + "\t}\n")
	fmt.Fprintf(b, "\tpart[t] = st[%d];\n\tworkgroupBarrier();\n", levels)
	fmt.Fprintf(b, "\tfor (var w = 1u; w < %du; w = w * 2u) {\n", SumThreads)
	b.WriteString("\t\tif (t % (2u * w) == 0u) { part[t] = combine(part[t], part[t + w]); }\n\t\tworkgroupBarrier();\n\t}\n")
	if k.AccIndex() < 0 {
		b.WriteString("\tif (t == 0u) { out0[g] = part[0]; }\n}\n")
		return
	}
	b.WriteString("\tif (t == 0u) {\n\t\tout0[g] = part[0];\n")
	if red.Outputs == 1 {
		b.WriteString("\t\tlet o = 0u;\n")
	}
	epilogue(b, k, "part[0]", 2)
	b.WriteString("\t}\n}\n")
}

// stagedSum is sum's kernel for blocks of at most rowGroup·SumThreads
// leaves (a row of 1024 leaves, a split sum's block of 4096), read
// coalesced: thread t loads leaves j·SumThreads+t of the block, all at
// once (written out, so that the loads are in flight together), and the
// block is reduced by cpuref's tree through workgroup memory (staged). A
// max takes order keys (RowMaxKeys) and, where the workgroup storage has
// room, one workgroup atomicMax (RowMaxAtomic), as a rows kernel's does:
// the same root but for which of several NaNs it is.
func stagedSum(b *strings.Builder, k *ir.Kernel, red ir.Reduction, leaves, blocks int) {
	n := red.Leaves
	per := max(leaves/SumThreads, 1)
	combine(b, k)
	kk, c, leaf, pad, atomics := floatKeying, "combine", codegen.Value(int(k.Stores[0])), identity(k), 0
	if RowMaxKeys && k.Reduce.Info().Combine == ir.OpMaximum {
		b.WriteString(maxKeyFuncs)
		kk, c, leaf, pad = maxKeying, maxKeying.combine, "maxkey("+leaf+")", maxKeying.identity
		if RowMaxAtomic {
			atomics = 1
		}
	}
	st := stagedArrays(b, max(leaves, SumThreads), SumThreads, false, atomics)
	if st.atomic {
		b.WriteString("var<workgroup> wk_lf: atomic<u32>; // zero (-Inf's key) at the workgroup's start\n\n")
	}
	fmt.Fprintf(b, "@compute @workgroup_size(%d)\n", SumThreads)
	b.WriteString("fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {\n")
	b.WriteString("\tlet t = lid.x;\n\tlet g = wg.x + wg.y * nwg.x;\n")
	if red.Outputs > 1 {
		fmt.Fprintf(b, "\tlet o = g / %du;\n\tlet block = g %% %du;\n", blocks, blocks)
	} else {
		b.WriteString("\tlet block = g;\n")
	}
	fmt.Fprintf(b, "\tvar lf: array<%s, %d>;\n\tvar %s: array<%s, %d>;\n", kk.typ, per, kk.grp, kk.typ, rowGroup)
	for j := range per {
		fmt.Fprintf(b, "\t{\n\t\tlet r = block * %du + %du + t;\n", leaves, j*SumThreads)
		fmt.Fprintf(b, "\t\tlf[%d] = %s; // the padding leaf\n", j, pad)
		cond := fmt.Sprintf("r < %du", n)
		if leaves < SumThreads && blocks > 1 { // threads past the block's leaves hold padding
			cond += fmt.Sprintf(" && t < %du", leaves)
		}
		fmt.Fprintf(b, "\t\tif (%s) {\n", cond)
		fmt.Fprintf(b, "\t\t\tlet i = %s;\n", codegen.LeafIndex(Lang, red, "o", "r"))
		b.WriteString(codegen.Indent(codegen.Prologue(Lang, k, load(k, "i")), 3))
		fmt.Fprintf(b, "\t\t\tlf[%d] = %s;\n\t\t}\n\t}\n", j, leaf)
	}
	b.WriteString(codegen.Indent(st.treeOf(kk, "lf", per, c, "root", false), 1))
	if k.AccIndex() < 0 {
		b.WriteString("\tif (t == 0u) { out0[g] = root; }\n}\n")
		return
	}
	b.WriteString("\tif (t == 0u) {\n\t\tout0[g] = root;\n")
	if red.Outputs == 1 {
		b.WriteString("\t\tlet o = 0u;\n")
	}
	epilogue(b, k, "root", 2)
	b.WriteString("\t}\n}\n")
}

// perThread reports whether reduction kernel k gives each output one
// thread (rows): it has several outputs of fewer than SumThreads leaves
// and is not split.
func perThread(k *ir.Kernel) bool {
	red := ir.ReductionOf(k.Shape, k.Keep)
	p, _ := codegen.SumBlock(red.Leaves, SumThreads)
	return k.Blocks <= 1 && red.Outputs > 1 && p < SumThreads
}

// rows emits a reduction whose outputs have a thread each: the thread
// walks the output's leaves in order with a binary counter over a stack of
// complete subtrees, then combines the subtrees left (the set bits of the
// leaf count) from the smallest up: the padded tree, as the padding leaves
// change nothing.
func rows(b *strings.Builder, k *ir.Kernel, s *codegen.Shader, red ir.Reduction) {
	n := red.Leaves
	p, _ := codegen.SumBlock(n, 1)
	s.Workgroup = [3]int{ElementwiseThreads, 1, 1}
	s.Groups = codegen.Groups1D((red.Outputs+ElementwiseThreads-1)/ElementwiseThreads, maxGroupsPerDim)
	combine(b, k)
	fmt.Fprintf(b, "@compute @workgroup_size(%d)\n", ElementwiseThreads)
	b.WriteString("fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {\n")
	fmt.Fprintf(b, "\tlet o = gid.x + gid.y * nwg.x * %du;\n", ElementwiseThreads)
	fmt.Fprintf(b, "\tif (o >= %du) { return; }\n", red.Outputs)
	fmt.Fprintf(b, "\tvar st: array<f32, %d>;\n", codegen.Log2(p)+1)
	fmt.Fprintf(b, "\tfor (var r = 0u; r < %du; r++) {\n", n)
	fmt.Fprintf(b, "\t\tlet i = %s;\n", codegen.LeafIndex(Lang, red, "o", "r"))
	b.WriteString(codegen.Indent(codegen.Prologue(Lang, k, load(k, "i")), 2))
	fmt.Fprintf(b, "\t\tvar leaf = %s;\n", codegen.Value(int(k.Stores[0])))
	b.WriteString(codegen.Indent(codegen.CounterPush(Lang, "leaf", "r", "combine"), 2) + "\t}\n")
	b.WriteString(codegen.Indent(codegen.CounterFold(Lang, "f32", n, "combine"), 1))
	b.WriteString("\tout0[o] = acc;\n")
	epilogue(b, k, "acc", 1)
	b.WriteString("}\n")
}

// epilogue writes a reduction's epilogue at output o (a variable of the
// shader) from its reduced value acc, and its stores.
func epilogue(b *strings.Builder, k *ir.Kernel, acc string, tabs int) {
	lines := codegen.Epilogue(Lang, k, load(k, "o"), acc)
	for j, v := range k.Stores[1:] {
		lines = append(lines, fmt.Sprintf("out%d[o] = %s;", j+1, codegen.Value(int(v))))
	}
	b.WriteString(codegen.Indent(lines, tabs))
}

// identity renders the reduction's padding leaf. An infinity is made from
// Params.zero: Tint refuses a constant expression that is infinite.
func identity(k *ir.Kernel) string {
	bits := k.Reduce.Info().Identity
	if bits&0x7f800000 == 0x7f800000 {
		return fmt.Sprintf("bitcast<f32>(0x%08xu | bitcast<u32>(params.zero))", bits)
	}
	return Lang.Bits(bits)
}

// combine writes the reduction's combining function, combine(a, b).
func combine(b *strings.Builder, k *ir.Kernel) {
	b.WriteString("fn combine(a: f32, b: f32) -> f32 {\n")
	b.WriteString(codegen.Indent(codegen.Combine(Lang, k.Reduce, "a", "b", "m"), 1))
	b.WriteString("\treturn m;\n}\n\n")
}

func life(b *strings.Builder, k *ir.Kernel, s *codegen.Shader) {
	h, w := k.Shape[0], k.Shape[1]
	n := h * w
	s.Workgroup = [3]int{ElementwiseThreads, 1, 1}
	s.Groups = codegen.Groups1D((n+ElementwiseThreads-1)/ElementwiseThreads, maxGroupsPerDim)
	fmt.Fprintf(b, "const H = %du;\nconst W = %du;\n\n", h, w)
	b.WriteString("fn alive(r: u32, c: u32) -> u32 {\n")
	fmt.Fprintf(b, "\treturn select(0u, 1u, in0[%s] > 0.0);\n}\n\n", codegen.Index(Lang, k.Inputs[0], "r * W + c"))
	fmt.Fprintf(b, "@compute @workgroup_size(%d)\n", ElementwiseThreads)
	b.WriteString("fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {\n")
	fmt.Fprintf(b, "\tlet i = gid.x + gid.y * nwg.x * %du;\n", ElementwiseThreads)
	fmt.Fprintf(b, "\tif (i >= %du) { return; }\n", n)
	b.WriteString(`	let r = i / W;
	let c = i % W;
	let up = (r + H - 1u) % H;
	let down = (r + 1u) % H;
	let left = (c + W - 1u) % W;
	let right = (c + 1u) % W;
	let live = alive(up, left) + alive(up, c) + alive(up, right) + alive(r, left) + alive(r, right) + alive(down, left) + alive(down, c) + alive(down, right);
	let next = live == 3u || (live == 2u && alive(r, c) == 1u);
	out0[i] = select(0.0, 1.0, next);
}
`)
}
