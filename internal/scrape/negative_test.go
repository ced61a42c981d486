package scrape

import (
	"math"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"
)

// TestNegativeValuesDropped: a value rule sums non-negative quantities. A line whose value
// is negative gives no event (its _total, a counter, never goes down or below zero, and no
// window's sum, extremum, quantile, histogram or top value sees it) and is counted in
// logwindow_rule_dropped_lines_total{reason="negative"}; -0 is zero and counts. Each kind
// of value rule is fed the same values, -5, 2, -10, -0, through the parser, the store and
// a scrape after every line.
func TestNegativeValuesDropped(t *testing.T) {
	values := []string{"-5", "2", "-10", "-0"}
	cases := []struct {
		name  string
		rules string
		input string
		line  func(v string) string
		// want are samples of the last scrape, by family and label text (window
		// label included), with the histogram's _sum and _count as families of their own.
		want map[string]float64
	}{
		{"sum", `
  - name: delta
    match: '^(?P<v>-?[0-9.]+)$'
    value: v
    aggregations: [window, per_second, events]`, "plain", func(v string) string { return v },
			map[string]float64{`delta_window{window="1m"}`: 2, `delta_window_events{window="1m"}`: 2}},
		{"extrema", `
  - name: delta
    match: '^(?P<v>-?[0-9.]+)$'
    value: v
    aggregations: [window, max, min, mean]`, "plain", func(v string) string { return v },
			map[string]float64{`delta_window_max{window="1m"}`: 2, `delta_window_min{window="1m"}`: 0, `delta_window_mean{window="1m"}`: 1}},
		{"quantiles", `
  - name: delta
    match: '^(?P<v>-?[0-9.]+)$'
    value: v
    aggregations: [window, quantiles]
    quantiles: [0.5, 0.99]`, "plain", func(v string) string { return v },
			map[string]float64{`delta_window_p50{window="1m"}`: 0, `delta_window_p99{window="1m"}`: 2}},
		// A negative bound may still be declared; no value falls at or under it.
		{"buckets", `
  - name: delta
    match: '^(?P<v>-?[0-9.]+)$'
    value: v
    buckets: [-1, 0, 1, 5]`, "plain", func(v string) string { return v },
			map[string]float64{`delta_window_distribution_sum{window="1m"}`: 2, `delta_window_distribution_count{window="1m"}`: 2,
				`delta_window_distribution_bucket{le="-1",window="1m"}`: 0, `delta_window_distribution_bucket{le="0",window="1m"}`: 1,
				`delta_window_distribution_bucket{le="5",window="1m"}`: 2}},
		{"top", `
  - name: delta
    match: '^(?P<path>/[a-z]*) (?P<v>-?[0-9.]+)$'
    value: v
    labels: {path: '${path}'}
    top: {label: path, k: 3}`, "plain", func(v string) string { return "/a " + v },
			map[string]float64{`delta_window{window="1m"}`: 2, `delta_window_top{path="/a",window="1m"}`: 2}},
		{"json field", `
  - name: delta
    fields: {v: v}
    value: v
    inputs: [app]`, "app", func(v string) string { return `{"v":` + v + `}` },
			map[string]float64{`delta_window{window="1m"}`: 2}},
		{"logfmt field", `
  - name: delta
    fields: {v: v}
    value: v
    inputs: [kv]`, "kv", func(v string) string { return "msg=x v=" + v },
			map[string]float64{`delta_window{window="1m"}`: 2}},
		// An upstream list's first item is the value.
		{"log format", `
  - name: delta
    value: upstream_response_time
    inputs: [web]`, "web", func(v string) string { return "200 " + v + ", 0.5" },
			map[string]float64{`delta_window{window="1m"}`: 2}},
	}
	const inputs = `
inputs:
  - {name: app, path: /a.log, format: json}
  - {name: kv, path: /b.log, format: logfmt}
  - {name: web, path: /c.log, log_format: '$status $upstream_response_time'}
`
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p, set := parserSet(t, "global: {windows: [1m], max_series_per_rule: 10}\n"+inputs+"rules:"+tc.rules+"\n")
			k := set.NewSink()
			now := int64(start)
			c := collectorAt(fixed(set), &now)
			prev := 0.0
			var got map[string]float64
			for _, v := range values {
				k.SetNow(now, now)
				p.Parse(tc.input, []byte(tc.line(v)), k)
				got = samples(t, c)
				total := 0.0
				for name, x := range got {
					if strings.HasPrefix(name, "delta_total") {
						total += x
					}
				}
				if total < 0 || total < prev {
					t.Errorf("after %s: delta_total %v, was %v", v, total, prev)
				}
				prev = total
			}
			if prev != 2 {
				t.Errorf("delta_total %v, want 2 (the sum of 2 and -0)", prev)
			}
			if d := got[`logwindow_rule_dropped_lines_total{reason="negative",rule="delta"}`]; d != 2 {
				t.Errorf("dropped as negative: %v, want 2", d)
			}
			for name, want := range tc.want {
				if x, ok := got[name]; !ok || math.Abs(x-want) > 0.01*want || math.Signbit(x) {
					t.Errorf("%s = %v (present %v), want %v", name, x, ok, want)
				}
			}
		})
	}
}

// samples scrapes c and returns every sample by family and label text, a histogram's sum,
// count and cumulative buckets as the text format names them.
func samples(t *testing.T, c *Collector) map[string]float64 {
	t.Helper()
	mfs, err := scraped(c).Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			labels := "{" + labelText(m.GetLabel()) + "}"
			switch mf.GetType() {
			case dto.MetricType_HISTOGRAM, dto.MetricType_GAUGE_HISTOGRAM:
				h := m.GetHistogram()
				out[mf.GetName()+"_sum"+labels] = h.GetSampleSum()
				out[mf.GetName()+"_count"+labels] = float64(h.GetSampleCount())
				for _, b := range h.GetBucket() {
					le := []*dto.LabelPair{{Name: new("le"), Value: new(formatFloat(b.GetUpperBound()))}}
					out[mf.GetName()+"_bucket{"+labelText(append(le, m.GetLabel()...))+"}"] = float64(b.GetCumulativeCount())
				}
			default:
				out[mf.GetName()+labels] = m.GetCounter().GetValue() + m.GetGauge().GetValue()
			}
		}
	}
	return out
}
