package sketch

import (
	"github.com/logwindow/logwindow_exporter/windows/wire"
	"math/rand/v2"
	"testing"
)

// TestTopEmptyItemRoundTrips: an empty item shares its offset in the arena with the item
// added after it; a summary holding both decodes as it was encoded, whatever order the
// decoder's sort leaves the two counters in.
func TestTopEmptyItemRoundTrips(t *testing.T) {
	for _, tc := range []struct {
		name     string
		capacity int
		items    int
	}{
		{"few counters", 20, 10},
		{"many counters", 64, 100},
		{"full", 200, 399},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := rand.New(rand.NewPCG(7, uint64(tc.items)))
			for trial := range 50 {
				src := NewTop(tc.capacity)
				for i := range tc.items {
					src.Add(1, sizedItem(i, 1+r.IntN(6)))
					if r.IntN(tc.items) == 0 || i == trial%tc.items {
						src.Add(1, nil)
					}
				}
				enc, err := src.AppendBinary(nil)
				if err != nil {
					t.Fatal(err)
				}
				got := NewTop(tc.capacity)
				if err := got.UnmarshalBinary(enc); err != nil {
					t.Fatalf("trial %d: a summary's own encoding does not decode: %v", trial, err)
				}
			}
		})
	}
}

// TestTopDecodesTiedOffsets: counters written in any order decode (TestTopDecodedInAnyOrder),
// also when an empty item lies where the next item starts.
func TestTopDecodesTiedOffsets(t *testing.T) {
	src := NewTop(8)
	src.Add(2, []byte("ab"))
	src.Add(3, nil)
	src.Add(4, []byte("cd"))
	for _, tc := range []struct {
		name  string
		order []int
	}{{"arena order", []int{0, 1, 2}}, {"empty item last", []int{0, 2, 1}}, {"reversed", []int{2, 1, 0}}} {
		t.Run(tc.name, func(t *testing.T) {
			enc := wire.AppendFloat(nil, src.total)
			enc = wire.AppendFloat(enc, src.kept)
			enc = wire.AppendFloat(enc, src.loss)
			enc = wire.AppendBytes(enc, src.arena)
			enc = wire.AppendUvarint(enc, uint64(len(src.counts)))
			for _, i := range tc.order {
				c := src.counts[i]
				enc = wire.AppendFloat(enc, c.count)
				enc = wire.AppendUvarint(enc, uint64(c.off))
				enc = wire.AppendUvarint(enc, uint64(c.n))
			}
			if err := NewTop(8).UnmarshalBinary(enc); err != nil {
				t.Errorf("counters %v: %v", src.counts, err)
			}
		})
	}
}
