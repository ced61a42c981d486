package store

import (
	"hash/maphash"
	"sync/atomic"
	"unsafe"

	"github.com/logwindow/logwindow_exporter/parser/event"
	"github.com/logwindow/logwindow_exporter/windows"
)

// Sink feeds one goroutine's parser events into a Set. It implements parser.Sink.
//
// A Sink is bound to the Set that made it, because event.Event.Rule indexes the rules of
// one config: the caller pairs a Sink with the parser built from the same config and, on
// a reload, switches to a new pair, never a parser of one config with a Sink of another.
// A Sink is not safe for concurrent use; give each input goroutine its own. Sinks are dealt
// to the stores' shards in turn (see Series), so that inputs writing the same label sets on
// different cores do not contend.
type Sink struct {
	sinkState
	// The padding makes a Sink a whole number of cache lines, which the allocator places at
	// a multiple of its size: the sinks of inputs on different cores, often made one after
	// the other, then share no line, though each writes its own on every event.
	_ [(cacheLine - unsafe.Sizeof(sinkState{})%cacheLine) % cacheLine]byte
}

// sinkState is what a Sink holds.
type sinkState struct {
	// What a batching sink's event reads comes first, in the Sink's first cache line.
	//
	// pending is the events a batching sink (NewBatchSink) holds, per rule; nil for a sink
	// that writes each event at once. Its tables are read from here, not through a
	// pointer of their own: every event's look at its rule's table waited on one load less.
	pending          []pending
	processing, wall int64
	// received counts the events and drops passed in (Received).
	received uint64
	shard    uint8
	// backfill: a warm start's sink (NewBackfillSink).
	backfill bool
	// scratch is what a batching sink's flushes lay the events out in.
	scratch *flushScratch
	rules   []Rule
	// last holds, per rule, the series of the rule's last event (see store.observe).
	last []*Series
	// counts are what the sink counts beside its events, apart: a Sink stays two cache
	// lines.
	counts *sinkCounts
}

// sinkCounts are a Sink's counts. unpublished holds, for each rule the sink counted lines
// of and did not publish them yet (Publish), what it counted: its matched lines and those
// it dropped, by reason; slot[i] is one more than the index of rule i's there, 0 when it
// has none. Only the rules a read touched are so visited by the publish that ends it, not
// every rule of the config. deferred: only Publish publishes them (NewDeferredSink).
// ahead counts the events a backfill sink left out as ahead of its wall clock
// (LeftAhead).
type sinkCounts struct {
	slot        []int32
	unpublished []ruleCounts
	deferred    bool
	ahead       uint64
}

// ruleCounts are what a sink counted of one rule's lines and did not publish yet: the
// store's counters of the same names (see store), which Publish adds them to.
type ruleCounts struct {
	rule                                   int
	matched, late, future, folds, memFolds uint64
	tooLarge                               uint64
	parser                                 [event.NumDropReasons]uint64
}

// of returns the counts of rule i not published yet, making them: valid until the next
// call of of for another rule, which may move them.
func (c *sinkCounts) of(i int) *ruleCounts {
	if n := c.slot[i]; n > 0 {
		return &c.unpublished[n-1]
	}
	c.unpublished = append(c.unpublished, ruleCounts{rule: i})
	c.slot[i] = int32(len(c.unpublished))
	return &c.unpublished[len(c.unpublished)-1]
}

// NewSink returns a Sink writing to s.
func (s *Set) NewSink() *Sink {
	return s.newSink(false)
}

// NewBatchSink returns a Sink writing to s that holds events until Flush: the caller
// flushes it whenever it is done handing on lines for a while (the end of a read, of a
// batch of datagrams) and before anything that must see them (a snapshot), and before it
// drops the sink. Received counts the events held.
func (s *Set) NewBatchSink() *Sink {
	k := s.newSink(false)
	k.pending, k.scratch = make([]pending, len(s.rules)), new(flushScratch)
	seed := maphash.MakeSeed()
	for i := range k.pending {
		k.pending[i].seed, k.pending[i].counts, k.pending[i].rule = seed, k.counts, i
	}
	return k
}

// NewDeferredSink returns a batching Sink (see NewBatchSink) whose lines count in their
// rules' matched lines (Rule.Matched) only when the caller publishes them (Publish), not
// as they are written: a caller that counts the lines it read once their events are
// written (Flush), and publishes after, so that no look at the counters finds more lines
// matched by a rule than read by its inputs, nor lines read whose events it lacks.
func (s *Set) NewDeferredSink() *Sink {
	k := s.NewBatchSink()
	k.counts.deferred = true
	return k
}

// NewBackfillSink returns a Sink for a warm start: lines a file held before the exporter
// started, read again so that event-time windows are right at once. Their events go into
// the windows of event-time rules only: not into any `_total` or self-metric (they were
// counted by the process that read them first, and a counter reset must stay a clean
// reset for rate()), and not into processing-time rules, whose lines have no time of
// their own to be placed by, nor are those of a time after the wall clock (LeftAhead).
func (s *Set) NewBackfillSink() *Sink {
	return s.newSink(true)
}

// newSink makes a sink whose last series fill whole cache lines of their own, as the Sink
// does: they are written whenever a rule's label set changes from one line to the next.
func (s *Set) newSink(backfill bool) *Sink {
	perLine := cacheLine / int(unsafe.Sizeof((*Series)(nil)))
	last := make([]*Series, len(s.rules), (len(s.rules)+perLine-1)/perLine*perLine)
	return &Sink{sinkState: sinkState{rules: s.rules, last: last, backfill: backfill, shard: s.nextShard(),
		counts: &sinkCounts{slot: make([]int32, len(s.rules))}}}
}

// SetNow sets, in Unix seconds, the clocks the events that follow are placed and judged by,
// until the next call. An event without a time of its own is placed at processing. An
// event with one (HasTime) is placed at it and judged late or future against wall, the
// clock its time comes from. Every event makes its label set active at processing. They
// must be the clocks the exposition reads (the exporter's Now and Wall), so that a series
// is written and read on one clock.
func (k *Sink) SetNow(processing, wall int64) { k.processing, k.wall = processing, wall }

// Received is how many events and drops the Sink was given since it was made. A caller
// that reads it before and after parsing a line knows whether any rule matched the line,
// without a wrapper of its own around every Event and Drop.
func (k *Sink) Received() uint64 { return k.received }

// Event adds a matched line to its series: at its own time when it has one, else at the
// processing second.
func (k *Sink) Event(e *event.Event) {
	k.received++
	if k.backfill && (!e.HasTime || e.Time > k.wall) {
		// A line the file held before the start that is stamped after it has no second
		// of its own to go to: placed at the current second as a live line ahead of the
		// clock is, a log stamped ahead (local times read as UTC east of Greenwich) would
		// have everything the fill read put into that second.
		if e.HasTime {
			k.counts.ahead++
		}
		return
	}
	// A batching sink's table takes the clocks as they are, without a write (see writeOf),
	// and all it reads of the sink is in the sink's first line (the rules are not).
	now, at := k.clocks(e)
	if k.pending != nil {
		p := &k.pending[e.Rule]
		if p.add(e, now, at, k.processing) {
			return
		}
		// The rule's table is full, or the event is to be written at once: after the
		// events before it, so that they keep their order.
		k.flushRule(e.Rule)
		if p.add(e, now, at, k.processing) {
			return
		}
	}
	w := k.writeOf(e.Rule)
	w.now, w.at = now, at
	k.rules[e.Rule].store.observe(e, &w, &k.last[e.Rule])
	if k.pending == nil {
		k.Publish()
	}
}

// LeftAhead is how many events a warm start's sink (NewBackfillSink) left out of the
// windows because their own time was after the wall clock it was given (SetNow).
func (k *Sink) LeftAhead() uint64 { return k.counts.ahead }

// Flush writes the events a batching sink holds (see NewBatchSink); nothing for another.
// Their lines count in their rules' matched and dropped lines then, unless the sink
// defers that to Publish (NewDeferredSink).
func (k *Sink) Flush() {
	if k.pending == nil {
		return
	}
	// The rules whose events the sink holds are among those with counts to publish: an
	// event held is noted there (pending.open).
	for i := range k.counts.unpublished {
		if r := k.counts.unpublished[i].rule; k.pending[r].used > 0 {
			k.flushRule(r)
		}
	}
	if !k.counts.deferred {
		k.Publish()
	}
}

// Publish counts the lines the sink wrote or dropped since it last published them in
// their rules' matched and dropped lines (Rule.Matched, Rule.Drops): the matched lines
// first, then those of them late, future or folded, so that a reader that loads those
// before the matched lines (as Drops and a scrape do) never finds more of them than
// matched lines. A sink that does not batch publishes as it writes, a batching sink that
// does not defer (NewDeferredSink) as it flushes.
//
// A rule whose events the sink still holds stays noted for the Flush to come.
func (k *Sink) Publish() {
	c := k.counts
	held := c.unpublished[:0]
	for i := range c.unpublished {
		u := c.unpublished[i]
		st := k.rules[u.rule].store
		addCount(&st.matched, u.matched)
		addCount(&st.late, u.late)
		addCount(&st.future, u.future)
		addCount(&st.folds, u.folds)
		addCount(&st.memFolds, u.memFolds)
		addCount(&st.tooLarge, u.tooLarge)
		for r, n := range u.parser {
			addCount(&st.parserDrops[r], n)
		}
		c.slot[u.rule] = 0
		if k.pending != nil && k.pending[u.rule].used > 0 {
			held = append(held, ruleCounts{rule: u.rule})
			c.slot[u.rule] = int32(len(held))
		}
	}
	c.unpublished = held
}

// addCount adds n to c: no atomic operation for nothing.
func addCount(c *atomic.Uint64, n uint64) {
	if n > 0 {
		c.Add(n)
	}
}

// flushRule writes the events held of rule i.
func (k *Sink) flushRule(i int) {
	k.rules[i].store.flush(&k.pending[i], k.writeOf(i), &k.last[i], k.scratch)
}

// writeOf is what the store needs of k to write an event of rule i, but for the clocks
// of the event's own second (see clocks). An event a batching sink holds does without it:
// its fields, stored one by one and then copied 16 bytes at a time, made every event wait
// for the copy's loads (which no store could forward), a tenth of the sink's time.
func (k *Sink) writeOf(i int) write {
	return write{budget: k.rules[i].budget, shard: k.shard, backfill: k.backfill, active: k.processing, counts: k.counts.of(i)}
}

// clocks gives the second e is judged at and the second it belongs to.
func (k *Sink) clocks(e *event.Event) (now, at int64) {
	if e.HasTime {
		return k.wall, e.Time
	}
	return k.processing, k.processing
}

// Drop counts a line the parser matched but could not turn into an event, in the rule's
// dropped lines when the sink publishes it (see Publish).
func (k *Sink) Drop(rule int, why event.DropReason) {
	k.received++
	if int(why) < event.NumDropReasons && !k.backfill {
		k.counts.of(rule).parser[why]++
		if k.pending == nil {
			k.Publish()
		}
	}
}

// Fate is what the store does with an event: where the windows place it and whether its
// label set is folded into the overflow series.
type Fate struct {
	// Placement is windows.Placed, Late (older than every window: only `_total` counts
	// it) or Future (ahead of the clock: placed at Now).
	Placement windows.Placement
	// Now is the second the event was judged at: the wall clock's for an event with a
	// time of its own, else processing time.
	Now int64
	// Folded: the label set has no series and the rule's budget or the memory bound is
	// full, so the event goes to the overflow series, unless a reap makes room first (idle
	// series, kept counters least recently active first).
	Folded bool
	// Memory: it folds because of the memory bound (--series.max-bytes), the budget having
	// room.
	Memory bool
}

// Judge says what Event would do with e at the clocks of the last SetNow, without doing it;
// against the store as it is, without the events a batching sink holds.
func (k *Sink) Judge(e *event.Event) Fate {
	r := &k.rules[e.Rule]
	now, at := k.clocks(e)
	st := r.store
	f := Fate{Now: now}
	switch {
	case at > now:
		f.Placement = windows.Future
	case st.tooOld(now, at):
		f.Placement = windows.Late
	}
	lock := &st.locks[k.shard]
	lock.RLock()
	// As observe judges it; a late line of a new label set that finds no room is not
	// folded but counted late only.
	fresh := st.series[string(e.Key)] == nil && string(e.Key) != st.overflowKey && f.Placement != windows.Late
	overBudget := fresh && st.normal >= r.budget.limit
	f.Memory = fresh && !overBudget && st.mem.full(st.seriesCost(len(e.Key), len(e.Labels)))
	f.Folded = overBudget || f.Memory
	lock.RUnlock()
	return f
}
