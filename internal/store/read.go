package store

import (
	"math"

	"github.com/logwindow/logwindow_exporter/config"
	"github.com/logwindow/logwindow_exporter/parser/event"
	"github.com/logwindow/logwindow_exporter/windows"
)

// This is what the exposition reads of a Set at scrape time. A read changes nothing: it
// judges idleness itself, so a scrape shows the same before and after an Expire. The
// methods are small enough to inline: a scrape reads every series through them.

// NumRules is the number of rules of the Set, in config order.
func (s *Set) NumRules() int { return len(s.rules) }

// Rule returns rule i of the Set. Its pointer identifies the rule for as long as the Set
// lives, so that a reader may key what it keeps per rule by it.
func (s *Set) Rule(i int) *Rule { return &s.rules[i] }

// Oldest is the second of the oldest line an event-time rule placed in a wheel since the
// exporter started (math.MaxInt64 before the first): event-time rules' rates count from
// it when it is before the start.
func (s *Set) Oldest() int64 { return s.oldest.Load() }

// MemoryUsed is the heap the series of all rules take (label sets, counters, float wheels
// and every summary as it grew), with what the inputs hold (Hold): what MaxBytes bounds.
func (s *Set) MemoryUsed() int64 {
	for _, r := range s.rules {
		r.store.settlePending()
	}
	return s.mem.used.Load()
}

// Hold charges n bytes that the process holds for an input (a CRI joiner's partial
// messages) to the memory MaxBytes bounds, shared by every Set built from this one; n < 0
// gives them back.
func (s *Set) Hold(n int64) { s.mem.used.Add(n) }

// MaxBytes is the bound on MemoryUsed in force (the latest Set's); 0 is none.
func (s *Set) MaxBytes() int64 { return s.mem.max.Load() }

// Config is the rule as the Set's config defines it: its name, labels and families.
func (r *Rule) Config() *config.Rule { return r.rule }

// Limit is the rule's max_series_per_rule.
func (r *Rule) Limit() int { return r.budget.limit }

// Layout is the rule's windows; an inherited store keeps its layout, which the fingerprint
// makes the one the rule asks for.
func (r *Rule) Layout() *windows.Layout { return r.store.layout }

// EventTime reports whether the rule lives on the wall clock (see the package
// documentation): it is read at the wall second, and its rates count from Set.Oldest.
func (r *Rule) EventTime() bool { return r.store.eventTime }

// Snapshot appends the rule's series to dst and returns them. The series are in no order;
// the caller should clear dst after use, so that removed series may go.
func (r *Rule) Snapshot(dst []*Series) []*Series { return r.store.snapshot(dst) }

// Matched is the rule's matched lines, those of its series and those of no series, as
// the sinks that wrote them published them (Sink.Publish): with the lines of
// NewDeferredSink's sinks only once their caller counted them read. It never goes back.
func (r *Rule) Matched() uint64 { return r.store.matched.Load() }

// Gone reports whether s is a kept counter at now (the rule's clock) idle past the counter
// TTL at active (the processing clock, which activity goes by): Expire removes it, and a
// reader leaves it out until then.
func (r *Rule) Gone(s *Series, now, active int64) bool {
	return r.store.gone(s, now, active, r.budget.ttl)
}

// Total is the `_total` of s: the sum of its values for a value rule, else its lines.
func (r *Rule) Total(s *Series) float64 { return r.store.total(s) }

// Live reports whether s has windows to export at now; else it is a kept counter, whose
// `_total` only is exported.
func (r *Rule) Live(s *Series, now int64) bool { return r.store.live(s, now) }

// Read appends to dst[:0] the Stats of every window of s at now, rates counted from since,
// the parts of the writers' shards merged; more is scratch kept by the caller between
// calls, so that a series written by several shards allocates nothing either.
func (r *Rule) Read(s *Series, now, since int64, dst []windows.Stats, more *[]windows.Stats) []windows.Stats {
	return r.store.read(s, now, since, dst, more)
}

// ReadSummaries sets dst, made by the layout's NewSummaries, to the summaries of every
// window of s at now, the shards' parts merged; more is the caller's scratch, as for Read.
func (r *Rule) ReadSummaries(s *Series, now int64, dst []windows.Summary, more *[]windows.Summary) {
	r.store.readSummaries(s, now, dst, more)
}

// Drops are a rule's counters of lines not counted as is, since its store was made.
type Drops struct {
	// Parser is indexed by event.DropReason.
	Parser [event.NumDropReasons]uint64
	// Late lines were older than every window; Future lines, ahead of the clock, were
	// placed at the current second.
	Late, Future uint64
	// Folds are lines folded into the overflow series, MemoryFolds those of them folded
	// because of the memory bound rather than the rule's budget.
	Folds, MemoryFolds uint64
	// TooLarge lines of a value rule were refused: their value would have made a sum of
	// their series too large for a float.
	TooLarge uint64
}

// Drops reads the rule's drop and fold counters, as the sinks that wrote the lines
// published them (Sink.Publish), as the matched lines are. They are loaded in the
// reverse of the order a sink publishes them in, so that they never show more lines
// folded by the memory bound than folded: a caller that loads Matched after them never
// finds more lines late, future or folded than matched.
func (r *Rule) Drops() Drops {
	st := r.store
	var d Drops
	for i := range st.parserDrops {
		d.Parser[i] = st.parserDrops[i].Load()
	}
	d.TooLarge = st.tooLarge.Load()
	d.MemoryFolds = st.memFolds.Load()
	d.Folds = st.folds.Load()
	d.Future = st.future.Load()
	d.Late = st.late.Load()
	return d
}

// Labels are the label values of s, in the order of its rule's labels. A series whose
// values do not fit its rule's labels (a log line gave too many or too few) cannot be
// exported; the caller must not change them.
func (s *Series) Labels() []string { return s.labels }

// Lines is the number of lines of s.
func (s *Series) Lines() uint64 { return s.lines() }

// total is the `_total` of the series: the sum of values, or the line count.
func (st *store) total(s *Series) float64 {
	if !st.value {
		return float64(s.lines())
	}
	var sum float64
	for p := range s.parts {
		sum += math.Float64frombits(p.sum.Load())
	}
	return sum
}

// snapshot returns the series.
func (st *store) snapshot(dst []*Series) []*Series {
	defer st.rlock().RUnlock()
	for _, s := range st.series {
		dst = append(dst, s)
	}
	return dst
}

// live reports whether s exports windows at now: it is pinned, or has wheels that had a
// line within the longest window; else it is written as a kept counter.
func (st *store) live(s *Series, now int64) bool {
	for p := range s.parts {
		if st.wheels(s, p, now) != nil {
			return true
		}
	}
	return false
}

// wheels returns the wheels of part p of s that are read at now: none when p has none or
// they hold nothing at now (windows.Series.Holds: idle past the longest window, or the
// clock stepped back past every window), unless s is pinned. Wheels that hold nothing are
// read, expired and released as idle.
func (st *store) wheels(s *Series, p *part, now int64) *windows.Series {
	w := p.win.Load()
	if w == nil || !s.pinned && !w.Holds(now) {
		return nil
	}
	return w
}

// read appends to dst[:0] the Stats of every window of s at second now, its parts merged:
// sums and counts added, the per-second rate that of the sum, extrema of all. Parts without
// wheels to read (see wheels) are left out; more holds the other parts' reads. The parts
// are read at one second (windows.ReadSecondOf), as one series written by all would be.
func (st *store) read(s *Series, now, since int64, dst []windows.Stats, more *[]windows.Stats) []windows.Stats {
	var buf [MaxShards]*windows.Series
	parts := st.partsRead(s, now, buf[:0])
	dst = dst[:0]
	if len(parts) == 0 {
		return dst
	}
	if len(parts) == 1 {
		return parts[0].Read(now, since, dst)
	}
	at := windows.ReadSecondOf(now, parts)
	dst = parts[0].Read(at, since, dst)
	for _, w := range parts[1:] {
		*more = w.Read(at, since, (*more)[:0])
		for i := range min(len(dst), len(*more)) {
			d, m := &dst[i], (*more)[i]
			d.Sum += m.Sum
			d.Events += m.Events
			d.Max, d.Min = extremum(d.Max, m.Max, true), extremum(d.Min, m.Min, false)
		}
	}
	for i := range dst {
		dst[i].PerSecond = st.layout.PerSecond(i, dst[i].Sum, at, since)
	}
	return dst
}

// partsRead appends to dst the wheels of the parts of s read at now (see wheels).
func (st *store) partsRead(s *Series, now int64, dst []*windows.Series) []*windows.Series {
	for p := range s.parts {
		if w := st.wheels(s, p, now); w != nil {
			dst = append(dst, w)
		}
	}
	return dst
}

// extremum merges two maxima (or minima), either NaN when its window has no event.
func extremum(a, b float64, isMax bool) float64 {
	switch {
	case math.IsNaN(a):
		return b
	case math.IsNaN(b):
		return a
	case isMax:
		return max(a, b)
	}
	return min(a, b)
}

// readSummaries sets dst (made by the layout's NewSummaries) to the summaries of every
// window of s at second now, its parts merged (windows.ReadSummariesOf); more is the
// scratch of the kinds merged part by part. Parts without wheels to read (see wheels)
// are left out; the others are read at one second, as by read.
func (st *store) readSummaries(s *Series, now int64, dst []windows.Summary, more *[]windows.Summary) {
	var buf [MaxShards]*windows.Series
	parts := st.partsRead(s, now, buf[:0])
	if len(parts) > 1 {
		now = windows.ReadSecondOf(now, parts)
	}
	windows.ReadSummariesOf(now, parts, dst, more)
}
