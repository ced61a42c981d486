package sketch

import (
	"encoding/binary"
	"math"
	"math/bits"

	"github.com/logwindow/logwindow_exporter/windows/wire"
)

// AppendKind appends the bounds (windows.Codec): buckets of other bounds are not read
// back into these.
func (b *Buckets) AppendKind(dst []byte) []byte {
	dst = wire.AppendUvarint(append(dst, "buckets"...), uint64(len(b.bounds)))
	for _, x := range b.bounds {
		dst = binary.LittleEndian.AppendUint64(dst, math.Float64bits(x))
	}
	return dst
}

// AppendBinary appends the count, the sum and each bucket's count (windows.Codec).
func (b *Buckets) AppendBinary(dst []byte) ([]byte, error) {
	dst = wire.AppendUvarint(dst, b.n)
	dst = wire.AppendFloat(dst, b.sum)
	for _, c := range b.counts {
		dst = wire.AppendUvarint(dst, c)
	}
	return dst, nil
}

// UnmarshalBinary reads what AppendBinary wrote into empty buckets of the kind
// (windows.Codec); the buckets may hold no more values than the count.
func (b *Buckets) UnmarshalBinary(data []byte) error {
	r := wire.NewReader(data)
	n, sum := r.Uvarint(), r.Finite()
	total := uint64(0)
	for i := range b.counts {
		c := r.Uvarint()
		var carry uint64
		if total, carry = bits.Add64(total, c, 0); carry != 0 || total > n {
			return r.Failf("buckets hold more than the %d values counted", n)
		}
		b.counts[i] = c
	}
	if err := r.Done(); err != nil {
		b.Reset()
		return err
	}
	b.n, b.sum = n, sum
	return nil
}
