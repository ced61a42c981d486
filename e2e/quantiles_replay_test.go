package e2e

import (
	"bytes"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/model"

	"github.com/logwindow/logwindow_exporter/internal/testutil/metrictest"
	"github.com/logwindow/logwindow_exporter/internal/testutil/reference"
	"github.com/logwindow/logwindow_exporter/internal/testutil/testexec"
)

// quantileReplayRules keep every quantile of a value that carries its own time.
const quantileReplayRules = `
rules:
  - name: app_request_duration_seconds
    match: '^(?P<ts>[^ ]+) (?P<took>[^ ]+)$'
    value: took
    timestamp: {capture: ts, layout: '2006-01-02T15:04:05Z07:00'}
    aggregations: [events, quantiles]
    quantiles: [0.01, 0.5, 0.9, 0.99, 0.999]
`

// TestReplayQuantilesReference writes an event-time log of adversarial streams (latency
// levels changing every 20 s, bursts on 10-second and minute edges, a gap longer than
// the 1h window, zeros, negatives, one value repeated, lines a few seconds out of order),
// replays it through the built exporter, and checks every window's quantiles against the
// exact rank ⌈q·n⌉ over the lines from the start of the window's edge slot (10 s for 1m
// and 5m, a minute for 15m and 1h, an hour for 24h) to the newest line, none older than
// the longest window: within 1 %. Negative values are in no window: each is dropped, and
// counted as such.
func TestReplayQuantilesReference(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the exporter")
	}
	bin := testexec.BuildExporter(t, false)
	for seed := range uint64(3) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			r := rand.New(rand.NewPCG(seed, 5))
			type line struct {
				at int64
				v  float64
			}
			var lines []line
			end := int64(1_700_000_000 + r.IntN(86400))
			start := end - 26*3600
			for now := start; now <= end; now++ {
				if now > end-3*3600 && now < end-3600-600 {
					continue // a gap longer than the 1h window
				}
				n := 0
				switch {
				case now < end-4*3600:
					n = r.IntN(2) * r.IntN(2) // sparse history for the day window
				case now%10 == 0 || now%10 == 9 || now%60 == 59:
					n = 30 + r.IntN(30) // bursts at slot edges
				default:
					n = r.IntN(4)
				}
				level := []float64{0.003, 0.08, 2.5, 0.02}[now/20%4]
				for range n {
					v := level * (0.5 + r.Float64())
					switch r.IntN(20) {
					case 0:
						v = 0
					case 1:
						v = -v
					case 2, 3:
						v = 0.125
					}
					lines = append(lines, line{now - r.Int64N(4), v})
				}
			}
			var log bytes.Buffer
			negatives := 0.0
			for _, l := range lines {
				if l.v < 0 {
					negatives++
				}
				fmt.Fprintf(&log, "%s %v\n", time.Unix(l.at, 0).UTC().Format(time.RFC3339), l.v)
			}
			newest := int64(math.MinInt64)
			for _, l := range lines {
				newest = max(newest, l.at)
			}
			mfs := replayFamilies(t, bin, quantileReplayRules, log.Bytes())
			checked := 0
			// The default windows, labelled as global.windows spells them.
			for _, w := range []string{"1m", "5m", "15m", "1h", "24h"} {
				d, err := model.ParseDuration(w)
				if err != nil {
					t.Fatal(err)
				}
				edge := reference.SummaryEdge(newest, time.Duration(d))
				var vs []float64
				for _, l := range lines {
					// Lines older than the longest window are late: in no window.
					if l.at >= edge && l.at <= newest && l.at > newest-86400 && l.v >= 0 {
						vs = append(vs, l.v)
					}
				}
				slices.Sort(vs)
				for _, q := range []struct {
					suffix string
					p      float64
				}{{"p1", 0.01}, {"p50", 0.5}, {"p90", 0.9}, {"p99", 0.99}, {"p99_9", 0.999}} {
					got, ok := gaugeAt(mfs["app_request_duration_seconds_window_"+q.suffix], w)
					if len(vs) == 0 {
						if ok {
							t.Errorf("window %v: %s = %v for an empty window", w, q.suffix, got)
						}
						continue
					}
					want := vs[int(math.Ceil(q.p*float64(len(vs))))-1]
					if !ok || math.Abs(got-want) > 0.01*math.Abs(want) || (want == 0) != (got == 0) {
						t.Errorf("window %v (n=%d): %s = %v (present %v), exact %v", w, len(vs), q.suffix, got, ok, want)
					}
					checked++
				}
			}
			if got := metrictest.Value(mfs, "logwindow_rule_dropped_lines_total", map[string]string{"reason": "negative"}); negatives == 0 || got != negatives {
				t.Errorf("%v lines dropped as negative, want %v", got, negatives)
			}
			if checked < 20 {
				t.Fatalf("only %d quantiles checked, in %d families", checked, len(mfs))
			}
		})
	}
}

// gaugeAt returns the value of mf's sample whose window label is window.
func gaugeAt(mf *dto.MetricFamily, window string) (float64, bool) {
	for _, m := range mf.GetMetric() {
		for _, l := range m.GetLabel() {
			if l.GetName() == "window" && l.GetValue() == window {
				return m.GetGauge().GetValue(), true
			}
		}
	}
	return 0, false
}
