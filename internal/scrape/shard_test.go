package scrape

import (
	"bytes"
	"fmt"
	"regexp"
	"testing"

	"github.com/prometheus/common/expfmt"

	"github.com/logwindow/logwindow_exporter/internal/store"
	"github.com/logwindow/logwindow_exporter/internal/testutil/storetest"
)

// TestShardsMergeAtRead: lines written through several sinks (shards of the series) and
// the same lines through one give the same scrape, at every instant read and after
// expiry: totals, matched lines, windows, rates, extrema, quantiles, histograms, distinct
// counts and top values, and the lines dropped for a negative value. The lines
// (storetest.ShardLines) merge exactly, so that the texts equal byte for byte.
func TestShardsMergeAtRead(t *testing.T) {
	for _, sinks := range []int{2, 3, store.MaxShards + 1} { // the last: two sinks share a shard
		t.Run(fmt.Sprintf("%d sinks", sinks), func(t *testing.T) {
			cfg, p := storetest.ParseRules(t, storetest.ShardRules)
			one := mustSet(t, cfg, nil)
			many, err := store.NewSetWith(cfg, nil, store.SetOptions{Shards: store.MaxShards})
			if err != nil {
				t.Fatal(err)
			}
			k1 := one.NewSink()
			ks := make([]*store.Sink, sinks)
			for i := range ks {
				ks[i] = many.NewSink()
			}
			same := func(at int64) string {
				now := at
				want := scrapeText(t, collectorAt(fixed(one), &now))
				if got := scrapeText(t, collectorAt(fixed(many), &now)); got != want {
					t.Errorf("at +%ds, %d sinks scrape\n%s\none sink\n%s", at-start, sinks, got, want)
				}
				return want
			}
			readBehind, readBehindWindow := false, false
			storetest.ShardLines(sinks, func(sec int64, sink int, line []byte) {
				if sec >= start+50 && !readBehind {
					readBehind = true
					// Reads behind the lines: a scrape that reads a rule seconds after it
					// read its clock, or a wall clock stepped back. The parts are read at the
					// newest second of them, as one series is: their windows end there and
					// their rate counts the seconds observed up to it. The first read is
					// within the first window's seconds, the second ten past the 1m window.
					same(start + 40)
				}
				if sec >= start+70 && !readBehindWindow {
					readBehindWindow = true
					same(start + 60)
				}
				k1.SetNow(sec, sec)
				ks[sink].SetNow(sec, sec)
				p.Parse("app", line, k1)
				p.Parse("app", line, ks[sink])
			})
			for i, at := range []int64{start + 399, start + 430, start + 700, start + 1600} {
				now := at
				want := same(at)
				if i == 0 && !regexp.MustCompile(`\nlogwindow_rule_dropped_lines_total\{reason="negative",rule="request_seconds"\} [1-9]`).MatchString(want) {
					t.Errorf("no line dropped as negative:\n%s", want)
				}
				one.Expire(at, at)
				many.Expire(at, at)
				if got := scrapeText(t, collectorAt(fixed(many), &now)); got != want {
					t.Errorf("at +%ds after Expire, %d sinks scrape\n%s\none sink before\n%s", at-start, sinks, got, want)
				}
			}
		})
	}
}

// scrapeText is a scrape of c as text, without the series' bytes, which differ with the
// number of parts.
func scrapeText(t *testing.T, c *Collector) string {
	t.Helper()
	mfs, err := scraped(c).Gather()
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	for _, mf := range mfs {
		if mf.GetName() == "logwindow_series_bytes" {
			continue
		}
		if _, err := expfmt.MetricFamilyToText(&b, mf); err != nil {
			t.Fatal(err)
		}
	}
	return b.String()
}
