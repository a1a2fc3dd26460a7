package runtime

import (
	"fmt"

	"github.com/gpucc/gpucc/codegen/glsl"
	"github.com/gpucc/gpucc/ir"
)

// WebGL2TextureCap is the most texture memory a WebGL2 run may hold live at
// once. Every texel counts 16 bytes, as if stored RGBA32F (drivers may pad
// R32F that way), and the cap is checked before anything is allocated.
const WebGL2TextureCap = 128 << 20

// webgl2TexelBytes is what one texel counts against WebGL2TextureCap.
const webgl2TexelBytes = 16

// checkWebGL2Textures fails with limit_exceeded when the plan's peak of live
// textures (see glsl.Plan.PeakTexels) is over WebGL2TextureCap, or when a
// texture it uses is taller than maxSize (the context's MAX_TEXTURE_SIZE,
// at least 2048; texImage2D would fail and the passes read garbage). It is
// plain Go, so hosts test it without a browser.
func checkWebGL2Textures(p *ir.Program, pl *glsl.Plan, maxSize int) error {
	for t, used := range pl.Used() {
		if tx := pl.Textures[t]; used && (tx.Height > maxSize || tx.Width > maxSize) {
			return &Error{Code: ir.CodeLimitExceeded, Backend: "webgl2", Err: fmt.Errorf(
				"a texture of %d elements needs %dx%d texels, over this context's MAX_TEXTURE_SIZE of %d", tx.Len, tx.Width, tx.Height, maxSize)}
		}
	}
	isInput := func(t int) bool { return t < len(p.Buffers) && p.Buffers[t].Input }
	if peak := pl.PeakTexels(isInput) * webgl2TexelBytes; peak > WebGL2TextureCap {
		return &Error{Code: ir.CodeLimitExceeded, Backend: "webgl2", Err: fmt.Errorf(
			"the program needs %d bytes of live textures (16 bytes per texel), over the WebGL2 cap of %d", peak, WebGL2TextureCap)}
	}
	return nil
}
