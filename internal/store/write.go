package store

import (
	"math"
	"strings"
	"unicode/utf8"

	"github.com/logwindow/logwindow_exporter/parser/event"
	"github.com/logwindow/logwindow_exporter/windows"
)

// write is what the store needs of a sink to write one event besides the event itself.
type write struct {
	// now is the second the event is judged at, at the second it belongs to (see
	// Sink.clocks).
	now, at int64
	// active is the processing second the event came at, whatever its rule's clock: what
	// its label set's activity goes by (see counted).
	active int64
	// budget is the event's rule's.
	budget budget
	// shard is the sink's shard of writers.
	shard uint8
	// backfill: the sink's events go into the windows only (see NewBackfillSink).
	backfill bool
	// counts are the sink's counts of the rule's lines it did not publish yet
	// (Sink.Publish): its matched lines, and those late, future, folded or refused.
	counts *ruleCounts
}

// observe adds one event of a sink: a lookup and an Add to the sink's shard's part, under
// the shard's read lock, so that expiry, which takes the write locks, can never remove a
// series (or release its wheels) while an event is being added to it.
//
// last is the sink's series of the rule's previous event. Consecutive lines mostly share a
// rule's label set, so it spares the map lookup while the key repeats and the series was
// not removed (removed is set under the write locks, so the read lock makes it current).
// A removed series stays reachable from last until the rule's next event on that sink,
// though remove no longer charges its bytes: at most one series per rule and sink.
func (st *store) observe(e *event.Event, w *write, last **Series) {
	limit := w.budget.limit
	lock := &st.locks[w.shard]
	lock.RLock()
	s := st.lookup(e.Key, last)
	// A line whose labels read the overflow series' is that series, which no bound keeps out.
	fresh := s == nil && string(e.Key) != st.overflowKey
	overBudget := fresh && st.normal >= limit
	full := overBudget || fresh && st.mem.full(st.seriesCost(len(e.Key), len(e.Labels)))
	if full && st.tooOld(w.now, w.at) {
		lock.RUnlock()
		if !w.backfill {
			st.lateUnseated.Add(1)
			w.counts.late++
			w.counts.matched++
		}
		return
	}
	folded, due := false, false
	// Only valid values fold here: invalid ones are sanitised by the slow path first, and
	// their sanitised label set may already be a series of its own. When a reap is due, the
	// slow path runs it first.
	if full {
		due = st.reapDue(w.now, limit)
		if !due && validLabels(e.Labels) {
			s = st.series[st.overflowKey]
			folded = s != nil
		}
	}
	if s != nil && st.idlePastTTL(s, w.shard, w.now, w.active, w.budget.ttl) {
		// A label set idle past the counter TTL is a new one (Expire may not have removed
		// it yet): its total starts again, as a scrape stopped showing the old one.
		lock.RUnlock()
		st.create(e, w, due)
		return
	}
	if s != nil {
		st.add(s, e, w)
		lock.RUnlock()
		if folded && !w.backfill {
			st.fold(w, !overBudget, e.Labels)
		}
		return
	}
	lock.RUnlock()
	st.create(e, w, due)
}

// lookup returns the series of key, or nil, through last (see observe); the caller holds
// the sink's shard's read lock.
func (st *store) lookup(key []byte, last **Series) *Series {
	s := *last
	if s == nil || s.removed || s.key != string(key) {
		s = st.series[string(key)]
		*last = s
	}
	return s
}

// tooOld reports whether an event at second at is older than every window at second now,
// as windows.Series.Add judges it for a new series. The difference is taken unsigned so
// that no pair of times can overflow it.
func (st *store) tooOld(now, at int64) bool {
	return at < now && uint64(now-at) >= uint64(st.layout.Longest())
}

// create is the first event of a label set (or of the overflow series), or a new label set
// that found the budget full: the only path that allocates, and the only one that takes the
// write lock on the write side. It reaps at a full budget only when observe found a reap
// due, or one is due for a label set idle past the TTL, so that reaps stay rate-limited
// when every new label set comes here (the overflow series does not exist yet, or reaps
// keep making room for one label set at a time).
func (st *store) create(e *event.Event, w *write, due bool) {
	limit := w.budget.limit
	// Valid values (what the parser delivers) are looked up by the line's own key and copied
	// only when a series is made for them, so a label set folded at the budget costs no
	// allocation. Invalid ones are sanitised first: that label set may exist already.
	var key string
	var values []string
	cloned := !validLabels(e.Labels)
	if cloned {
		key, values = cloneLabels(e.Labels)
	}
	st.lockAll()
	defer st.unlockAll()
	var s *Series
	var isOverflow bool
	if cloned {
		s, isOverflow = st.series[key], key == st.overflowKey
	} else {
		s, isOverflow = st.series[string(e.Key)], string(e.Key) == st.overflowKey
	}
	retired := false
	if s != nil && st.gone(s, w.now, w.active, w.budget.ttl) {
		st.remove(s)
		s, retired = nil, true
	}
	cost := st.seriesCost(len(e.Key), len(e.Labels))
	if cloned {
		cost = st.seriesCost(len(key), len(e.Labels))
	}
	overBudget := s == nil && !isOverflow && st.normal >= limit
	memFull := s == nil && !isOverflow && st.mem.full(cost)
	// A label set idle past the TTL is a new one, which observe did not judge as one: it
	// reaps, when due, as a label set never seen does (unless its line is late: see
	// observe).
	if (overBudget || memFull) && (due || retired && !st.tooOld(w.now, w.at) && st.reapDue(w.now, limit)) {
		st.reap(w.now, w.active, w.budget, memFull)
		overBudget = st.normal >= limit
		memFull = st.mem.full(cost)
	}
	full := overBudget || memFull
	// A late line with no series to go to is counted late only; a warm start's counts in
	// nothing, so it makes no series, which would show a `_total` of 0.
	if (full || w.backfill && s == nil) && st.tooOld(w.now, w.at) {
		if !w.backfill {
			st.lateUnseated.Add(1)
			w.counts.late++
			w.counts.matched++
		}
		return
	}
	folded := false
	if full {
		s, folded = st.series[st.overflowKey], true
		if s != nil && st.gone(s, w.now, w.active, w.budget.ttl) {
			// The overflow series idle past the TTL is a new one, as any label set is, whether
			// Expire removed it yet or not: a scrape stopped showing the old one.
			st.remove(s)
			s = nil
		}
		if s == nil {
			key, values = st.overflowKey, st.overflowLabels
		}
	} else if s == nil && !cloned {
		key, values = cloneLabels(e.Labels)
	}
	if s == nil {
		// A label set whose first line is too old for every window starts as a kept
		// counter: wheels would hold nothing.
		kept := st.tooOld(w.now, w.at)
		s = newSeries(key, values, st.accounts[w.shard].layout, kept, w.shard)
		cost := st.seriesCost(len(key), len(values))
		if kept {
			cost -= st.wheelBytes
		}
		st.charge(cost)
		st.series[key] = s
		if key != st.overflowKey {
			st.normal++
		}
	}
	st.add(s, e, w)
	if folded && !w.backfill {
		st.fold(w, !overBudget, e.Labels)
	}
}

func validLabels(labels [][]byte) bool {
	for _, l := range labels {
		if !utf8.Valid(l) {
			return false
		}
	}
	return true
}

// cloneLabels copies the values out of the line's buffer into one string, replacing
// invalid UTF-8 so that no value can fail a scrape, and returns the map key and the label
// values as substrings of it.
func cloneLabels(labels [][]byte) (string, []string) {
	var b strings.Builder
	// The key is made at its length, which seriesCost charges: appended to as it grew, it
	// would take up to a quarter more.
	valueBytes := 0
	for _, l := range labels {
		valueBytes += len(l)
	}
	n := keyLen(len(labels), valueBytes)
	b.Grow(n)
	ends := make([]int, len(labels))
	for i, l := range labels {
		if i > 0 {
			b.WriteString(event.KeySep)
		}
		if utf8.Valid(l) {
			b.Write(l)
		} else {
			b.WriteString(strings.ToValidUTF8(string(l), string(utf8.RuneError)))
		}
		ends[i] = b.Len()
	}
	key := b.String()
	if b.Len() != n {
		key = strings.Clone(key) // invalid bytes replaced: not the length grown to
	}
	values := make([]string, len(labels))
	begin := 0
	for i, end := range ends {
		values[i] = key[begin:end]
		begin = end + len(event.KeySep)
	}
	return key, values
}

// add counts one event of s in the sink's shard's part: in its `_total` (unless
// backfilled) and in its wheels, which a kept counter gets back unless the event is too old
// for every window.
func (st *store) add(s *Series, e *event.Event, w *write) {
	v := e.Value
	p := st.partOf(s, w.shard)
	if st.value && !admit(p, v) {
		if !w.backfill {
			w.counts.tooLarge++
		}
		return
	}
	if st.value && !w.backfill {
		addFloats(&p.sum, []float64{v})
	}
	if wheels := st.counted(p, w, 1); wheels != nil {
		st.placed(wheels.AddItems(w.now, w.at, v, e.Items), w, 1)
	}
}

// partOf returns the sink's shard's part of s, making it on the shard's first line.
func (st *store) partOf(s *Series, shard uint8) *part {
	p := s.part(shard)
	if p == nil {
		p = st.newPart(s, shard)
	}
	return p
}

// counted counts n events of w's second in part p's lines (unless backfilled) and last
// second, and returns the wheels they go to: made for a kept counter, or nil when they are
// too old for every window (counted late).
func (st *store) counted(p *part, w *write, n uint64) *windows.Series {
	// A series is active when its lines come, on the processing clock, whatever their own
	// time and whatever the wall clock does: a line stamped years ahead must not keep its
	// series from the TTL or from eviction, nor a late line of a log read from its
	// beginning start a counter already past the TTL, nor a step of the wall clock make a
	// label set active a second ago look idle for a day (its counter removed, which its
	// next line restarts) or newer than one active since. A warm start's lines came before
	// the start, at about their own time: as long before the processing second as before
	// the wall's.
	if !w.backfill {
		p.lines.Add(n)
		w.counts.matched += n
		p.raiseLast(w.active)
	} else {
		p.raiseLast(w.active - ago(w.now, w.at))
	}
	wheels := p.win.Load()
	if wheels == nil {
		if st.tooOld(w.now, w.at) {
			if !w.backfill {
				w.counts.late += n
			}
			return nil
		}
		wheels = st.accounts[w.shard].layout.NewSeries()
		if p.win.CompareAndSwap(nil, wheels) {
			st.charge(st.wheelBytes)
		} else {
			wheels = p.win.Load()
		}
	}
	return wheels
}

// ago is how many seconds before second now second at is: 0 when it is not before it, at
// most 2^62, so that no pair of times can overflow it or a second it is taken from.
func ago(now, at int64) int64 {
	if at >= now {
		return 0
	}
	return int64(min(uint64(now-at), 1<<62))
}

// placed counts what the wheels did with n events of w's second.
func (st *store) placed(pl windows.Placement, w *write, n uint64) {
	switch pl {
	case windows.Placed:
		if st.eventTime {
			st.placedAt(w.at)
		}
	case windows.Late:
		if !w.backfill {
			w.counts.late += n
		}
	case windows.Future:
		if !w.backfill {
			w.counts.future += n
		}
		st.placedAt(w.now)
	}
}

// placedAt lowers the oldest line placed by an event-time rule to t; after the first lines
// of a log that is a single load per line. Processing-time rules do not call it: their
// lines are placed at now, never before the exporter's start.
func (st *store) placedAt(t int64) {
	for {
		old := st.oldest.Load()
		if t >= old || st.oldest.CompareAndSwap(old, t) {
			return
		}
	}
}

// A part's values may add up to at most 2^1020 in magnitude, so that the sums a reader makes
// of a series (its _total, a window's sum, a slot's, a bucket's, a top value's), which add
// values of at most MaxShards parts, stay below the largest float: an addition that would
// overflow is refused instead of turning the sums into ±Inf and then NaN for good. A part
// counts its lines in a uint64, so values of magnitude up to smallValue cannot pass 2^1019
// between them, however many there are; only larger ones are added up, in mag, against the
// other 2^1019. The common value costs one comparison.
const (
	smallValue = 0x1p955
	bigBudget  = 0x1p1019
)

// admit reports whether v may be added to part p's sums, counting it in p.mag when it is
// large.
func admit(p *part, v float64) bool {
	a := math.Abs(v)
	if a <= smallValue {
		return true
	}
	for {
		old := p.mag.Load()
		m := math.Float64frombits(old) + a
		if !(m <= bigBudget) {
			return false
		}
		if p.mag.CompareAndSwap(old, math.Float64bits(m)) {
			return true
		}
	}
}
