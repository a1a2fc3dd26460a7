package wgsl

import (
	"fmt"
	"strings"

	"github.com/gpucc/gpucc/codegen"
	"github.com/gpucc/gpucc/ir"
)

// matmulVec4 emits the large-matrix kernel: a BM×BN tile per workgroup of
// (BN/TN)×(BM/TM) threads with TN == 8, each thread owning TM rows × 8
// columns held as vec4 accumulators. Tiles of A and B are staged through
// workgroup memory as vec4s, BK deep. Each accumulator lane adds one rounded
// product per k, in ascending k, exactly as cpuref does; the product is
// multiplied by the uniform 1.0 so no contraction can change a bit.
func matmulVec4(b *strings.Builder, k *ir.Kernel, s *codegen.Shader) {
	t := k.Tile
	tx, ty := t.BN/t.TN, t.BM/t.TM
	threads := tx * ty
	s.Workgroup = [3]int{tx, ty, 1}
	s.Groups = [3]int{(k.N + t.BN - 1) / t.BN, (k.M + t.BM - 1) / t.BM, 1}
	a, bb := k.Inputs[0], k.Inputs[1]

	fmt.Fprintf(b, "const M = %du;\nconst N = %du;\nconst K = %du;\n\n", k.M, k.N, k.K)
	fmt.Fprintf(b, "var<workgroup> As: array<vec4<f32>, %d>; // As[kk][row], rows in vec4s\n", t.BK*t.BM/4)
	fmt.Fprintf(b, "var<workgroup> Bs: array<vec4<f32>, %d>; // Bs[kk][col], cols in vec4s\n\n", t.BK*t.BN/4)
	fmt.Fprintf(b, "@compute @workgroup_size(%d, %d)\n", tx, ty)
	b.WriteString("fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>) {\n")
	fmt.Fprintf(b, "\tlet row0 = wg.y * %du;\n\tlet col0 = wg.x * %du;\n\tlet tid = lid.y * %du + lid.x;\n", t.BM, t.BN, tx)
	for r := 0; r < t.TM; r++ {
		for c := 0; c < t.TN/4; c++ {
			fmt.Fprintf(b, "\tvar c%d_%d = vec4<f32>(0.0);\n", r, c)
		}
	}
	fmt.Fprintf(b, "\tfor (var kt = 0u; kt < K; kt += %du) {\n", t.BK)
	stageA(b, a, k, t, threads)
	stageB(b, bb, k, t, threads)
	b.WriteString("\t\tworkgroupBarrier();\n")
	fmt.Fprintf(b, "\t\tlet kmax = min(%du, K - kt);\n", t.BK)
	b.WriteString("\t\tfor (var kk = 0u; kk < kmax; kk++) {\n")
	for r := 0; r < t.TM/4; r++ {
		fmt.Fprintf(b, "\t\t\tlet a%d = As[kk * %du + lid.y * %du + %du];\n", r, t.BM/4, t.TM/4, r)
	}
	for c := 0; c < t.TN/4; c++ {
		fmt.Fprintf(b, "\t\t\tlet b%d = Bs[kk * %du + lid.x * %du + %du];\n", c, t.BN/4, t.TN/4, c)
	}
	lanes := "xyzw"
	for r := 0; r < t.TM; r++ {
		for c := 0; c < t.TN/4; c++ {
			fmt.Fprintf(b, "\t\t\tc%d_%d = c%d_%d + (a%d.%c * b%d) * params.one;\n", r, c, r, c, r/4, lanes[r%4], c)
		}
	}
	b.WriteString("\t\t}\n\t\tworkgroupBarrier();\n\t}\n")
	// The epilogue is unrolled: indexing the accumulators dynamically would
	// push them out of registers.
	for r := 0; r < t.TM; r++ {
		fmt.Fprintf(b, "\tlet r%d = row0 + lid.y * %du + %du;\n", r, t.TM, r)
		for c := 0; c < t.TN; c++ {
			fmt.Fprintf(b, "\t{\n\t\tlet col = col0 + lid.x * %du + %du;\n", t.TN, c)
			fmt.Fprintf(b, "\t\tif (r%d < M && col < N) {\n\t\t\tlet i = r%d * N + col;\n", r, r)
			acc := fmt.Sprintf("c%d_%d.%c", r, c/4, lanes[c%4])
			b.WriteString(codegen.Indent(codegen.Body(Lang, k, load(k, "i"), acc), 3))
			b.WriteString(codegen.Indent(stores(k, "i"), 3))
			b.WriteString("\t\t}\n\t}\n")
		}
	}
	b.WriteString("}\n")
}

// stageA copies the BM×BK tile of A at (row0, kt) into As, zero outside A.
func stageA(b *strings.Builder, a ir.Operand, k *ir.Kernel, t ir.Tile, threads int) {
	if a.Transposed { // buffer [K,M]: four rows of one k are contiguous
		fmt.Fprintf(b, "\t\tfor (var e = tid; e < %du; e += %du) {\n", t.BK*t.BM/4, threads)
		fmt.Fprintf(b, "\t\t\tlet kk = e / %du;\n\t\t\tlet r = (e %% %du) * 4u;\n", t.BM/4, t.BM/4)
		b.WriteString("\t\t\tvar v = vec4<f32>(0.0);\n")
		b.WriteString("\t\t\tif (row0 + r < M && kt + kk < K) {\n")
		b.WriteString("\t\t\t\tlet base = (kt + kk) * M + row0 + r;\n")
		b.WriteString("\t\t\t\tv = vec4<f32>(in0[base], in0[base + 1u], in0[base + 2u], in0[base + 3u]);\n\t\t\t}\n")
		b.WriteString("\t\t\tAs[e] = v;\n\t\t}\n")
		return
	}
	// buffer [M,K]: four k of one row are contiguous; store them transposed.
	fmt.Fprintf(b, "\t\tfor (var e = tid; e < %du; e += %du) {\n", t.BK*t.BM/4, threads)
	fmt.Fprintf(b, "\t\t\tlet r = e / %du;\n\t\t\tlet kq = (e %% %du) * 4u;\n", t.BK/4, t.BK/4)
	b.WriteString("\t\t\tvar v = vec4<f32>(0.0);\n")
	b.WriteString("\t\t\tif (row0 + r < M && kt + kq < K) {\n")
	b.WriteString("\t\t\t\tlet base = (row0 + r) * K + kt + kq;\n")
	b.WriteString("\t\t\t\tv = vec4<f32>(in0[base], in0[base + 1u], in0[base + 2u], in0[base + 3u]);\n\t\t\t}\n")
	for j := 0; j < 4; j++ {
		fmt.Fprintf(b, "\t\t\tAs[(kq + %du) * %du + r / 4u][r %% 4u] = v[%d];\n", j, t.BM/4, j)
	}
	b.WriteString("\t\t}\n")
}

// stageB copies the BK×BN tile of B at (kt, col0) into Bs, zero outside B.
func stageB(b *strings.Builder, bb ir.Operand, k *ir.Kernel, t ir.Tile, threads int) {
	if !bb.Transposed { // buffer [K,N]: four columns of one k are contiguous
		fmt.Fprintf(b, "\t\tfor (var e = tid; e < %du; e += %du) {\n", t.BK*t.BN/4, threads)
		fmt.Fprintf(b, "\t\t\tlet kk = e / %du;\n\t\t\tlet c = (e %% %du) * 4u;\n", t.BN/4, t.BN/4)
		b.WriteString("\t\t\tvar v = vec4<f32>(0.0);\n")
		b.WriteString("\t\t\tif (col0 + c < N && kt + kk < K) {\n")
		b.WriteString("\t\t\t\tlet base = (kt + kk) * N + col0 + c;\n")
		b.WriteString("\t\t\t\tv = vec4<f32>(in1[base], in1[base + 1u], in1[base + 2u], in1[base + 3u]);\n\t\t\t}\n")
		b.WriteString("\t\t\tBs[e] = v;\n\t\t}\n")
		return
	}
	// buffer [N,K]: four k of one column are contiguous; store them transposed.
	fmt.Fprintf(b, "\t\tfor (var e = tid; e < %du; e += %du) {\n", t.BK*t.BN/4, threads)
	fmt.Fprintf(b, "\t\t\tlet c = e / %du;\n\t\t\tlet kq = (e %% %du) * 4u;\n", t.BK/4, t.BK/4)
	b.WriteString("\t\t\tvar v = vec4<f32>(0.0);\n")
	b.WriteString("\t\t\tif (col0 + c < N && kt + kq < K) {\n")
	b.WriteString("\t\t\t\tlet base = (col0 + c) * K + kt + kq;\n")
	b.WriteString("\t\t\t\tv = vec4<f32>(in1[base], in1[base + 1u], in1[base + 2u], in1[base + 3u]);\n\t\t\t}\n")
	for j := 0; j < 4; j++ {
		fmt.Fprintf(b, "\t\t\tBs[(kq + %du) * %du + c / 4u][c %% 4u] = v[%d];\n", j, t.BN/4, j)
	}
	b.WriteString("\t\t}\n")
}
