package scrape

import (
	"math"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
)

const quantileRules = `
global: {windows: [1m, 5m], max_series_per_rule: 100}
rules:
  - name: request_duration_seconds
    help: Request time.
    match: '^(?P<status>[0-9]{3}) (?P<time>[^ ]+)$'
    value: time
    labels: {status: '${status}'}
    aggregations: [window, quantiles]
    quantiles: [0.5, 0.9, 0.99, 0.999]
    buckets: [0.1, 1]
`

// TestQuantileFamilies feeds values through parser, sink and collector: each window's
// quantile gauges are within 1 % of the exact rank ⌈q·n⌉, the histogram counts the window,
// a window without values has no quantiles, a NaN is dropped as bad_number and a negative
// value as negative, and the whole scrape is lint-clean.
func TestQuantileFamilies(t *testing.T) {
	p, set := parserSet(t, quantileRules)
	k := set.NewSink()
	// 200s: 2..401 ms two minutes ago and 0 and 5 s now; 500s only long ago.
	var old []float64
	for i := range 400 {
		old = append(old, float64(i+2)/1000)
	}
	k.SetNow(start, start)
	for _, v := range old {
		p.Parse("app", []byte("200 "+formatFloat(v)), k)
	}
	p.Parse("app", []byte("500 3"), k)
	p.Parse("app", []byte("200 -3"), k)
	p.Parse("app", []byte("200 NaN"), k)
	k.SetNow(start+120, start+120)
	p.Parse("app", []byte("200 0"), k)
	p.Parse("app", []byte("200 5"), k)
	now := int64(start + 120)
	reg := scraped(collectorAt(fixed(set), &now))
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			var key []string
			for _, l := range m.GetLabel() {
				key = append(key, l.GetName()+"="+l.GetValue())
			}
			name := mf.GetName() + "{" + strings.Join(key, ",") + "}"
			switch {
			case m.Gauge != nil:
				got[name] = m.GetGauge().GetValue()
			case m.Histogram != nil:
				h := m.GetHistogram()
				got[name+"count"] = float64(h.GetSampleCount())
				got[name+"sum"] = h.GetSampleSum()
				for _, b := range h.GetBucket() {
					got[name+"le="+formatFloat(b.GetUpperBound())] = float64(b.GetCumulativeCount())
				}
			case m.Counter != nil:
				got[name] = m.GetCounter().GetValue()
			}
		}
	}
	fiveMin := append(slices.Clone(old), 0, 5)
	slices.Sort(fiveMin)
	for _, tc := range []struct {
		window string
		values []float64
	}{{"1m", []float64{0, 5}}, {"5m", fiveMin}} {
		for _, q := range []struct {
			suffix string
			p      float64
		}{{"p50", 0.5}, {"p90", 0.9}, {"p99", 0.99}, {"p99_9", 0.999}} {
			name := "request_duration_seconds_window_" + q.suffix + "{status=200,window=" + tc.window + "}"
			want := tc.values[int(math.Ceil(q.p*float64(len(tc.values))))-1]
			v, ok := got[name]
			if !ok || math.Abs(v-want) > 0.01*math.Abs(want) || (want == 0) != (v == 0) {
				t.Errorf("%s = %v (present %v), want %v within 1%%", name, v, ok, want)
			}
		}
	}
	hist := "request_duration_seconds_window_distribution{status=200,window=5m}"
	for suffix, want := range map[string]float64{"count": 402, "le=0.1": 100, "le=1": 401} {
		if got[hist+suffix] != want {
			t.Errorf("%s%s = %v, want %v", hist, suffix, got[hist+suffix], want)
		}
	}
	for name := range got {
		if strings.Contains(name, "status=500,window=1m") && strings.Contains(name, "_p") {
			t.Errorf("%s present for a window without values", name)
		}
	}
	if v := got["request_duration_seconds_window_p50{status=500,window=5m}"]; v < 2.97 || v > 3.03 {
		t.Errorf("500s' median %v, want 3", v)
	}
	if got["logwindow_rule_dropped_lines_total{reason=bad_number,rule=request_duration_seconds}"] != 1 {
		t.Error("NaN not counted as bad_number")
	}
	if got["logwindow_rule_dropped_lines_total{reason=negative,rule=request_duration_seconds}"] != 1 {
		t.Error("-3 not counted as negative")
	}
	problems, err := testutil.GatherAndLint(reg)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("lint: %s: %s", p.Metric, p.Text)
	}
}

func formatFloat(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }
