package sketch

import (
	"cmp"
	"slices"

	"github.com/logwindow/logwindow_exporter/windows/wire"
)

// AppendKind appends the capacity (windows.Codec).
func (t *Top) AppendKind(dst []byte) []byte {
	return wire.AppendUvarint(append(dst, "top"...), uint64(t.capacity))
}

// AppendBinary appends the summary (windows.Codec): the sums N, N̂ and the loss, the
// arena of items as it lies, and each counter (its count and its item's place in the
// arena) in order. The table is not written: its hashes are seeded per process.
func (t *Top) AppendBinary(dst []byte) ([]byte, error) {
	dst = wire.AppendFloat(dst, t.total)
	dst = wire.AppendFloat(dst, t.kept)
	dst = wire.AppendFloat(dst, t.loss)
	dst = wire.AppendBytes(dst, t.arena)
	dst = wire.AppendUvarint(dst, uint64(len(t.counts)))
	for _, c := range t.counts {
		dst = wire.AppendFloat(dst, c.count)
		dst = wire.AppendUvarint(dst, uint64(c.off))
		dst = wire.AppendUvarint(dst, uint64(c.n))
	}
	return dst, nil
}

// UnmarshalBinary reads what AppendBinary wrote into an empty summary of the kind
// (windows.Codec): at most twice its capacity of counters, each positive, of a different
// item, the items apart in the arena, and every sum finite.
func (t *Top) UnmarshalBinary(data []byte) error {
	r := wire.NewReader(data)
	got := Top{capacity: t.capacity, total: r.Finite(), kept: r.Finite(), loss: r.Finite()}
	arena := r.Prefixed()
	n := r.Count(2*t.capacity, 3)
	if r.Err() != nil {
		return r.Err()
	}
	got.arena = slices.Clip(append([]byte(nil), arena...))
	if n > 0 {
		got.counts = make([]topCount, n)
	}
	for i := range got.counts {
		count, off, size := r.Finite(), r.Uvarint(), r.Uvarint()
		if !(count > 0) || off > uint64(len(arena)) || size > uint64(len(arena))-off {
			return r.Failf("counter %d: count %v, item at %d+%d of %d bytes", i, count, off, size, len(arena))
		}
		got.counts[i] = topCount{count: count, off: uint32(off), n: uint32(size)}
	}
	if err := r.Done(); err != nil {
		return err
	}
	// Items must not overlap: a prune moves them down the arena in the counters' order,
	// which is theirs in the arena. An empty item lies where the item added after it
	// starts: the length breaks the tie so that it sorts first, not as an overlap.
	slices.SortFunc(got.counts, func(a, b topCount) int {
		return cmp.Or(cmp.Compare(a.off, b.off), cmp.Compare(a.n, b.n))
	})
	for i := 1; i < len(got.counts); i++ {
		if got.counts[i].off < got.counts[i-1].off+got.counts[i-1].n {
			return r.Failf("items overlap in the arena")
		}
	}
	if n > 0 {
		got.table = make([]uint64, tableLen(n))
	}
	for i, c := range got.counts {
		item := got.arena[c.off : c.off+c.n]
		h := itemHash(item)
		slot, j := got.find(item, h)
		if j >= 0 {
			return r.Failf("item %q counted twice", item)
		}
		got.table[slot] = h | uint64(i+1)
	}
	*t = got
	return nil
}
