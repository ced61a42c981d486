package store

import (
	"encoding/binary"
	"hash/maphash"
	"math"
	"slices"
	"sync/atomic"
	"unsafe"

	"github.com/logwindow/logwindow_exporter/parser/event"
)

// A batching sink (NewBatchSink) holds a rule's events until Flush, gathered by label set
// and second: the lines of one read of a log share their clocks, mostly their second, and
// a rule's few label sets, so that most of a rule's events repeat an entry a few lines
// before. A flush then writes an entry's events under one read lock, one look-up of their
// series, one update of its part's counters and one lock of its wheels
// (windows.Series.AddMany), where Event takes each once per event.
//
// An entry whose label set has no series, or a series idle past the counter TTL, is
// written event by event as Event writes it (observe): a new label set at a full budget
// folds, reaps or takes the last room one event at a time, as before. Entries are written
// in the order their first events came, so that of the new label sets one flush brings,
// the first seen takes the last room of a budget, as without batching. What differs from
// Event is the order of events: an entry's events are written together, before those of
// the entries after it, which the store does not depend on (the parse workers already
// reorder events) but for which label set takes a full budget's last room (and so whether
// a late line of a label set with no series finds one), and the order in which floats of
// different seconds of a slot or a part's sum are added up.

// Bounds of what a rule's pending events take: entries (label sets and seconds), events
// in all, and the bytes of their keys, label values and items (a read of a log is 64 KiB,
// so that only items rendered longer than their lines reach it). Past any of them the
// rule is flushed before its next event is taken.
const (
	maxEntries       = 64
	maxPendingEvents = 4096
	maxArenaBytes    = 64 << 10
)

// pending is one rule's events held by a batching sink. The padding makes it a whole
// number of cache lines, so that its first two, which hold what an event that repeats its
// entry reads, are two when the table of rules starts on a line.
type pending struct {
	pendingState
	_ [(cacheLine - unsafe.Sizeof(pendingState{})%cacheLine) % cacheLine]byte
}

// pendingState is what pending holds.
type pendingState struct {
	// lastKey and lastNow, lastAt and lastActive are the key and clocks of entries[last],
	// the entry of the rule's previous event, which most events repeat. Kept here, in the
	// table's first cache line, they spare such an event the entries: read through them,
	// the entry's fields waited on the load of the entries' slice, and its key on both.
	lastKey                     []byte
	lastNow, lastAt, lastActive int64
	// entries[:used] hold events, in the order of their first; last is the entry of the
	// rule's previous event (valid while used > 0), and prev (below) the entry before it,
	// to which most of the others return (as a line of the most common label set follows
	// another).
	used     int
	itemsPer int
	// values are the events' values in the order they came and items, itemsPer of them an
	// event, their items (in the arena); runs are where the entry of the events changes.
	// They are held per rule rather than per entry, so that what a sink keeps between
	// flushes is bounded by the rule's events, not by every entry's most, and an event
	// that repeats its entry only appends its value and items.
	values []float64
	// arena holds the keys, label values and items of the entries' events, which the
	// event's own are valid only during Event. A slice of it stays valid when append
	// moves it: the bytes copied are not written again until reset.
	arena      []byte
	items      [][]byte
	entries    []entry
	last, prev int
	runs       []run
	// seed hashes the label sets in hashes.
	seed maphash.Seed
	// hashes[i] is entries[i]'s key and second hashed, which a look-up compares before
	// the key; index finds an entry by its hash: slot h%len(index) and those after it hold
	// one more than the index of each entry of such a hash, up to a slot of 0.
	hashes []uint64
	index  [2 * maxEntries]uint8
	// counts are the sink's, and rule the table's: the opening of the table's first
	// entry since a reset notes the rule among those the sink flushes and publishes
	// (sinkCounts.of), which a look at every event made Event too large to take add in.
	counts *sinkCounts
	rule   int
}

// entry is the events of one label set at one set of clocks (see write): held across
// reads, events of one second of their rule's clock may have come at different seconds of
// the processing clock, which their label set's activity goes by.
type entry struct {
	now, at, active int64
	// key and labels are the label set's, in the arena.
	key    []byte
	labels [][]byte
	// from and n are where its events are in a flush's layout (see layout).
	from, n int
}

// run is events of one entry that came one after the other, from values[from] up to the
// next run's from. Entries that alternate event by event make a run of each event, which
// int32 (a table holds at most maxPendingEvents) keeps small.
type run struct{ entry, from int32 }

// add takes e, of the rule's clocks now and at and the processing second active, into its
// entry. It reports false when the
// event must be written at once, by Event (a value past what admit passes without a
// look at the part), or when the rule's events are to be flushed first (a bound of what
// they take is reached, or e has another number of items than those held). A label set
// with a value that is not valid UTF-8 is held as any other: its series is under the
// value made valid, so that the flush does not find it and writes the entry's events one
// at a time (observe). Whether e repeats the previous event's entry is told by the copy
// of that entry's clocks and key at the head of the table, the key compared by sameKey.
func (p *pending) add(e *event.Event, now, at, active int64) bool {
	n := len(p.values)
	if !(math.Abs(e.Value) <= smallValue) || n >= maxPendingEvents || len(p.arena) >= maxArenaBytes || n > 0 && len(e.Items) != p.itemsPer {
		return false
	}
	if p.used == 0 || p.lastAt != at || p.lastNow != now || p.lastActive != active || !sameKey(p.lastKey, e.Key) {
		if !p.enter(e, now, at, active) {
			return false
		}
	}
	p.values = append(p.values, e.Value)
	p.itemsPer = len(e.Items)
	for _, it := range e.Items {
		p.items = append(p.items, p.keep(it))
	}
	return true
}

// enter makes the entry of e at clocks now, at and active the last, opening it if it is
// new, and starts a run of it; false when the table has no room for another entry.
func (p *pending) enter(e *event.Event, now, at, active int64) bool {
	i := p.prev
	if i >= p.used || !p.entries[i].holds(e.Key, now, at, active) {
		h := maphash.Bytes(p.seed, e.Key) ^ uint64(at)*0x9e3779b97f4a7c15
		var slot int
		if i, slot = p.find(h, e.Key, now, at, active); i < 0 {
			if p.used == maxEntries {
				return false
			}
			i = p.open(h, e, now, at, active)
			p.index[slot] = uint8(i + 1)
		}
	}
	p.prev, p.last = p.last, i
	ent := &p.entries[i]
	p.lastKey, p.lastNow, p.lastAt, p.lastActive = ent.key, ent.now, ent.at, ent.active
	p.runs = append(p.runs, run{int32(i), int32(len(p.values))})
	return true
}

// holds reports whether the entry is of key at clocks now, at and active.
func (ent *entry) holds(key []byte, now, at, active int64) bool {
	return ent.at == at && ent.now == now && ent.active == active && string(ent.key) == string(key)
}

// find returns the entry of key at clocks now, at and active, hashed h, or −1 and the slot
// of the index to enter it in.
func (p *pending) find(h uint64, key []byte, now, at, active int64) (int, int) {
	slot := int(h % uint64(len(p.index)))
	for ; p.index[slot] != 0; slot = (slot + 1) % len(p.index) {
		if i := int(p.index[slot]) - 1; p.hashes[i] == h && p.entries[i].holds(key, now, at, active) {
			return i, slot
		}
	}
	return -1, slot
}

// open starts an entry for e's label set at clocks now, at and active, hashed h, reusing
// the buffers of a flushed one.
func (p *pending) open(h uint64, e *event.Event, now, at, active int64) int {
	i := p.used
	if i == 0 {
		p.counts.of(p.rule)
	}
	if i == len(p.entries) {
		p.entries = append(p.entries, entry{})
		p.hashes = append(p.hashes, 0)
	}
	p.used++
	p.hashes[i] = h
	ent := &p.entries[i]
	ent.now, ent.at, ent.active = now, at, active
	ent.key = p.keep(e.Key)
	ent.labels = ent.labels[:0]
	for _, l := range e.Labels {
		ent.labels = append(ent.labels, p.keep(l))
	}
	return i
}

// keep copies b into the arena.
func (p *pending) keep(b []byte) []byte {
	from := len(p.arena)
	p.arena = append(p.arena, b...)
	return p.arena[from:len(p.arena):len(p.arena)]
}

// reset empties the table, keeping its buffers.
func (p *pending) reset() {
	p.used, p.last, p.prev = 0, 0, 0
	p.index = [len(p.index)]uint8{}
	p.values, p.items, p.runs = p.values[:0], p.items[:0], p.runs[:0]
	p.arena = p.arena[:0]
}

// flushScratch is what a flush lays an entry's events out in.
type flushScratch struct {
	values []float64
	items  [][]byte
}

// layout sets each entry's from and n, and returns the values and items laid out by entry
// (entry i's values are values[from:from+n]): p's own when its runs are its entries in
// order, one each (all the more when it has a single entry), else sc's, copied run by run.
func (p *pending) layout(sc *flushScratch) (values []float64, items [][]byte) {
	entries := p.entries[:p.used]
	for i := range entries {
		entries[i].n = 0
	}
	// Entries are opened in order, each by a run: as many runs as entries are the entries
	// in order.
	inOrder := len(p.runs) == len(entries)
	for k, r := range p.runs {
		entries[r.entry].n += p.runEnd(k) - int(r.from)
	}
	from := 0
	for i := range entries {
		entries[i].from = from
		from += entries[i].n
	}
	if inOrder {
		return p.values, p.items
	}
	per := p.itemsPer
	sc.values = slices.Grow(sc.values[:0], len(p.values))[:len(p.values)]
	sc.items = slices.Grow(sc.items[:0], len(p.items))[:len(p.items)]
	for k, r := range p.runs {
		ent := &entries[r.entry]
		from, end := int(r.from), p.runEnd(k)
		copy(sc.values[ent.from:], p.values[from:end])
		if per > 0 {
			copy(sc.items[ent.from*per:], p.items[from*per:end*per])
		}
		ent.from += end - from
	}
	for i := range entries {
		entries[i].from -= entries[i].n
	}
	return sc.values, sc.items
}

// runEnd is where run k ends.
func (p *pending) runEnd(k int) int {
	if k+1 < len(p.runs) {
		return int(p.runs[k+1].from)
	}
	return len(p.values)
}

// flush writes the rule's pending events (see the comment at the top of the file) and
// empties the table; w has the sink's shard, backfill and the rule's budget, last is the
// sink's series of the rule's last event.
func (st *store) flush(p *pending, w write, last **Series, sc *flushScratch) {
	if p.used == 0 {
		return
	}
	values, items := p.layout(sc)
	per := p.itemsPer
	lock := &st.locks[w.shard]
	lock.RLock()
	for i := range p.entries[:p.used] {
		ent := &p.entries[i]
		s := st.lookup(ent.key, last)
		w.now, w.at, w.active = ent.now, ent.at, ent.active
		vs, its := values[ent.from:ent.from+ent.n], items[ent.from*per:(ent.from+ent.n)*per]
		if s != nil && !st.idlePastTTL(s, w.shard, w.now, w.active, w.budget.ttl) {
			st.addMany(s, &w, vs, its)
			continue
		}
		lock.RUnlock()
		st.observeEach(ent, per, vs, its, &w, last)
		lock.RLock()
	}
	lock.RUnlock()
	p.reset()
}

// observeEach writes the events of ent, values vs and items its (per an event), one at a
// time, as Event does.
func (st *store) observeEach(ent *entry, per int, vs []float64, its [][]byte, w *write, last **Series) {
	e := event.Event{Key: ent.key, Labels: ent.labels}
	for i, v := range vs {
		e.Value, e.Items = v, nil
		if per > 0 {
			e.Items = its[i*per : (i+1)*per]
		}
		st.observe(&e, w, last)
	}
}

// addMany is add for the events of one label set at one pair of clocks, whose values
// admit passes without a look at the part (see pending.add).
func (st *store) addMany(s *Series, w *write, values []float64, items [][]byte) {
	p := st.partOf(s, w.shard)
	if st.value && !w.backfill {
		addFloats(&p.sum, values)
	}
	n := uint64(len(values))
	if wheels := st.counted(p, w, n); wheels != nil {
		st.placed(wheels.AddMany(w.now, w.at, values, items), w, n)
	}
}

// addFloats adds vs in turn to the float64 stored as bits in u, in one CAS: writers of
// one series race only on this word, so a CAS loop beats a lock.
func addFloats(u *atomic.Uint64, vs []float64) {
	for {
		old := u.Load()
		sum := math.Float64frombits(old)
		for _, v := range vs {
			sum += v
		}
		if u.CompareAndSwap(old, math.Float64bits(sum)) {
			return
		}
	}
}

// sameKey is string(a) == string(b) without runtime.memequal's call for keys of up to 16
// bytes, as label sets mostly are: the call made every event store the registers it held
// and load them back. Inlined: it is within the compiler's budget.
func sameKey(a, b []byte) bool {
	n := len(a)
	switch {
	case n != len(b):
		return false
	case n > 16:
		return string(a) == string(b)
	case n >= 8:
		return binary.LittleEndian.Uint64(a) == binary.LittleEndian.Uint64(b) && binary.LittleEndian.Uint64(a[n-8:]) == binary.LittleEndian.Uint64(b[n-8:])
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
