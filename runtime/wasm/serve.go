package wasm

import (
	"bytes"
	"context"
	"encoding/gob"
	"fmt"
	"io"
	"reflect"

	"github.com/gpucc/gpucc/codegen/c"
	"github.com/gpucc/gpucc/internal/gobcheck"
	"github.com/gpucc/gpucc/internal/negzero"
	"github.com/gpucc/gpucc/ir"
	"github.com/gpucc/gpucc/runtime/internal/cbuild"
)

// BuildRequest is what the page's wasm backend asks of the server that
// served the page, which has Clang where a page has none: the module of a
// program's kernels (Program, its input buffers' data dropped) or of a
// typed graph (Graph). The server generates the C itself from the checked
// program or graph: it never compiles C that it is sent.
type BuildRequest struct {
	Program *ir.Program
	Graph   *ir.Graph
	// SIMD asks for SIMD128 (cbuild.WasmSIMDCFlags): the page's engine is
	// the browser's, which wazero's SIMD miscompile does not concern.
	SIMD bool
	// Threads asks for a threads module of a program (cbuild.WasmThreads,
	// SIMD128 with it): shared memory and gpucc_part (threads.go).
	Threads bool
	// NegZeros are the paths (negzero.Paths) of the floats of Program or Graph
	// that are -0: gob leaves out a field equal to its zero value, and
	// -0 == 0, so they arrive as +0 (an Instr's Scalar, an output's Const)
	// unless set again.
	NegZeros [][]int
}

// Encode returns the request as ServeBuild reads it: gob, with the paths
// of its -0 floats.
func (req BuildRequest) Encode() ([]byte, error) {
	req.NegZeros = negzero.Paths(req.Program)
	for _, p := range negzero.Paths(req.Graph) {
		req.NegZeros = append(req.NegZeros, append([]int{-1}, p...))
	}
	var b bytes.Buffer
	err := gob.NewEncoder(&b).Encode(req)
	return b.Bytes(), err
}

// BuildResponse is the answer: the C the server generated (the page
// refuses a module whose source is not the one it generated itself) and
// the module Clang built from it.
type BuildResponse struct {
	Source string
	Module []byte
}

// MaxBuildRequest bounds a BuildRequest's encoding (a program without its
// data is its structure and its kernels' constants).
const MaxBuildRequest = 64 << 20

// MaxBuildDecodedPerByte bounds what decoding a BuildRequest allocates,
// per byte of its encoding (plus a MiB): the suite's 445 programs and
// typed graphs take 4.9 at most, the type definitions included, and the
// page's real models 5.3 (TestWasmPage's five: Silero VAD's two, PaddleOCR's
// classifier, recognizer and detector; 2026-12-05). So a build holds
// its request and at most 8 times as much again, 576 MiB at
// MaxBuildRequest.
const MaxBuildDecodedPerByte = 8

// decodeBuildRequest reads and decodes a BuildRequest from a sender that
// is not trusted: gobcheck holds its types to BuildRequest's, its nesting
// and what decoding it allocates before encoding/gob reads it. Without
// that, a request of 10 MB nesting a kernel's Parts 2^21 deep (4 bytes a
// level) passed the decoder's goroutine's 1 GB stack, a fatal error that
// ended the server, and one of N empty kernels (1 byte each) allocated 368
// bytes each.
func decodeBuildRequest(r io.Reader) (BuildRequest, error) {
	var req BuildRequest
	b, err := io.ReadAll(io.LimitReader(r, MaxBuildRequest+1))
	if err != nil {
		return req, ir.Errorf(ir.CodeInvalidGraph, -1, "", "reading the wasm build request: %v", err)
	}
	if len(b) > MaxBuildRequest {
		return req, ir.LimitErrorf("MaxGraphBytes", -1, "", "the wasm build request exceeds %d bytes", MaxBuildRequest)
	}
	lim := gobcheck.Limits{MaxDepth: buildRequestDepth, MaxBytes: MaxBuildDecodedPerByte*int64(len(b)) + 1<<20}
	if _, _, err := gobcheck.Check(b, lim, reflect.TypeFor[BuildRequest]()); err != nil {
		return req, ir.Errorf(ir.CodeInvalidGraph, -1, "", "the wasm build request is refused before decoding: %v", err)
	}
	if err := gob.NewDecoder(bytes.NewReader(b)).Decode(&req); err != nil {
		return req, ir.Errorf(ir.CodeInvalidGraph, -1, "", "the wasm build request does not decode: %v", err)
	}
	return req, nil
}

// buildSource is the C of a decoded request: its -0 floats set again,
// its program sealed or its graph validated under limits, then emitted. A
// panic on the way (a bug, which a request that passed the checks should
// not meet) is the request's internal error, not the server's.
func buildSource(req BuildRequest, limits ir.Limits) (source string, err error) {
	defer func() {
		if p := recover(); p != nil {
			source, err = "", ir.Errorf(ir.CodeInternal, -1, "", "the wasm build request: gpucc panicked, a bug (report it with the request): %v", p)
		}
	}()
	for _, path := range req.NegZeros { // a Program's paths, or -1 and a Graph's
		var of any = req.Program
		if len(path) > 0 && path[0] == -1 {
			of, path = req.Graph, path[1:]
		}
		if err := negzero.Set(of, [][]int{path}); err != nil {
			return "", ir.Errorf(ir.CodeInvalidGraph, -1, "", "the wasm build request: %v", err)
		}
	}
	switch {
	case req.Program != nil && req.Graph == nil:
		sp, err := ir.Seal(req.Program)
		if err != nil {
			return "", ir.Errorf(ir.CodeInvalidGraph, -1, "", "the wasm build request's program: %v", err)
		}
		u, err := c.Target{}.Emit(sp)
		if err != nil {
			return "", fail(ir.CodeInternal, err)
		}
		if req.Threads {
			return u.Source + partSource(u), nil
		}
		return u.Source, nil
	case req.Graph != nil && req.Program == nil:
		if req.Threads {
			return "", ir.Errorf(ir.CodeInvalidGraph, -1, "", "a wasm build request for threads holds a program: a typed graph runs on one thread")
		}
		if err := ir.Validate(req.Graph, limits); err != nil {
			return "", err
		}
		return typedSource(req.Graph)
	}
	return "", ir.Errorf(ir.CodeInvalidGraph, -1, "", "a wasm build request holds a program or a typed graph, one of them")
}

// buildRequestDepth is how deep a BuildRequest's values may nest: a
// request, its program, kernels, a kernel, its parts, a part, its body, an
// instruction and its arguments are 9 levels (a part has no parts).
const buildRequestDepth = 12

// ServeBuild answers an encoded BuildRequest (gob) with an encoded
// BuildResponse: invalid_graph for a request that does not decode or whose
// program or graph does not validate (a typed graph under limits), the
// C generator's own error for what it cannot emit, backend_unavailable
// where this machine has no toolchain.
func ServeBuild(ctx context.Context, r io.Reader, limits ir.Limits) ([]byte, error) {
	req, err := decodeBuildRequest(r)
	if err != nil {
		return nil, err
	}
	source, err := buildSource(req, limits)
	if err != nil {
		return nil, err
	}
	tc, err := cbuild.Find()
	if err != nil {
		return nil, fail(ir.CodeBackendUnavailable, err)
	}
	build := tc.Wasm
	switch {
	case req.Threads:
		build = tc.WasmThreads
	case req.SIMD:
		build = tc.WasmSIMD
	}
	mod, err := build(ctx, source)
	if err != nil {
		return nil, fail(ir.CodeBackendUnavailable, fmt.Errorf("building the module: %w", err))
	}
	var b bytes.Buffer
	if err := gob.NewEncoder(&b).Encode(BuildResponse{Source: source, Module: mod}); err != nil {
		return nil, fail(ir.CodeInternal, err)
	}
	return b.Bytes(), nil
}
