// Package scrape reads the rules' series of a store.Set once per scrape: their counts for
// the self-metrics (internal/selfmetric's collectors) and their windows, a rule at a time,
// into the exporter's format-neutral snapshots, which the exporter's writers write. It
// reads the Set through the store's read API and the quantity table only, and changes
// nothing it reads: a scrape shows the same before and after store.Set.Expire.
package scrape

import (
	"slices"
	"strings"
	"sync/atomic"
	"unsafe"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/model"

	"github.com/logwindow/logwindow_exporter/config/quantity"
	"github.com/logwindow/logwindow_exporter/exporter"
	"github.com/logwindow/logwindow_exporter/internal/selfmetric"
	"github.com/logwindow/logwindow_exporter/internal/store"
	"github.com/logwindow/logwindow_exporter/parser"
)

// Options wires a Collector to the rest of the program. Every field is read at scrape
// time, so a reload or a new input shows in the next scrape.
type Options struct {
	// Set returns the Set in use; nil exports no rule families.
	Set func() *store.Set
	// Now returns the current processing time in Unix seconds; processing-time rules'
	// windows are read at it and their series idle for longer than their longest window
	// are left out at it.
	Now func() int64
	// Wall returns the wall-clock time in Unix seconds, which does the same for event-time
	// rules, whose lines carry wall-clock times; nil means use Now.
	Wall func() int64
	// Start is the second the exporter started, on both clocks: per-second rates divide by
	// the seconds observed since then while that is shorter than the window (event-time
	// rules count from an older line they placed, see clocks).
	Start int64
	// BoundSource names where the Set's memory bound came from (memlimit.Source), for
	// the self-metrics; empty, none is exported.
	BoundSource string
	// Inputs, Reload and Storage are optional sources of self-metrics.
	Inputs  func() []selfmetric.InputStats
	Reload  func() selfmetric.ReloadStats
	Storage func() selfmetric.StorageStats
}

// The `reason` label values of the drops the store itself finds; the parser's reasons are
// named by parser.DropReason.String.
const (
	reasonLate     = "late"
	reasonFuture   = "future"
	reasonTooLarge = "too_large"
)

// Collector is the exporter's self-metrics, as a prometheus.Collector, and the source of
// every scrape's rule families (Scrape). It is an unchecked collector (Describe sends
// nothing) because the per-rule self-metrics change on reload.
type Collector struct {
	opts Options
	// self are the self-metric collectors, by subject.
	self        []prometheus.Collector
	collectErrs *prometheus.Desc
	// failed counts series and self-metrics that could not be exported; they are skipped
	// so that one bad value never fails a whole scrape.
	failed atomic.Uint64
	// plan is the families of the Set last scraped; pending is the view a scrape took
	// for the self-metrics gathered next (see Scrape).
	plan    atomic.Pointer[plan]
	pending atomic.Pointer[view]
	// spareView is a view released, whose buffers the next one reuses.
	spareView atomic.Pointer[view]
	// gathered is what the families gathered for the last scrape hold (see ScrapeCost).
	gathered atomic.Int64
	// free are readers kept from one scrape to the next, so that a scrape leaves little
	// garbage.
	free freeList
}

// NewCollector returns a Collector reading what opts gives it.
func NewCollector(opts Options) *Collector {
	c := &Collector{opts: opts, collectErrs: selfmetric.CollectErrors.Desc()}
	c.self = append(c.self,
		selfmetric.NewRules(c.ruleStats, &c.failed),
		selfmetric.NewMemory(c.memory, opts.BoundSource, &c.failed))
	if opts.Inputs != nil {
		c.self = append(c.self, selfmetric.NewInputs(opts.Inputs, &c.failed))
	}
	if opts.Reload != nil {
		c.self = append(c.self, selfmetric.NewReload(opts.Reload, &c.failed))
	}
	if opts.Storage != nil {
		c.self = append(c.self, selfmetric.NewStorage(opts.Storage, &c.failed))
	}
	return c
}

// Describe sends nothing: rule families come and go with reloads, so the Collector is
// unchecked and the registry does not hold it to a fixed set of descriptors.
func (c *Collector) Describe(chan<- *prometheus.Desc) {}

// Collect sends the self-metrics: per rule, its matched and dropped lines, series, budget
// and folds; the memory's, the inputs' and the reloads'.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	for _, s := range c.self {
		s.Collect(ch)
	}
	m, err := prometheus.NewConstMetric(c.collectErrs, prometheus.CounterValue, float64(c.failed.Load()))
	if err == nil {
		ch <- m
	}
}

// memory reads the Set's memory and its bound.
func (c *Collector) memory() (used, maxBytes int64, ok bool) {
	set := c.opts.Set()
	if set == nil {
		return 0, 0, false
	}
	return set.MemoryUsed(), set.MaxBytes(), true
}

// ruleStats reads the rules' counters from the view of the scrape under way, or from one
// of its own: the series are walked once per scrape.
func (c *Collector) ruleStats() []selfmetric.RuleStats {
	set := c.opts.Set()
	if set == nil {
		return nil
	}
	v := c.pending.Swap(nil)
	if v != nil && v.set != set {
		c.release(v) // a view of the Set before a reload
		v = nil
	}
	if v == nil {
		v = c.view(set, 1)
	}
	defer c.release(v)
	out := make([]selfmetric.RuleStats, 0, len(v.rules))
	for i := range v.rules {
		rv := &v.rules[i]
		r := set.Rule(i)
		c.failed.Add(uint64(rv.misfits))
		d := rv.drops
		st := selfmetric.RuleStats{Rule: r.Config().Name, Matched: rv.matched, Series: rv.held, Limit: r.Limit(),
			Folds: d.Folds, MemoryFolds: d.MemoryFolds}
		for j, n := range d.Parser {
			st.Dropped = append(st.Dropped, selfmetric.Drop{Reason: parser.DropReason(j).String(), Lines: n})
		}
		st.Dropped = append(st.Dropped,
			selfmetric.Drop{Reason: reasonLate, Lines: d.Late},
			selfmetric.Drop{Reason: reasonFuture, Lines: d.Future},
			selfmetric.Drop{Reason: reasonTooLarge, Lines: d.TooLarge})
		out = append(out, st)
	}
	return out
}

// view is the rules' series at one instant: what one scrape's self-metrics count and its
// rule families read.
type view struct {
	set   *store.Set
	rules []ruleView
	// refs counts its users: a scrape, the self-metrics; the last one to release it
	// hands it back to the Collector.
	refs atomic.Int32
}

// ruleView is one rule's part of a view.
type ruleView struct {
	// series are those a scrape exports, in no order until read.
	series []*store.Series
	// matched are the rule's matched lines and drops its drop and fold counters; held its
	// series, kept counters past the TTL left out whether Expire removed them yet or not
	// (their lines stay in matched).
	matched uint64
	drops   store.Drops
	held    int
	// misfits are the held series that cannot be exported: the self-metrics count them as
	// failed, once per scrape.
	misfits int
	// now is the second the rule is read at, since the one its rates count from.
	now, since int64
}

// view takes the view of set now. Series whose label values do not fit their rule's labels
// cannot be exported: they are left out, and counted (misfits) for the self-metrics.
func (c *Collector) view(set *store.Set, refs int32) *view {
	v := c.spareView.Swap(nil)
	if v == nil {
		v = new(view)
	}
	v.set = set
	v.refs.Store(refs)
	n := set.NumRules()
	v.rules = slices.Grow(v.rules[:0], n)[:n]
	active := c.opts.Now() // the processing second counters' activity goes by
	for i := range v.rules {
		r, rv := set.Rule(i), &v.rules[i]
		buf := rv.series[:0]
		*rv = ruleView{}
		rv.now, rv.since = c.clocks(set, r)
		// The matched and dropped lines are loaded before the inputs' lines read, which are
		// counted before them (store.NewDeferredSink): a scrape never shows more lines
		// matched or dropped by a rule than read by its inputs. The drops come first: the
		// lines late, future or folded are of the matched lines, counted after them.
		rv.drops = r.Drops()
		rv.matched = r.Matched()
		all := r.Snapshot(buf)
		labels := len(r.Config().Labels)
		kept := all[:0]
		for _, s := range all {
			if r.Gone(s, rv.now, active) {
				continue
			}
			rv.held++
			if len(s.Labels()) != labels {
				rv.misfits++
				continue
			}
			kept = append(kept, s)
		}
		clear(all[len(kept):]) // removed series may go
		rv.series = kept
	}
	return v
}

// bytes is the heap the view holds: its rules' parts and the pointers to their series.
func (v *view) bytes() int64 {
	n := int64(unsafe.Sizeof(ruleView{})) * int64(cap(v.rules))
	for i := range v.rules {
		n += int64(unsafe.Sizeof((*store.Series)(nil))) * int64(cap(v.rules[i].series))
	}
	return n
}

// release drops a reference to v; the last one keeps its buffers for the next view, the
// series let go so that removed ones may go.
func (c *Collector) release(v *view) {
	if v.refs.Add(-1) != 0 {
		return
	}
	for i := range v.rules {
		clear(v.rules[i].series)
	}
	v.set = nil
	c.spareView.CompareAndSwap(nil, v)
}

// clocks returns the second rule r is read at and the second its rates count from.
func (c *Collector) clocks(set *store.Set, r *store.Rule) (now, since int64) {
	if r.EventTime() {
		now = c.opts.Now()
		if c.opts.Wall != nil {
			now = c.opts.Wall()
		}
		// Event-time rules have observed their log from the oldest line any of them
		// placed, when that is before the start: a replay from the beginning of a log
		// gives a series first seen near its end the rate over the whole log.
		return now, min(c.opts.Start, set.Oldest())
	}
	return c.opts.Now(), c.opts.Start
}

// plan is a Set's families in name order, built once per Set: the store knows its rules,
// what they are called in the exposition is the exporter's.
type plan struct {
	set   *store.Set
	rules []rulePlan
	// families lists every family of every rule, in name order.
	families []planned
	// unnamed counts the rules whose families could not be built (config refuses such
	// rules: a label named like the window label, or twice), which are not written.
	unnamed int
	// held is, per rule, the heap its last read held (see Collector.ScrapeCost);
	// viewBytes the heap of the last view a scrape took, which it holds throughout.
	held      []heldBytes
	viewBytes atomic.Int64
	// perSeries is, per rule, what its last read used a series once written (its
	// snapshot and top values by their lengths, the label pairs encoded included; 0
	// before): a scrape asks for it, for each series, before it reads the rule.
	perSeries []heldBytes
}

// heldBytes is a measure of the last read of a rule, for the text formats and for the
// protobuf format (whose snapshots hold native histograms). As plan.held it is the heap
// the read held while it was written: -1 until the rule is read and written, and raised
// to what a read holds as soon as it is read.
type heldBytes [2]atomic.Int64

// planned is one family of a plan: rule's family f.
type planned struct {
	name    string
	rule, f int
}

// rulePlan is one rule's families: its shape, and how each windowed family is read.
type rulePlan struct {
	shape *exporter.Shape
	// fams are the windowed families' rows, fams[k] the shape's family k+1 (family 0 is
	// the _total); summaries: some family reads the series' summaries.
	fams      []quantity.Family
	summaries bool
}

// planOf returns the families of set in name order, built once per Set.
func (c *Collector) planOf(set *store.Set) *plan {
	if p := c.plan.Load(); p != nil && p.set == set {
		return p
	}
	p := &plan{set: set, rules: make([]rulePlan, set.NumRules()), held: make([]heldBytes, set.NumRules()),
		perSeries: make([]heldBytes, set.NumRules())}
	for i := range p.held {
		p.held[i][0].Store(-1)
		p.held[i][1].Store(-1)
	}
	for i := range set.NumRules() {
		r := set.Rule(i)
		rp, err := newRulePlan(r)
		if err != nil {
			p.unnamed++
			continue
		}
		p.rules[i] = rp
		for f, fam := range rp.shape.Families() {
			p.families = append(p.families, planned{name: fam.Name, rule: i, f: f})
		}
	}
	slices.SortStableFunc(p.families, func(a, b planned) int { return strings.Compare(a.name, b.name) })
	c.plan.Store(p)
	return p
}

// newRulePlan names and types the families of rule r.
func newRulePlan(r *store.Rule) (rulePlan, error) {
	cfg := r.Config()
	ws := r.Layout().Windows()
	spec := exporter.RuleSpec{Buckets: cfg.Buckets}
	for _, l := range cfg.Labels {
		spec.LabelNames = append(spec.LabelNames, l.Name)
	}
	for i, w := range ws {
		// The label is the window as the user wrote it; the fingerprint makes the windows
		// of an inherited store the rule's, so the names line up with ws.
		text := model.Duration(w).String()
		if len(cfg.WindowNames) == len(ws) {
			text = cfg.WindowNames[i]
		}
		spec.Windows = append(spec.Windows, text)
	}
	if cfg.Top != nil {
		spec.TopLabel = cfg.Top.Label
	}
	if cfg.DistinctRegisters > 0 {
		spec.Registers, spec.RegisterLabel = cfg.DistinctRegisters, quantity.RegisterLabel
	}
	spec.Families = append(spec.Families, exporter.Family{Name: cfg.Name + "_total", Help: cfg.TotalHelp(), Kind: exporter.Counter})
	var rp rulePlan
	for _, wf := range cfg.WindowFamilies() {
		f := exporter.Family{Name: cfg.Name + wf.Suffix, Help: wf.Help, Kind: exporter.Gauge}
		switch {
		case wf.Histogram || wf.Native:
			f.Kind, f.Native = exporter.Histogram, wf.Native
		case wf.Top != nil:
			f.Top = true
		case wf.Registers > 0:
			f.Registers = true
		}
		rp.summaries = rp.summaries || wf.Stat == nil
		rp.fams = append(rp.fams, wf)
		spec.Families = append(spec.Families, f)
	}
	shape, err := exporter.NewShape(spec)
	rp.shape = shape
	return rp, err
}
