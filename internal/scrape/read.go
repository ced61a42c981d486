package scrape

import (
	"cmp"
	"errors"
	"io"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"unsafe"
	"weak"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/expfmt"

	"github.com/logwindow/logwindow_exporter/config/quantity"
	"github.com/logwindow/logwindow_exporter/exporter"
	"github.com/logwindow/logwindow_exporter/internal/store"
	"github.com/logwindow/logwindow_exporter/windows"
	"github.com/logwindow/logwindow_exporter/windows/sketch"

	dto "github.com/prometheus/client_model/go"
)

// Scrape is one scrape's rules: the view taken when it started, read a rule at a time as
// its families are written.
type Scrape struct {
	c      *Collector
	v      *view
	p      *plan
	keep   func(name string) bool
	native bool
}

// Scrape starts a scrape in format of the families keep passes (all when nil): it takes
// the view of the rules that the self-metrics gathered next count (so that in one scrape
// the rules' counters never lag their series), and Write writes the families.
func (c *Collector) Scrape(keep func(name string) bool, format expfmt.Format) exporter.Scrape {
	s := &Scrape{c: c, keep: keep, native: exporter.WantsNative(format)}
	set := c.opts.Set()
	if set == nil {
		return s
	}
	// Two references: the scrape's, and the self-metrics' (pending) until they take it.
	s.v, s.p = c.view(set, 2), c.planOf(set)
	s.p.viewBytes.Store(s.v.bytes())
	// Rules whose families cannot be named are left out, counted once per scrape.
	c.failed.Add(uint64(s.p.unnamed))
	if old := c.pending.Swap(s.v); old != nil {
		c.release(old) // another scrape's, which its self-metrics did not take
	}
	return s
}

// WriteText writes, in the Prometheus text format (0.0.4), the families of every rule of
// the Set in use, read at the current time of each rule's clock, merged by name with
// what reg gathers (nil: nothing), as a scrape of exporter.Handler does without its
// filters. It changes no state: series idle past their windows are written as kept
// counters and those past the counter TTL left out, whether Expire released them yet or
// not.
func (c *Collector) WriteText(w io.Writer, reg prometheus.Gatherer) error {
	return c.Encode(w, reg, expfmt.FmtText)
}

// Encode is WriteText in format.
func (c *Collector) Encode(w io.Writer, reg prometheus.Gatherer, format expfmt.Format) error {
	s := c.Scrape(nil, format)
	defer s.Close()
	var gathered []*dto.MetricFamily
	if reg != nil {
		var err error
		if gathered, err = reg.Gather(); err != nil {
			return err
		}
	}
	x := exporter.NewWriter(w, format, gathered)
	if err := s.Write(x); err != nil {
		_ = x.Close()
		return err
	}
	return x.Close()
}

// Write reads the rules and writes their families through w, in name order: a rule is read
// at its first family and let go after its last, so that a scrape holds the windows of
// the rules whose family names interleave with the one written, not of every rule.
func (s *Scrape) Write(w *exporter.Writer) error {
	if s.v == nil {
		return nil
	}
	open := make([]*reader, len(s.p.rules))
	scrape := s.c.free.scrapes.Add(1)
	defer func() {
		for _, x := range open {
			if x != nil {
				s.c.free.put(x)
			}
		}
	}()
	// holding is what the open reads held when read, with the view, the families
	// gathered and the overhead, as ScrapeCost counts them.
	gathered := w.GatheredBytes()
	s.c.gathered.Store(gathered)
	holding := s.p.viewBytes.Load() + gathered + scrapeOverhead
	readBytes := make([]int64, len(s.p.rules))
	return s.p.walk(s.keep, func(f planned, first, last bool) error {
		held := &s.p.held[f.rule][b2i(s.native)]
		if first {
			need := s.p.need(f.rule, s.native, len(s.v.rules[f.rule].series))
			x := s.c.free.get(need, scrape)
			x.readFor(scrape)
			open[f.rule] = x
			// A rule that grew since its last read holds more once read: it is asked for
			// before the read, at the rule's size now, so that scrapes sent at once, each
			// charged the old size, do not each make the grown read before a limiter
			// can make one wait or end it.
			if err := w.Hold(holding + int64(x.summaryBytes()) + need); err != nil {
				return err
			}
			x.read(s.v.set.Rule(f.rule), &s.v.rules[f.rule], &s.p.rules[f.rule], s.native)
			// Most of what the rule holds is known once it is read: a rule that grew is
			// charged so from now on, not once a scrape has written it, which a client
			// that stalls amid its samples puts off until it is ended, every scrape in
			// between charged what the rule held before.
			readBytes[f.rule] = x.bytes()
			raiseKnown(held, readBytes[f.rule])
			holding += readBytes[f.rule]
			// This scrape was charged what the rule held before, if it began before a
			// read of it: it holds the rule's read now, and is charged so before it
			// writes any of it (a limiter may make it wait, or end it).
			if err := w.Hold(holding); err != nil {
				return err
			}
		}
		x := open[f.rule]
		if err := w.Write(&x.snap, f.f); err != nil {
			return err
		}
		if last {
			holding -= readBytes[f.rule]
			// What the rule held is known once it is written: the writers encode its label
			// pairs at its first family.
			held.Store(x.bytes())
			if n := int64(len(s.v.rules[f.rule].series)); n > 0 {
				s.p.perSeries[f.rule][b2i(s.native)].Store((x.usedBytes() + n - 1) / n)
			}
			open[f.rule] = nil
			s.c.free.put(x)
		}
		return nil
	})
}

// ScrapeCost is the heap a scrape of the families keep passes (all when nil) in format
// holds at most beyond the writer's chunk, as the last reads of its rules tell: the rules
// are read a rule at a time, so it is what the rules open at once held at their last
// read, the most of any point of the scrape, with what the scrape holds throughout: the
// view of every rule's series (as large as the last one taken), the families the last
// scrape gathered (exporter.Writer.GatheredBytes: the self-metrics, a dozen samples a
// rule), the chunk and the compressor's state (scrapeOverhead). known is false when a
// rule it reads has not been read in that format since the Set was made, or when format
// holds its families whole (exporter.BuffersFamilies): then no read tells what it will
// hold, as it is until a scrape of the Set in use began. A rule that grew since its last
// read holds more, in the scrapes that began before it was read again.
func (c *Collector) ScrapeCost(keep func(name string) bool, format expfmt.Format) (cost int64, known bool) {
	set := c.opts.Set()
	if set == nil {
		return scrapeOverhead, true
	}
	if exporter.BuffersFamilies(format) {
		return 0, false
	}
	// The first scrape of a Set plans its families, not its cost: no rule of it is read
	// before, and a limiter asks for the cost under its lock.
	p := c.plan.Load()
	if p == nil || p.set != set {
		return 0, false
	}
	native := b2i(exporter.WantsNative(format))
	var open, most int64
	err := p.walk(keep, func(f planned, first, last bool) error {
		held := p.held[f.rule][native].Load()
		if held < 0 {
			return errUnknownCost
		}
		if first {
			open += held
			most = max(most, open)
		}
		if last {
			open -= held
		}
		return nil
	})
	if err != nil {
		return 0, false
	}
	return most + p.viewBytes.Load() + c.gathered.Load() + scrapeOverhead, true
}

// need is what reading rule i, of n series now, will use of a reader's buffers at least:
// per series what the rule's last read in that format (native) used a series, or the
// buffers a snapshot makes a series at the least. The read holds the merged summaries
// of the reader besides.
func (p *plan) need(i int, native bool, n int) int64 {
	per := max(p.perSeries[i][b2i(native)].Load(), p.rules[i].shape.SnapshotBytes(1, native))
	return per * int64(n)
}

// raiseKnown raises a rule's known cost to n: one still unknown stays so, as a read whose
// label pairs are not yet encoded does not tell all the rule will hold while written.
func raiseKnown(held *atomic.Int64, n int64) {
	for {
		old := held.Load()
		if old < 0 || old >= n || held.CompareAndSwap(old, n) {
			return
		}
	}
}

// errUnknownCost ends ScrapeCost's walk at a rule no read of the format has measured.
var errUnknownCost = errors.New("a rule's cost is unknown")

// walk visits the families keep passes (all when nil) in name order, telling visit whether
// each is its rule's first and whether it is its last: the span over which a scrape holds
// the rule's read. It stops at visit's first error.
func (p *plan) walk(keep func(name string) bool, visit func(f planned, first, last bool) error) error {
	left := p.familiesOf(keep)
	seen := make([]bool, len(p.rules))
	for _, f := range p.families {
		if keep != nil && !keep(f.name) {
			continue
		}
		first := !seen[f.rule]
		seen[f.rule] = true
		left[f.rule]--
		if err := visit(f, first, left[f.rule] == 0); err != nil {
			return err
		}
	}
	return nil
}

// familiesOf counts, per rule, its families keep passes (all when nil).
func (p *plan) familiesOf(keep func(name string) bool) []int {
	left := make([]int, len(p.rules))
	for _, f := range p.families {
		if keep == nil || keep(f.name) {
			left[f.rule]++
		}
	}
	return left
}

// scrapeOverhead is what a scrape holds besides its rules' reads: the writer's chunk
// (exporter's flushAt and its slack) and a gzip writer's state at its fastest level,
// about 300 KB, with room to spare.
const scrapeOverhead = 1 << 20

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// Close lets the view go, with the self-metrics' reference unless they took it.
func (s *Scrape) Close() {
	if s.v == nil {
		return
	}
	if s.c.pending.CompareAndSwap(s.v, nil) {
		s.c.release(s.v)
	}
	s.c.release(s.v)
	s.v = nil
}

// reader reads one rule into its snapshot, with the scratch the reads need, kept from one
// scrape to the next.
type reader struct {
	snap      exporter.RuleSnapshot
	stats     []windows.Stats
	partStats []windows.Stats
	sums      []windows.Summary
	partSums  []windows.Summary
	// sumsOf is the layout of sums and partSums, weakly: a layout reaches its rule's
	// store (windows.Account) and with it every series, which a reader kept between
	// scrapes would otherwise keep from going after a reload replaced or removed the rule.
	sumsOf weak.Pointer[windows.Layout]
	// others are the merged summaries of other rules' layouts the reader read before,
	// kept for when it reads them again: a scrape reads its rules one after another with
	// the same reader, which would otherwise make every rule's summaries, and grow their
	// buffers, anew at every scrape.
	others []layoutSums
	tops   []sketch.TopValue
	regs   []uint8
	native nativeBuilder
	// used is the most the reader's reads used (usedBytes) in each of the last
	// shrinkScrapes scrapes it read for, the newest, scrape, first: its high-water mark,
	// by scrapes rather than reads, as one scrape reads its rules in turn with one reader
	// and its largest rule must not be forgotten by the time the next scrape reads it.
	used   [shrinkScrapes]int64
	scrape uint64
}

// shrinkScrapes is how many of the scrapes a reader read for last its high-water mark
// spans: buffers far beyond what they used are let go (reader.shrink).
const shrinkScrapes = 4

// shrinkFloor is what a reader's buffers may hold whatever its reads used: less than the
// reads that use them would take to grow them again for nothing.
const shrinkFloor = 64 << 10

// readFor begins a read for scrape: a scrape other than the one the reader read for last
// makes its high-water mark forget the oldest of the scrapes it spans.
func (x *reader) readFor(scrape uint64) {
	if x.scrape != scrape {
		copy(x.used[1:], x.used[:])
		x.used[0], x.scrape = 0, scrape
	}
}

// shrink lets go of the reader's snapshot and top values when their buffers are
// oversized for what its reads of the last shrinkScrapes scrapes used: a rule's read is
// charged what the reader's buffers hold, so buffers grown for a spike (a rule's series
// since expired, a larger rule read with the reader) would otherwise charge every later
// read the spike.
func (x *reader) shrink() {
	if oversized(x.bufferBytes(), slices.Max(x.used[:])) {
		x.snap, x.tops = exporter.RuleSnapshot{}, nil
	}
}

// oversized reports whether buffers of a reader hold too much for reads that use used
// bytes of them: more than four times that, and shrinkFloor. A steady read uses half its
// buffers at least, as append grows them to twice what they held at most.
func oversized(buffers, used int64) bool {
	return buffers > shrinkFloor && buffers > 4*used
}

// bufferBytes is what the reader's snapshot and top values hold, by their capacities:
// what a read grows, and uses again at the next.
func (x *reader) bufferBytes() int64 {
	return x.snap.Bytes() + int64(cap(x.tops))*int64(unsafe.Sizeof(sketch.TopValue{}))
}

// read reads the series of rule r in view rv into the reader's snapshot.
func (x *reader) read(r *store.Rule, rv *ruleView, p *rulePlan, native bool) {
	series := rv.series
	slices.SortFunc(series, func(a, b *store.Series) int { return p.shape.Compare(a.Labels(), b.Labels()) })
	snap := &x.snap
	snap.Reset(p.shape, len(series), native)
	nw := len(r.Layout().Windows())
	if p.summaries {
		x.useSums(r.Layout())
	}
	for i, s := range series {
		live := r.Live(s, rv.now)
		var stats []windows.Stats
		if live {
			stats = r.Read(s, rv.now, rv.since, x.stats[:0], &x.partStats)
			x.stats = stats
			// A layout always reads one Stats per window; anything else is not exported.
			live = len(stats) == nw
		}
		snap.SetSeries(i, s.Labels(), r.Total(s), live)
		if !live {
			continue
		}
		for wi := range nw {
			g := snap.Gauges(i, wi)
			for k := range p.fams {
				if fam := &p.fams[k]; fam.Stat != nil {
					if v, ok := fam.Stat(&stats[wi]); ok {
						g[0] = v
					}
					g = g[1:]
				} else if fam.SummaryValue != nil {
					g = g[1:]
				}
			}
		}
		if p.summaries {
			x.readSummaries(r, s, rv.now, i, nw, p)
		}
	}
}

// layoutSums are the merged summaries of a layout's windows (reader.sums, partSums), the
// layout held weakly, as reader.sumsOf.
type layoutSums struct {
	of             weak.Pointer[windows.Layout]
	sums, partSums []windows.Summary
}

// bytes is what the summaries hold.
func (ls *layoutSums) bytes() int { return summaryBytes(ls.sums) + summaryBytes(ls.partSums) }

// useSums makes the reader's summaries those of layout l: the ones it kept for l, or new
// ones; those of the layout it read last are kept among the others.
func (x *reader) useSums(l *windows.Layout) {
	of := weak.Make(l)
	if x.sumsOf == of {
		return
	}
	if x.sums != nil {
		x.others = append(x.others, layoutSums{x.sumsOf, x.sums, x.partSums})
	}
	x.sums, x.partSums, x.sumsOf = nil, nil, of
	for i, o := range x.others {
		if o.of == of {
			x.sums, x.partSums = o.sums, o.partSums
			x.others = slices.Delete(x.others, i, i+1)
			break
		}
	}
	if x.sums == nil {
		x.sums = l.NewSummaries()
	}
}

// bytes is the heap the reader holds: its snapshot and the merged summaries and top
// values it read them from, and the merged summaries it keeps of the rules it read before.
func (x *reader) bytes() int64 {
	return x.bufferBytes() + int64(x.summaryBytes())
}

// usedBytes is what the reader's snapshot and top values take, by their lengths: what
// the rule read last needed beside the merged summaries, whatever larger reads the
// reader's buffers were grown for.
func (x *reader) usedBytes() int64 {
	return x.snap.UsedBytes() + int64(len(x.tops))*int64(unsafe.Sizeof(sketch.TopValue{}))
}

// summaryBytes is what the reader's merged summaries hold, those of every layout it keeps.
func (x *reader) summaryBytes() int {
	n := summaryBytes(x.sums) + summaryBytes(x.partSums)
	for _, o := range x.others {
		n += o.bytes()
	}
	return n
}

// readSummaries reads series s's summaries into its snapshot, as series i.
func (x *reader) readSummaries(r *store.Rule, s *store.Series, now int64, i, nw int, p *rulePlan) {
	snap := &x.snap
	r.ReadSummaries(s, now, x.sums, &x.partSums)
	kinds := len(x.sums) / nw
	for wi := range nw {
		sums := x.sums[wi*kinds : (wi+1)*kinds]
		g := snap.Gauges(i, wi)
		for k := range p.fams {
			switch fam := &p.fams[k]; {
			case fam.Stat != nil:
				g = g[1:]
			case fam.SummaryValue != nil:
				if v, ok := fam.SummaryValue(sums[fam.Summary]); ok {
					g[0] = v
				}
				g = g[1:]
			case fam.TopValues != nil:
				x.readTops(snap, fam, sums, i, wi, kinds)
			case fam.RegisterValues != nil:
				var ok bool
				if x.regs, ok = fam.RegisterValues(sums[fam.Summary], x.regs); ok {
					snap.SetRegisters(i, wi, x.regs)
				}
			default:
				readHistogram(snap, fam, sums, i, wi)
				if fam.Native && snap.HoldsNatives() {
					snap.SetNative(i, wi, x.native.native(fam.NativeSketch(sums[fam.NativeSummary])))
				}
			}
		}
	}
}

// readTops reads series i's top values of window wi from its summaries sums (of kinds
// summaries a window) into the snapshot: copied out of the merged summary, or, when the
// summary is large and mostly what is exported (shareTops), as its own text, the summary
// kept by the snapshot and the next series merged into a new one.
func (x *reader) readTops(snap *exporter.RuleSnapshot, fam *quantity.Family, sums []windows.Summary, i, wi, kinds int) {
	s := sums[fam.Summary]
	x.tops = fam.TopValues(s, x.tops[:0])
	items := 0
	for _, tv := range x.tops {
		items += len(tv.Item)
	}
	if n := s.Bytes(); shareTops(n, items) {
		snap.Keep(s, int64(n-items))
		x.sums[wi*kinds+fam.Summary] = sketch.NewTop(fam.Top.Capacity)
	} else {
		for j := range x.tops {
			x.tops[j].Item = strings.Clone(x.tops[j].Item)
		}
	}
	for _, tv := range x.tops {
		snap.AddTop(i, wi, tv.Item, tv.Sum)
	}
}

// shareTopBytes is the size of a merged top summary past which its items may be exported
// as its own text rather than copied (shareTops).
const shareTopBytes = 1 << 20

// shareTops reports whether a window's top values, of items bytes, are better exported as
// the text of their merged summary of n bytes, kept by the snapshot, than copied: when
// the summary is large and the items more than half of it. A kept summary holds its
// items once where copies hold them twice (a read of k = 50,000 over 1 KB paths holds
// 54 MB against 102 MB), but each series then keeps its own summary, where copies keep
// only what is
// exported: a summary of many more values than k is better copied from; a small one is
// kept by the reader for the next series.
func shareTops(n, items int) bool {
	return n > shareTopBytes && 2*items > n
}

// readHistogram reads a window's classic histogram, when the rule has buckets.
func readHistogram(snap *exporter.RuleSnapshot, fam *quantity.Family, sums []windows.Summary, i, wi int) {
	if h := snap.Buckets(i, wi); h != nil && fam.Histogram {
		fam.Buckets(sums[fam.Summary], h)
	}
}

// freeList keeps readers from one scrape to the next.
type freeList struct {
	mu sync.Mutex
	rs []*reader
	// scrapes numbers the scrapes the readers read for (reader.readFor).
	scrapes atomic.Uint64
}

// get returns a reader for a read of scrape that uses need bytes of its buffers: of
// those kept, the smallest whose buffers hold need, else the largest, but never one
// whose buffers are oversized for need, which would charge the read for them (a rule of
// a few series read by name[] between full scrapes that read a large one); a new one
// when every reader kept is. Those it passes over as oversized are aged as if they read
// for scrape and used nothing, and let go of their buffers as a reader that read it
// would (shrink): a reader grown for a spike, or for a rule that is no longer read, then
// goes as it would had it read the small rules since.
func (l *freeList) get(need int64, scrape uint64) *reader {
	l.mu.Lock()
	defer l.mu.Unlock()
	best, bestBytes := -1, int64(0)
	for i, x := range l.rs {
		b := x.bufferBytes()
		if oversized(b, need) {
			x.readFor(scrape)
			x.shrink()
			if b = x.bufferBytes(); oversized(b, need) {
				continue
			}
		}
		if best < 0 || fitsBetter(b, bestBytes, need) {
			best, bestBytes = i, b
		}
	}
	if best < 0 {
		return new(reader)
	}
	x := l.rs[best]
	l.rs = slices.Delete(l.rs, best, best+1)
	return x
}

// fitsBetter reports whether buffers of a bytes fit a read that uses need bytes of them
// better than buffers of b: of those that hold need, the smaller; else the larger, which
// grows the least.
func fitsBetter(a, b, need int64) bool {
	if (a >= need) != (b >= need) {
		return a >= need
	}
	if a >= need {
		return a < b
	}
	return a > b
}

// keepSummaryBytes is the most a kept reader's merged summaries may hold: past it they go
// with the scrape that made them, as a rule's top values of k=50,000 long paths would
// otherwise keep tens of MB per kept reader between scrapes, outside --series.max-bytes.
const keepSummaryBytes = 1 << 20

// keepReaderBytes is the most the readers kept may hold beside the largest: a reader
// keeps the buffers of what it read, and scrapes sent at once that each read a large
// rule, one reader each, would otherwise keep as many reads of it between scrapes,
// outside what --web.max-scrape-bytes charges the scrapes in flight. The largest is
// kept whatever its size, so that a scraper's next scrape reuses its buffers.
const keepReaderBytes = 8 << 20

// put keeps x, having let go of what its snapshot references, and of its merged summaries
// past keepSummaryBytes in all, those of the layouts read longest ago first; a few are
// kept, as many as the rules a scrape reads at once, holding keepReaderBytes beside the
// largest.
func (l *freeList) put(x *reader) {
	x.used[0] = max(x.used[0], x.usedBytes())
	x.snap.Release()
	clear(x.tops)
	x.shrink()
	// The summaries of a rule a reload replaced or removed are read no more.
	x.others = slices.DeleteFunc(x.others, func(o layoutSums) bool { return o.of.Value() == nil })
	if x.sumsOf.Value() == nil {
		x.sums, x.partSums, x.sumsOf = nil, nil, weak.Pointer[windows.Layout]{}
	}
	held := x.summaryBytes()
	drop := 0
	for ; held > keepSummaryBytes && drop < len(x.others); drop++ {
		held -= x.others[drop].bytes()
	}
	x.others = slices.Delete(x.others, 0, drop)
	if held > keepSummaryBytes {
		x.sums, x.partSums, x.sumsOf = nil, nil, weak.Pointer[windows.Layout]{}
		x.tops = nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.rs) >= 8 {
		return
	}
	// The largest is kept; beside it, the larger go first past keepReaderBytes, so that
	// as many of the others are kept as fit.
	type sized struct {
		x     *reader
		bytes int64
	}
	rs := []sized{{x, x.bytes()}}
	for _, k := range l.rs {
		rs = append(rs, sized{k, k.bytes()})
	}
	slices.SortStableFunc(rs, func(a, b sized) int { return cmp.Compare(a.bytes, b.bytes) })
	var beside int64
	for _, k := range rs[:len(rs)-1] {
		beside += k.bytes
	}
	for i := len(rs) - 2; i >= 0 && beside > keepReaderBytes; i-- {
		beside -= rs[i].bytes
		rs = slices.Delete(rs, i, i+1)
	}
	// A new slice: those let go are referenced by no array of the list.
	l.rs = make([]*reader, len(rs))
	for i, k := range rs {
		l.rs[i] = k.x
	}
}

// summaryBytes is what sums hold.
func summaryBytes(sums []windows.Summary) int {
	n := 0
	for _, s := range sums {
		if s != nil {
			n += s.Bytes()
		}
	}
	return n
}
