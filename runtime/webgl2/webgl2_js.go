//go:build js

package webgl2

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"syscall/js"

	"github.com/gpucc/gpucc/codegen/glsl"
	"github.com/gpucc/gpucc/ir"
	"github.com/gpucc/gpucc/passes"
	"github.com/gpucc/gpucc/runtime/backend"
	"github.com/gpucc/gpucc/runtime/internal/jsutil"
)

func init() { backend.Register("webgl2", open) }

// device runs codegen/glsl plans: one draw per pass into R32F textures,
// read back with readPixels. Linked programs are cached by fragment
// source.
type device struct {
	backend.HostMemory
	gl       js.Value
	vertex   js.Value
	programs map[string]js.Value
	info     backend.Info
	maxSize  int // MAX_TEXTURE_SIZE
}

// open creates a WebGL2 context on an offscreen canvas and checks that
// float textures can be rendered to.
func open(opts backend.Options) (backend.Device, error) {
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
	a := adapter(gl)
	if a.Software && !opts.AllowSoftware {
		return nil, fmt.Errorf("WebGL2 renderer %q is a software rasteriser; pass allowSoftware to use it", a.Name)
	}
	// A pass binds one sampler per input (MAX_TEXTURE_IMAGE_UNITS ≥ 16)
	// and splits its outputs over draws of at most glsl.MaxDrawBuffers.
	d := &device{gl: gl, programs: map[string]js.Value{},
		info:    backend.Info{Name: "webgl2", Adapter: a, Profile: passes.Profile{Name: "webgl2", MaxStorageBuffers: 16}},
		maxSize: gl.Call("getParameter", gl.Get("MAX_TEXTURE_SIZE")).Int()}
	if err := jsutil.CatchJS(func() (err error) {
		d.vertex, err = d.shader(gl.Get("VERTEX_SHADER"), glsl.Vertex)
		return err
	}); err != nil {
		return nil, err
	}
	return d, nil
}

// adapter describes the context's renderer, unmasked where allowed.
func adapter(gl js.Value) backend.Adapter {
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
	return backend.Adapter{Name: name, Driver: vendor + " / " + version, Backend: "webgl2", Type: typ, Software: soft}
}

func (d *device) Info() backend.Info { return d.info }

func (d *device) Close() {
	for _, p := range d.programs {
		d.gl.Call("deleteProgram", p)
	}
	d.gl.Call("deleteShader", d.vertex)
	if ext := d.gl.Call("getExtension", "WEBGL_lose_context"); !ext.IsNull() {
		ext.Call("loseContext")
	}
}

func fail(code ir.Code, err error) error {
	return &backend.Error{Code: code, Backend: "webgl2", Err: err}
}

// Compile lowers the program to passes, checks the texture cap and links
// every pass's program.
func (d *device) Compile(ctx context.Context, bp *backend.Program, st *backend.Stats) (backend.Executable, error) {
	stop := st.Start(backend.StageCodegen)
	pl, err := glsl.Target{}.Emit(bp.IR)
	stop()
	if err != nil {
		return nil, fail(ir.CodeInternal, err)
	}
	if err := checkTextures(bp.IR.Program(), pl, d.maxSize); err != nil {
		return nil, err
	}
	defer st.Start(backend.StageCompile)()
	e := &executable{d: d, p: bp.IR.Program(), pl: pl}
	hits := true
	err = jsutil.CatchJS(func() error {
		for _, ps := range pl.Passes {
			p, hit, err := d.program(ps.Source)
			if err != nil {
				return fmt.Errorf("pass %s: %w", ps.Name, err)
			}
			hits = hits && hit
			e.progs = append(e.progs, p)
		}
		return nil
	})
	if err != nil {
		return nil, fail(ir.CodeExecutionFailed, err)
	}
	st.Hit(backend.CacheShader, hits)
	return e, nil
}

// executable is a linked plan; its programs stay in the device's cache.
type executable struct {
	d     *device
	p     *ir.Program
	pl    *glsl.Plan
	progs []js.Value // per pass
}

func (e *executable) Release() {}

// Run uploads the inputs into textures, draws every pass and reads the
// outputs back (a kept output into host memory).
func (e *executable) Run(ctx context.Context, call *backend.Call) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	r := &run{e: e, call: call, tex: map[int]js.Value{}}
	defer r.release()
	err := jsutil.CatchJS(func() error {
		r.upload()
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := r.draw(); err != nil {
			return err
		}
		r.readback()
		return r.glError("readback")
	})
	if err == nil {
		return nil
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	var be *backend.Error
	if errors.As(err, &be) {
		return err
	}
	return fail(ir.CodeExecutionFailed, err)
}
