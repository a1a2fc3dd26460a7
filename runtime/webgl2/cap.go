// Package webgl2 is the browser's WebGL2 backend (GOOS=js): the passes of
// codegen/glsl drawn into R32F textures and read back with readPixels. Its
// device tensors live in host memory, because a texture's layout belongs
// to one plan: a run uploads them into its textures. Importing it
// registers "webgl2" under GOOS=js; the texture cap check is plain Go, so
// it is tested without a browser.
package webgl2

import (
	"fmt"

	"github.com/gpucc/gpucc/codegen/glsl"
	"github.com/gpucc/gpucc/ir"
	"github.com/gpucc/gpucc/runtime/backend"
)

// TextureCap is the most texture memory a WebGL2 run may hold live at
// once. Every texel counts 16 bytes, as if stored RGBA32F (drivers may pad
// R32F that way), and the cap is checked before anything is allocated.
// 256 MiB: PP-OCRv4's detector at 640² counts 160 MiB (40 MiB as R32F),
// which the former 128 refused.
const TextureCap = 256 << 20

// texelBytes is what one texel counts against TextureCap.
const texelBytes = 16

// checkTextures fails with limit_exceeded when the plan's peak of live
// textures (see glsl.Plan.PeakTexels) is over TextureCap, or when a
// texture it uses is taller than maxSize (the context's MAX_TEXTURE_SIZE,
// at least 2048; texImage2D would fail and the passes read garbage). It is
// plain Go, so hosts test it without a browser.
func checkTextures(p *ir.Program, pl *glsl.Plan, maxSize int) error {
	for t, used := range pl.Used() {
		if tx := pl.Textures[t]; used && (tx.Height > maxSize || tx.Width > maxSize) {
			return &backend.Error{Code: ir.CodeLimitExceeded, Backend: "webgl2", Err: fmt.Errorf(
				"a texture of %d elements needs %dx%d texels, over this context's MAX_TEXTURE_SIZE of %d", tx.Len, tx.Width, tx.Height, maxSize)}
		}
	}
	isInput := func(t int) bool { return t < len(p.Buffers) && p.Buffers[t].Input }
	if peak := pl.PeakTexels(isInput) * texelBytes; peak > TextureCap {
		return &backend.Error{Code: ir.CodeLimitExceeded, Backend: "webgl2", Err: fmt.Errorf(
			"the program needs %d bytes of live textures (16 bytes per texel), over the WebGL2 cap of %d", peak, TextureCap)}
	}
	return nil
}
