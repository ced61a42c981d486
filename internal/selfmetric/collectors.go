package selfmetric

import (
	"strings"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/prometheus/client_golang/prometheus"
)

// The self-metrics are collected by subject, each collector owning its descriptors, as
// node_exporter's collectors do: the rules', the inputs', the reloads' and the memory
// bound's. Each reads its subject through a function given at construction, called once
// per Collect.

// RuleStats is one rule's counters as one scrape sees them.
type RuleStats struct {
	Rule string
	// Matched counts the rule's matched lines; Series the label sets it holds (those a
	// scrape exports), Limit its max_series_per_rule.
	Matched uint64
	Series  int
	Limit   int
	// Dropped are its dropped lines by reason, in the order they are exported.
	Dropped []Drop
	// Folds are lines folded into the overflow series, MemoryFolds those of them folded
	// because of the memory bound.
	Folds, MemoryFolds uint64
}

// Drop is a count of dropped lines and its reason.
type Drop struct {
	Reason string
	Lines  uint64
}

// Rules collects the rules' self-metrics: matched and dropped lines, series, budget and
// folds.
type Rules struct {
	read                                                func() []RuleStats
	failed                                              *atomic.Uint64
	matched, dropped, series, limit, overflow, memFolds *prometheus.Desc
}

// NewRules returns the collector of what read returns; a metric that cannot be built is
// counted in failed and skipped.
func NewRules(read func() []RuleStats, failed *atomic.Uint64) *Rules {
	return &Rules{read: read, failed: failed,
		matched: RuleMatchedLines.Desc(), dropped: RuleDroppedLines.Desc(), series: RuleSeries.Desc(),
		limit: RuleSeriesLimit.Desc(), overflow: SeriesOverflow.Desc(), memFolds: SeriesMemoryOverflow.Desc()}
}

// Describe sends nothing: the collectors are unchecked, as the rules and inputs their
// samples are of come and go with reloads.
func (c *Rules) Describe(chan<- *prometheus.Desc) {}

// Collect sends the rules' samples.
func (c *Rules) Collect(ch chan<- prometheus.Metric) {
	e := emitter{ch, c.failed}
	for _, r := range c.read() {
		e.emit(c.matched, prometheus.CounterValue, float64(r.Matched), r.Rule)
		for _, d := range r.Dropped {
			e.emit(c.dropped, prometheus.CounterValue, float64(d.Lines), r.Rule, d.Reason)
		}
		e.emit(c.series, prometheus.GaugeValue, float64(r.Series), r.Rule)
		e.emit(c.limit, prometheus.GaugeValue, float64(r.Limit), r.Rule)
		e.emit(c.overflow, prometheus.CounterValue, float64(r.Folds), r.Rule)
		e.emit(c.memFolds, prometheus.CounterValue, float64(r.MemoryFolds), r.Rule)
	}
}

// Memory collects the heap the series hold and its bound, with where the bound came from.
type Memory struct {
	read                       func() (used, maxBytes int64, ok bool)
	source                     string
	failed                     *atomic.Uint64
	seriesBytes, bound, origin *prometheus.Desc
}

// NewMemory returns the collector of what read returns (nothing when not ok); source
// names where the bound came from, none when empty.
func NewMemory(read func() (used, maxBytes int64, ok bool), source string, failed *atomic.Uint64) *Memory {
	return &Memory{read: read, source: source, failed: failed,
		seriesBytes: SeriesBytes.Desc(), bound: SeriesMaxBytes.Desc(), origin: SeriesMaxBytesSource.Desc()}
}

// Describe sends nothing (see Rules.Describe).
func (c *Memory) Describe(chan<- *prometheus.Desc) {}

// Collect sends the memory's samples.
func (c *Memory) Collect(ch chan<- prometheus.Metric) {
	if used, bound, ok := c.read(); ok {
		e := emitter{ch, c.failed}
		e.emit(c.seriesBytes, prometheus.GaugeValue, float64(used))
		e.emit(c.bound, prometheus.GaugeValue, float64(bound))
		if c.source != "" {
			e.emit(c.origin, prometheus.GaugeValue, 1, c.source)
		}
	}
}

// ReloadStats is the outcome of the latest config (re)load.
type ReloadStats struct {
	Successful bool
	// LastSuccess is when a config was last loaded successfully; zero before any.
	LastSuccess time.Time
	// Inputs says of each input of the config in force, by its name (or its path or
	// address when it has none), whether it runs: false for one that did not start.
	Inputs map[string]bool
}

// Reload collects the outcome of the latest config load.
type Reload struct {
	read       func() ReloadStats
	failed     *atomic.Uint64
	ok, atTime *prometheus.Desc
	running    *prometheus.Desc
}

// NewReload returns the collector of what read returns.
func NewReload(read func() ReloadStats, failed *atomic.Uint64) *Reload {
	return &Reload{read: read, failed: failed, ok: ConfigLastReloadSuccessful.Desc(), atTime: ConfigLastReloadSuccessTimestamp.Desc(),
		running: InputRunning.Desc()}
}

// Describe sends nothing (see Rules.Describe).
func (c *Reload) Describe(chan<- *prometheus.Desc) {}

// Collect sends the reload's samples.
func (c *Reload) Collect(ch chan<- prometheus.Metric) {
	e := emitter{ch, c.failed}
	r := c.read()
	e.emit(c.ok, prometheus.GaugeValue, boolValue(r.Successful))
	if !r.LastSuccess.IsZero() {
		e.emit(c.atTime, prometheus.GaugeValue, float64(r.LastSuccess.UnixNano())/1e9)
	}
	// Names made the same by validUTF8 would be one label set twice, which fails a scrape.
	running := map[string]bool{}
	for in, ok := range r.Inputs {
		in = validUTF8(in)
		prev, seen := running[in]
		running[in] = ok && (prev || !seen)
	}
	for in, ok := range running {
		e.emit(c.running, prometheus.GaugeValue, boolValue(ok), in)
	}
}

// emitter sends metrics built without panicking: a metric that cannot be built is counted
// and skipped, so a scrape never fails because of one value.
type emitter struct {
	ch     chan<- prometheus.Metric
	failed *atomic.Uint64
}

// emit sends one sample of d.
func (e emitter) emit(d *prometheus.Desc, t prometheus.ValueType, v float64, labels ...string) {
	m, err := prometheus.NewConstMetric(d, t, v, labels...)
	if err != nil {
		e.failed.Add(1)
		return
	}
	e.ch <- m
}

func boolValue(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// validUTF8 replaces invalid bytes, which would make the metric unbuildable; it returns
// s itself when s is valid.
func validUTF8(s string) string { return strings.ToValidUTF8(s, string(utf8.RuneError)) }
