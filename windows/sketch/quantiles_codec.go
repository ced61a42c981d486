package sketch

import (
	"math/bits"

	"github.com/logwindow/logwindow_exporter/windows/wire"
)

// AppendKind appends the mapping of values to bins and how counts are packed
// (windows.Codec): a sketch of another mapping is not read back into this one.
func (q *Quantiles) AppendKind(dst []byte) []byte {
	dst = append(dst, "quantiles"...)
	dst = wire.AppendUvarint(dst, binsPerOctave)
	dst = wire.AppendUvarint(dst, maxIndex)
	return wire.AppendUvarint(dst, maxPacked)
}

// AppendBinary appends the sketch (windows.Codec): whether it has negative values, the
// zeros, the count, and each store of bins as it lies, its packed counts copied.
func (q *Quantiles) AppendBinary(dst []byte) ([]byte, error) {
	dst = wire.AppendBool(dst, q.neg != nil)
	dst = wire.AppendUvarint(dst, q.zero)
	dst = wire.AppendUvarint(dst, q.n)
	dst = q.pos.appendBinary(dst)
	if q.neg != nil {
		dst = q.neg.appendBinary(dst)
	}
	return dst, nil
}

func (s *bins) appendBinary(dst []byte) []byte {
	dst = wire.AppendVarint(dst, int64(s.lo))
	dst = wire.AppendUvarint(dst, uint64(s.len()))
	dst = append(dst, s.width())
	dst = wire.AppendBool(dst, s.collapsed())
	return append(dst, s.b[:binBytes(s.len(), s.width())]...)
}

// UnmarshalBinary reads what AppendBinary wrote into an empty sketch (windows.Codec). The
// stores must be runs a sketch could hold, and the count the sum of their counts.
func (q *Quantiles) UnmarshalBinary(data []byte) error {
	r := wire.NewReader(data)
	neg := r.Bool()
	zero, n := r.Uvarint(), r.Uvarint()
	var pos, negs bins
	total := zero
	total = pos.unmarshal(r, total)
	if neg {
		total = negs.unmarshal(r, total)
	}
	if err := r.Done(); err != nil {
		return err
	}
	if total != n {
		return r.Failf("count %d, bins and zeros hold %d", n, total)
	}
	q.pos, q.zero, q.n = pos, zero, n
	if neg {
		q.neg = &negs
	}
	return nil
}

// unmarshal reads a store of bins that appendBinary wrote and returns total plus its
// counts, failing r on a store no sketch holds or a total that overflows.
func (s *bins) unmarshal(r *wire.Reader, total uint64) uint64 {
	lo, n := r.Varint(), r.Uvarint()
	width, collapsed := r.Byte(), r.Bool()
	switch {
	case r.Err() != nil:
		return 0
	case lo < -maxIndex || lo > maxIndex || n > uint64(maxIndex-lo+1) || n > runBins:
		r.Failf("bins %d…%d+%d outside ±%d", lo, lo, n, maxIndex)
		return 0
	case width > maxPacked && width != 64, (width == 0) != (n == 0):
		r.Failf("%d bins of width %d", n, width)
		return 0
	}
	size := binBytes(int(n), width)
	b := r.Bytes(size)
	if r.Err() != nil {
		return 0
	}
	if used := int(n) * int(width) % 8; used != 0 && b[size-1]>>used != 0 {
		r.Failf("bits set past the last count")
		return 0
	}
	*s = bins{lo: int32(lo), b: append([]byte(nil), b...)}
	if collapsed {
		s.run = runCollapsed
	}
	s.setRun(int(n), width)
	for j := range s.len() {
		var carry uint64
		if total, carry = bits.Add64(total, s.get(j), 0); carry != 0 {
			r.Failf("counts overflow")
			return 0
		}
	}
	return total
}
