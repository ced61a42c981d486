package windows

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"math"

	"github.com/logwindow/logwindow_exporter/windows/wire"
)

// Codec is a Summary that can be saved with its series and restored (Series.AppendBinary,
// Layout.DecodeSeries), so that windows survive a restart. A layout whose kinds all make
// Codecs can encode its series.
type Codec interface {
	// AppendKind appends what tells the kind apart from every other, its parameters
	// included (bounds, capacity, mapping): it goes into the layout's Fingerprint, so that
	// summaries are never read back by a kind that would misread them.
	AppendKind(dst []byte) []byte
	// AppendBinary appends the summary's state to dst.
	AppendBinary(dst []byte) ([]byte, error)
	// UnmarshalBinary sets an empty summary made by its kind's New to the state
	// AppendBinary wrote. Whatever the bytes, it returns an error (wrapping
	// wire.ErrCorrupt) rather than panic or leave a state that a later call could panic
	// on, and allocates no more than the bytes account for.
	UnmarshalBinary(data []byte) error
}

var (
	// ErrLayout is the error of decoding a series encoded by another layout: other
	// windows, options or summary kinds (see Layout.Fingerprint).
	ErrLayout = errors.New("series of another layout")
	// ErrNoCodec is the error of encoding a series of a layout whose summaries are not
	// Codecs.
	ErrNoCodec = errors.New("summary kind cannot be encoded")
)

// codecVersion is part of every fingerprint: a change of the series encoding changes it,
// so that old encodings are refused as of another layout rather than misread.
const codecVersion = 1

// fingerprint hashes what a series' encoding depends on: the wheels (from the windows),
// what a slot keeps, where windows end, and each summary kind's item and AppendKind.
func (l *Layout) fingerprint() uint64 {
	b := binary.AppendUvarint(nil, codecVersion)
	b = binary.AppendUvarint(b, uint64(len(l.secs)))
	for _, s := range l.secs {
		b = binary.AppendVarint(b, s)
	}
	b = binary.AppendUvarint(b, uint64(l.stride))
	b = binary.AppendUvarint(b, uint64(l.events))
	b = binary.AppendUvarint(b, uint64(l.extrema))
	b = binary.AppendVarint(b, l.lag)
	b = binary.AppendUvarint(b, uint64(len(l.kinds)))
	for _, kind := range l.kinds {
		b = binary.AppendVarint(b, int64(kind.Item))
		var key []byte
		if kind.New != nil {
			if c, ok := kind.New().(Codec); ok {
				key = c.AppendKind(nil)
			}
		}
		b = wire.AppendBytes(b, key)
	}
	h := fnv.New64a()
	h.Write(b)
	return h.Sum64()
}

// Fingerprint identifies what a series' encoding depends on: two layouts of equal
// fingerprints decode each other's series.
func (l *Layout) Fingerprint() uint64 { return l.fp }

// Flags of an encoded series and states of an encoded open slot.
const (
	started = 1 << iota // the series' second is not never
	hasLast             // an event was placed
)

const (
	openNone = iota
	openClosed
	openPending
)

// AppendBinary appends the series' encoding to dst: everything it needs to go on exactly
// as if it had never stopped, for Layout.DecodeSeries. It holds the series' lock while it
// encodes, as long as an Add copying each slot would. The encoding:
//
//	fingerprint  8 bytes little-endian (Layout.Fingerprint)
//	flags        1 byte: 1 started, 2 an event was placed; nothing follows unless started
//	t            varint: the series' second; t − last as a uvarint if an event was placed
//	float slots  uvarint runs, each: uvarint empty slots skipped, uvarint n ≥ 1, then n
//	             slots of the layout's floats (sum, count, max, min as kept; wire floats)
//	with summaries:
//	open slots   per summary wheel but the coarsest: a byte (0 none, 1 closed, 2 pending)
//	             and the slot number as a varint unless none
//	summaries    uvarint runs over the summary slots (kinds per slot), each: uvarint nil
//	             summaries skipped, uvarint n ≥ 1, then n summaries, each its
//	             AppendBinary prefixed with its length
//
// A slot's heads follow from t and are not written.
func (s *Series) AppendBinary(dst []byte) ([]byte, error) {
	l := s.layout
	s.mu.Lock()
	defer s.mu.Unlock()
	dst = binary.LittleEndian.AppendUint64(dst, l.fp)
	if s.t == never {
		return append(dst, 0), nil
	}
	if s.last == never {
		dst = append(dst, started)
		dst = wire.AppendVarint(dst, s.t)
	} else {
		dst = append(dst, started|hasLast)
		dst = wire.AppendVarint(dst, s.t)
		dst = wire.AppendUvarint(dst, uint64(s.t-s.last))
	}
	dst, _ = appendRuns(dst, len(s.data)/l.stride, func(i int) bool { return !s.cleared(i * l.stride) },
		func(dst []byte, i int) ([]byte, error) {
			for _, f := range s.data[i*l.stride : (i+1)*l.stride] {
				dst = wire.AppendFloat(dst, f)
			}
			return dst, nil
		})
	if s.rings == nil {
		return dst, nil
	}
	for i := range len(l.sumWheels) - 1 {
		switch o := s.rings.open[i]; {
		case o.slot == never:
			dst = append(dst, openNone)
		case o.pending:
			dst = wire.AppendVarint(append(dst, openPending), o.slot)
		default:
			dst = wire.AppendVarint(append(dst, openClosed), o.slot)
		}
	}
	return appendRuns(dst, len(s.rings.sums), func(i int) bool { return s.rings.sums[i] != nil },
		func(dst []byte, i int) ([]byte, error) {
			c, ok := s.rings.sums[i].(Codec)
			if !ok {
				return dst, fmt.Errorf("%w: %T", ErrNoCodec, s.rings.sums[i])
			}
			// The length goes before the summary: written after it, in as many bytes as
			// it takes, and the summary moved up behind it.
			at := len(dst)
			dst, err := c.AppendBinary(dst)
			if err != nil {
				return dst, err
			}
			n := len(dst) - at
			var pre [binary.MaxVarintLen64]byte
			p := binary.PutUvarint(pre[:], uint64(n))
			dst = append(dst, pre[:p]...)
			copy(dst[at+p:], dst[at:at+n])
			copy(dst[at:], pre[:p])
			return dst, nil
		})
}

// appendRuns appends the runs of the items 0…n−1 that are kept (see AppendBinary): how
// many runs, then per run the items skipped, the items kept and each of them. It counts
// the runs first rather than collect them, so that it allocates nothing of its own.
func appendRuns(dst []byte, n int, kept func(i int) bool, each func(dst []byte, i int) ([]byte, error)) ([]byte, error) {
	runs, in := 0, false
	for i := range n {
		k := kept(i)
		if k && !in {
			runs++
		}
		in = k
	}
	dst = wire.AppendUvarint(dst, uint64(runs))
	for i, prev := 0, 0; i < n; {
		if !kept(i) {
			i++
			continue
		}
		j := i
		for j < n && kept(j) {
			j++
		}
		dst = wire.AppendUvarint(dst, uint64(i-prev))
		dst = wire.AppendUvarint(dst, uint64(j-i))
		for ; i < j; i++ {
			var err error
			if dst, err = each(dst, i); err != nil {
				return dst, err
			}
		}
		prev = j
	}
	return dst, nil
}

// readRuns reads what appendRuns wrote over n items, calling each with every kept item's
// index; it stops at the reader's first error.
func readRuns(r *wire.Reader, n int, each func(i int)) {
	runs := r.Count(n, 2)
	at := 0
	for range runs {
		skip, kept := r.Uvarint(), r.Uvarint()
		if r.Err() != nil {
			return
		}
		// Runs are as appendRuns writes them: apart, so that an encoding is the only one
		// of what it encodes.
		if kept == 0 || skip == 0 && at > 0 || skip > uint64(n-at) || kept > uint64(n-at)-skip {
			r.Failf("run of %d after %d at %d of %d items", kept, skip, at, n)
			return
		}
		at += int(skip)
		for range kept {
			each(at)
			at++
			if r.Err() != nil {
				return
			}
		}
	}
}

// cleared reports whether the slot starting at data[i] is as clear left it, bit for bit.
func (s *Series) cleared(i int) bool {
	l := s.layout
	d := s.data[i : i+l.stride]
	switch {
	case math.Float64bits(d[0]) != 0:
		return false
	case l.events != 0 && math.Float64bits(d[l.events]) != 0:
		return false
	case l.extrema != 0:
		return math.IsInf(d[l.extrema], -1) && math.IsInf(d[l.extrema+1], 1)
	}
	return true
}

// impossible says why d, a written slot as read, is none that put leaves, or returns "":
// a slot is written by at least one event, each of an admitted value (finite, so is their
// sum), counted one at a time, and its extrema are values of them. What else it holds was
// edited, and would be read as the window's sum, events, mean, max or min.
func (l *Layout) impossible(d []float64) string {
	finite := func(f float64) bool { return !math.IsNaN(f) && !math.IsInf(f, 0) }
	switch {
	case !finite(d[0]):
		return fmt.Sprintf("sum %v", d[0])
	case l.events != 0 && !(finite(d[l.events]) && d[l.events] >= 1 && d[l.events] == math.Trunc(d[l.events])):
		return fmt.Sprintf("%v events", d[l.events])
	case l.extrema != 0 && !(finite(d[l.extrema]) && finite(d[l.extrema+1]) && d[l.extrema+1] <= d[l.extrema]):
		return fmt.Sprintf("max %v, min %v", d[l.extrema], d[l.extrema+1])
	}
	return ""
}

// DecodeSeries reads a series AppendBinary wrote with a layout of the same Fingerprint,
// and returns it and the bytes after it. An encoding of another layout is refused with
// ErrLayout; any other bytes that are not an encoding with an error wrapping
// wire.ErrCorrupt. The summaries it restores are charged to the layout's Account as if
// they had grown in it.
func (l *Layout) DecodeSeries(b []byte) (*Series, []byte, error) {
	r := wire.NewReader(b)
	if fp := r.Uint64(); r.Err() == nil && fp != l.fp {
		return nil, b, fmt.Errorf("%w: fingerprint %016x, layout's %016x", ErrLayout, fp, l.fp)
	}
	s := l.NewSeries()
	flags := r.Byte()
	switch {
	case r.Err() != nil:
		return nil, b, r.Err()
	case flags == 0:
		return s, r.Rest(), nil
	}
	if flags&^(started|hasLast) != 0 || flags&started == 0 {
		return nil, b, r.Failf("series flags %#x", flags)
	}
	t := r.Varint()
	if t < -timeLimit || t > timeLimit {
		return nil, b, r.Failf("second %d out of range", t)
	}
	if flags&hasLast != 0 {
		back := r.Uvarint()
		if back > uint64(t+timeLimit) {
			return nil, b, r.Failf("last add %d seconds before %d", back, t)
		}
		s.last = t - int64(back)
	}
	s.t = t
	for i := range l.wheels {
		s.head[i] = int32(floorMod(l.wheels[i].slot(t), l.wheels[i].n))
	}
	for i := 0; i < len(s.data); i += l.stride {
		s.clear(i)
	}
	readRuns(r, len(s.data)/l.stride, func(i int) {
		d := s.data[i*l.stride : (i+1)*l.stride]
		for j := range d {
			d[j] = r.Float()
		}
		if r.Err() != nil {
			return
		}
		if s.cleared(i * l.stride) {
			r.Failf("empty slot %d written", i)
		} else if why := l.impossible(d); why != "" {
			r.Failf("slot %d: %s", i, why)
		}
	})
	if s.rings != nil {
		l.decodeRings(r, s)
	}
	if r.Err() != nil {
		return nil, b, r.Err()
	}
	if s.rings != nil && l.account != nil {
		l.account.Charge(s.rings.grown)
	}
	return s, r.Rest(), nil
}

// decodeRings reads the summary wheels of s, whose second is set.
func (l *Layout) decodeRings(r *wire.Reader, s *Series) {
	rings := s.rings
	for i := range l.sumWheels {
		w := &l.sumWheels[i]
		rings.head[i] = int32(floorMod(w.slot(s.t), w.n))
		if i == len(l.sumWheels)-1 {
			break
		}
		state := r.Byte()
		if state == openNone || r.Err() != nil {
			continue
		}
		slot, head := r.Varint(), w.slot(s.t)
		switch {
		case state > openPending:
			r.Failf("open slot state %d", state)
		case slot > head || state == openPending && slot <= head-w.n:
			r.Failf("open slot %d of a wheel at %d", slot, head)
		default:
			rings.open[i] = openSlot{slot: slot, idx: int32(floorMod(slot, w.n)), pending: state == openPending}
		}
	}
	kinds := len(l.kinds)
	readRuns(r, len(rings.sums), func(i int) {
		data := r.Prefixed()
		if r.Err() != nil {
			return
		}
		sum := l.kinds[i%kinds].New()
		c, ok := sum.(Codec)
		if !ok {
			r.Failf("%v: %T", ErrNoCodec, sum)
			return
		}
		if err := c.UnmarshalBinary(data); err != nil {
			r.Failf("summary of kind %d: %v", i%kinds, err)
			return
		}
		rings.sums[i] = sum
		rings.grown += int64(max(sum.Bytes(), l.floors[i%kinds]) - l.floors[i%kinds])
	})
}
