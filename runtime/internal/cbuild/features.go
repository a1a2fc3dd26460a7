package cbuild

import (
	"errors"
	"fmt"
)

// forbidden are wasm features whose float results are not defined to the
// bit, or not to be trusted: relaxed SIMD allows fused multiply-adds and
// implementation-defined lane results; SIMD128 is defined to the bit, but
// wazero v1.12's compiler miscompiles v128.bitselect (see WasmCFlags).
var forbidden = []string{"relaxed-simd", "simd128"}

// forbiddenSIMD are the features a SIMD128 module for a browser's engine
// must not use (Toolchain.WasmSIMD).
var forbiddenSIMD = []string{"relaxed-simd"}

// CheckFeatures reads the target_features section Clang writes into every
// module and refuses one that uses a forbidden feature. A module without
// the section passes: its instructions are then checked by the runtime's
// validator, and wazero implements no relaxed-SIMD opcode at all.
func CheckFeatures(wasm []byte) error { return checkFeatures(wasm, forbidden) }

func checkFeatures(wasm []byte, forbidden []string) error {
	feats, err := Features(wasm)
	if err != nil {
		return err
	}
	for _, f := range feats {
		for _, bad := range forbidden {
			if f == "+"+bad || f == "="+bad {
				return fmt.Errorf("module uses wasm feature %s, which breaks bit-exact float results", bad)
			}
		}
	}
	return nil
}

// Features returns the entries of the module's target_features custom
// section, each as its prefix ('+' used, '-' disallowed, '=' required)
// followed by the feature name, e.g. "+simd128".
func Features(wasm []byte) ([]string, error) {
	r := &reader{b: wasm}
	if len(wasm) < 8 || string(wasm[:4]) != "\x00asm" {
		return nil, errors.New("not a wasm module")
	}
	r.pos = 8
	for r.pos < len(r.b) {
		id := r.byte()
		size := int(r.uleb())
		end := r.pos + size
		if r.err != nil || end > len(r.b) || end < r.pos {
			return nil, errors.New("malformed wasm section")
		}
		if id == 0 && r.name() == "target_features" {
			return r.features(end)
		}
		r.pos = end
	}
	return nil, nil
}

// reader decodes the few wasm encodings Features needs.
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

func (r *reader) name() string {
	n := int(r.uleb())
	if r.err != nil || n > len(r.b)-r.pos {
		r.err = errors.New("malformed name")
		return ""
	}
	r.pos += n
	return string(r.b[r.pos-n : r.pos])
}

func (r *reader) features(end int) ([]string, error) {
	n := r.uleb()
	var out []string
	for i := uint64(0); i < n && r.err == nil && r.pos < end; i++ {
		prefix := r.byte()
		out = append(out, string(prefix)+r.name())
	}
	if r.err != nil {
		return nil, fmt.Errorf("target_features: %w", r.err)
	}
	return out, nil
}
