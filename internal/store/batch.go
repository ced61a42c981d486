package store

import (
	"bytes"
	"hash/maphash"
	"math"
	"sync/atomic"

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
// reorder events) but for which label set takes a full budget's last room, and the order
// in which floats of different seconds of a slot or a part's sum are added up.

// Bounds of what a rule's pending events take: entries (label sets and seconds), events
// in all, and the bytes of their keys, label values and items (a read of a log is 64 KiB,
// so that only items rendered longer than their lines reach it). Past any of them the
// rule is flushed before its next event is taken.
const (
	maxEntries       = 64
	maxPendingEvents = 4096
	maxArenaBytes    = 64 << 10
)

// pending is one rule's events held by a batching sink.
type pending struct {
	// entries[:used] hold events, in the order of their first; hashes[i] is entries[i]'s
	// key and second hashed, which a look-up compares before the key. last is the entry of
	// the rule's previous event.
	entries []entry
	hashes  []uint64
	used    int
	last    int
	// values are the events' values in the order they came, next the event after each of
	// its entry (−1: none), and items, itemsPer of them an event, their items: held per
	// rule rather than per entry, so that what a sink keeps between flushes is bounded by
	// the rule's events, not by every entry's most.
	values   []float64
	next     []int32
	items    []span
	itemsPer int
	// arena holds the keys, label values and items of the entries' events (spans of it),
	// which the event's own are valid only during Event.
	arena []byte
}

// entry is the events of one label set at one pair of clocks.
type entry struct {
	now, at int64
	// key and labels are the label set's, as spans of the arena.
	key    span
	labels []span
	// head and tail are its first and last events (indexes of pending.values).
	head, tail int32
}

// span is arena[from:to].
type span struct{ from, to int }

// add takes e, of the rule's clocks now and at, into its entry. It reports false when the
// event must be written at once, by Event (a value past what admit passes without a
// look at the part), or when the rule's events are to be flushed first (a bound of what
// they take is reached, or e has another number of items than those held). A label set
// with a value that is not valid UTF-8 is held as any other: its series is under the
// value made valid, so that the flush does not find it and writes the entry's events one
// at a time (observe).
func (p *pending) add(e *event.Event, now, at int64, seed maphash.Seed) bool {
	n := len(p.values)
	if !(math.Abs(e.Value) <= smallValue) || n >= maxPendingEvents || len(p.arena) >= maxArenaBytes || n > 0 && len(e.Items) != p.itemsPer {
		return false
	}
	i := p.last
	if i >= p.used || !p.holds(i, e.Key, now, at) {
		h := maphash.Bytes(seed, e.Key) ^ uint64(at)*0x9e3779b97f4a7c15
		i = p.find(h, e.Key, now, at)
		if i < 0 {
			if p.used == maxEntries {
				return false
			}
			i = p.open(h, e, now, at)
		}
		p.last = i
	}
	j := int32(n)
	p.values = append(p.values, e.Value)
	p.next = append(p.next, -1)
	p.itemsPer = len(e.Items)
	for _, it := range e.Items {
		p.items = append(p.items, p.keep(it))
	}
	ent := &p.entries[i]
	if ent.head < 0 {
		ent.head = j
	} else {
		p.next[ent.tail] = j
	}
	ent.tail = j
	return true
}

// holds reports whether entry i is of key at clocks now and at.
func (p *pending) holds(i int, key []byte, now, at int64) bool {
	ent := &p.entries[i]
	return ent.at == at && ent.now == now && bytes.Equal(p.bytes(ent.key), key)
}

// find returns the entry of key at clocks now and at, hashed h, or −1.
func (p *pending) find(h uint64, key []byte, now, at int64) int {
	for i, eh := range p.hashes[:p.used] {
		if eh == h && p.holds(i, key, now, at) {
			return i
		}
	}
	return -1
}

// open starts an entry for e's label set at clocks now and at, hashed h, reusing the
// buffers of a flushed one.
func (p *pending) open(h uint64, e *event.Event, now, at int64) int {
	i := p.used
	if i == len(p.entries) {
		p.entries = append(p.entries, entry{})
		p.hashes = append(p.hashes, 0)
	}
	p.used++
	ent := &p.entries[i]
	p.hashes[i] = h
	ent.now, ent.at = now, at
	ent.key = p.keep(e.Key)
	ent.labels = ent.labels[:0]
	for _, l := range e.Labels {
		ent.labels = append(ent.labels, p.keep(l))
	}
	ent.head = -1
	return i
}

// keep copies b into the arena.
func (p *pending) keep(b []byte) span {
	from := len(p.arena)
	p.arena = append(p.arena, b...)
	return span{from, len(p.arena)}
}

func (p *pending) bytes(s span) []byte { return p.arena[s.from:s.to:s.to] }

// reset empties the table, keeping its buffers.
func (p *pending) reset() {
	p.used, p.last = 0, 0
	p.values, p.next, p.items = p.values[:0], p.next[:0], p.items[:0]
	p.arena = p.arena[:0]
}

// flushScratch is what a flush gathers an entry's events in.
type flushScratch struct {
	values        []float64
	labels, items [][]byte
}

// gather sets sc's values and items to those of ent's events.
func (sc *flushScratch) gather(p *pending, ent *entry) {
	sc.values, sc.items = sc.values[:0], sc.items[:0]
	for j := ent.head; j >= 0; j = p.next[j] {
		sc.values = append(sc.values, p.values[j])
		for _, it := range p.items[int(j)*p.itemsPer:][:p.itemsPer] {
			sc.items = append(sc.items, p.bytes(it))
		}
	}
}

// flush writes the rule's pending events (see the comment at the top of the file) and
// empties the table; w has the sink's shard, backfill and the rule's budget, last is the
// sink's series of the rule's last event.
func (st *store) flush(p *pending, w write, last **Series, sc *flushScratch) {
	if p.used == 0 {
		return
	}
	lock := &st.locks[w.shard]
	lock.RLock()
	for i := range p.entries[:p.used] {
		ent := &p.entries[i]
		key := p.bytes(ent.key)
		s := *last
		if s == nil || s.removed || s.key != string(key) {
			s = st.series[string(key)]
			*last = s
		}
		w.now, w.at = ent.now, ent.at
		sc.gather(p, ent)
		if s != nil && !st.idlePastTTL(s, w.shard, w.now, w.budget.ttl) {
			st.addMany(s, &w, sc.values, sc.items)
			continue
		}
		lock.RUnlock()
		st.observeEach(p, ent, &w, last, sc)
		lock.RLock()
	}
	lock.RUnlock()
	p.reset()
}

// observeEach writes the events of ent, gathered in sc, one at a time, as Event does.
func (st *store) observeEach(p *pending, ent *entry, w *write, last **Series, sc *flushScratch) {
	sc.labels = sc.labels[:0]
	for _, l := range ent.labels {
		sc.labels = append(sc.labels, p.bytes(l))
	}
	per := p.itemsPer
	e := event.Event{Key: p.bytes(ent.key), Labels: sc.labels}
	for i, v := range sc.values {
		e.Value, e.Items = v, nil
		if per > 0 {
			e.Items = sc.items[i*per : (i+1)*per]
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
