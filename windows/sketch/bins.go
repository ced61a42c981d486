package sketch

import (
	"encoding/binary"
	"math/bits"

	"github.com/logwindow/logwindow_exporter/windows"
)

// bins is a dense run of counts for the bin indexes lo, lo+1, …, lo+n−1, packed width bits
// each: count j is bits j·width … (j+1)·width−1 of b, read little-endian. A count that
// outgrows the width widens every count by the bits it needs, so a sketch of a thousand
// values over 465 bins takes 3 or 4 bits a bin, not a byte. Past maxPacked bits counts are
// whole 8-byte words (width 64): a packed count is read with one unaligned 8-byte load
// from the byte that holds its first bit, which reaches at most 7+maxPacked bits. Every bit
// of b past the last count is 0, so that a run extended within b's capacity starts empty.
type bins struct {
	lo int32
	// run packs the run's shape in one word, so that a sketch's store stays as small with
	// an index range of every float64 (2·maxIndex+1 bins, past 16 bits): the number of
	// bins (runBins), the width of the counts (runWidth, 0 while empty), and whether the
	// run is collapsed (runCollapsed: bin lo holds the counts of every lower bin, see
	// Quantiles.Cap, so the run never extends below it until reset).
	run uint32
	b   []byte
}

// The fields of bins.run.
const (
	runBins      = 1<<24 - 1
	runWidth     = 0x7f << 24
	runCollapsed = 1 << 31
)

func (s *bins) width() uint8 { return uint8(s.run >> 24 & 0x7f) }

func (s *bins) collapsed() bool { return s.run&runCollapsed != 0 }

// setRun sets the run's bins and width, keeping whether it is collapsed.
func (s *bins) setRun(n int, w uint8) {
	s.run = s.run&runCollapsed | uint32(w)<<24 | uint32(n)
}

// maxPacked is the widest packed count: 7 bits of offset in the first byte plus 57 fill an
// 8-byte load.
const maxPacked = 57

func (s *bins) len() int { return int(s.run & runBins) }

func (s *bins) get(j int) uint64 { return getCount(s.b, uint(s.width()), uint(j)) }

func (s *bins) set(j int, c uint64) { setCount(s.b, uint(s.width()), uint(j), c) }

// getCount reads count j of width w from b.
func getCount(b []byte, w, j uint) uint64 {
	if w == 64 {
		return binary.LittleEndian.Uint64(b[8*j:])
	}
	p := j * w
	return load(b, p>>3) >> (p & 7) & (1<<w - 1)
}

// setCount writes count j of width w into b; c must fit in w bits.
func setCount(b []byte, w, j uint, c uint64) {
	if w == 64 {
		binary.LittleEndian.PutUint64(b[8*j:], c)
		return
	}
	p := j * w
	i, sh := p>>3, p&7
	store(b, i, load(b, i)&^((1<<w-1)<<sh)|c<<sh)
}

// load reads the 8 bytes of b from i little-endian, those past the end as 0.
func load(b []byte, i uint) uint64 {
	if i+8 <= uint(len(b)) {
		return binary.LittleEndian.Uint64(b[i:])
	}
	var x uint64
	for k, c := range b[i:] {
		x |= uint64(c) << (8 * k)
	}
	return x
}

// store writes x into the 8 bytes of b from i, little-endian, dropping those past the end
// (they are bits of no count).
func store(b []byte, i uint, x uint64) {
	if i+8 <= uint(len(b)) {
		binary.LittleEndian.PutUint64(b[i:], x)
		return
	}
	for k := range b[i:] {
		b[i+uint(k)] = byte(x >> (8 * k))
	}
}

// add adds c to bin i, its buffer kept within room bytes (0: no bound; see grow).
func (s *bins) add(i int32, c uint64, room int) {
	if !s.bump(i, c) {
		s.grow(i, c, room)
	}
}

// bump adds c to bin i if the run holds it and its count stays within its width, and
// reports whether it did. That is the common case, one load and one store: c added at the
// count's offset in the word holding it carries into no other count.
func (s *bins) bump(i int32, c uint64) bool {
	if w, j := uint(s.run>>24&0x7f), uint(i-s.lo); w != 0 && j < uint(s.run&runBins) && w < 64 {
		p := j * w
		if k := p >> 3; k+8 <= uint(len(s.b)) {
			word := binary.LittleEndian.Uint64(s.b[k : k+8 : k+8])
			if x := word>>(p&7)&(1<<w-1) + c; x >= c && x < 1<<w {
				binary.LittleEndian.PutUint64(s.b[k:k+8:k+8], word+c<<(p&7))
				return true
			}
		}
	}
	return false
}

// grow adds c to bin i when bump cannot: it extends the run to i or widens its counts. With
// room > 0 the buffer takes at most room bytes (or what it has, or the least buffer, if
// more): what does not fit there collapses the run's lowest bins into the lowest it keeps
// (see Quantiles.Cap).
func (s *bins) grow(i int32, c uint64, room int) {
	if s.collapsed() && i < s.lo {
		if i = s.lo; s.bump(i, c) {
			return
		}
	}
	if room > 0 {
		s.growWithin(i, c, room)
		return
	}
	s.cover(i, i)
	j := int(i - s.lo)
	x := s.get(j) + c
	if x>>s.width() != 0 && s.width() < 64 {
		s.layout(s.lo, s.len(), grownWidth(x))
	}
	s.set(j, x)
}

// growWithin is grow under a bound of room bytes: the run is laid out to exactly the bins
// and width it needs when that fits in its buffer or in room, and collapsed otherwise.
func (s *bins) growWithin(i int32, c uint64, room int) {
	lo, hi, x := i, i, c
	if s.width() != 0 {
		lo, hi = min(s.lo, i), max(s.lo+int32(s.len())-1, i)
		x += s.getAt(i)
	}
	w := max(s.width(), widthFor(x))
	// Most adds that come here need no room: bump reads a word at a time, so it leaves
	// every add to a run shorter than a word to grow.
	if size := binBytes(int(hi-lo)+1, w); size > cap(s.b) {
		if avail := max(cap(s.b), bytesWithin(room), minBuffer); size > avail {
			s.collapse(i, c, hi, w, avail)
			return
		}
	}
	switch {
	case s.width() == 0:
		s.layout(i, 1, w)
	case lo != s.lo || int(hi-lo)+1 != s.len() || w != s.width():
		s.layout(lo, int(hi-lo)+1, w)
	}
	s.set(int(i-s.lo), x)
}

// collapse adds c to bin i in a run that ends at bin hi and needs counts w bits wide, laid
// out anew in avail bytes: it keeps the highest bins that fit and counts the lower ones in
// the lowest it keeps, widening the counts for that sum if needed (and so keeping fewer).
func (s *bins) collapse(i int32, c uint64, hi int32, w uint8, avail int) {
	var lo int32
	var low uint64 // what the lowest kept bin holds
	for {
		lo = hi - int32(binsIn(avail, w)) + 1
		low = 0
		for b := s.lo; s.width() != 0 && b <= lo && b < s.lo+int32(s.len()); b++ {
			low += s.getAt(b)
		}
		if i <= lo {
			low += c
		}
		top := low
		if i > lo {
			top = max(top, s.getAt(i)+c)
		}
		if wider := widthFor(top); wider > w {
			w = wider
			continue
		}
		break
	}
	old, oldLo, oldN, oldW := s.b, s.lo, s.len(), uint(s.width())
	s.b, s.lo, s.run = make([]byte, binBytes(int(hi-lo)+1, w)), lo, runCollapsed|uint32(w)<<24|uint32(hi-lo+1)
	s.set(0, low)
	for b := lo + 1; b <= hi; b++ {
		x := uint64(0)
		if j := int(b - oldLo); oldW != 0 && j >= 0 && j < oldN {
			x = getCount(old, oldW, uint(j))
		}
		if b == i {
			x += c
		}
		s.set(int(b-lo), x)
	}
}

// shrink lays the run out in a buffer by bytes smaller than its own, the least buffer at
// least: in a buffer of its exact size if that is enough, else collapsed (see collapse).
func (s *bins) shrink(by int) {
	if by <= 0 || s.width() == 0 {
		return
	}
	avail := max(bytesWithin(windows.HeapBytes(cap(s.b))-by), minBuffer)
	if size := binBytes(s.len(), s.width()); size <= avail {
		if size < cap(s.b) {
			s.b = append([]byte(nil), s.b[:size]...)
		}
		return
	}
	s.collapse(s.lo, 0, s.lo+int32(s.len())-1, s.width(), avail)
}

// binBytes is the buffer n counts of w bits take; binsIn how many such counts fit in
// avail bytes.
func binBytes(n int, w uint8) int { return (n*int(w) + 7) / 8 }

func binsIn(avail int, w uint8) int { return avail * 8 / int(w) }

// bytesWithin is the largest buffer whose allocation (windows.HeapBytes) takes at most room
// bytes.
func bytesWithin(room int) int {
	lo, hi := 0, room // HeapBytes(lo) ≤ room; the answer is at most room
	for lo < hi {
		mid := hi - (hi-lo)/2
		if windows.HeapBytes(mid) <= room {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	return lo
}

// merge adds every count of o, with 8-byte counts so that no sum can overflow a width; or,
// packed, one count at a time as add does, which keeps the counts as wide as they need,
// within room bytes as add does.
func (s *bins) merge(o *bins, packed bool, room int) {
	n := o.len()
	if n == 0 {
		return
	}
	if packed && s.width() != 64 {
		// From the last count to the first that are not 0 only (a run keeps the bins it
		// spanned across a Reset): under a bound, the run takes its highest bin first, so
		// that a collapse keeps the highest and the lower ones land in it.
		first, last, _ := o.extent()
		for j := last; j >= max(first, 0); j-- {
			if c := o.get(j); c != 0 {
				s.add(o.lo+int32(j), c, room)
			}
		}
		return
	}
	if s.width() == 0 {
		s.layout(o.lo, n, 64)
	} else {
		s.cover(o.lo, o.lo+int32(n)-1)
		if s.width() != 64 {
			s.layout(s.lo, s.len(), 64)
		}
	}
	dst := s.b[8*int(o.lo-s.lo):][:8*n]
	// Each count is resliced to its exact width, so that the loads and stores need no
	// bounds checks of their own: this loop is most of a scrape's cost.
	if o.width() == 64 {
		src := o.b[:8*n]
		for j := range n {
			d := dst[8*j : 8*j+8 : 8*j+8]
			binary.LittleEndian.PutUint64(d, binary.LittleEndian.Uint64(d)+binary.LittleEndian.Uint64(src[8*j:8*j+8:8*j+8]))
		}
		return
	}
	addPacked(dst, o.b, uint(o.width()))
}

// addPacked adds the counts of width w < 64 packed in src to the 8-byte counts of dst, as
// many as dst holds. One load reads k counts at once and the loop over them stops at the
// last that is not 0, so the empty bins of a slot of few values cost little; the bits
// past the last count are 0, so no count past dst is ever added. This loop is most of a
// scrape's cost: its rarer parts are functions of their own, so that it keeps its
// variables in registers.
func addPacked(dst, src []byte, w uint) {
	w &= 63
	k := maxPacked / w
	chunk := uint64(1)<<(k*w&63) - 1
	o, p := 0, uint(0)
	for ; o < len(dst); o, p = o+8*int(k), p+k*w {
		i := p >> 3
		if i+8 > uint(len(src)) {
			break
		}
		if x := binary.LittleEndian.Uint64(src[i:i+8:i+8]) >> (p & 7) & chunk; x != 0 {
			addChunk(dst[o:min(o+8*int(k), len(dst))], x, w)
		}
	}
	addTail(dst, src, w, uint(o/8))
}

// addTail adds the counts from j on, whose load would reach past src, one at a time.
//
//go:noinline
func addTail(dst, src []byte, w, j uint) {
	for ; 8*j < uint(len(dst)); j++ {
		d := dst[8*j : 8*j+8 : 8*j+8]
		binary.LittleEndian.PutUint64(d, binary.LittleEndian.Uint64(d)+getCount(src, w, j))
	}
}

// addChunk adds the counts of width w packed in x to the 8-byte counts of dst, two at a
// time.
func addChunk(dst []byte, x uint64, w uint) {
	w &= 63
	mask := uint64(1)<<w - 1
	d := 0
	for ; x != 0 && d+16 <= len(dst); d += 16 {
		c0, c1 := x&mask, x>>w&mask
		x = x >> w >> w
		e := dst[d : d+16 : d+16]
		binary.LittleEndian.PutUint64(e[:8], binary.LittleEndian.Uint64(e[:8])+c0)
		binary.LittleEndian.PutUint64(e[8:], binary.LittleEndian.Uint64(e[8:])+c1)
	}
	if x != 0 && d+8 <= len(dst) {
		e := dst[d : d+8 : d+8]
		binary.LittleEndian.PutUint64(e, binary.LittleEndian.Uint64(e)+x&mask)
	}
}

// seal lays the run out anew in a buffer of its size, without the empty bins at its ends
// and with counts as wide as the largest needs.
func (s *bins) seal() {
	first, last, top := s.extent()
	if last < 0 {
		*s = bins{}
		return
	}
	if s.collapsed() {
		first = 0 // the run must not start above the bin the lower ones went to
	}
	w := widthFor(top)
	if first == 0 && last == s.len()-1 && w == s.width() && windows.HeapBytes(cap(s.b)) == windows.HeapBytes(len(s.b)) {
		return // as small as it gets
	}
	old, oldW := s.b, uint(s.width())
	s.b = nil
	s.setRun(0, 0)
	s.layout(s.lo+int32(first), last-first+1, w)
	if uint(w) == oldW {
		// The same bits from the first count on.
		for i := range uint(len(s.b)) {
			p := uint(first)*oldW + 8*i
			s.b[i] = byte(load(old, p>>3) >> (p & 7))
		}
		return
	}
	for j := range uint(last - first + 1) {
		setCount(s.b, uint(w), j, getCount(old, oldW, j+uint(first)))
	}
}

// extent returns the first and the last bin whose count is not 0 (−1 and −1 when all are)
// and the OR of all counts, whose bit length is the largest count's. Packed counts are read
// as addPacked reads them, a word of them at a time.
func (s *bins) extent() (first, last int, top uint64) {
	first, last = -1, -1
	w := uint(s.width())
	if w == 64 || w == 0 {
		for j := range s.len() {
			if c := s.get(j); c != 0 {
				if first < 0 {
					first = j
				}
				last, top = j, top|c
			}
		}
		return first, last, top
	}
	k := maxPacked / w
	chunk := uint64(1)<<(k*w) - 1
	var or uint64
	for j, p := uint(0), uint(0); j < uint(s.len()); j, p = j+k, p+k*w {
		x := load(s.b, p>>3) >> (p & 7) & chunk
		if x == 0 {
			continue
		}
		if first < 0 {
			first = int(j + uint(bits.TrailingZeros64(x))/w)
		}
		last = int(j + uint(63-bits.LeadingZeros64(x))/w)
		or |= x
	}
	for ; or != 0; or >>= w {
		top |= or & (1<<w - 1)
	}
	return first, last, top
}

// reset zeroes the counts and keeps the run's bins and width: the next slot of a wheel
// most likely spans the same bins with counts as wide, so its adds need not grow the run
// again (a seal narrows what the slot did not need).
func (s *bins) reset() {
	clear(s.b)
	s.run &^= runCollapsed
}

// getAt is bin i's count, 0 outside the run.
func (s *bins) getAt(i int32) uint64 {
	if j := int(i - s.lo); s.width() != 0 && j >= 0 && j < s.len() {
		return s.get(j)
	}
	return 0
}

// cover makes bins lo…hi part of the run, with a little room beyond on the side that grew
// so that a run growing one bin at a time is not laid out again every time.
func (s *bins) cover(lo, hi int32) {
	if s.width() == 0 {
		s.layout(lo, int(hi-lo)+1, 1)
		return
	}
	top := s.lo + int32(s.len()) - 1
	if lo >= s.lo && hi <= top {
		return
	}
	slack := int32(4 + s.len()/16)
	newLo, newHi := s.lo, top
	if lo < s.lo {
		// A whole number of bytes of room, so that the counts move by copying bytes.
		newLo = max(s.lo-(s.lo-lo+slack+7)/8*8, -maxIndex)
	}
	if hi > top {
		newHi = min(hi+slack, maxIndex)
	}
	s.layout(newLo, int(newHi-newLo)+1, s.width())
}

// layout makes the run cover the n bins from lo, which include the current run, with
// counts w ≥ s.width() bits wide, keeping the counts; in place when b's capacity allows.
func (s *bins) layout(lo int32, n int, w uint8) {
	size := (n*int(w) + 7) / 8
	old, oldW, oldN := s.b, uint(s.width()), uint(s.len())
	shift := uint(s.lo - lo)
	if size > cap(s.b) {
		// The allocator gives the buffer its size class whole, and Bytes counts it: the
		// run grows into it in place.
		s.b = make([]byte, size, windows.HeapBytes(size))
	} else {
		// Bytes past the old end may hold what a reset left: the bits a run extends over
		// must be 0.
		s.b = s.b[:size]
		clear(s.b[len(old):])
	}
	s.lo = lo
	s.setRun(n, w)
	switch {
	case oldN == 0:
	case uint(w) == oldW && shift*oldW%8 == 0:
		// The run grew by whole bytes below and any bins above: its bytes move up.
		by := shift * oldW / 8
		copy(s.b[by:], old)
		if &old[0] == &s.b[0] {
			clear(s.b[:by])
		}
	default:
		// The counts are read from a copy with a word of 0 after it: in place, written
		// from the bottom up they would overwrite counts not yet read, and each is read by
		// one load of the 8 bytes from the byte that holds its first bit.
		var buf [512 + 8]byte
		var src []byte
		if len(old)+8 <= len(buf) {
			src = buf[:len(old)+8]
		} else {
			src = make([]byte, len(old)+8)
		}
		copy(src, old)
		repack(s.b, src, oldW, uint(w), oldN, shift)
	}
}

// repack writes the n counts of width oldW < 64 in src, which has 8 bytes more after them,
// into dst as counts of width w ≥ oldW, count j at j+shift, the counts before it 0; src
// and dst must not overlap, and the bytes of dst past the counts must be 0 already
// (layout's are). The counts are gathered in a word and written 8 bytes at a time: written
// one by one (setCount), each load of a word waited on the store of the word before,
// which overlaps it, and widening a run of some 400 bins took microseconds.
func repack(dst, src []byte, oldW, w, n, shift uint) {
	start := shift * w
	clear(dst[:start/8])
	pos, acc, bits := start/8, uint64(0), start%8
	mask := uint64(1)<<oldW - 1
	for j := range n {
		p := j * oldW
		c := binary.LittleEndian.Uint64(src[p>>3:]) >> (p & 7) & mask
		acc |= c << bits
		if bits+w < 64 {
			bits += w
			continue
		}
		binary.LittleEndian.PutUint64(dst[pos:pos+8], acc)
		pos += 8
		// The bits of c that did not fit (none when it ended the word: c>>64 is 0).
		acc = c >> (64 - bits)
		bits = bits + w - 64
	}
	for ; bits > 0; bits -= min(bits, 8) {
		dst[pos] = byte(acc)
		acc >>= 8
		pos++
	}
}

// grownWidth is the width an unbounded run widens to for a count of x: two bits more than
// x needs. Counts climb an add (or a merged slot) at a time, and each widening lays every
// count of the run out again: with the bits x needs, a slot that rolls up a minute of
// seconds widened at every doubling of its largest count, some 145 instructions a line of
// the example's two quantile rules. The seal narrows the run to what its counts need.
func grownWidth(x uint64) uint8 {
	if w := widthFor(x); w+2 <= maxPacked {
		return w + 2
	}
	return 64
}

// widthFor is the width a count of x needs: its bits while they can be packed, else 64.
func widthFor(x uint64) uint8 {
	if w := uint8(bits.Len64(x)); w <= maxPacked {
		return w
	}
	return 64
}
