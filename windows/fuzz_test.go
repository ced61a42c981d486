package windows

import (
	"math/rand/v2"
	"testing"
)

// fuzzGaps are the clock moves a fuzz byte selects: none, a little, about a slot of each
// wheel, and longer than every wheel.
var fuzzGaps = [...]int64{0, 0, 0, 1, 1, 2, 3, 59, 60, 61, 299, 300, 3599, 3600, 86399, 86400, 400_000, 40_000_000}

// FuzzSeries decodes the input into a layout and a sequence of adds and reads (four bytes
// each: kind and clock move, event age, value, read offset) and checks every step against
// the naive model, and that the adds given a second's run at a time (AddMany) give what
// they give one by one.
func FuzzSeries(f *testing.F) {
	f.Add([]byte{0, 0, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8})
	f.Add([]byte{3, 1, 0x11, 0, 9, 0, 0x2f, 5, 0, 0x91, 0, 0xff, 0, 0, 0x80, 2, 1, 0xff, 0xff, 0xff})
	f.Add([]byte{4, 2, 0x0d, 1, 8, 0, 0x0e, 0x81, 8, 200, 0x0f, 0x82, 1, 0, 0x10, 0x83, 0xf0})
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) < 2 {
			return
		}
		lay := referenceLayouts[int(data[0])%len(referenceLayouts)]
		opts := allOptions[int(data[1])%len(allOptions)]
		l, err := NewLayout(lay.windows, opts)
		if err != nil {
			t.Fatal(err)
		}
		now := int64(1_700_000_000)
		if data[1]&0x80 != 0 {
			now = -now / 7
		}
		since := now
		var ops []op
		for b := data[2:]; len(b) >= 4; b = b[4:] {
			now += fuzzGaps[int(b[0]&0x7f)%len(fuzzGaps)]
			o := op{now: now, v: float64(int8(b[2])) / 4}
			if !opts.Events {
				o.v = 1
			}
			switch age := int64(int8(b[1])); {
			case b[0]&0x80 != 0:
				o.read = true
				o.now += int64(b[3]) * int64(b[3]) * int64(b[3])
			case b[3]&0x80 != 0:
				// A stale now, as from a caller that read the clock before another.
				o.now -= int64(b[3] & 0x7f)
				o.at = o.now - age
			case age == -128:
				o.at = o.now - l.Longest() + int64(b[3]&3) - 1
			default:
				o.at = o.now - age*age*age
			}
			ops = append(ops, o)
		}
		if err := replay(l, since, ops); err != nil {
			t.Fatal(err)
		}
		one, many := &account{}, &account{}
		o1, om := opts, opts
		o1.Account, om.Account = one, many
		l1, lm := mustLayout(t, lay.windows, o1), mustLayout(t, lay.windows, om)
		r := rand.New(rand.NewPCG(uint64(len(data)), uint64(data[0])))
		if err := addManyMatches(l1.NewSeries(), lm.NewSeries(), one, many, runs(r, ops)); err != nil {
			t.Fatal(err)
		}
	})
}
