package windows

import (
	"math"
	"sync"
)

// Placement says what Add did with an event.
type Placement uint8

const (
	// Placed: the event is in every window that covers its second.
	Placed Placement = iota
	// Late: the event is older than the longest window and was dropped.
	Late
	// Future: the event was stamped after now and was placed at now.
	Future
)

// String names the placement for logs and drop reasons.
func (p Placement) String() string {
	switch p {
	case Placed:
		return "placed"
	case Late:
		return "late"
	case Future:
		return "future"
	}
	return "unknown"
}

// Stats is one window's aggregate as Read reports it.
type Stats struct {
	// Sum of the values; for a counting rule, the number of events.
	Sum float64
	// Events counted in the window: equal to Sum unless the layout keeps Events.
	Events float64
	// Max and Min of the values; NaN when the window holds no event or the layout does not
	// keep Extrema.
	Max, Min float64
	// PerSecond is Sum divided by the window's seconds, or by the seconds observed when the
	// observation is shorter than the window (see the package documentation).
	PerSecond float64
}

// timeLimit bounds every time the package computes with, so that adding or subtracting a
// window can never overflow int64.
const timeLimit = 1 << 50

// never is the time of a series no Add has reached yet; no clamped time equals it.
const never = math.MinInt64

// Series is the wheels of one series. It is safe for concurrent Add and Read; the zero
// value is not usable, build one with Layout.NewSeries.
type Series struct {
	mu     sync.Mutex
	layout *Layout
	t      int64 // newest now passed to Add; never before the first Add
	last   int64 // newest event second placed
	// head holds, per wheel, the ring index of the slot of second t, from which reads and
	// the memo count slots back without a division.
	head [len(grid{})]int32
	// memo holds, per wheel, the ring index of the slot of second memoAt at second t, −1
	// where the wheel no longer holds it: consecutive lines mostly share their second, and
	// the memo spares the divisions that find its slots (see addSlow). memoAt is never
	// when the memo holds nothing; advance forgets it. A ring has at most a few hundred
	// slots (MaxWindow), so an index fits 16 bits, and the memo takes 16 bytes a series.
	memo   [len(grid{})]int16
	memoAt int64
	data   []float64
	// rings holds the summary wheels; nil for a layout without summaries, so that a
	// series without them is no larger than before they existed.
	rings *summaryRings
}

// summaryRings are the slots of the summary wheels, len(layout.kinds) per slot, each nil
// until the slot's first value, and head as Series.head for those wheels.
type summaryRings struct {
	sums []Summary
	head [len(grid{})]int32
	// open holds, per wheel but the coarsest, its open slot (see place).
	open [len(grid{}) - 1]openSlot
	// memo is Series.memo for these wheels: where an event of second Series.memoAt goes,
	// for the wheels whose bit is set in known, which are found as place reaches them.
	memo  [len(grid{})]slotRef
	known uint8
	// grown is what the summaries take beyond their floors, which the layout's bytes count
	// for every slot: the series takes layout.bytes + grown (see Series.Bytes).
	grown int64
	// During an Add: room is what the account may still give (Account.Room less what the
	// Add took so far), delta what the summaries grew by, charged when the Add ends.
	room, delta int64
}

// capBelow is the room under which the series caps every summary it adds to or merges
// into (Capper): above it no single add or merge of the usual sizes can pass the bound,
// so a summary grows freely and the series spares the calls.
const capBelow = 4 << 20

// openSlot is the newest slot of a summary wheel that events or merges were placed in: the
// slot numbered slot, at ring index idx; slot is never before the first. While pending, the
// coarser wheels lack what the slot holds.
type openSlot struct {
	slot    int64
	idx     int32
	pending bool
}

// slotRef is the slot numbered num of a summary wheel, at ring index idx; idx is −1 when
// the wheel no longer holds the slot.
type slotRef struct {
	num int64
	idx int32
}

// NewSeries returns an empty series laid out by l.
func (l *Layout) NewSeries() *Series {
	s := &Series{
		layout: l,
		t:      never,
		last:   never,
		memoAt: never,
		data:   make([]float64, l.size),
	}
	if l.sumSize > 0 {
		s.rings = &summaryRings{sums: make([]Summary, l.sumSize)}
		s.rings.reopen()
	}
	return s
}

// Add records value v for an event at second at, now being the current second. It reports
// Late when the event is older than the longest window (it is then not recorded) and Future
// when at is after now (the event is then recorded at now). For processing time, at == now.
func (s *Series) Add(now, at int64, v float64) Placement {
	s.mu.Lock()
	// On a clock that has not moved since the last Add, an event of the current second
	// (processing time) goes to the head slots, and one of the second the memo holds to
	// the slots the one before it went (see addSlow), neither late nor in the future.
	// A series with summaries takes the general path: a sketch's add costs far more than
	// the checks this spares.
	if now == s.t && now != never && s.rings == nil {
		l := s.layout
		switch {
		case at == now:
			for i := range l.wheels {
				s.put(l.wheels[i].off+int(s.head[i])*l.stride, v)
			}
			s.last = at
			s.mu.Unlock()
			return Placed
		case at == s.memoAt && at != never:
			s.putMemo(v)
			s.last = max(s.last, at)
			s.mu.Unlock()
			return Placed
		}
	}
	p := s.addSlow(now, at, v, nil)
	s.mu.Unlock()
	return p
}

// AddItems is Add for a layout whose summaries read items (SummaryKind.Item): items are
// the event's, valid only during the call. Without items it is Add.
func (s *Series) AddItems(now, at int64, v float64, items [][]byte) Placement {
	if items == nil {
		return s.Add(now, at, v)
	}
	s.mu.Lock()
	p := s.addSlow(now, at, v, items)
	s.mu.Unlock()
	return p
}

func (s *Series) addSlow(now, at int64, v float64, items [][]byte) Placement {
	at, p := s.seat(now, at)
	if p != Late {
		s.putMemo(v)
		if s.rings != nil {
			s.rings.place(s.layout, s.t, 0, at, v, items, nil)
		}
		s.last = max(s.last, at)
	}
	if s.rings != nil {
		s.rings.charge(s.layout)
	}
	return p
}

// AddMany is AddItems for events of one second at once, in the order they came: values
// are theirs, and items, for a layout whose summaries read items, their items in turn
// (len(items)/len(values) each), valid only during the call. The events are placed once
// and their slots found once, under one lock; each value is added to the float slots and
// the summaries as AddItems would add it, so that sums are added up in the same order.
func (s *Series) AddMany(now, at int64, values []float64, items [][]byte) Placement {
	s.mu.Lock()
	defer s.mu.Unlock()
	at, p := s.seat(now, at)
	if p != Late {
		s.putRun(values)
		if r := s.rings; r != nil {
			per := 0
			if len(values) > 0 {
				per = len(items) / len(values)
			}
			for i := 0; i < len(values); {
				if i > 0 && r.room < capBelow {
					// Near the bound an event sees the room an Add of its own would: what
					// the summaries gave back since the Add began counts as room again.
					r.charge(s.layout)
					r.room = s.layout.account.Room()
				}
				var its [][]byte
				if per > 0 {
					its = items[i*per : (i+1)*per]
				}
				one := r.place(s.layout, s.t, 0, at, values[i], its, nil)
				i++
				if one >= 0 {
					// The events after it go where it went, to that slot alone.
					i += r.summarizeRun(s.layout, one, values[i:], items[i*per:])
				}
			}
		}
		s.last = max(s.last, at)
	}
	if s.rings != nil {
		s.rings.charge(s.layout)
	}
	return p
}

// seat moves the series to second now and finds the slots of an event of second at: it
// returns the second the event is placed at, and leaves the memo holding that second's
// float slots (Late: none; the event is not to be placed). The caller hands what the
// summaries grow by to the account afterwards (summaryRings.charge), Late or not.
func (s *Series) seat(now, at int64) (int64, Placement) {
	now, at = clampTime(now), clampTime(at)
	if s.wentBack(now) {
		// Everything held is newer than every window seen from now: start over at now, or
		// the series would stay frozen at its old second, dropping current events as late.
		s.t, s.last = never, never
	} else if now < s.t && s.last < now {
		// The clock stepped back, but to after every event placed: it had jumped ahead of
		// the events' own times and came back. Nothing lies from now on, so the series goes
		// back to it rather than read its windows at the wrong clock's second until the
		// clock caught up.
		s.rewind(now)
	}
	l := s.layout
	if s.rings != nil {
		s.rings.room = math.MaxInt64
		if l.account != nil {
			s.rings.room = l.account.Room()
		}
	}
	if now > s.t {
		s.advance(now)
	}
	p := Placed
	if at > now {
		at, p = now, Future
	}
	if at <= s.t-l.reach {
		return at, Late
	}
	// An event of the second the memo holds goes to the same slots; one of another second
	// finds its slots, and the memo holds them then (the summary wheels' are found as place
	// reaches them): interleaved seconds cost what they did before the memo but for a
	// store per wheel.
	if at != s.memoAt {
		// back is how many slots at is behind the head of wheel i (−1: not computed yet).
		// Wheels go from fine to coarse and a slot lies within one slot of every coarser
		// wheel of its grid, so once at is in a head slot it is in the head slots of the
		// rest: back stays 0 without the divisions.
		back := int64(-1)
		for i := range l.wheels {
			if back != 0 {
				back = l.wheels[i].slotsBack(s.t, at)
			}
			s.memo[i] = -1
			if idx, ok := l.wheels[i].slotOf(s.head[i], back); ok {
				s.memo[i] = int16(idx)
			}
		}
		s.memoAt = at
		if s.rings != nil {
			s.rings.known = 0
		}
	}
	return at, p
}

// putMemo adds v to the slots the memo holds.
func (s *Series) putMemo(v float64) {
	l := s.layout
	for i := range l.wheels {
		if idx := s.memo[i]; idx >= 0 {
			s.put(l.wheels[i].off+int(idx)*l.stride, v)
		}
	}
}

// putRun adds the values in turn to the slots the memo holds, as putMemo would one by
// one, and gives the same bits: each slot adds them up in the same order, but the slots'
// sums are kept side by side in registers, in one pass over the values, so that their
// additions overlap instead of each waiting for the one before; a count is raised by the
// run's length at once when that is exact (see addCount); and the extrema, taken only when
// kept, in four interleaved lanes (max and min are the same in any order, NaN and signed
// zeros included).
func (s *Series) putRun(values []float64) {
	if len(values) == 0 {
		return
	}
	l := s.layout
	// at[k] is where the k-th slot the memo holds starts in data.
	var at [len(grid{})]int
	n := 0
	for i := range l.wheels {
		if idx := s.memo[i]; idx >= 0 {
			at[n] = l.wheels[i].off + int(idx)*l.stride
			n++
		}
	}
	if n == 0 {
		return
	}
	d := s.data
	// The lanes of the wheels the memo does not hold add into a sum that is dropped.
	var sums [len(grid{})]float64
	for k := range n {
		sums[k] = d[at[k]]
	}
	s0, s1, s2, s3 := sums[0], sums[1], sums[2], sums[3]
	for _, v := range values {
		s0, s1, s2, s3 = s0+v, s1+v, s2+v, s3+v
	}
	sums = [...]float64{s0, s1, s2, s3}
	for k := range n {
		d[at[k]] = sums[k]
	}
	if l.events != 0 {
		for k := range n {
			addCount(&d[at[k]+l.events], len(values))
		}
	}
	if l.extrema != 0 {
		hi, lo := extrema(values)
		for k := range n {
			x := d[at[k]+l.extrema:][:2]
			x[0] = max(x[0], hi)
			x[1] = min(x[1], lo)
		}
	}
}

// addCount adds 1 to the count c, n times, as put does one event at a time: at once when
// that is exact (c a whole number and c+n below 2^53, where every count on the way is a
// float64 of its own), else one by one.
func addCount(c *float64, n int) {
	if v := *c; v >= 0 && v+float64(n) < 1<<53 && v == float64(int64(v)) {
		*c = v + float64(n)
		return
	}
	v := *c
	for range n {
		v++
	}
	*c = v
}

// extrema returns the max and min of values, at least one, in four lanes so that the
// comparisons of one lane do not wait for another's.
func extrema(values []float64) (hi, lo float64) {
	h0, l0 := values[0], values[0]
	h1, h2, h3, l1, l2, l3 := h0, h0, h0, l0, l0, l0
	i := 1
	for ; i+4 <= len(values); i += 4 {
		v := values[i : i+4 : i+4]
		h0, l0 = max(h0, v[0]), min(l0, v[0])
		h1, l1 = max(h1, v[1]), min(l1, v[1])
		h2, l2 = max(h2, v[2]), min(l2, v[2])
		h3, l3 = max(h3, v[3]), min(l3, v[3])
	}
	for _, v := range values[i:] {
		h0, l0 = max(h0, v), min(l0, v)
	}
	return max(h0, h1, h2, h3), min(l0, l1, l2, l3)
}

// slotsBack returns how many slots the slot of second at is behind that of second t ≥ at.
func (w *wheel) slotsBack(t, at int64) int64 {
	if w.step == 1 {
		return t - at
	}
	return floorDiv(t, w.step) - floorDiv(at, w.step)
}

// slot returns the number of the slot of second t.
func (w *wheel) slot(t int64) int64 { return floorDiv(t, w.step) }

// slotOf returns the ring index of the slot back slots behind the head slot; false when the
// wheel no longer holds that slot, and so serves only windows shorter than the event's age,
// none of which the event belongs to.
func (w *wheel) slotOf(head int32, back int64) (int, bool) {
	if back >= w.n {
		return 0, false
	}
	idx := int64(head) - back
	if idx < 0 {
		idx += w.n
	}
	return int(idx), true
}

// summarize adds an event to every summary of the slot starting at sums[i], creating them
// on the slot's first event.
func (r *summaryRings) summarize(l *Layout, i int, v float64, items [][]byte) {
	for k, kind := range l.kinds {
		sum := r.sums[i+k]
		if sum == nil {
			sum = kind.New()
			r.sums[i+k] = sum
		}
		var item []byte
		if kind.Item > 0 {
			item = items[kind.Item-1]
		}
		if r.room < capBelow {
			r.capped(sum, l.floors[k], func() { sum.Add(v, item) })
			continue
		}
		if add := kind.AddGrown; add != nil {
			if before, after := add(sum, v, item); after != before {
				r.grew(before, after, l.floors[k])
			}
			continue
		}
		before := sum.Bytes()
		sum.Add(v, item)
		if after := sum.Bytes(); after != before {
			r.grew(before, after, l.floors[k])
		}
	}
}

// summarizeRun adds events of the second of the one before them, which place put into the
// slot starting at sums[i] alone, to that slot, as summarize would one by one; it stops
// where the room falls short of capBelow, from where each event is placed and capped on its
// own as an Add's (see Series.AddMany), and returns how many events it added.
func (r *summaryRings) summarizeRun(l *Layout, i int, values []float64, items [][]byte) int {
	per := 0
	if len(values) > 0 {
		per = len(items) / len(values)
	}
	if grows := l.grows; l.byRun {
		// The slot's summaries are there: the run's first event made them. The kind that
		// may grow stops after each add that changed its Bytes, so that the room is
		// checked where summarize would check it; the fixed kinds, which the room does
		// not concern, then take the events it took.
		done := len(values)
		if grows >= 0 {
			done = 0
			for done < len(values) && r.room >= capBelow {
				n, before, after := l.kinds[grows].AddRun(r.sums[i+grows], values[done:], items[done*per:])
				if after != before {
					r.grew(before, after, l.floors[grows])
				}
				if n == 0 {
					break // a kind that adds none of a run gets the rest event by event
				}
				done += n
			}
		}
		for k, kind := range l.kinds {
			if k == grows {
				continue
			}
			for from := 0; from < done; {
				n, _, _ := kind.AddRun(r.sums[i+k], values[from:done], items[from*per:done*per])
				if n == 0 {
					// A Fixed kind that adds none of a run must still take the events the
					// kind that grows took: one by Add.
					var item []byte
					if kind.Item > 0 {
						item = items[from*per+kind.Item-1]
					}
					r.sums[i+k].Add(values[from], item)
					n = 1
				}
				from += n
			}
		}
		return done
	}
	for done, v := range values {
		if r.room < capBelow {
			return done
		}
		var its [][]byte
		if per > 0 {
			its = items[done*per : (done+1)*per]
		}
		r.summarize(l, i, v, its)
	}
	return len(values)
}

// runKinds reports whether every kind of l adds runs (SummaryKind.AddRun) and all but one
// at most are Fixed, and returns the index of the one that is not, −1 if none: then a run
// goes to each kind at once and gives what its events added one by one give (see
// summarizeRun). NewLayout keeps what it reports (Layout.grows, Layout.byRun).
func runKinds(kinds []SummaryKind) (grows int, ok bool) {
	grows = -1
	for k, kind := range kinds {
		switch {
		case kind.AddRun == nil:
			return -1, false
		case kind.Fixed:
		case grows >= 0:
			return -1, false
		default:
			grows = k
		}
	}
	return grows, true
}

// capped runs op on sum capped (Capper) to what it may take with the room short: the room
// left, beyond its floor, which its slot was charged from the start; and counts what it
// grew by.
func (r *summaryRings) capped(sum Summary, floor int, op func()) {
	before := sum.Bytes()
	c, ok := sum.(Capper)
	if ok {
		c.Cap(max(before, floor) + int(max(r.room, 0)))
	}
	op()
	if ok {
		c.Cap(0)
	}
	r.grew(before, sum.Bytes(), floor)
}

// grew counts what a summary of the given floor grew by from before to after bytes:
// beyond its floor, what its slot was charged already.
func (r *summaryRings) grew(before, after, floor int) {
	d := int64(max(after, floor) - max(before, floor))
	r.delta += d
	r.room -= max(d, 0) // what is given back waits for the next Add's Room
}

// charge hands what the summaries grew by during an Add to the account.
func (r *summaryRings) charge(l *Layout) {
	if r.delta == 0 {
		return
	}
	r.grown += r.delta
	if l.account != nil {
		l.account.Charge(r.delta)
	}
	r.delta = 0
}

// place adds an event of second at (value v, items; from nil) to the slot of wheel i that
// holds at, or merges the summaries from, which hold seconds of one slot of wheel i from
// at on, into that slot; and then to the coarser wheels, unless the slot is open and
// pending. t is the series' second. A wheel that no longer holds the slot is passed over.
//
// A summary's add costs far more than a float's, and events come mostly in time order, so
// that a slot gets many in a row: a wheel's newest slot is open, and while it is pending
// the events placed in it are not added to the coarser wheels, which get the slot in one
// merge per wheel when a newer slot opens or the wheel moves (rollUp); until then a read
// merges the pending slot with the coarser slot that holds its seconds. Events come to the
// finest wheel that holds their slot: for events at the current second its head slot is
// open, for a log read after it was written the open slot is behind the head, in whichever
// wheel holds the log's recent past. An event in an older slot, or in the open slot after
// it was rolled up, is added to every wheel that holds its slot.
//
// The invariant: a wheel's slots after its open slot are empty, so a slot is opened only
// when nothing it holds is in a coarser wheel; and whatever the slots of a wheel hold is in
// the coarser wheels, but for what the open slot holds while pending.
//
// An event (from nil) comes from Series.addSlow, whose second the memo is for. place returns
// the index in sums of the slot it was put into when that was one slot alone, −1 otherwise:
// the events of its second that follow it, with no other call between, go to that slot
// alone too, since it opened no slot they could open again (see summarizeRun).
func (r *summaryRings) place(l *Layout, t int64, i int, at int64, v float64, items [][]byte, from []Summary) (one int) {
	kinds := len(l.kinds)
	one = -1
	puts := 0
	for ; i < len(l.sumWheels); i++ {
		var ref slotRef
		switch {
		case from != nil:
			ref = r.locate(l, t, i, at)
		case r.known&(1<<i) != 0:
			ref = r.memo[i]
		default:
			ref = r.locate(l, t, i, at)
			r.memo[i] = ref
			r.known |= 1 << i
		}
		if ref.idx < 0 {
			continue
		}
		w := &l.sumWheels[i]
		slot := w.off + int(ref.idx)*kinds
		one, puts = slot, puts+1
		if i == len(l.sumWheels)-1 {
			r.put(l, slot, v, items, from)
			break
		}
		o := &r.open[i]
		if ref.num > o.slot {
			r.rollUp(l, t, i)
			*o = openSlot{slot: ref.num, idx: ref.idx, pending: true}
		}
		r.put(l, slot, v, items, from)
		if ref.num == o.slot && o.pending {
			break
		}
	}
	if puts != 1 {
		return -1
	}
	return one
}

// locate returns the slot of summary wheel i that holds second at ≤ t, t being the
// series' second.
func (r *summaryRings) locate(l *Layout, t int64, i int, at int64) slotRef {
	w := &l.sumWheels[i]
	if t-at >= w.n*w.step {
		return slotRef{idx: -1} // the wheel cannot hold the slot, known without the divisions
	}
	num := w.slot(at)
	idx, ok := w.slotOf(r.head[i], w.slot(t)-num)
	if !ok {
		return slotRef{num: num, idx: -1}
	}
	return slotRef{num: num, idx: int32(idx)}
}

// rollUp places the open slot of wheel i, if pending, in the coarser wheels (see place).
func (r *summaryRings) rollUp(l *Layout, t int64, i int) {
	o := &r.open[i]
	if !o.pending {
		return
	}
	o.pending = false
	w := &l.sumWheels[i]
	r.place(l, t, i+1, o.slot*w.step, 0, nil, r.openSums(l, i))
}

// openSums returns the summaries of the open slot of wheel i.
func (r *summaryRings) openSums(l *Layout, i int) []Summary {
	return r.sums[l.sumWheels[i].off+int(r.open[i].idx)*len(l.kinds):][:len(l.kinds)]
}

// reopen forgets the open slots: no slot is open, and any may open.
func (r *summaryRings) reopen() {
	for i := range r.open {
		r.open[i] = openSlot{slot: never}
	}
}

// put adds an event (from nil) or merges the summaries from into the slot starting at
// sums[i], creating its summaries on the slot's first event or merge.
func (r *summaryRings) put(l *Layout, i int, v float64, items [][]byte, from []Summary) {
	if from == nil {
		r.summarize(l, i, v, items)
		return
	}
	for k, sum := range from {
		if sum == nil {
			continue
		}
		into := r.sums[i+k]
		if into == nil {
			into = l.kinds[k].New()
			r.sums[i+k] = into
		}
		if r.room < capBelow {
			r.capped(into, l.floors[k], func() { absorb(into, sum) })
			continue
		}
		before := into.Bytes()
		absorb(into, sum)
		r.grew(before, into.Bytes(), l.floors[k])
	}
}

// absorb merges from into a summary the wheels keep: with Absorb if it is an Absorber.
func absorb(into, from Summary) {
	if a, ok := into.(Absorber); ok {
		a.Absorb(from)
	} else {
		into.Merge(from)
	}
}

// put adds one event of value v to the slot starting at data[i].
func (s *Series) put(i int, v float64) {
	l := s.layout
	s.data[i] += v
	if l.events != 0 {
		s.data[i+l.events]++
	}
	if l.extrema != 0 {
		x := s.data[i+l.extrema : i+l.extrema+2]
		x[0] = max(x[0], v)
		x[1] = min(x[1], v)
	}
}

// advance moves the series to second t > s.t, emptying the slots each wheel leaves behind.
// Each wheel clears at most its own length, whatever the gap.
func (s *Series) advance(t int64) {
	l := s.layout
	for i := range l.wheels {
		w := &l.wheels[i]
		first, n := w.move(&s.head[i], s.t, t)
		for j := range n {
			s.clear(w.off + w.index(first+j)*l.stride)
		}
	}
	if s.rings != nil {
		s.rings.moving(l, s.t, t)
	}
	for i := range l.sumWheels {
		w := &l.sumWheels[i]
		closed := s.rings.head[i]
		first, n := w.move(&s.rings.head[i], s.t, t)
		if n > 0 && n < w.n {
			// The slot the head left is kept: it is closed.
			for k, sum := range s.rings.sums[w.off+int(closed)*len(l.kinds):][:len(l.kinds)] {
				if sealer, ok := sum.(Sealer); ok {
					before := sum.Bytes()
					sealer.Seal()
					s.rings.grew(before, sum.Bytes(), l.floors[k])
				}
			}
		}
		for j := range n {
			for k, sum := range s.rings.sums[w.off+w.index(first+j)*len(l.kinds):][:len(l.kinds)] {
				if sum != nil {
					before := sum.Bytes()
					sum.Reset()
					s.rings.grew(before, sum.Bytes(), l.floors[k])
				}
			}
		}
	}
	s.t = t
	s.memoAt = never
}

// rewind moves the series back to second t < s.t, after its newest event: each wheel's
// head goes back to the slot of t. The slots it leaves are empty, since advance emptied
// them and no event from t on was placed; they now stand for the oldest slots of the ring,
// which advance emptied too: the events those held are in the coarser wheels alone, as
// they would be had the series stayed at s.t. The slot of t holds no event of second t,
// which windows that end at the last complete second take off (Read). No open slot of a
// summary wheel is after t's, for the same reason. A head slot that advance sealed as it
// left it takes the events of its seconds from then on (Sealer).
func (s *Series) rewind(t int64) {
	l := s.layout
	for i := range l.wheels {
		w := &l.wheels[i]
		s.head[i] = int32(floorMod(w.slot(t), w.n))
	}
	for i := range l.sumWheels {
		w := &l.sumWheels[i]
		s.rings.head[i] = int32(floorMod(w.slot(t), w.n))
	}
	s.t = t
	s.memoAt = never
}

// moving rolls up the open slot of every summary wheel about to move from second from to
// second to, before the move may empty it. The coarser wheels of one that does not move do
// not move either. After a clock stepped back (from is never) the slots hold nothing.
func (r *summaryRings) moving(l *Layout, from, to int64) {
	if from == never {
		r.reopen()
		return
	}
	for i := range r.open[:len(l.sumWheels)-1] {
		w := &l.sumWheels[i]
		if w.slot(to) == w.slot(from) {
			return
		}
		r.rollUp(l, from, i)
	}
}

// move points *head at the slot of second to, coming from second from (never for a new
// series), and returns the ring indexes of the slots it moved into, which the caller
// empties: n of them from first (see index), at most the whole ring.
func (w *wheel) move(head *int32, from, to int64) (first, n int64) {
	slot := floorDiv(to, w.step)
	moved := w.n // a new series starts with every slot cleared
	if from != never {
		moved = slot - floorDiv(from, w.step)
	}
	first = int64(*head) + 1
	*head = int32(floorMod(slot, w.n))
	return first, min(moved, w.n)
}

// indexOf is the ring index of slot u, where the head is when the series is at a second of
// it; a read of a series read back to such a second (readSecond) starts there, as it would
// once the series went back (rewind). The slots between it and the series' own head are
// empty, since a series goes back only to after every event it placed; the older slots
// the read reaches past them at those indexes were let go of as the series moved on, as
// they are once it goes back.
func (w *wheel) indexOf(u int64) int64 { return floorMod(u, w.n) }

// index maps a ring position that may run one length past the end back into the ring.
func (w *wheel) index(i int64) int {
	if i >= w.n {
		i -= w.n
	}
	return int(i)
}

// clear empties the slot starting at data[i]. It is called once per slot the wheels move
// past, so it assigns the few fields instead of calling the bulk clear.
func (s *Series) clear(i int) {
	l := s.layout
	s.data[i] = 0
	if l.events != 0 {
		s.data[i+l.events] = 0
	}
	if l.extrema != 0 {
		s.data[i+l.extrema] = math.Inf(-1)
		s.data[i+l.extrema+1] = math.Inf(1)
	}
}

// Read appends to dst[:0] the Stats of every window at second now, in Layout.Windows order,
// and returns it. since is the first second the caller has observed (see the package
// documentation): PerSecond divides by the seconds from since to the window's end while
// they are fewer than the window.
func (s *Series) Read(now, since int64, dst []Stats) []Stats {
	l := s.layout
	dst = dst[:0]
	for range l.windows {
		dst = append(dst, Stats{Max: math.NaN(), Min: math.NaN()})
	}
	now, since = clampTime(now), clampTime(since)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.t == never || s.wentBack(now) {
		return dst
	}
	t := s.readSecond(now)
	now = max(now, t)
	// Windows end at the last complete second: what the current second holds is left
	// out, from the second wheel by starting below its head slot, from a coarser one by
	// taking it off the newest slot's sum and count (its extrema cannot be). A series read
	// back at now holds nothing of second now.
	var current []float64
	if l.lag != 0 && s.t == now {
		current = s.data[int(s.head[0])*l.stride:][:l.stride]
	}
	for i := range l.wheels {
		s.readWheel(i, t, now-l.lag, current, dst)
	}
	for i := range dst {
		dst[i].PerSecond = l.PerSecond(i, dst[i].Sum, now, since)
	}
	return dst
}

// ReadSecondOf is the second that parts (series of one layout: the parts of a label set
// that several writers wrote) are each read at, at now, so that their windows and their
// summaries read as one series holding all their events would (Read, ReadSummariesOf): the
// latest of now and the seconds each is read at (that of a part with events to read at now
// that is not read back to now: see readSecond); and the second at which the rate of their
// sums is that series' (Layout.PerSecond). A part whose second is so far ahead of now that
// it reads nothing (a clock gone back past every window) does not count, nor does one
// whose second is ahead of now but none of its events is: one series holding all their
// events would go back to now with the first of them (seat), and this one is read as if it
// had.
func ReadSecondOf(now int64, parts []*Series) int64 {
	now = clampTime(now)
	at := now
	for _, s := range parts {
		s.mu.Lock()
		if s.t != never && !s.wentBack(now) {
			at = max(at, s.readSecond(now))
		}
		s.mu.Unlock()
	}
	return at
}

// readSecond is the second the series, which has events to read at now (not wentBack),
// is read at, at now: its own, or now when that is behind it but after every event placed,
// to which its next Add takes it back (seat). It is read as it would be then, so that a
// scrape does not read the windows at the second of a clock that ran ahead and came back
// until the series has its next event; nor, when the series is a part of a label set,
// leave out of the shorter windows what the other parts placed since they went back.
func (s *Series) readSecond(now int64) int64 {
	if now < s.t && s.last < now {
		return now
	}
	return s.t
}

// PerSecond is the per-second rate of a sum over window i (in Windows order) read at second
// now, observed since second since, as Read computes it; a caller that adds the Stats of
// several series read at now computes the rate of the sum with it.
func (l *Layout) PerSecond(i int, sum float64, now, since int64) float64 {
	observed := max(clampTime(now)-l.lag-clampTime(since)+1, 1)
	return sum / float64(min(l.secs[i], observed))
}

// readWheel fills the Stats of the windows wheel i serves, ending at second end, the series
// being read at second t (readSecond). It walks the ring once from the newest slot back,
// shortest window first, so nested windows share the walk; a window's oldest slot is added
// pro rata, and then fully for the longer windows. current, when not nil, is the slot of
// second s.t = end+1, which the windows leave out.
func (s *Series) readWheel(i int, t, end int64, current []float64, dst []Stats) {
	l := s.layout
	w := &l.wheels[i]
	ring := s.data[w.off : w.off+int(w.n)*l.stride]
	// Slots after t are empty: the walk starts at the slot of t, not of end. u is the
	// newest slot not folded into acc yet, at ring index idx.
	u := floorDiv(t, w.step)
	idx := int64(s.head[i])
	if t != s.t {
		idx = w.indexOf(u)
	}
	var acc slot
	acc.reset()
	switch {
	case current == nil:
	case w.step == 1:
		u, idx = u-1, floorMod(idx-1, w.n)
	default:
		acc.sum = -current[0]
		if l.events != 0 {
			acc.events = -current[l.events]
		}
	}
	for _, k := range w.serve {
		lo := end - l.secs[k] + 1
		oldest := floorDiv(lo, w.step)
		if whole := u - oldest; whole > 0 {
			// The ring holds every slot of the window (see NewLayout), so whole < n and the
			// slots u−whole+1 … u are at most two runs of the ring.
			first := idx - whole + 1
			if first < 0 {
				acc.fold(ring[(first+w.n)*int64(l.stride):], l)
				first = 0
			}
			acc.fold(ring[first*int64(l.stride):(idx+1)*int64(l.stride)], l)
			u, idx = oldest, floorMod(idx-whole, w.n)
		}
		win := acc
		if u == oldest {
			part := float64((oldest+1)*w.step-lo) / float64(w.step)
			win.prorate(ring[idx*int64(l.stride):], l, part)
		}
		dst[k].Sum = win.sum
		dst[k].Events = win.events
		if l.events == 0 {
			dst[k].Events = win.sum
		}
		if l.extrema != 0 && win.max >= win.min {
			dst[k].Max, dst[k].Min = win.max, win.min
		}
	}
}

// NewSummaries returns what Series.ReadSummaries fills: one summary of each kind per window,
// window-major (the summary of kind k for window i at i·len(kinds)+k), windows in Windows
// order and kinds in Options.Summaries order. A caller reuses it across reads.
func (l *Layout) NewSummaries() []Summary {
	dst := make([]Summary, 0, len(l.windows)*len(l.kinds))
	for range l.windows {
		for _, kind := range l.kinds {
			dst = append(dst, kind.New())
		}
	}
	return dst
}

// ReadSummaries sets dst (made by Layout.NewSummaries) to the summaries of every window at
// second now. A window is served from the start of the slot holding its oldest second: it
// holds the events of the window stretched back by less than one slot of its wheel (see
// summaryGrid). With windows that end at the last complete second, it is served up to the
// slot holding that second, which holds the current second too unless the current second
// opened a slot: a summary of a slot cannot leave out some of its seconds.
func (s *Series) ReadSummaries(now int64, dst []Summary) {
	ReadSummariesOf(now, []*Series{s}, dst, nil)
}

// ReadSummariesOf sets dst (made by Layout.NewSummaries) to the summaries of every window
// at second now of parts, series of one layout (the parts of a label set that several
// writers wrote), merged: what each part's ReadSummaries gives, merged into the first
// part's in their order. The slots of every part of a kind that is Unordered are merged
// into each window in turn, rather than each part's windows made and then merged, which
// merges every window of a part once more; a kind that is not has each part's windows
// made into more as ReadSummaries makes them, and merged, in the parts' order. *more is
// made by the layout when two parts have events to read and it is nil (more itself may
// be nil: scratch for this read only). The parts are locked together for the read.
func ReadSummariesOf(now int64, parts []*Series, dst []Summary, more *[]Summary) {
	for _, d := range dst {
		d.Reset()
	}
	if len(parts) == 0 {
		return
	}
	now = clampTime(now)
	for _, s := range parts {
		s.mu.Lock()
	}
	defer func() {
		for _, s := range parts {
			s.mu.Unlock()
		}
	}()
	// The parts a read at now sees events of; a part that has none reads as empty summaries,
	// which merge as nothing. A store has at most 8 shards, so the cursors stay on the stack.
	var buf [8]sumCursor
	cur := buf[:0]
	for _, s := range parts {
		if s.t != never && !s.wentBack(now) {
			cur = append(cur, sumCursor{s: s})
		}
	}
	if len(cur) == 1 {
		readSums(now, cur, dst, allKinds)
		return
	}
	if len(cur) == 0 {
		return
	}
	l := cur[0].s.layout
	if l.ordered {
		readSums(now, cur[:1], dst, orderedKinds)
		if more == nil {
			more = new([]Summary)
		}
		if *more == nil {
			*more = l.NewSummaries()
		}
		for n := range cur[1:] {
			for k, m := range *more {
				if l.kinds[k%len(l.kinds)].picked(orderedKinds) {
					m.Reset()
				}
			}
			readSums(now, cur[1+n:2+n], *more, orderedKinds)
			for k, d := range dst {
				if l.kinds[k%len(l.kinds)].picked(orderedKinds) {
					d.Merge((*more)[k])
				}
			}
		}
	}
	if l.unordered {
		readSums(now, cur, dst, unorderedKinds)
	}
}

// kindSet picks the summary kinds a read merges: all of them, or those that are
// Unordered, or those that are not.
type kindSet uint8

const (
	allKinds kindSet = iota
	orderedKinds
	unorderedKinds
)

// picked reports whether set holds kind k.
func (k *SummaryKind) picked(set kindSet) bool {
	return set == allKinds || k.Unordered == (set == unorderedKinds)
}

// sumCursor is where a read is in the slots of one series' summary wheel: u is the newest
// slot not merged yet, at ring index idx, and a window ends at end; open[j] is the slot
// of this wheel that holds the pending open slot of the finer wheel j (see place).
type sumCursor struct {
	s      *Series
	u, idx int64
	end    int64
	open   [len(grid{}) - 1]int64
}

// start places c at the newest slot of summary wheel i that a read at now merges.
func (c *sumCursor) start(now int64, i int) {
	s := c.s
	l := s.layout
	w := &l.sumWheels[i]
	t := s.readSecond(now)
	c.end = max(now, t) - l.lag
	// As in readWheel: the slots after t are empty, and so is the slot after end's.
	c.u = floorDiv(t, w.step)
	c.idx = int64(s.rings.head[i])
	if t != s.t {
		c.idx = w.indexOf(c.u)
	}
	if c.u > w.slot(c.end) {
		c.u, c.idx = c.u-1, floorMod(c.idx-1, w.n)
	}
	// A slot is read with the pending open slots of the finer wheels whose seconds it
	// holds.
	for j := range c.open[:i] {
		c.open[j] = never
		if o := s.rings.open[j]; o.pending {
			c.open[j] = w.slot(o.slot * l.sumWheels[j].step)
		}
	}
}

// merge merges into win the slots of wheel i that window k holds and that c has not merged
// yet, for the kinds of set, moving c past them.
func (c *sumCursor) merge(i, k int, win []Summary, set kindSet) {
	s := c.s
	l := s.layout
	w := &l.sumWheels[i]
	kinds := len(l.kinds)
	for oldest := floorDiv(c.end-l.secs[k]+1, w.step); c.u >= oldest; c.u-- {
		mergeSlot(l, win, s.rings.sums[w.off+int(c.idx)*kinds:][:kinds], set)
		for j := range c.open[:i] {
			if c.u == c.open[j] {
				mergeSlot(l, win, s.rings.openSums(l, j), set)
			}
		}
		if c.idx--; c.idx < 0 {
			c.idx += w.n
		}
	}
}

// readSums merges into dst, which holds nothing yet of the kinds of set, the windows of
// the series of cur for those kinds: each window starts from the shorter one before it of
// the same wheel, and takes the slots it holds beyond that one of each series in turn.
// The series are locked.
func readSums(now int64, cur []sumCursor, dst []Summary, set kindSet) {
	l := cur[0].s.layout
	kinds := len(l.kinds)
	for i := range l.sumWheels {
		for n := range cur {
			cur[n].start(now, i)
		}
		prev := -1
		for _, k := range l.sumWheels[i].serve {
			win := dst[k*kinds : (k+1)*kinds]
			if prev >= 0 {
				for j, d := range win {
					if l.kinds[j].picked(set) {
						d.Merge(dst[prev*kinds+j])
					}
				}
			}
			prev = k
			for n := range cur {
				cur[n].merge(i, k, win, set)
			}
		}
	}
}

// mergeSlot merges the summaries of a slot, those it holds of the kinds of set, into win,
// kind by kind.
func mergeSlot(l *Layout, win, slot []Summary, set kindSet) {
	for k, sum := range slot {
		if sum != nil && l.kinds[k].picked(set) {
			win[k].Merge(sum)
		}
	}
}

// slot is an accumulator shaped like one slot of the ring.
type slot struct{ sum, events, max, min float64 }

func (a *slot) reset() { *a = slot{max: math.Inf(-1), min: math.Inf(1)} }

// fold adds the whole slots of a run of the ring. The accumulators are locals so that they
// stay in registers through the loop, which is most of the cost of a scrape.
func (a *slot) fold(run []float64, l *Layout) {
	sum, events, hi, lo := a.sum, a.events, a.max, a.min
	for i := 0; i < len(run); i += l.stride {
		sum += run[i]
		if l.events != 0 {
			events += run[i+l.events]
		}
		if l.extrema != 0 {
			hi = max(hi, run[i+l.extrema])
			lo = min(lo, run[i+l.extrema+1])
		}
	}
	a.sum, a.events, a.max, a.min = sum, events, hi, lo
}

// prorate adds the slot starting at d[0], weighting sum and count by part; extrema count
// whole, since which events of a partial slot are inside the window is not known.
func (a *slot) prorate(d []float64, l *Layout, part float64) {
	a.sum += part * d[0]
	if l.events != 0 {
		a.events += part * d[l.events]
	}
	if l.extrema != 0 {
		a.max = max(a.max, d[l.extrema])
		a.min = min(a.min, d[l.extrema+1])
	}
}

// wentBack reports whether now is so far behind the series' second (a clock stepped back
// by the longest window or more) that every event held is after every window at now.
func (s *Series) wentBack(now int64) bool {
	return s.t != never && now <= s.t-s.layout.longest
}

// Bytes is the heap the series takes: what a new one takes (Layout.SeriesBytes) and what
// its summaries grew by beyond their floors since. It is what the layout's Account was
// charged for the series on top of SeriesBytes.
func (s *Series) Bytes() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := int64(s.layout.bytes)
	if s.rings != nil {
		n += s.rings.grown
	}
	return n
}

// LastAdd returns the newest event second placed, or math.MinInt64 if none was. A
// series whose LastAdd is older than now−Longest() holds nothing, but one that is not may
// hold nothing either (the clock stepped back past every window): Holds is what says
// whether it can be dropped.
func (s *Series) LastAdd() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.last
}

// Holds reports whether a read at second now finds an event of the series in some window:
// its newest event is no older than now−Longest(), and the clock has not stepped back past
// every window since it was placed (Read then reads nothing, and the next Add starts over).
// A series that holds nothing can be dropped.
func (s *Series) Holds(now int64) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	now = clampTime(now)
	return s.last >= now-s.layout.reach && !s.wentBack(now)
}

// Second returns the newest second of the clock the series was added at (its now),
// math.MinInt64 before the first Add: after a clock stepped back past every window, the
// second it started over at.
func (s *Series) Second() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.t
}

func clampTime(t int64) int64 { return min(max(t, -timeLimit), timeLimit) }

// floorDiv rounds toward minus infinity, so that slots before 1970 are aligned like others.
func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b < 0 {
		q--
	}
	return q
}

func floorMod(a, b int64) int64 {
	m := a % b
	if m < 0 {
		m += b
	}
	return m
}
