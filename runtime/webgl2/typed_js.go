//go:build js

package webgl2

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"syscall/js"

	"github.com/gpucc/gpucc/codegen/glsl"
	"github.com/gpucc/gpucc/ir"
	"github.com/gpucc/gpucc/runtime/backend"
	"github.com/gpucc/gpucc/runtime/internal/jsutil"
)

var _ backend.TypedDevice = (*device)(nil)

// CompileTyped makes one pass per node of the typed graph that is not an
// input (codegen/glsl's TypedNode: the node's words into an R32UI
// texture, its fault codes into a second one) and links their programs
// through the device's cache. An op the GLSL typed path does not hold (a
// matmul, say: it has no float32 islands) is unsupported, naming the node.
func (d *device) CompileTyped(ctx context.Context, p *backend.TypedProgram, st *backend.Stats) (backend.TypedExecutable, error) {
	g := p.Graph
	stop := st.Start(backend.StageCodegen)
	e := &typedExecutable{d: d, g: g, passes: make([]glsl.TypedPass, len(g.Nodes)), progs: make([]js.Value, len(g.Nodes))}
	for i, n := range g.Nodes {
		if n.Op == ir.OpInput {
			continue
		}
		ps, err := glsl.TypedNode(g, i)
		if err != nil {
			stop()
			return nil, err
		}
		if ps.Texture.Height > d.maxSize || ps.Texture.Width > d.maxSize {
			stop()
			return nil, fail(ir.CodeLimitExceeded, fmt.Errorf("node %d needs a %dx%d texture, over this context's MAX_TEXTURE_SIZE of %d", i, ps.Texture.Width, ps.Texture.Height, d.maxSize))
		}
		e.passes[i] = ps
	}
	stop()
	defer st.Start(backend.StageCompile)()
	hits := true
	err := jsutil.CatchJS(func() error {
		for i, ps := range e.passes {
			if ps.Source == "" {
				continue
			}
			p, hit, err := d.program(ps.Source)
			if err != nil {
				return fmt.Errorf("node %d: %w", i, err)
			}
			hits = hits && hit
			e.progs[i] = p
		}
		return nil
	})
	if err != nil {
		return nil, fail(ir.CodeExecutionFailed, err)
	}
	st.Hit(backend.CacheShader, hits)
	return e, nil
}

type typedExecutable struct {
	d      *device
	g      *ir.Graph
	passes []glsl.TypedPass // by node; empty for inputs
	progs  []js.Value
}

func (e *typedExecutable) Release() {}

// canFault reports whether node n's pass can raise a fault (its fault
// texture is read only then).
func canFault(g *ir.Graph, n ir.Node) bool {
	switch n.Op {
	case ir.OpDiv, ir.OpMod:
		return !n.DType.IsFloat()
	case ir.OpCast:
		return g.Nodes[n.Args[0]].DType.IsFloat() && !n.DType.IsFloat() && n.DType != ir.Bool
	case ir.OpGather, ir.OpGatherElements:
		return true
	}
	return false
}

// RunTyped uploads the inputs into word textures, draws every node's pass
// in order, reads the fault textures of the nodes that can fault (the
// first faulting node in order is the run's *TypedFault) and then the
// outputs.
func (e *typedExecutable) RunTyped(ctx context.Context, cl *backend.TypedCall) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	d, g, st := e.d, e.g, cl.Stats
	gl := d.gl
	var tex []js.Value
	var fb js.Value
	defer func() {
		for _, t := range tex {
			gl.Call("deleteTexture", t)
		}
		if fb.Truthy() {
			gl.Call("bindFramebuffer", gl.Get("FRAMEBUFFER"), js.Null())
			gl.Call("deleteFramebuffer", fb)
		}
	}()
	texture := func(t glsl.Texture, words []byte) js.Value {
		x := gl.Call("createTexture")
		tex = append(tex, x)
		target := gl.Get("TEXTURE_2D")
		gl.Call("bindTexture", target, x)
		for _, p := range []string{"TEXTURE_MIN_FILTER", "TEXTURE_MAG_FILTER"} {
			gl.Call("texParameteri", target, gl.Get(p), gl.Get("NEAREST"))
		}
		pixels := js.Null()
		if words != nil {
			b := make([]byte, 4*t.Texels())
			copy(b, words)
			u8 := js.Global().Get("Uint8Array").New(len(b))
			js.CopyBytesToJS(u8, b)
			pixels = js.Global().Get("Uint32Array").New(u8.Get("buffer"))
		}
		gl.Call("texImage2D", target, 0, gl.Get("R32UI"), t.Width, t.Height, 0, gl.Get("RED_INTEGER"), gl.Get("UNSIGNED_INT"), pixels)
		return x
	}
	read := func(x js.Value, t glsl.Texture, words int) []uint32 {
		gl.Call("framebufferTexture2D", gl.Get("FRAMEBUFFER"), gl.Get("COLOR_ATTACHMENT0"), gl.Get("TEXTURE_2D"), x, 0)
		gl.Call("framebufferTexture2D", gl.Get("FRAMEBUFFER"), gl.Get("COLOR_ATTACHMENT1"), gl.Get("TEXTURE_2D"), js.Null(), 0)
		gl.Call("readBuffer", gl.Get("COLOR_ATTACHMENT0"))
		arr := js.Global().Get("Uint32Array").New(4 * t.Texels())
		gl.Call("readPixels", 0, 0, t.Width, t.Height, gl.Get("RGBA_INTEGER"), gl.Get("UNSIGNED_INT"), arr)
		b := make([]byte, 16*t.Texels())
		js.CopyBytesToGo(b, js.Global().Get("Uint8Array").New(arr.Get("buffer")))
		out := make([]uint32, words)
		for k := range out {
			out[k] = binary.LittleEndian.Uint32(b[16*k:]) // the red channel
		}
		return out
	}
	var fault error
	err := jsutil.CatchJS(func() error {
		stop := st.Start(backend.StageUpload)
		node := make([]js.Value, len(g.Nodes))
		layout := make([]glsl.Texture, len(g.Nodes))
		for i, n := range g.Nodes {
			layout[i] = glsl.TypedLayout(n.DType, n.Shape.Len())
			if n.Op != ir.OpInput {
				continue
			}
			size := n.Shape.Len() * n.DType.Size()
			if i >= len(cl.Inputs) || len(cl.Inputs[i]) != size {
				stop()
				return fmt.Errorf("node %d: the input holds %d bytes, %v %v needs %d", i, len(cl.Inputs[i]), n.DType, n.Shape, size)
			}
			node[i] = texture(layout[i], cl.Inputs[i])
			st.UploadBytes += int64(size)
		}
		stop()
		stop = st.Start(backend.StageDispatch)
		fb = gl.Call("createFramebuffer")
		fbTarget := gl.Get("FRAMEBUFFER")
		gl.Call("bindFramebuffer", fbTarget, fb)
		faults := make([]js.Value, len(g.Nodes))
		for i, n := range g.Nodes {
			if n.Op == ir.OpInput {
				continue
			}
			ps := e.passes[i]
			node[i] = texture(layout[i], nil)
			faults[i] = texture(layout[i], nil)
			c0 := gl.Get("COLOR_ATTACHMENT0").Int()
			gl.Call("framebufferTexture2D", fbTarget, c0, gl.Get("TEXTURE_2D"), node[i], 0)
			gl.Call("framebufferTexture2D", fbTarget, c0+1, gl.Get("TEXTURE_2D"), faults[i], 0)
			gl.Call("drawBuffers", []any{c0, c0 + 1})
			if s := gl.Call("checkFramebufferStatus", fbTarget).Int(); s != gl.Get("FRAMEBUFFER_COMPLETE").Int() {
				stop()
				return fmt.Errorf("node %d: framebuffer incomplete (status 0x%x)", i, s)
			}
			prog := e.progs[i]
			gl.Call("useProgram", prog)
			gl.Call("uniform1f", gl.Call("getUniformLocation", prog, glsl.UniformOne), 1.0)
			gl.Call("uniform1f", gl.Call("getUniformLocation", prog, glsl.UniformZero), 0.0)
			for k, a := range ps.Args {
				gl.Call("activeTexture", gl.Get("TEXTURE0").Int()+k)
				gl.Call("bindTexture", gl.Get("TEXTURE_2D"), node[a])
				gl.Call("uniform1i", gl.Call("getUniformLocation", prog, fmt.Sprintf("%s%d", glsl.SamplerPrefix, k)), k)
			}
			gl.Call("viewport", 0, 0, ps.Texture.Width, ps.Texture.Height)
			gl.Call("drawArrays", gl.Get("TRIANGLES"), 0, 3)
		}
		gl.Call("drawBuffers", []any{gl.Get("COLOR_ATTACHMENT0")})
		stop()
		if e := gl.Call("getError").Int(); e != gl.Get("NO_ERROR").Int() {
			return fmt.Errorf("WebGL error 0x%x during the typed passes", e)
		}
		for i, n := range g.Nodes {
			if n.Op == ir.OpInput || !canFault(g, n) {
				continue
			}
			for _, f := range read(faults[i], layout[i], layout[i].Len) {
				if f == glsl.FaultIndex {
					fault = &backend.TypedFault{Code: ir.CodeInvalidInput, Node: i}
				} else if f != 0 && fault == nil {
					fault = &backend.TypedFault{Code: ir.CodeIntegerFault, Node: i}
				}
			}
			if fault != nil {
				return nil
			}
		}
		defer st.Start(backend.StageReadback)()
		cl.Outputs = make([][]byte, len(g.Outputs))
		for k, o := range g.Outputs {
			n := g.Nodes[o.ID]
			w := read(node[o.ID], layout[o.ID], layout[o.ID].Len)
			b := make([]byte, 4*len(w))
			for j, x := range w {
				binary.LittleEndian.PutUint32(b[4*j:], x)
			}
			cl.Outputs[k] = b[:n.Shape.Len()*n.DType.Size()]
			st.ReadbackBytes += int64(len(cl.Outputs[k]))
		}
		if e := gl.Call("getError").Int(); e != gl.Get("NO_ERROR").Int() {
			return fmt.Errorf("WebGL error 0x%x during readback", e)
		}
		return nil
	})
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		var be *backend.Error
		if errors.As(err, &be) {
			return err
		}
		return fail(ir.CodeExecutionFailed, err)
	}
	return fault
}
