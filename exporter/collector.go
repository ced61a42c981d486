// Package exporter is the Prometheus exposition of the series a store.Set keeps: the
// Collector reads the Set in use at scrape time, through the store's read API only, and
// writes every rule's families in the format the scrape negotiated (the text format,
// OpenMetrics or protobuf, the last with native histograms) along with the exporter's
// self-metrics. It changes nothing it reads: a scrape shows the same before and after
// store.Set.Expire.
package exporter

import (
	"strings"
	"sync/atomic"
	"time"
	"unicode/utf8"

	kgzip "github.com/klauspost/compress/gzip"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/logwindow/logwindow_exporter/internal/input"
	"github.com/logwindow/logwindow_exporter/internal/selfmetric"
	"github.com/logwindow/logwindow_exporter/internal/store"
	"github.com/logwindow/logwindow_exporter/parser"
)

// InputStats is one input's snapshot at scrape time, under the name it is
// exported by.
type InputStats struct {
	// Input is the input's name, or its path or address when it has none.
	Input string
	input.Stats
}

// The `reason` label values of the drops the store itself finds; the parser's reasons are
// named by parser.DropReason.String.
const (
	reasonLate     = "late"
	reasonFuture   = "future"
	reasonTooLarge = "too_large"
)

// ReloadStats is the outcome of the latest config (re)load.
type ReloadStats struct {
	Successful bool
	// LastSuccess is when a config was last loaded successfully; zero before any.
	LastSuccess time.Time
}

// CollectorOptions wires a Collector to the rest of the program. Every field is read at
// scrape time, so a reload or a new input shows in the next scrape.
type CollectorOptions struct {
	// Set returns the Set in use; nil exports no rule families.
	Set func() *store.Set
	// Now returns the current processing time in Unix seconds; processing-time rules'
	// windows are read at it and their series idle for longer than their longest window
	// are expired at it.
	Now func() int64
	// Wall returns the wall-clock time in Unix seconds, which does the same for event-time
	// rules, whose lines carry wall-clock times; nil means use Now.
	Wall func() int64
	// Start is the second the exporter started, on both clocks: per-second rates divide by
	// the seconds observed since then while that is shorter than the window (event-time
	// rules count from an older line they placed, see the package documentation).
	Start int64
	// Inputs and Reload are optional sources of self-metrics.
	Inputs func() []InputStats
	Reload func() ReloadStats
}

// Collector exports the exporter's self-metrics as a prometheus.Collector and writes every
// rule's families (WriteText). It is an unchecked collector (Describe sends nothing)
// because the per-rule self-metrics change on reload.
type Collector struct {
	opts CollectorOptions
	self selfDescs
	more inputDescs
	// failed counts series and self-metrics that could not be exported; they are skipped
	// so that one bad value never fails a whole scrape.
	failed atomic.Uint64
	// textPlan, bufs and reads are WriteText's: the families of the Set last written, and
	// buffers kept from one scrape to the next, so that a scrape leaves little garbage.
	textPlan atomic.Pointer[textPlan]
	bufs     spare[[]byte]
	reads    spare[[]*ruleRead]
	snap     spare[[]*store.Series]
	gzip     spare[kgzip.Writer]
}

type selfDescs struct {
	matched, dropped, series, limit, overflow                               *prometheus.Desc
	inputLines, tooLong, rotations, truncations, inputErrs, polling, behind *prometheus.Desc
	inputFiles, unmatched                                                   *prometheus.Desc
	reloadOK, reloadTime, collectErrs                                       *prometheus.Desc
	memFolds, seriesBytes, maxBytes                                         *prometheus.Desc
}

// NewCollector returns a Collector reading what opts gives it.
func NewCollector(opts CollectorOptions) *Collector {
	return &Collector{
		opts: opts,
		more: newInputDescs(),
		self: selfDescs{
			matched:     selfmetric.RuleMatchedLines.Desc(),
			dropped:     selfmetric.RuleDroppedLines.Desc(),
			series:      selfmetric.RuleSeries.Desc(),
			limit:       selfmetric.RuleSeriesLimit.Desc(),
			overflow:    selfmetric.SeriesOverflow.Desc(),
			memFolds:    selfmetric.SeriesMemoryOverflow.Desc(),
			seriesBytes: selfmetric.SeriesBytes.Desc(),
			maxBytes:    selfmetric.SeriesMaxBytes.Desc(),
			inputLines:  selfmetric.InputLines.Desc(),
			tooLong:     selfmetric.InputTooLongLines.Desc(),
			rotations:   selfmetric.InputRotations.Desc(),
			truncations: selfmetric.InputTruncations.Desc(),
			inputErrs:   selfmetric.InputErrors.Desc(),
			polling:     selfmetric.InputPolling.Desc(),
			behind:      selfmetric.InputBehindBytes.Desc(),
			inputFiles:  selfmetric.InputFiles.Desc(),
			unmatched:   selfmetric.InputUnmatchedLines.Desc(),
			reloadOK:    selfmetric.ConfigLastReloadSuccessful.Desc(),
			reloadTime:  selfmetric.ConfigLastReloadSuccessTimestamp.Desc(),
			collectErrs: selfmetric.CollectErrors.Desc(),
		},
	}
}

// Describe sends nothing: rule families come and go with reloads, so the Collector is
// unchecked and the registry does not hold it to a fixed set of descriptors.
func (c *Collector) Describe(chan<- *prometheus.Desc) {}

// Collect sends the self-metrics: per rule, its matched and dropped lines, series, budget
// and folds; the inputs' and the reloads'. The rule families are written by WriteText.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	e := emitter{ch: ch, failed: &c.failed}
	if set := c.opts.Set(); set != nil {
		sc := c.snap.get(func() *[]*store.Series { return new([]*store.Series) })
		for i := range set.NumRules() {
			*sc = c.collectRule(e, set, set.Rule(i), (*sc)[:0])
			clear(*sc) // removed series may go
		}
		c.snap.put(sc)
		e.emit(c.self.seriesBytes, prometheus.GaugeValue, float64(set.MemoryUsed()))
		e.emit(c.self.maxBytes, prometheus.GaugeValue, float64(set.MaxBytes()))
	}
	if c.opts.Inputs != nil {
		inputs := c.opts.Inputs()
		c.collectInputs(e, inputs)
		c.collectMoreInputs(e, inputs)
	}
	if c.opts.Reload != nil {
		r := c.opts.Reload()
		e.emit(c.self.reloadOK, prometheus.GaugeValue, boolValue(r.Successful))
		if !r.LastSuccess.IsZero() {
			e.emit(c.self.reloadTime, prometheus.GaugeValue, float64(r.LastSuccess.UnixNano())/1e9)
		}
	}
	e.emit(c.self.collectErrs, prometheus.CounterValue, float64(c.failed.Load()))
}

// collectRule sends the self-metrics of one rule. Its series are those WriteText exports at
// the same instant: kept counters past the TTL are left out whether Expire removed them
// yet or not, and their lines stay in the matched count either way.
func (c *Collector) collectRule(e emitter, set *store.Set, r *store.Rule, buf []*store.Series) []*store.Series {
	now, _ := c.clocks(set, r)
	all, matched := r.Snapshot(buf)
	held := 0
	for _, s := range all {
		matched += s.Lines()
		if r.Gone(s, now) {
			continue
		}
		held++
		if len(s.Labels()) != len(r.Config().Labels) {
			// WriteText leaves it out: counted here, once per scrape.
			c.failed.Add(1)
		}
	}
	name := r.Config().Name
	d := r.Drops()
	e.emit(c.self.matched, prometheus.CounterValue, float64(matched), name)
	for i, n := range d.Parser {
		e.emit(c.self.dropped, prometheus.CounterValue, float64(n), name, parser.DropReason(i).String())
	}
	e.emit(c.self.dropped, prometheus.CounterValue, float64(d.Late), name, reasonLate)
	e.emit(c.self.dropped, prometheus.CounterValue, float64(d.Future), name, reasonFuture)
	e.emit(c.self.dropped, prometheus.CounterValue, float64(d.TooLarge), name, reasonTooLarge)
	e.emit(c.self.series, prometheus.GaugeValue, float64(held), name)
	e.emit(c.self.limit, prometheus.GaugeValue, float64(r.Limit()), name)
	e.emit(c.self.overflow, prometheus.CounterValue, float64(d.Folds), name)
	e.emit(c.self.memFolds, prometheus.CounterValue, float64(d.MemoryFolds), name)
	return all
}

// collectInputs sums stats that share label values, since two samples with one label set
// in a family would fail the scrape.
func (c *Collector) collectInputs(e emitter, inputs []InputStats) {
	type fileKey struct{ input, path string }
	byInput := map[string]*InputStats{}
	behind := map[fileKey]int64{}
	for i := range inputs {
		in := &inputs[i]
		name := validUTF8(in.Input)
		sum := byInput[name]
		if sum == nil {
			sum = &InputStats{}
			byInput[name] = sum
		}
		sum.LinesRead += in.LinesRead
		sum.TooLong += in.TooLong
		sum.Rotations += in.Rotations
		sum.Truncations += in.Truncations
		sum.Errors += in.Errors
		sum.Polling = sum.Polling || in.Polling
		sum.Unmatched += in.Unmatched
		for _, f := range in.Files {
			behind[fileKey{name, validUTF8(f.Path)}] += f.BytesBehind
		}
	}
	files := map[string]int{}
	for k := range behind {
		files[k.input]++
	}
	for name, in := range byInput {
		e.emit(c.self.inputLines, prometheus.CounterValue, float64(in.LinesRead), name)
		e.emit(c.self.tooLong, prometheus.CounterValue, float64(in.TooLong), name)
		e.emit(c.self.rotations, prometheus.CounterValue, float64(in.Rotations), name)
		e.emit(c.self.truncations, prometheus.CounterValue, float64(in.Truncations), name)
		e.emit(c.self.inputErrs, prometheus.CounterValue, float64(in.Errors), name)
		e.emit(c.self.polling, prometheus.GaugeValue, boolValue(in.Polling), name)
		e.emit(c.self.inputFiles, prometheus.GaugeValue, float64(files[name]), name)
		e.emit(c.self.unmatched, prometheus.CounterValue, float64(in.Unmatched), name)
	}
	for k, b := range behind {
		e.emit(c.self.behind, prometheus.GaugeValue, float64(b), k.input, k.path)
	}
}

// emitter sends metrics built without panicking: a metric that cannot be built is counted
// and skipped, so a scrape never fails because of one value.
type emitter struct {
	ch     chan<- prometheus.Metric
	failed *atomic.Uint64
}

// emit sends one sample of d; a nil d is a family the rule does not export.
func (e emitter) emit(d *prometheus.Desc, t prometheus.ValueType, v float64, labels ...string) {
	if d == nil {
		return
	}
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
