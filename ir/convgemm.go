package ir

// GEMM returns the dimensions of the convolution as an implicit matrix
// product per group: m output pixels (N·OH·OW), n output channels of the
// group (MG) and k taps (CG·KH·KW, in cpuref's (c, kh, kw) order, which
// is the product's k order). A conv kernel's Tile is over these (see
// Tile).
func (c Conv2D) GEMM() (m, n, k int) { return c.N * c.OH * c.OW, c.MG, c.Taps() }

// Window returns the rows and columns of the input (padded coordinates)
// that an output tile of rows×cols reads: what the window kernel of a
// depthwise convolution stages (see Tile).
func (c Conv2D) Window(rows, cols int) (h, w int) {
	return (rows-1)*c.SH + (c.KH-1)*c.DH + 1, (cols-1)*c.SW + (c.KW-1)*c.DW + 1
}

// Windowed reports whether a conv kernel's tile t is the window kernel's
// (BK = 0, see Tile) rather than the implicit GEMM's.
func (t Tile) Windowed() bool { return t.BK == 0 && t.BM > 0 }
