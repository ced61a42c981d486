package scrape

import (
	"bytes"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/logwindow/logwindow_exporter/internal/testutil/storetest"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// TestWriteTextAsRegistry holds WriteText to what the registry and expfmt would write for
// the same samples: its text, parsed, normalised by a registry (which sorts families and
// their samples) and encoded again by expfmt, must come back byte for byte. The rules
// cover a label sorting after the window label, label values that need escaping, empty
// windows (no max, min, mean or quantiles), the window histogram, kept counters and a
// counter past its TTL.
func TestWriteTextAsRegistry(t *testing.T) {
	zoned := storetest.ValueRule("request_seconds", storetest.DefaultWindows, "zone", "method")
	zoned.Aggregations.Quantiles, zoned.Quantiles = true, []float64{0.5, 0.99}
	zoned.Buckets = []float64{0.1, 1, 2.5}
	plain := storetest.CountRule("http_requests", storetest.MinFive, "status", "path")
	bare := storetest.CountRule("heartbeats", storetest.OneMin)
	cfg := storetest.Config(100, zoned, plain, bare)
	cfg.Global.CounterTTL = time.Hour
	set := mustSet(t, cfg, nil)
	k := set.NewSink()
	feed(k, []line{
		{rule: 0, labels: []string{"eu", "GET"}, now: start, value: 0.25},
		{rule: 0, labels: []string{"eu", "GET"}, now: start + 30, value: 3},
		{rule: 0, labels: []string{"us", `PO"ST\`}, now: start + 200, value: 0.05},
		{rule: 0, labels: []string{"a\nb", "GET"}, now: start + 1000, value: 1},
		{rule: 1, labels: []string{"200", "/"}, now: start},
		{rule: 1, labels: []string{"404", "/x"}, now: start + 1000},
		{rule: 1, labels: []string{"500", "/old"}, now: start - 7200}, // kept, then past the TTL
		{rule: 2, now: start + 1000},
	})
	for _, now := range []int64{start + 1000, start + 1000 + 600, start + 1000 + 4000} {
		c := collectorAt(fixed(set), &now)
		text := checkAsRegistry(t, c)
		if now == start+1000 && !strings.Contains(text, `request_seconds_window_distribution_bucket{method="GET",window="1d",zone="eu",le="+Inf"} 2`) {
			t.Errorf("no histogram with the window among the labels:\n%s", text)
		}
	}
}

// checkAsRegistry returns what WriteText writes for c, failing t unless it is what the
// registry and expfmt write for the same samples parsed back.
func checkAsRegistry(t *testing.T, c *Collector) string {
	t.Helper()
	var text bytes.Buffer
	if err := c.WriteText(&text, nil); err != nil {
		t.Fatal(err)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	parsed, err := parser.TextToMetricFamilies(bytes.NewReader(text.Bytes()))
	if err != nil {
		t.Fatalf("%v\n%s", err, text.String())
	}
	mfs, err := prometheus.Gatherers{prometheus.GathererFunc(func() ([]*dto.MetricFamily, error) {
		return slices.Collect(maps.Values(parsed)), nil
	})}.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var want bytes.Buffer
	for _, mf := range mfs {
		if _, err := expfmt.MetricFamilyToText(&want, mf); err != nil {
			t.Fatal(err)
		}
	}
	if text.String() != want.String() {
		t.Errorf("WriteText differs from the registry's text:\n%s", firstDiff(text.Bytes(), want.Bytes()))
	}
	return text.String()
}

// TestScrapeChangesNothing: writing the families and gathering the self-metrics leave the
// stores as they were, idle series included; Expire then releases wheels and removes
// counters past the TTL, and the next scrape shows the same as before it.
func TestScrapeChangesNothing(t *testing.T) {
	cfg := storetest.Config(10, storetest.CountRule("http_requests", storetest.OneMin, "status"))
	cfg.Global.CounterTTL = 10 * time.Minute
	set := mustSet(t, cfg, nil)
	feed(set.NewSink(), []line{
		{labels: []string{"200"}, now: start},
		{labels: []string{"404"}, now: start + 300},
		{labels: []string{"500"}, now: start + 700},
	})
	now := int64(start + 720) // 200 past the TTL, 404 idle, 500 live
	// state is the label sets held, each live or not at now, and what the store charges for
	// them, which releasing wheels or removing a series changes.
	r := set.Rule(0)
	state := func() (map[string]bool, int64) {
		out := map[string]bool{}
		all := r.Snapshot(nil)
		for _, s := range all {
			out[s.Labels()[0]] = r.Live(s, now)
		}
		return out, set.MemoryUsed()
	}
	c := collectorAt(fixed(set), &now)
	before, used := state()
	var first bytes.Buffer
	if err := c.WriteText(&first, nil); err != nil {
		t.Fatal(err)
	}
	mustCount(t, c)
	if after, usedAfter := state(); !mapsEqual(before, after) || usedAfter != used {
		t.Errorf("a scrape changed the store: %v (%d bytes), then %v (%d bytes)", before, used, after, usedAfter)
	}
	set.Expire(now, now)
	want := map[string]bool{"404": false, "500": true}
	if got, usedAfter := state(); !mapsEqual(got, want) || usedAfter >= used {
		t.Errorf("after Expire: %v (%d bytes, %d before), want %v and fewer bytes", got, usedAfter, used, want)
	}
	var second bytes.Buffer
	if err := c.WriteText(&second, nil); err != nil {
		t.Fatal(err)
	}
	if first.String() != second.String() {
		t.Errorf("Expire changed what a scrape shows:\n%s\nthen\n%s", first.String(), second.String())
	}
}

func mapsEqual(a, b map[string]bool) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// TestOneViewPerScrape checks that the self-metrics gathered during a scrape count the
// series of the view the scrape reads (the store is walked once), and that a view no
// gather took is let go when the scrape ends.
func TestOneViewPerScrape(t *testing.T) {
	set := mustSet(t, storetest.Config(10, storetest.CountRule("http_requests", storetest.MinFive, "status")), nil)
	feed(set.NewSink(), []line{{labels: []string{"200"}, now: start}})
	now := int64(start + 1)
	c := collectorAt(fixed(set), &now)
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(c)
	for _, gather := range []bool{true, false} {
		s := c.Scrape(nil, expfmt.FmtText)
		v := c.pending.Load()
		if v == nil {
			t.Fatal("the scrape left no view for the self-metrics")
		}
		if gather {
			if _, err := reg.Gather(); err != nil {
				t.Fatal(err)
			}
			if c.pending.Load() != nil {
				t.Error("the self-metrics did not take the scrape's view")
			}
		}
		s.Close()
		if c.pending.Load() != nil || v.refs.Load() != 0 {
			t.Errorf("gather %v: the view is still held (%d references)", gather, v.refs.Load())
		}
	}
}
