package exporter

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/model"

	"github.com/logwindow/logwindow_exporter/config"
)

// windowLabel names the label that carries the window of the `_window*` families.
const windowLabel = "window"

// families are the descriptors of one rule's metrics and the label pairs its series
// share, built once per Set rather than per scrape. A nil descriptor is a family the rule
// does not export.
type families struct {
	total, window, perSecond, events, max, min, mean *prometheus.Desc
	// quantiles has a gauge per quantile of qs; distribution is the window histogram.
	// Both are read from the series' summaries, which summaries says to read.
	quantiles    []*prometheus.Desc
	qs           []float64
	distribution *prometheus.Desc
	summaries    bool
	// top is the top values' family, nil without `top:` (see top.go).
	top topFamily
	// distinct is the count of different values of the rule's distinct: template.
	distinct *prometheus.Desc
	// perWindow counts the windowed families exported, to size a series' samples.
	perWindow int
	// names are the rule's label names, in the order of a series' values; order lists
	// their indexes sorted by name, the order exported label pairs must have.
	names []string
	order []int
	// windowAt is where the window pair goes among the sorted pairs; windowPairs are the
	// window label pairs, in the order windows.Series.Read returns stats, shared by every
	// series of the rule.
	windowAt    int
	windowPairs []*dto.LabelPair
	// windowOrder lists the windows by label text ("15m" < "1d" < "1h" < "1m"): with the
	// series in label order too, every family reaches the registry already in the order it
	// sorts samples in, which turns its sort of a large scrape into one linear pass.
	windowOrder []int
}

func newFamilies(r *config.Rule, ws []time.Duration) (families, error) {
	labels := make([]string, len(r.Labels))
	for i, l := range r.Labels {
		labels[i] = l.Name
	}
	withWindow := append(labels[:len(labels):len(labels)], windowLabel)
	// HELP is the rule's own text, then what the family holds.
	help := strings.TrimSpace(r.Help)
	if help != "" && !strings.HasSuffix(help, ".") {
		help += "."
	}
	quantity := "Matched lines"
	if r.IsValueRule() {
		quantity = "Sum of " + r.ValueName
	}
	lower := strings.ToLower(quantity[:1]) + quantity[1:]
	const sliding = " over the sliding window in the window label, computed by the exporter at scrape time"
	gauge := func(on bool, suffix, what string) *prometheus.Desc {
		if !on {
			return nil
		}
		return prometheus.NewDesc(r.Name+suffix, strings.TrimSpace(help+" "+what+sliding+"."), withWindow, nil)
	}
	a := r.Aggregations
	v := r.IsValueRule()
	f := families{
		total:     prometheus.NewDesc(r.Name+"_total", strings.TrimSpace(help+" "+quantity+" since the exporter started."), labels, nil),
		window:    gauge(a.Window, "_window", quantity),
		perSecond: gauge(a.PerSecond, "_window_per_second", "Per-second rate of "+lower+" (divided by the seconds observed while fewer than the window)"),
		events:    gauge(v && a.Events, "_window_events", "Matched lines"),
		max:       gauge(v && a.Max, "_window_max", "Largest "+r.ValueName+" (absent while the window holds no line)"),
		min:       gauge(v && a.Min, "_window_min", "Smallest "+r.ValueName+" (absent while the window holds no line)"),
		mean:      gauge(v && a.Mean, "_window_mean", "Mean "+r.ValueName+" (absent while the window holds no line)"),
		names:     labels,
		order:     make([]int, len(labels)),
	}
	if v && a.Quantiles {
		for _, q := range r.Quantiles {
			f.quantiles = append(f.quantiles, gauge(true, config.QuantileSuffix(q),
				fmt.Sprintf("Quantile %v of %s (the value of rank ⌈%v·n⌉ among the window's n values, within 1%%; absent while the window holds no line)", q, r.ValueName, q)))
			f.qs = append(f.qs, q)
		}
	}
	if v && len(r.Buckets) > 0 {
		f.distribution = prometheus.NewDesc(r.Name+config.HistogramSuffix, strings.TrimSpace(help+" "+r.ValueName+
			" of the lines"+sliding+", as a gauge histogram: the buckets count the window's values, so never apply rate() or increase() to it;"+
			" sum it by le across instances for histogram_quantile."), withWindow, nil)
	}
	f.top = newTopFamily(r, withWindow, help, sliding)
	f.distinct = gauge(a.Distinct, config.DistinctSuffix, "Different values of the rule's distinct: template among the lines (within max(2, 2%) of the exact count)")
	f.summaries = len(f.quantiles) > 0 || f.distribution != nil || f.top.desc != nil || f.distinct != nil
	for i := range f.order {
		f.order[i] = i
	}
	slices.SortFunc(f.order, func(a, b int) int { return strings.Compare(labels[a], labels[b]) })
	for _, i := range f.order {
		if labels[i] < windowLabel {
			f.windowAt++
		}
	}
	for i, w := range ws {
		// The label is the window as the user wrote it; the fingerprint makes the windows
		// of an inherited store the rule's, so the names line up with ws.
		text := model.Duration(w).String()
		if len(r.WindowNames) == len(ws) {
			text = r.WindowNames[i]
		}
		f.windowPairs = append(f.windowPairs, &dto.LabelPair{Name: new(windowLabel), Value: new(text)})
		f.windowOrder = append(f.windowOrder, i)
	}
	slices.SortFunc(f.windowOrder, func(a, b int) int {
		return strings.Compare(f.windowPairs[a].GetValue(), f.windowPairs[b].GetValue())
	})
	var errs []error
	for _, d := range append([]*prometheus.Desc{f.total, f.window, f.perSecond, f.events, f.max, f.min, f.mean, f.distribution, f.top.desc, f.distinct}, f.quantiles...) {
		if d == nil {
			continue
		}
		if d.Err() != nil {
			errs = append(errs, d.Err())
		} else if d != f.total {
			f.perWindow++
		}
	}
	return f, errors.Join(errs...)
}

// compare orders series as the registry orders their samples: by label values taken in
// label name order. Series whose values do not fit the labels (they are not exported) sort
// by their number of values, so the order stays total.
func (f *families) compare(a, b *series) int {
	if len(a.labels) != len(f.names) || len(b.labels) != len(f.names) {
		return cmp.Compare(len(a.labels), len(b.labels))
	}
	for _, i := range f.order {
		if c := strings.Compare(a.labels[i], b.labels[i]); c != 0 {
			return c
		}
	}
	return 0
}

// seriesPairs are a series' label pairs, sorted by name, for the families they were built
// for: a reload that keeps the series brings new families and so a rebuild.
type seriesPairs struct {
	fam   *families
	pairs []*dto.LabelPair
}

// labelPairs returns s's label pairs for f, building them on the first scrape; nil if the
// series' values do not fit f's labels (a parser that broke its contract).
func (s *series) labelPairs(f *families) []*dto.LabelPair {
	if p := s.pairs.Load(); p != nil && p.fam == f {
		return p.pairs
	}
	if len(s.labels) != len(f.names) {
		return nil
	}
	backing := make([]dto.LabelPair, len(f.order))
	p := &seriesPairs{fam: f, pairs: make([]*dto.LabelPair, len(f.order))}
	for j, i := range f.order {
		backing[j].Name, backing[j].Value = &f.names[i], &s.labels[i]
		p.pairs[j] = &backing[j]
	}
	s.pairs.Store(p)
	return p.pairs
}
