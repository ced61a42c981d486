package main

import (
	"fmt"
	"io"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// samples holds one value per series, keyed by seriesKey.
type samples map[string]float64

// scrape is one exposition, read.
type scrape struct {
	values samples
	// dayWindows holds every `X_window{window="24h",...}` value under the key of its
	// `X_total{...}` series.
	dayWindows samples
}

// dayWindow is the window label value whose series must equal `_total` (see checkWindows).
const dayWindow = "24h"

// ignoredLabels are left out of series keys: mtail adds `prog` to every series.
var ignoredLabels = []string{"prog"}

// seriesKey names a series as `name{a="x",b="y"}` with its labels sorted by name, so that
// the same series reads the same from any exporter.
func seriesKey(name string, pairs ...string) string {
	type pair struct{ k, v string }
	ps := make([]pair, 0, len(pairs)/2)
	for i := 0; i+1 < len(pairs); i += 2 {
		if !slices.Contains(ignoredLabels, pairs[i]) {
			ps = append(ps, pair{pairs[i], pairs[i+1]})
		}
	}
	sort.Slice(ps, func(i, j int) bool { return ps[i].k < ps[j].k })
	var b strings.Builder
	b.WriteString(name)
	b.WriteByte('{')
	for i, p := range ps {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, "%s=%q", p.k, p.v)
	}
	b.WriteByte('}')
	return b.String()
}

// familyOf is the metric name of a series key.
func familyOf(key string) string {
	name, _, _ := strings.Cut(key, "{")
	return name
}

// parseExposition reads the Prometheus text format.
func parseExposition(r io.Reader) (scrape, error) {
	p := expfmt.NewTextParser(model.UTF8Validation)
	families, err := p.TextToMetricFamilies(r)
	if err != nil {
		return scrape{}, err
	}
	s := scrape{values: samples{}, dayWindows: samples{}}
	for name, mf := range families {
		base, isWindow := strings.CutSuffix(name, "_window")
		for _, m := range mf.GetMetric() {
			var pairs, others []string
			day := false
			for _, lp := range m.GetLabel() {
				if slices.Contains(podLabels, lp.GetName()) {
					continue
				}
				pairs = append(pairs, lp.GetName(), lp.GetValue())
				if lp.GetName() == "window" {
					day = lp.GetValue() == dayWindow
				} else {
					others = append(others, lp.GetName(), lp.GetValue())
				}
			}
			// Series that differ only in podLabels add up: the node's count.
			v := value(mf.GetType(), m)
			s.values[seriesKey(name, pairs...)] += v
			if isWindow && day {
				s.dayWindows[seriesKey(base+"_total", others...)] += v
			}
		}
	}
	return s, nil
}

func value(t dto.MetricType, m *dto.Metric) float64 {
	switch t {
	case dto.MetricType_COUNTER:
		return m.GetCounter().GetValue()
	case dto.MetricType_GAUGE:
		return m.GetGauge().GetValue()
	default:
		return m.GetUntyped().GetValue()
	}
}

// sum adds up every series of a family.
func (s samples) sum(family string) float64 {
	var total float64
	for k, v := range s {
		if familyOf(k) == family {
			total += v
		}
	}
	return total
}

// get returns the value of one series, or false.
func (s samples) get(name string, pairs ...string) (float64, bool) {
	v, ok := s[seriesKey(name, pairs...)]
	return v, ok
}

// expected is what some families must hold: exactly these series with these values.
type expected struct {
	families []string
	series   samples
}

func newExpected(families ...string) expected {
	return expected{families: families, series: samples{}}
}

// without is e less the series of family, which is then not checked at all.
func (e expected) without(family string) expected {
	w := newExpected(slices.DeleteFunc(slices.Clone(e.families), func(f string) bool { return f == family })...)
	for k, v := range e.series {
		if familyOf(k) != family {
			w.series[k] = v
		}
	}
	return w
}

func (e expected) set(v float64, name string, pairs ...string) {
	e.series[seriesKey(name, pairs...)] = v
}

// tolerance is the relative error allowed on a sum: summing the same values in another
// order (two files read concurrently) changes the last bits, nothing more.
const tolerance = 1e-9

func near(a, b float64) bool {
	return a == b || math.Abs(a-b) <= tolerance*math.Max(math.Abs(a), math.Abs(b))
}

// check compares the expected families with a scrape: a missing, extra or different series
// is an error, listing the first few differences.
func (e expected) check(got samples) error {
	var diffs []string
	for k, want := range e.series {
		switch v, ok := got[k]; {
		case !ok:
			diffs = append(diffs, fmt.Sprintf("missing %s (want %s)", k, num(want)))
		case !near(v, want):
			diffs = append(diffs, fmt.Sprintf("%s = %s, want %s", k, num(v), num(want)))
		}
	}
	for k, v := range got {
		if _, ok := e.series[k]; !ok && slices.Contains(e.families, familyOf(k)) {
			diffs = append(diffs, fmt.Sprintf("unexpected %s = %s", k, num(v)))
		}
	}
	if len(diffs) == 0 {
		return nil
	}
	sort.Strings(diffs)
	const shown = 10
	more := ""
	if len(diffs) > shown {
		more = fmt.Sprintf("\n\t... and %d more", len(diffs)-shown)
		diffs = diffs[:shown]
	}
	return fmt.Errorf("%d series differ from the generated log's counts:\n\t%s%s", len(diffs), strings.Join(diffs, "\n\t"), more)
}

func num(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }

// checkWindows requires every `X_window{window="24h"}` series to equal its `X_total`: the
// benchmark's logs span less than a day, so a line missing from the day window was lost
// between the parser and the wheels (dropped as late, say) although `_total` counted it.
func (s scrape) checkWindows() error {
	var diffs []string
	for total, day := range s.dayWindows {
		if v, ok := s.values[total]; !ok || !near(v, day) {
			diffs = append(diffs, fmt.Sprintf("%s is %s but its 24h window holds %s", total, num(v), num(day)))
		}
	}
	if len(diffs) > 0 {
		sort.Strings(diffs)
		return fmt.Errorf("day windows differ from totals:\n\t%s", strings.Join(diffs, "\n\t"))
	}
	return nil
}
