package sketch

import (
	"encoding/binary"

	"github.com/logwindow/logwindow_exporter/windows/wire"
)

// Forms of an encoded Distinct.
const (
	distinctEmpty = iota
	distinctSparse
	distinctSealed
	distinctDense
)

// AppendKind appends the precision and the sparse keys' layout (windows.Codec).
func (d *Distinct) AppendKind(dst []byte) []byte {
	dst = append(dst, "distinct"...)
	dst = wire.AppendUvarint(dst, DistinctPrecision)
	return wire.AppendUvarint(dst, sparseBits)
}

// AppendBinary appends the sketch (windows.Codec): its form, then a sparse one's keys (4
// bytes each, little-endian) or a dense one's precision and registers (a byte each).
func (d *Distinct) AppendBinary(dst []byte) ([]byte, error) {
	switch {
	case d.regs != nil:
		dst = append(dst, distinctDense, d.p)
		for _, w := range d.regs {
			dst = binary.LittleEndian.AppendUint64(dst, w)
		}
		return dst, nil
	case d.n == 0:
		return append(dst, distinctEmpty), nil
	case d.sealed:
		dst = append(dst, distinctSealed)
	default:
		dst = append(dst, distinctSparse)
	}
	dst = wire.AppendUvarint(dst, uint64(d.n))
	for _, k := range d.set {
		if k != 0 {
			dst = binary.LittleEndian.AppendUint32(dst, k)
		}
	}
	return dst, nil
}

// UnmarshalBinary reads what AppendBinary wrote into an empty sketch (windows.Codec):
// keys must be different and of ranks an item can have, registers of values a register
// can hold at their precision.
func (d *Distinct) UnmarshalBinary(data []byte) error {
	r := wire.NewReader(data)
	var got Distinct
	switch form := r.Byte(); form {
	case distinctEmpty:
	case distinctDense:
		p := r.Byte()
		if p < minPrecision || p > DistinctPrecision {
			return r.Failf("precision %d", p)
		}
		regs := r.Bytes(1 << p)
		for _, rank := range regs {
			if rank > 64-p+1 {
				return r.Failf("register of rank %d at precision %d", rank, p)
			}
		}
		if regs != nil {
			got.regs, got.p = make([]uint64, 1<<p/8), p
			for i := range got.regs {
				got.regs[i] = binary.LittleEndian.Uint64(regs[8*i:])
			}
		}
	case distinctSparse, distinctSealed:
		n := r.Count(maxSparse, 4)
		keys := make([]uint32, n)
		for i := range keys {
			k := r.Uint32()
			if rank := k & 0x7f; rank == 0 || rank > 64-sparseBits+1 {
				return r.Failf("sparse key %#x of rank %d", k, rank)
			}
			keys[i] = k
		}
		if n == 0 {
			return r.Failf("sparse sketch without keys")
		}
		// Into a table, which finds a key repeated; a sealed sketch keeps just the keys.
		for _, k := range keys {
			got.insert(k)
		}
		if int(got.n) != n {
			return r.Failf("sparse keys repeat")
		}
		if form == distinctSealed {
			got.set, got.sealed = keys, true
		}
	default:
		return r.Failf("distinct form %d", form)
	}
	if err := r.Done(); err != nil {
		return err
	}
	*d = got
	return nil
}
