//go:build js

package webgl2

import (
	"fmt"
	"syscall/js"

	"github.com/gpucc/gpucc/codegen/glsl"
	"github.com/gpucc/gpucc/runtime/backend"
	"github.com/gpucc/gpucc/runtime/internal/jsutil"
)

// run is one execution of a plan.
type run struct {
	e    *executable
	call *backend.Call
	tex  map[int]js.Value // live textures
	fb   js.Value
}

// shader compiles one shader stage.
func (d *device) shader(stage js.Value, src string) (js.Value, error) {
	gl := d.gl
	s := gl.Call("createShader", stage)
	gl.Call("shaderSource", s, src)
	gl.Call("compileShader", s)
	if !gl.Call("getShaderParameter", s, gl.Get("COMPILE_STATUS")).Bool() {
		log := gl.Call("getShaderInfoLog", s).String()
		gl.Call("deleteShader", s)
		return js.Null(), fmt.Errorf("GLSL compile failed: %s", log)
	}
	return s, nil
}

// program returns the linked program of a fragment source, and whether it
// came from the cache.
func (d *device) program(frag string) (js.Value, bool, error) {
	if p, ok := d.programs[frag]; ok {
		return p, true, nil
	}
	gl := d.gl
	fs, err := d.shader(gl.Get("FRAGMENT_SHADER"), frag)
	if err != nil {
		return js.Null(), false, err
	}
	p := gl.Call("createProgram")
	gl.Call("attachShader", p, d.vertex)
	gl.Call("attachShader", p, fs)
	gl.Call("linkProgram", p)
	gl.Call("deleteShader", fs)
	if !gl.Call("getProgramParameter", p, gl.Get("LINK_STATUS")).Bool() {
		log := gl.Call("getProgramInfoLog", p).String()
		gl.Call("deleteProgram", p)
		return js.Null(), false, fmt.Errorf("GLSL link failed: %s", log)
	}
	d.programs[frag] = p
	return p, false, nil
}

// texture allocates texture tx, filled from data (nil: uninitialised).
func (r *run) texture(tx int, data []float32) js.Value {
	gl := r.e.d.gl
	t := r.e.pl.Textures[tx]
	tex := gl.Call("createTexture")
	target := gl.Get("TEXTURE_2D")
	gl.Call("bindTexture", target, tex)
	for _, p := range []string{"TEXTURE_MIN_FILTER", "TEXTURE_MAG_FILTER"} {
		gl.Call("texParameteri", target, gl.Get(p), gl.Get("NEAREST"))
	}
	pixels := js.Null()
	if data != nil {
		pixels = jsutil.Float32sToJS(data, t.Texels())
	}
	gl.Call("texImage2D", target, 0, gl.Get("R32F"), t.Width, t.Height, 0, gl.Get("RED"), gl.Get("FLOAT"), pixels)
	r.tex[tx] = tex
	return tex
}

// upload creates the textures of the program inputs that passes read.
func (r *run) upload() {
	st := r.call.Stats
	defer st.Start(backend.StageUpload)()
	used := r.e.pl.Used()
	for tx, buf := range r.e.p.Buffers {
		if buf.Input && used[tx] {
			r.texture(tx, backend.HostData(r.call.Args[tx]))
			st.UploadBytes += int64(4 * buf.Len)
		}
	}
}

// draw runs every pass in order, freeing textures as soon as they die.
func (r *run) draw() error {
	gl := r.e.d.gl
	defer r.call.Stats.Start(backend.StageDispatch)()
	r.fb = gl.Call("createFramebuffer")
	gl.Call("bindFramebuffer", gl.Get("FRAMEBUFFER"), r.fb)
	for j, ps := range r.e.pl.Passes {
		if err := r.pass(r.e.progs[j], ps); err != nil {
			return fmt.Errorf("pass %s: %w", ps.Name, err)
		}
		for _, tx := range ps.Free {
			r.free(tx)
		}
	}
	gl.Call("finish")
	return r.glError("draw")
}

// pass binds inputs and outputs and draws the full-screen triangle.
func (r *run) pass(prog js.Value, ps glsl.Pass) error {
	gl := r.e.d.gl
	fbTarget := gl.Get("FRAMEBUFFER")
	attach := gl.Get("COLOR_ATTACHMENT0").Int()
	bufs := make([]any, len(ps.Outputs))
	for k, tx := range ps.Outputs {
		tex, ok := r.tex[tx]
		if !ok {
			tex = r.texture(tx, nil)
		}
		gl.Call("framebufferTexture2D", fbTarget, attach+k, gl.Get("TEXTURE_2D"), tex, 0)
		bufs[k] = attach + k
	}
	for k := len(ps.Outputs); k < glsl.MaxDrawBuffers; k++ {
		gl.Call("framebufferTexture2D", fbTarget, attach+k, gl.Get("TEXTURE_2D"), js.Null(), 0)
	}
	gl.Call("drawBuffers", js.ValueOf(bufs))
	if st := gl.Call("checkFramebufferStatus", fbTarget).Int(); st != gl.Get("FRAMEBUFFER_COMPLETE").Int() {
		return fmt.Errorf("framebuffer incomplete (status 0x%x)", st)
	}
	gl.Call("useProgram", prog)
	gl.Call("uniform1f", gl.Call("getUniformLocation", prog, glsl.UniformOne), 1.0)
	gl.Call("uniform1f", gl.Call("getUniformLocation", prog, glsl.UniformZero), 0.0)
	for k, tx := range ps.Inputs {
		gl.Call("activeTexture", gl.Get("TEXTURE0").Int()+k)
		gl.Call("bindTexture", gl.Get("TEXTURE_2D"), r.tex[tx])
		gl.Call("uniform1i", gl.Call("getUniformLocation", prog, fmt.Sprintf("%s%d", glsl.SamplerPrefix, k)), k)
	}
	gl.Call("viewport", 0, 0, ps.Width, ps.Height)
	gl.Call("drawArrays", gl.Get("TRIANGLES"), 0, 3)
	return nil
}

// readback reads every program output: RGBA/FLOAT is the read format
// WebGL2 guarantees for float attachments, so one texel reads four floats.
// A kept output goes to host memory, the device memory of this backend.
func (r *run) readback() {
	gl := r.e.d.gl
	st := r.call.Stats
	defer st.Start(backend.StageReadback)()
	p := r.e.p
	fbTarget := gl.Get("FRAMEBUFFER")
	for k := 1; k < glsl.MaxDrawBuffers; k++ {
		gl.Call("framebufferTexture2D", fbTarget, gl.Get("COLOR_ATTACHMENT0").Int()+k, gl.Get("TEXTURE_2D"), js.Null(), 0)
	}
	gl.Call("drawBuffers", []any{gl.Get("COLOR_ATTACHMENT0")})
	for i, o := range p.Outputs {
		if o.Buffer < 0 {
			continue
		}
		dst := &r.call.Dests[i]
		if dst.Keep {
			dst.Host = make([]float32, p.Buffers[o.Buffer].Len)
		}
		tex, ok := r.tex[o.Buffer]
		if !ok { // an input returned as is: no pass touched it
			copy(dst.Host, backend.HostData(r.call.Args[o.Buffer]))
		} else {
			t := r.e.pl.Textures[o.Buffer]
			gl.Call("framebufferTexture2D", fbTarget, gl.Get("COLOR_ATTACHMENT0"), gl.Get("TEXTURE_2D"), tex, 0)
			gl.Call("readBuffer", gl.Get("COLOR_ATTACHMENT0"))
			pixels := js.Global().Get("Float32Array").New(4 * t.Texels())
			gl.Call("readPixels", 0, 0, t.Width, t.Height, gl.Get("RGBA"), gl.Get("FLOAT"), pixels)
			copy(dst.Host, jsutil.Float32sFromJS(pixels, t.Len, 4))
		}
		if dst.Keep {
			dst.Buf, dst.Host = &backend.HostBuffer{Data: dst.Host}, nil
		} else {
			st.ReadbackBytes += int64(4 * len(dst.Host))
		}
	}
}

// free deletes texture tx if it is live.
func (r *run) free(tx int) {
	if tex, ok := r.tex[tx]; ok {
		r.e.d.gl.Call("deleteTexture", tex)
		delete(r.tex, tx)
	}
}

// release deletes everything the run still holds.
func (r *run) release() {
	for tx := range r.tex {
		r.free(tx)
	}
	if !r.fb.IsUndefined() && !r.fb.IsNull() {
		r.e.d.gl.Call("bindFramebuffer", r.e.d.gl.Get("FRAMEBUFFER"), js.Null())
		r.e.d.gl.Call("deleteFramebuffer", r.fb)
	}
}

// glError reports a pending GL error.
func (r *run) glError(stage string) error {
	gl := r.e.d.gl
	if e := gl.Call("getError").Int(); e != gl.Get("NO_ERROR").Int() {
		return fmt.Errorf("WebGL error 0x%x during %s", e, stage)
	}
	return nil
}
