package wasm

import (
	"errors"
	"fmt"
)

// reader decodes a module's LEB128s and bytes.
type reader struct {
	b   []byte
	pos int
	err error
}

func (r *reader) byte() byte {
	if r.pos >= len(r.b) {
		r.err = errors.New("unexpected end of module")
		return 0
	}
	r.pos++
	return r.b[r.pos-1]
}

func (r *reader) uleb() uint64 {
	var v uint64
	for shift := 0; shift < 35; shift += 7 {
		c := r.byte()
		v |= uint64(c&0x7f) << shift
		if c < 0x80 {
			return v
		}
	}
	r.err = errors.New("LEB128 too long")
	return 0
}

// The bitselect rewrite, a test tool: was wazero v1.12's miscompile of
// SIMD128 modules in its lowering of v128.bitselect, as the select
// epilogues that it broke suggested? rewriteBitselect replaces each
// v128.bitselect, whose operands v1 v2 c are on the stack, by
//
//	local.tee $c; v128.andnot; local.set $y; local.get $c; v128.and; local.get $y; v128.or
//
// which is (v1 & c) | (v2 & ~c), bitselect's definition, bit for bit,
// from instructions wazero lowers one SSE instruction each; $c and $y are
// two v128 locals appended to the function's. Every other byte of the
// module is kept; an instruction the walker does not know is an error.
// TestWazeroSIMDRepro's answer: no, the rewritten module is still wrong,
// so the bug is wazero's handling of many live v128 values, and no
// rewrite of one instruction makes SIMD128 safe under it.

// Wasm opcodes the rewrite reads or writes.
const (
	opLocalGet  = 0x20
	opLocalSet  = 0x21
	opLocalTee  = 0x22
	prefixMisc  = 0xFC
	prefixSIMD  = 0xFD
	simdAnd     = 78
	simdAndnot  = 79
	simdOr      = 80
	simdBitsel  = 82
	valtypeV128 = 0x7B
)

// rewriteBitselect returns wasm with every v128.bitselect replaced as the
// package doc above says, and how many it replaced.
func rewriteBitselect(wasm []byte) ([]byte, int, error) {
	if len(wasm) < 8 || string(wasm[:4]) != "\x00asm" {
		return nil, 0, errors.New("not a wasm module")
	}
	r := &reader{b: wasm, pos: 8}
	var params []int   // per type, its parameter count
	var funcType []int // per defined function, its type
	out := append([]byte{}, wasm[:8]...)
	total := 0
	for r.pos < len(r.b) {
		start := r.pos
		id := r.byte()
		size := int(r.uleb())
		body := r.pos
		end := body + size
		if r.err != nil || end > len(r.b) || end < body {
			return nil, 0, errors.New("malformed wasm section")
		}
		switch id {
		case 1: // types
			n := int(r.uleb())
			for range n {
				if r.byte() != 0x60 {
					return nil, 0, errors.New("type section: not a function type")
				}
				np := int(r.uleb())
				r.pos += np
				nr := int(r.uleb())
				r.pos += nr
				params = append(params, np)
			}
		case 3: // functions
			n := int(r.uleb())
			for range n {
				funcType = append(funcType, int(r.uleb()))
			}
		}
		if r.err != nil || r.pos > end {
			return nil, 0, fmt.Errorf("malformed section %d", id)
		}
		if id != 10 {
			out = append(out, wasm[start:end]...)
			r.pos = end
			continue
		}
		r.pos = body
		code, n, err := rewriteCode(r, end, params, funcType)
		if err != nil {
			return nil, 0, err
		}
		total += n
		out = append(out, 10)
		out = appendULEB(out, uint64(len(code)))
		out = append(out, code...)
		r.pos = end
	}
	return out, total, nil
}

// rewriteCode rewrites the code section's contents r.b[r.pos:end].
func rewriteCode(r *reader, end int, params, funcType []int) ([]byte, int, error) {
	n := int(r.uleb())
	if n != len(funcType) {
		return nil, 0, fmt.Errorf("code section: %d bodies for %d functions", n, len(funcType))
	}
	out := appendULEB(nil, uint64(n))
	total := 0
	for f := range n {
		size := int(r.uleb())
		start := r.pos
		fend := start + size
		if r.err != nil || fend > end {
			return nil, 0, fmt.Errorf("function %d: malformed body", f)
		}
		groups := int(r.uleb())
		groupsEnd := r.pos
		locals := 0
		for range groups {
			locals += int(r.uleb())
			r.byte()
		}
		declEnd := r.pos
		if funcType[f] >= len(params) {
			return nil, 0, fmt.Errorf("function %d: type %d out of range", f, funcType[f])
		}
		at, err := bitselects(r, fend)
		if err != nil {
			return nil, 0, fmt.Errorf("function %d: %w", f, err)
		}
		if len(at) == 0 {
			out = appendULEB(out, uint64(size))
			out = append(out, r.b[start:fend]...)
			r.pos = fend
			continue
		}
		total += len(at)
		c := uint64(params[funcType[f]] + locals)
		y := c + 1
		var b []byte
		b = appendULEB(b, uint64(groups+1))
		b = append(b, r.b[groupsEnd:declEnd]...)
		b = append(b, 2, valtypeV128)
		prev := declEnd
		for _, p := range at {
			b = append(b, r.b[prev:p.pos]...)
			b = append(b, opLocalTee)
			b = appendULEB(b, c)
			b = append(b, prefixSIMD)
			b = appendULEB(b, simdAndnot)
			b = append(b, opLocalSet)
			b = appendULEB(b, y)
			b = append(b, opLocalGet)
			b = appendULEB(b, c)
			b = append(b, prefixSIMD)
			b = appendULEB(b, simdAnd)
			b = append(b, opLocalGet)
			b = appendULEB(b, y)
			b = append(b, prefixSIMD)
			b = appendULEB(b, simdOr)
			prev = p.end
		}
		b = append(b, r.b[prev:fend]...)
		out = appendULEB(out, uint64(len(b)))
		out = append(out, b...)
		r.pos = fend
	}
	if r.pos != end {
		return nil, 0, errors.New("code section: trailing bytes")
	}
	return out, total, nil
}

// span is one instruction's bytes.
type span struct{ pos, end int }

// bitselects walks a function's instructions from r.pos to end and
// returns the span of each v128.bitselect.
func bitselects(r *reader, end int) ([]span, error) {
	var at []span
	for r.pos < end {
		start := r.pos
		op := r.byte()
		switch {
		case op <= 0x01, op == 0x05, op == 0x0B, op == 0x0F, op == 0x1A, op == 0x1B, op == 0xD1,
			op >= 0x45 && op <= 0xC4:
			// no immediate
		case op >= 0x02 && op <= 0x04: // block, loop, if: a block type
			if b := r.peek(); b == 0x40 || b >= 0x6F && b <= 0x7F {
				r.byte()
			} else {
				r.sleb()
			}
		case op == 0x0C, op == 0x0D, op == 0x10, op == 0x12, op >= 0x20 && op <= 0x26, op == 0xD2:
			r.uleb()
		case op == 0x0E: // br_table
			n := int(r.uleb())
			for range n + 1 {
				r.uleb()
			}
		case op == 0x11, op == 0x13: // call_indirect: type, table
			r.uleb()
			r.uleb()
		case op == 0x1C: // select t*
			n := int(r.uleb())
			r.pos += n
		case op >= 0x28 && op <= 0x3E: // loads and stores: memarg
			r.memarg()
		case op == 0x3F, op == 0x40: // memory.size, memory.grow
			r.uleb()
		case op == 0x41:
			r.sleb()
		case op == 0x42:
			r.sleb()
		case op == 0x43:
			r.pos += 4
		case op == 0x44:
			r.pos += 8
		case op == 0xD0: // ref.null t
			r.byte()
		case op == prefixMisc:
			switch sub := r.uleb(); {
			case sub <= 7: // trunc_sat
			case sub == 8, sub == 12, sub == 14: // memory.init, table.init, table.copy
				r.uleb()
				r.uleb()
			case sub == 9, sub == 11, sub == 13, sub == 15, sub == 16, sub == 17:
				r.uleb()
			case sub == 10: // memory.copy
				r.uleb()
				r.uleb()
			default:
				return nil, fmt.Errorf("unknown instruction 0xFC %d at byte %d", sub, start)
			}
		case op == prefixSIMD:
			switch sub := r.uleb(); {
			case sub <= 11, sub == 92, sub == 93: // loads, store, load_zero: memarg
				r.memarg()
			case sub == 12, sub == 13: // v128.const, i8x16.shuffle
				r.pos += 16
			case sub >= 21 && sub <= 34: // extract and replace lane
				r.byte()
			case sub >= 84 && sub <= 91: // load and store lane: memarg, lane
				r.memarg()
				r.byte()
			case sub == simdBitsel:
				at = append(at, span{start, r.pos})
			case sub <= 255: // the rest of SIMD128 has no immediate
			default:
				return nil, fmt.Errorf("unknown instruction 0xFD %d at byte %d (relaxed SIMD?)", sub, start)
			}
		default:
			return nil, fmt.Errorf("unknown instruction %#02x at byte %d", op, start)
		}
		if r.err != nil {
			return nil, r.err
		}
	}
	if r.pos != end {
		return nil, errors.New("an instruction runs past the function's end")
	}
	return at, nil
}

func (r *reader) peek() byte {
	if r.pos >= len(r.b) {
		r.err = errors.New("unexpected end of module")
		return 0
	}
	return r.b[r.pos]
}

// sleb reads a signed LEB128 (up to 64 bits).
func (r *reader) sleb() {
	for range 10 {
		if r.byte() < 0x80 {
			return
		}
	}
	r.err = errors.New("LEB128 too long")
}

// memarg reads a memory operand: alignment (with bit 6, a memory index)
// and offset.
func (r *reader) memarg() {
	if a := r.uleb(); a&0x40 != 0 {
		r.uleb()
	}
	r.uleb64()
}

// uleb64 reads an unsigned LEB128 of up to 64 bits (a memory64 offset).
func (r *reader) uleb64() {
	for range 10 {
		if r.byte() < 0x80 {
			return
		}
	}
	r.err = errors.New("LEB128 too long")
}

func appendULEB(b []byte, v uint64) []byte {
	for {
		c := byte(v & 0x7f)
		v >>= 7
		if v == 0 {
			return append(b, c)
		}
		b = append(b, c|0x80)
	}
}
