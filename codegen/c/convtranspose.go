package c

import (
	"fmt"
	"strings"

	"github.com/gpucc/gpucc/codegen"
	"github.com/gpucc/gpucc/ir"
)

// convTransposePrelude holds the transposed convolution's register tile
// (see convTranspose): R output channels × NV vectors of output columns
// of one residue class (ow ≡ ρ mod SW), R·NV = 8 accumulators, so that
// a group of few output channels (the OCR detector's last layer has one)
// still fills the registers with lanes.
const convTransposePrelude = `
#ifndef CV_VL
#if defined(__AVX2__) && !defined(__wasm__)
typedef float cvec __attribute__((vector_size(32)));
#define CV_VL 8
#else
typedef float cvec __attribute__((vector_size(16)));
#define CV_VL 4
#endif
#endif
#ifndef CV_SPLAT
/* CV_SPLAT and CV_GATHER build a vector element by element with constant indices: a loop storing
 * lanes by a variable index goes through the stack when the vectors are scalars (wasm without
 * SIMD128), three memory operations per lane in the innermost loop. */
#if CV_VL == 8
#define CV_SPLAT(s) ((cvec){(s), (s), (s), (s), (s), (s), (s), (s)})
#define CV_GATHER(p, st) ((cvec){(p)[0], (p)[(st)], (p)[2 * (st)], (p)[3 * (st)], (p)[4 * (st)], (p)[5 * (st)], (p)[6 * (st)], (p)[7 * (st)]})
#else
#define CV_SPLAT(s) ((cvec){(s), (s), (s), (s)})
#define CV_GATHER(p, st) ((cvec){(p)[0], (p)[(st)], (p)[2 * (st)], (p)[3 * (st)]})
#endif
#endif
/* CT_ACC accumulator vectors, strips of CT_R channels: 8 natively and with SIMD128; 2 (8 scalars)
 * in wasm without it, whose vectors become scalars that must fit wazero's 16 registers. */
#if defined(__wasm__) && !defined(__wasm_simd128__)
#define CT_ACC 2
#define CT_R 2
#else
#define CT_ACC 8
#define CT_R 4
#endif

/* ct_tile computes R output channels × NV·CV_VL adjacent columns of one residue class into
 * t[r*ld + q]. x points at the group's first channel at the lanes' first column for an input
 * column offset of 0; tap j of a channel reads x + c*xsc + xo[j] (row and column offsets, in
 * elements) and weight wp[c*wsc + wo[j] + r]. Taps run c ascending, then j ascending (the valid
 * (kh, kw) in order): cpuref's order. Every lane's taps are inside x (the caller checks), so each
 * lane is one output: one accumulator from +0, a rounded product and a rounded add per tap. */
static inline __attribute__((always_inline)) void ct_tile(float *restrict t, const float *restrict wp,
	const float *restrict x, idx cg, idx xsc, idx wsc, const idx *restrict xo, const idx *restrict wo,
	int ntap, idx xsw, int R, int NV, int ld) {
	cvec acc[CT_ACC];
	for (int a = 0; a < R * NV; a++)
		acc[a] = CV_SPLAT(F(0u));
	for (idx c = 0; c < cg; c++)
		for (int j = 0; j < ntap; j++) {
			const float *restrict xp = x + c * xsc + xo[j];
			const float *restrict w = wp + c * wsc + wo[j];
			cvec wv[CT_ACC];
			for (int r = 0; r < R; r++)
				wv[r] = CV_SPLAT(w[r]);
			for (int v = 0; v < NV; v++) {
				cvec xv;
				if (xsw == 1)
					__builtin_memcpy(&xv, xp + v * CV_VL, sizeof xv);
				else
					xv = CV_GATHER(xp + v * CV_VL * xsw, xsw);
				for (int r = 0; r < R; r++) {
					const cvec p = xv * wv[r];
					acc[r * NV + v] = acc[r * NV + v] + p;
				}
			}
		}
	for (int r = 0; r < R; r++)
		for (int v = 0; v < NV; v++)
			__builtin_memcpy(t + r * ld + v * CV_VL, &acc[r * NV + v], sizeof acc[0]);
}

/* ct_lanes is ct_tile's lanes one at a time, for columns whose taps may fall outside x: lane j
 * (column offset iw0 + j of the class) adds only the taps inside [0, w) (kwo[b] per kw). */
static inline void ct_lanes(float *restrict t, const float *restrict wp, const float *restrict x,
	idx cg, idx xsc, idx wsc, const idx *restrict xro, const idx *restrict wro, int nkh,
	const long long *restrict iw0, const idx *restrict wco, int nkw, idx xsw, long long w,
	long long q0, int cnt, int R, int Q) {
	for (int r = 0; r < R; r++)
		for (int j = 0; j < cnt; j++) {
			float acc = F(0u);
			for (idx c = 0; c < cg; c++)
				for (int a = 0; a < nkh; a++)
					for (int b = 0; b < nkw; b++) {
						const long long iw = iw0[b] + q0 + j;
						if (iw < 0 || iw >= w)
							continue;
						const float p = x[c * xsc + xro[a] + (idx)iw * xsw] * wp[c * wsc + wro[a] + wco[b] + r];
						acc = acc + p;
					}
			t[r * Q + j] = acc;
		}
}
`

// convTransposeScratch is the floats one call of a transposed convolution
// takes: its group's weights, packed (c, kh, kw, m) with m fastest.
func convTransposeScratch(k *ir.Kernel) int {
	c := ir.ConvTranspose2DOf(k.Inputs[0].Shape, k.Inputs[1].Shape, k.Attrs)
	return c.CG * c.KH * c.KW * c.MG
}

// convTranspose writes a transposed convolution and its epilogue as tiles
// of one output row of one image and group. Per row it lists the kh whose
// input row exists ((oh+PT-kh·DH)/SH exact and inside x), and per residue
// class ρ of the columns (ow+PL ≡ ρ mod SW) the kw whose column offset is
// exact: within a class, column q of the class reads input column
// iw0(kw)+q, contiguous in q. Columns whose every listed tap is inside x
// run as register tiles (ct_tile), the others one at a time skipping the
// taps outside (ct_lanes): both add, per output, from +0 over (c, kh, kw)
// ascending a rounded product per tap that lands on x, and nothing for
// the others, cpuref.ConvTranspose2D's order and bits. The epilogue runs
// per output after its accumulator is final.
func convTranspose(b *strings.Builder, k *ir.Kernel) int {
	c := ir.ConvTranspose2DOf(k.Inputs[0].Shape, k.Inputs[1].Shape, k.Attrs)
	u := Lang.Uint
	x := k.Inputs[0]
	xs := make([]int, 4) // x's strides, 0 on a dimension of one element
	for d := range xs {
		if x.Shape[d] > 1 {
			xs[d] = x.Strides[d]
		}
	}
	wAt := codegen.Offset(Lang, k.Inputs[1], []string{"g * " + u(c.CG) + " + ci", "ml", "kh", "kw"})
	fmt.Fprintf(b, "\tfloat *restrict wpk = scratch;\n")
	b.WriteString("\tfor (idx tl = t0; tl < t1; tl++) {\n")
	fmt.Fprintf(b, "\t\tconst idx oh = tl %% %s, g = tl / %s %% %s, n = tl / %s;\n", u(c.OH), u(c.OH), u(c.Group), u(c.OH*c.Group))
	b.WriteString("\t\tif (tl == t0 || oh == 0) {\n")
	fmt.Fprintf(b, "\t\t\tfor (idx ci = 0; ci < %s; ci++)\n", u(c.CG))
	fmt.Fprintf(b, "\t\t\tfor (idx kh = 0; kh < %s; kh++)\n", u(c.KH))
	fmt.Fprintf(b, "\t\t\tfor (idx kw = 0; kw < %s; kw++)\n", u(c.KW))
	fmt.Fprintf(b, "\t\t\tfor (idx ml = 0; ml < %s; ml++)\n", u(c.MG))
	fmt.Fprintf(b, "\t\t\t\twpk[((ci * %s + kh) * %s + kw) * %s + ml] = in1[%s];\n", u(c.KH), u(c.KW), u(c.MG), wAt)
	b.WriteString("\t\t}\n")
	// The kh whose input row exists, in order: x's row offset and the
	// weights' offset of each.
	fmt.Fprintf(b, "\t\tidx xro[%d], wro[%d];\n\t\tint nkh = 0;\n", c.KH, c.KH)
	fmt.Fprintf(b, "\t\tfor (idx kh = 0; kh < %s; kh++) {\n", u(c.KH))
	fmt.Fprintf(b, "\t\t\tconst long long th = (long long)oh + %dLL - (long long)(kh * %s);\n", c.PT, u(c.DH))
	fmt.Fprintf(b, "\t\t\tif (th < 0 || th %% %dLL != 0 || th / %dLL >= %dLL)\n\t\t\t\tcontinue;\n", c.SH, c.SH, c.H)
	fmt.Fprintf(b, "\t\t\txro[nkh] = (idx)(th / %dLL) * %s;\n", c.SH, u(xs[2]))
	fmt.Fprintf(b, "\t\t\twro[nkh] = kh * %s;\n\t\t\tnkh++;\n\t\t}\n", u(c.KW*c.MG))
	fmt.Fprintf(b, "\t\tconst float *restrict xg = in0 + n * %s + g * %s;\n", u(xs[0]), u(c.CG*xs[1]))
	fmt.Fprintf(b, "\t\tfor (idx rho = 0; rho < %s; rho++) {\n", u(c.SW))
	// ow0: the class's first column; nq: its columns.
	fmt.Fprintf(b, "\t\t\tconst idx ow0 = (rho + %s - %s) %% %s;\n", u(c.SW), u(c.PL%c.SW), u(c.SW))
	fmt.Fprintf(b, "\t\t\tif (ow0 >= %s)\n\t\t\t\tcontinue;\n", u(c.OW))
	fmt.Fprintf(b, "\t\t\tconst long long nq = (%dLL - (long long)ow0 + %dLL) / %dLL;\n", c.OW, c.SW-1, c.SW)
	fmt.Fprintf(b, "\t\t\tlong long iw0[%d], qlo = 0, qhi = nq;\n\t\t\tidx wco[%d];\n\t\t\tint nkw = 0;\n", c.KW, c.KW)
	fmt.Fprintf(b, "\t\t\tfor (idx kw = 0; kw < %s; kw++) {\n", u(c.KW))
	fmt.Fprintf(b, "\t\t\t\tconst long long tw = (long long)ow0 + %dLL - (long long)(kw * %s);\n", c.PL, u(c.DW))
	fmt.Fprintf(b, "\t\t\t\tif ((tw %% %dLL + %dLL) %% %dLL != 0)\n\t\t\t\t\tcontinue;\n", c.SW, c.SW, c.SW)
	fmt.Fprintf(b, "\t\t\t\tiw0[nkw] = tw / %dLL;\n", c.SW)
	fmt.Fprintf(b, "\t\t\t\twco[nkw] = kw * %s;\n", u(c.MG))
	b.WriteString("\t\t\t\tif (-iw0[nkw] > qlo)\n\t\t\t\t\tqlo = -iw0[nkw];\n")
	fmt.Fprintf(b, "\t\t\t\tif (%dLL - iw0[nkw] < qhi)\n\t\t\t\t\tqhi = %dLL - iw0[nkw];\n", c.W, c.W)
	b.WriteString("\t\t\t\tnkw++;\n\t\t\t}\n")
	b.WriteString("\t\t\tif (qlo > nq)\n\t\t\t\tqlo = nq;\n\t\t\tif (qhi < qlo)\n\t\t\t\tqhi = qlo;\n")
	// The register tiles' taps: (kh, kw) pairs in order.
	fmt.Fprintf(b, "\t\t\tidx xo[%d], wo[%d];\n\t\t\tint ntap = 0;\n", c.KH*c.KW, c.KH*c.KW)
	b.WriteString("\t\t\tfor (int a = 0; a < nkh; a++)\n\t\t\t\tfor (int bb = 0; bb < nkw; bb++) {\n")
	fmt.Fprintf(b, "\t\t\t\t\txo[ntap] = xro[a] + (idx)(iw0[bb] + qlo) * %s;\n", u(xs[3]))
	b.WriteString("\t\t\t\t\two[ntap] = wro[a] + wco[bb];\n\t\t\t\t\tntap++;\n\t\t\t\t}\n")
	strip := func(first, step, last string, r string) {
		fmt.Fprintf(b, "\t\t\tfor (idx s = %s; s < %s; s += %s) {\n", first, last, step)
		fmt.Fprintf(b, "\t\t\t\tenum { R = %s, NV = CT_ACC / R, Q = NV * CV_VL };\n", r)
		b.WriteString("\t\t\t\tfloat t[CT_ACC * CV_VL];\n")
		b.WriteString("\t\t\t\tfor (long long q0 = 0; q0 < nq;) {\n")
		b.WriteString("\t\t\t\t\tint cnt;\n")
		// Full tiles, then halves down to one vector, then lanes.
		for nv := 8; nv >= 1; nv /= 2 {
			cond := fmt.Sprintf("NV >= %d && q0 >= qlo && q0 + %d * CV_VL <= qhi", nv, nv)
			if nv == 8 {
				cond = "q0 >= qlo && q0 + Q <= qhi"
			}
			if nv == 8 {
				fmt.Fprintf(b, "\t\t\t\t\tif (%s) {\n\t\t\t\t\t\tcnt = Q;\n", cond)
			} else {
				fmt.Fprintf(b, "\t\t\t\t\t} else if (%s) {\n\t\t\t\t\t\tcnt = %d * CV_VL;\n", cond, nv)
			}
			nvArg := "NV"
			if nv < 8 {
				nvArg = fmt.Sprintf("(NV >= %d ? %d : 1)", nv, nv)
			}
			fmt.Fprintf(b, "\t\t\t\t\t\tct_tile(t, wpk + s, xg + (idx)(q0 - qlo) * %s, %s, %s, %s, xo, wo, ntap, %s, R, %s, Q);\n",
				u(xs[3]), u(c.CG), u(xs[1]), u(c.KH*c.KW*c.MG), u(xs[3]), nvArg)
		}
		b.WriteString("\t\t\t\t\t} else {\n")
		b.WriteString("\t\t\t\t\t\tconst long long end = q0 < qlo ? qlo : nq;\n")
		b.WriteString("\t\t\t\t\t\tcnt = end - q0 < Q ? (int)(end - q0) : Q;\n")
		fmt.Fprintf(b, "\t\t\t\t\t\tct_lanes(t, wpk + s, xg, %s, %s, %s, xro, wro, nkh, iw0, wco, nkw, %s, %dLL, q0, cnt, R, Q);\n",
			u(c.CG), u(xs[1]), u(c.KH*c.KW*c.MG), u(xs[3]), c.W)
		b.WriteString("\t\t\t\t\t}\n")
		b.WriteString("\t\t\t\t\tfor (int r = 0; r < R; r++)\n\t\t\t\t\tfor (int j = 0; j < cnt; j++) {\n")
		fmt.Fprintf(b, "\t\t\t\t\t\tconst idx at = ((n * %s + g * %s + s + r) * %s + oh) * %s + ow0 + (idx)(q0 + j) * %s;\n",
			u(c.M), u(c.MG), u(c.OH), u(c.OW), u(c.SW))
		b.WriteString("\t\t\t\t\t\tconst float acc = t[r * Q + j];\n")
		load := func(j int) string {
			return fmt.Sprintf("in%d[%s]", j, codegen.Index(Lang, k.Inputs[j], "at"))
		}
		b.WriteString(codegen.Indent(codegen.Body(Lang, k, load, "acc"), 6))
		b.WriteString(codegen.Indent(stores(k, "at"), 6))
		b.WriteString("\t\t\t\t\t}\n\t\t\t\t\tq0 += cnt;\n\t\t\t\t}\n\t\t\t}\n")
	}
	// Strips of RS = CT_R channels (or all of a group of fewer), then the
	// rest.
	mg := u(c.MG)
	fmt.Fprintf(b, "\t\t\tenum { RS = CT_R < %s ? CT_R : %s };\n", mg, mg)
	strip("0", "RS", mg+" / RS * RS", "RS")
	fmt.Fprintf(b, "\t\t\tif (%s %% RS != 0) {\n", mg)
	strip(mg+" / RS * RS", mg+" % RS", mg, "("+mg+" % RS ? "+mg+" % RS : 1)")
	b.WriteString("\t\t\t}\n")
	b.WriteString("\t\t}\n\t}\n")
	return c.N * c.Group * c.OH
}
