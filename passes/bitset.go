package passes

// bitset is a fixed-size set of small non-negative integers.
type bitset []uint64

func newBitset(n int) bitset    { return make(bitset, n/64+1) }
func (b bitset) set(i int)      { b[i/64] |= 1 << (i % 64) }
func (b bitset) has(i int) bool { return b[i/64]&(1<<(i%64)) != 0 }
func (b bitset) clone() bitset  { return append(bitset(nil), b...) }
func (b bitset) or(c bitset) {
	for i := range b {
		b[i] |= c[i]
	}
}
func (b bitset) clear(i int) { b[i/64] &^= 1 << (i % 64) }

// contains reports whether every element of c is in b.
func (b bitset) contains(c bitset) bool {
	for i := range b {
		if c[i]&^b[i] != 0 {
			return false
		}
	}
	return true
}
