//go:build js

package webgl2

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"syscall/js"

	"github.com/gpucc/gpucc/codegen/glsl"
	"github.com/gpucc/gpucc/ir"
	"github.com/gpucc/gpucc/passes"
	"github.com/gpucc/gpucc/runtime/backend"
	"github.com/gpucc/gpucc/runtime/internal/jsutil"
	"github.com/gpucc/gpucc/runtime/internal/typedplan"
)

var _ backend.TypedDevice = (*device)(nil)

// CompileTyped makes one pass per typed node of the typed graph
// (codegen/glsl's TypedNode: the node's words into an R32UI texture, its
// fault codes into a second one) and links their programs through the
// device's cache; its float32 stretches (runtime/internal/typedplan's
// islands) are compiled as float32 plans. An op the GLSL typed path does
// not hold is unsupported, naming the node.
func (d *device) CompileTyped(ctx context.Context, p *backend.TypedProgram, st *backend.Stats) (backend.TypedExecutable, error) {
	g := p.Graph
	if err := ir.CheckDTypes(g, ir.ProtocolDTypes, "webgl2"); err != nil { // the GLSL typed passes' dtypes
		return nil, err
	}
	stop := st.Start(backend.StageCodegen)
	e := &typedExecutable{d: d, g: g, plan: typedplan.New(g, true), passes: make([]glsl.TypedPass, len(g.Nodes)), progs: make([]js.Value, len(g.Nodes))}
	for i, n := range g.Nodes {
		if n.Op == ir.OpInput || e.plan.Island[i] {
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
	for _, ig := range e.plan.Islands {
		var isl *island
		if ig.Graph != nil {
			sp, _, err := passes.Compile(ig.Graph, d.info.Profile.Options(typedplan.Limits))
			if err != nil {
				return nil, err
			}
			exe, err := d.Compile(ctx, &backend.Program{IR: sp}, st)
			if err != nil {
				return nil, err
			}
			isl = &island{exe: exe, prog: sp.Program()}
			isl.inputs, isl.outs = ig.Mapping(isl.prog)
		}
		e.islands = append(e.islands, isl)
	}
	return e, nil
}

type typedExecutable struct {
	d       *device
	g       *ir.Graph
	plan    typedplan.Plan
	passes  []glsl.TypedPass // by node; empty for inputs and island nodes
	progs   []js.Value
	islands []*island
}

// island is a float32 island of the typed graph (typedplan) compiled as a
// float32 plan of passes; it reads its inputs from the nodes' textures
// through host memory, as every webgl2 run takes its inputs.
type island struct {
	exe    backend.Executable
	prog   *ir.Program
	inputs []int // by program buffer: the graph node an input holds, else -1
	outs   []int // by program output: the graph node it is
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
	case ir.OpGather, ir.OpGatherElements, ir.OpScatterND, ir.OpScatterElements:
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
		for _, step := range e.plan.Steps {
			if step.Island >= 0 {
				if isl := e.islands[step.Island]; isl != nil {
					gl.Call("drawBuffers", []any{gl.Get("COLOR_ATTACHMENT0")})
					if err := e.runIsland(ctx, isl, node, layout, texture, read, st); err != nil {
						stop()
						return err
					}
					gl.Call("bindFramebuffer", fbTarget, fb)
				}
				continue
			}
			if err := e.draw(step.Nodes, node, faults, layout, texture); err != nil {
				stop()
				return err
			}
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

// draw draws the passes of nodes into new word and fault textures.
func (e *typedExecutable) draw(nodes []int, node, faults []js.Value, layout []glsl.Texture, texture func(glsl.Texture, []byte) js.Value) error {
	gl := e.d.gl
	fbTarget := gl.Get("FRAMEBUFFER")
	for _, i := range nodes {
		ps := e.passes[i]
		node[i] = texture(layout[i], nil)
		faults[i] = texture(layout[i], nil)
		c0 := gl.Get("COLOR_ATTACHMENT0").Int()
		gl.Call("framebufferTexture2D", fbTarget, c0, gl.Get("TEXTURE_2D"), node[i], 0)
		gl.Call("framebufferTexture2D", fbTarget, c0+1, gl.Get("TEXTURE_2D"), faults[i], 0)
		gl.Call("drawBuffers", []any{c0, c0 + 1})
		if s := gl.Call("checkFramebufferStatus", fbTarget).Int(); s != gl.Get("FRAMEBUFFER_COMPLETE").Int() {
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
	return nil
}

// runIsland runs a float32 island: its inputs read from the nodes' word
// textures (float32 bits) into host memory, its outputs written back as
// the nodes' word textures.
func (e *typedExecutable) runIsland(ctx context.Context, isl *island, node []js.Value, layout []glsl.Texture,
	texture func(glsl.Texture, []byte) js.Value, read func(js.Value, glsl.Texture, int) []uint32, st *backend.Stats) error {
	p := isl.prog
	call := &backend.Call{Args: make([]backend.Arg, len(p.Buffers)), Dests: make([]backend.Dest, len(p.Outputs)), Stats: st, NonFinite: true}
	for b, i := range isl.inputs {
		if i < 0 {
			continue
		}
		w := read(node[i], layout[i], p.Buffers[b].Len)
		f := make([]float32, len(w))
		for k, x := range w {
			f[k] = math.Float32frombits(x)
		}
		call.Args[b].Host = f
	}
	for k, o := range p.Outputs {
		if o.Buffer >= 0 {
			call.Dests[k].Host = make([]float32, p.Buffers[o.Buffer].Len)
		}
	}
	if err := isl.exe.Run(ctx, call); err != nil {
		return err
	}
	for k, o := range p.Outputs {
		vals := call.Dests[k].Host
		if o.Buffer < 0 { // folded: the constant over the shape
			vals = make([]float32, o.Shape.Len())
			for j := range vals {
				vals[j] = o.Const
			}
		}
		b := make([]byte, 4*len(vals))
		for j, v := range vals {
			binary.LittleEndian.PutUint32(b[4*j:], math.Float32bits(v))
		}
		i := isl.outs[k]
		node[i] = texture(layout[i], b)
	}
	return nil
}
