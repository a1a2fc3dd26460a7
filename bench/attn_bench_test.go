package bench

// BenchmarkAttnTiles: fused attention (one attention kernel, no mask,
// scale 1/√d) over q, k, v of [S, D], one head as bench/torch_attn.py
// times PyTorch's, under each WGSL attention tile (wgsl.AttentionTile),
// so that one device visit picks the tile beside PyTorch eager and
// scaled_dot_product_attention (issue 33: seq 2048, d 64 ≤ 1.0× eager).
//
//	GPUCC_BENCH_ATTN        sequences, comma-separated (default 256,2048)
//	GPUCC_BENCH_ATTN_D      head width (default 64)
//	GPUCC_BENCH_ATTN_TILES  tiles, space-separated, as wgsl.ParseAttTile
//	                        reads them, or "online" / "online32x8" /
//	                        "online16x16mcpli" / "online8x32r2mcpliht": the
//	                        online order's kernel under the default or that
//	                        wgsl.OnlineTile, its row block and flags as
//	                        letters (w: the device's workgroup storage, as
//	                        the webgpu backend grants it: online16x16mcpliw;
//	                        bN: N key blocks staged at once,
//	                        online16x16b2mcplitw)
//	                        (ir.AttentionOnlineFrom set to 1; every
//	                        other entry runs the full-row order; a tile that
//	                        does not fit the head is skipped, not timed as
//	                        the default it would fall back to); an online
//	                        tile's suffix @sP runs the split order in at most
//	                        P parts (ir.AttentionSplit: online16x16mcplit@s4),
//	                        each part of each row tile a workgroup of the
//	                        tile's threads and a second kernel combining
//	                        them (the split pass, on webgpu)
//	                        (default: attnTiles)

import (
	"context"
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/gpucc/gpucc"
	"github.com/gpucc/gpucc/codegen/wgsl"
	"github.com/gpucc/gpucc/ir"
	"github.com/gpucc/gpucc/ir/irtest"
)

// attnTiles are the tiles timed by default: the default, more rows or
// more slices a workgroup, one key a thread per tile, 128 threads, k and v
// read from their buffers (g: Direct) under seven shapes, three of them
// keeping 64 or 128 scores a thread between the passes (c: Cache), and
// the first kernel (rows). The Cache tiles come last: their unrolled
// shaders take longest to compile.
const attnTiles = "16x16k32 32x8k32 16x8k32 8x32k32 64x4k16 16x16k64g 16x16k32g 32x8k32g 8x16k32g 16x8k64g 8x32k64g 8x32k32g rows 8x32k64gc64 16x16k64gc64 16x16k64gc128"

// deviceStorage is the workgroup storage the webgpu backend's device is
// granted (runtime/gpu asks for the adapter's), which a wide online tile
// fills; WebGPU's default 16384 on another backend.
func deviceStorage(b *testing.B) int {
	if benchBackend() != "webgpu" {
		return 16384
	}
	d := openDevice(b)
	defer d.Close()
	return int(d.Info().Limits.MaxComputeWorkgroupStorageSize)
}

func BenchmarkAttnTiles(b *testing.B) {
	seqs := []int{256, 2048}
	if e := os.Getenv("GPUCC_BENCH_ATTN"); e != "" {
		seqs = nil
		for _, f := range strings.Split(e, ",") {
			n, err := strconv.Atoi(f)
			if err != nil || n < 1 {
				b.Fatalf("GPUCC_BENCH_ATTN: %q is not a sequence length", f)
			}
			seqs = append(seqs, n)
		}
	}
	d := envInt("GPUCC_BENCH_ATTN_D", 64)
	names := attnTiles
	if e := os.Getenv("GPUCC_BENCH_ATTN_TILES"); e != "" {
		names = e
	}
	type variant struct {
		name   string
		tile   wgsl.AttTile
		online *wgsl.OnlineTile
		split  int // ir.AttentionSplit
	}
	var tiles []variant
	for _, f := range strings.Fields(names) {
		if strings.HasPrefix(f, "online") {
			name, parts, hasSplit := strings.Cut(f, "@s")
			split, err := strconv.Atoi(parts)
			if hasSplit && (err != nil || split < 2 || split > ir.MaxAttentionSplit) {
				b.Fatalf("GPUCC_BENCH_ATTN_TILES: %q: the split's parts are 2 to %d", f, ir.MaxAttentionSplit)
			}
			o, err := wgsl.ParseOnlineTile(name)
			if err != nil {
				b.Fatal(err)
			}
			tiles = append(tiles, variant{name: f, tile: wgsl.DefaultAttTile, online: &o, split: split})
			continue
		}
		t, err := wgsl.ParseAttTile(f)
		if err != nil {
			b.Fatal(err)
		}
		tiles = append(tiles, variant{name: t.String(), tile: t})
	}
	defer func(old wgsl.AttTile) { wgsl.AttentionTile = old }(wgsl.AttentionTile)
	defer func(old, split int, o wgsl.OnlineTile) {
		ir.AttentionOnlineFrom, ir.AttentionSplit, wgsl.AttentionOnlineTile = old, split, o
	}(ir.AttentionOnlineFrom, ir.AttentionSplit, wgsl.AttentionOnlineTile)
	ctx := context.Background()
	for _, s := range seqs {
		bld := ir.NewBuilder()
		in := func(name string) ir.Tensor { return bld.NamedInput(name, ir.Shape{s, d}, make([]float32, s*d)) }
		q, k, v := in("q"), in("k"), in("v")
		bld.Output("y", q.Attention(k, v, bld.Full(ir.Shape{}, float32(math.Copysign(0, -1))), float32(1/math.Sqrt(float64(d))), false))
		g, err := bld.Build(Limits())
		if err != nil {
			b.Fatal(err)
		}
		for _, t := range tiles {
			b.Run(fmt.Sprintf("s%d-d%d/%s", s, d, t.name), func(b *testing.B) {
				wgsl.AttentionTile = t.tile
				ir.AttentionOnlineFrom, ir.AttentionSplit = 1<<30, 0 // the full-row order
				if t.online != nil {
					// (A split's parts take the tile itself, its span
					// halved until a part is whole spans.)
					if a := (ir.Attention{S: s, T: s, D: d, E: d, Block: ir.AttentionBlock}); !wgsl.OnlineTileFitsIn(a, *t.online, deviceStorage(b)) {
						b.Skipf("%s does not fit d %d: the default online tile would run under its name", t.name, d)
					}
					ir.AttentionOnlineFrom, ir.AttentionSplit, wgsl.AttentionOnlineTile = 1, t.split, *t.online
				}
				rt := openEngine(b)
				exe, err := rt.Compile(ctx, g)
				if err != nil {
					b.Fatal(err)
				}
				ins := gpucc.Inputs{}
				for i, p := range g.Nodes {
					if p.Op != ir.OpInput {
						continue
					}
					x, err := rt.Upload(ctx, p.Shape, irtest.Values(uint64(i+1), p.Shape.Len(), 1))
					if err != nil {
						b.Fatal(err)
					}
					defer x.Release()
					ins[p.Name] = x
				}
				benchResident(b, exe, ins, "y")
				b.ReportMetric(float64(exe.Kernels()), "kernels")
			})
		}
	}
}
