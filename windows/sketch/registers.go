package sketch

import "slices"

// MinRegisterPrecision and MaxRegisterPrecision bound the precision Registers exports at:
// 2^4 = 16 to 2^14 = 16,384 registers, under the sketch's own 2^16.
const (
	MinRegisterPrecision = 4
	MaxRegisterPrecision = 14
)

// Registers returns the sketch's HyperLogLog registers at precision q, the 2^q values a
// sketch of that precision would hold of the same items, in dst (reused): register i is
// the largest rank, from 1, of the first 1-bit of the hash bits past the q index bits
// among the items whose hash begins with i; 0 for none. They are folded down exactly from
// the sketch's registers, or computed from its sparse keys (foldRank), so that the
// registers of several sketches, at one q, merge by their maximum into those of the union
// of their items. False, with no registers, when the sketch is dense at a precision below
// q (a cap made it coarser, see Cap): its registers cannot be refined.
func (d *Distinct) Registers(q uint8, dst []uint8) ([]uint8, bool) {
	dst = dst[:0]
	if d.regs != nil && d.p < q {
		return dst, false
	}
	dst = slices.Grow(dst, 1<<q)[:1<<q]
	clear(dst)
	put := func(j uint32, r uint8) {
		if dst[j] < r {
			dst[j] = r
		}
	}
	if d.regs == nil {
		for _, k := range d.set {
			if k != 0 {
				put(foldRank(k>>7, uint8(k&0x7f), sparseBits-q))
			}
		}
		return dst, true
	}
	by := d.p - q
	for w, word := range d.regs {
		for k := range uint32(8) {
			if r := uint8(word >> (8 * k)); r != 0 {
				put(foldRank(uint32(w)*8+k, r, by))
			}
		}
	}
	return dst, true
}
