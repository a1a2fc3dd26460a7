//go:build js

package runtime

import (
	"errors"
	"fmt"
	"strings"
	"syscall/js"
	"time"

	"github.com/gpucc/gpucc/codegen/glsl"
	"github.com/gpucc/gpucc/ir"
)

func init() { Register("webgl2", openWebGL2) }

// webgl2Backend runs codegen/glsl plans: one draw per pass into R32F
// textures, read back with readPixels. Linked programs are cached by
// fragment source.
type webgl2Backend struct {
	gl       js.Value
	vertex   js.Value
	programs map[string]js.Value
	adapter  *Adapter
	maxSize  int // MAX_TEXTURE_SIZE
}

// openWebGL2 creates a WebGL2 context on an offscreen canvas and checks
// that float textures can be rendered to.
func openWebGL2(opts Options) (Backend, error) {
	doc := js.Global().Get("document")
	if doc.IsUndefined() {
		return nil, errors.New("no document: WebGL2 needs a browser page")
	}
	canvas := doc.Call("createElement", "canvas")
	gl := canvas.Call("getContext", "webgl2", map[string]any{"antialias": false, "depth": false, "preserveDrawingBuffer": false})
	if gl.IsNull() || gl.IsUndefined() {
		return nil, errors.New("this browser has no WebGL2 context")
	}
	if ext := gl.Call("getExtension", "EXT_color_buffer_float"); ext.IsNull() {
		return nil, errors.New("WebGL2 lacks EXT_color_buffer_float: float textures cannot be rendered to")
	}
	a := webgl2Adapter(gl)
	if a.Software && !opts.AllowSoftware {
		return nil, fmt.Errorf("WebGL2 renderer %q is a software rasteriser; pass allowSoftware to use it", a.Name)
	}
	b := &webgl2Backend{gl: gl, programs: map[string]js.Value{}, adapter: a,
		maxSize: gl.Call("getParameter", gl.Get("MAX_TEXTURE_SIZE")).Int()}
	if err := catchJS(func() (err error) {
		b.vertex, err = b.shader(gl.Get("VERTEX_SHADER"), glsl.Vertex)
		return err
	}); err != nil {
		return nil, err
	}
	return b, nil
}

// webgl2Adapter describes the context's renderer, unmasked where allowed.
func webgl2Adapter(gl js.Value) *Adapter {
	name := gl.Call("getParameter", gl.Get("RENDERER")).String()
	vendor := gl.Call("getParameter", gl.Get("VENDOR")).String()
	if ext := gl.Call("getExtension", "WEBGL_debug_renderer_info"); !ext.IsNull() {
		name = gl.Call("getParameter", ext.Get("UNMASKED_RENDERER_WEBGL")).String()
		vendor = gl.Call("getParameter", ext.Get("UNMASKED_VENDOR_WEBGL")).String()
	}
	version := gl.Call("getParameter", gl.Get("VERSION")).String()
	lower := strings.ToLower(name)
	soft := strings.Contains(lower, "swiftshader") || strings.Contains(lower, "llvmpipe") ||
		strings.Contains(lower, "software") || strings.Contains(lower, "lavapipe")
	typ := "gpu"
	if soft {
		typ = "cpu"
	}
	return &Adapter{Name: name, Driver: vendor + " / " + version, Backend: "webgl2", Type: typ, Software: soft}
}

func (b *webgl2Backend) Name() string      { return "webgl2" }
func (b *webgl2Backend) Adapter() *Adapter { return b.adapter }

// MaxBindings lets kernels read many textures: a pass binds one sampler
// per input (MAX_TEXTURE_IMAGE_UNITS ≥ 16) and splits its outputs over
// draws of at most glsl.MaxDrawBuffers.
func (b *webgl2Backend) MaxBindings() int { return 16 }

func (b *webgl2Backend) Close() {
	for _, p := range b.programs {
		b.gl.Call("deleteProgram", p)
	}
	b.gl.Call("deleteShader", b.vertex)
	if ext := b.gl.Call("getExtension", "WEBGL_lose_context"); !ext.IsNull() {
		ext.Call("loseContext")
	}
}

func (b *webgl2Backend) fail(code ir.Code, err error) error {
	return &Error{Code: code, Backend: "webgl2", Err: err}
}

// Run lowers the program to passes, checks the texture cap, then uploads,
// draws and reads back.
func (b *webgl2Backend) Run(job *Job) (out [][]float32, err error) {
	t := job.Timings
	start := time.Now()
	pl, err := glsl.Target{}.Emit(job.Program)
	if err != nil {
		return nil, err
	}
	t.CodegenMs = ms(time.Since(start))
	if err := checkWebGL2Textures(job.Program, pl, b.maxSize); err != nil {
		return nil, err
	}
	r := &webgl2Run{b: b, pl: pl, job: job, tex: map[int]js.Value{}}
	defer r.release()
	err = catchJS(func() error {
		if err := r.compile(); err != nil {
			return err
		}
		r.upload()
		if err := r.draw(); err != nil {
			return err
		}
		out = r.readback()
		return r.glError("readback")
	})
	if err != nil && CodeOf(err) == ir.CodeInternal {
		err = b.fail(ir.CodeExecutionFailed, err)
	}
	return out, err
}
