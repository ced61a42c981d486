package e2e

import (
	"bytes"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/prometheus/common/model"

	"github.com/logwindow/logwindow_exporter/internal/testutil/reference"
	"github.com/logwindow/logwindow_exporter/internal/testutil/testexec"
)

// distinctReplayRules count the different clients of an event-time log.
const distinctReplayRules = `
rules:
  - name: app_clients
    match: '^(?P<ts>[^ ]+) (?P<addr>.*)$'
    timestamp: {capture: ts, layout: '2006-01-02T15:04:05Z07:00'}
    distinct: '${addr}'
`

// TestReplayDistinctReference writes an event-time log of adversarial streams (a day of
// unique values, enough for the day window to leave the sketch's exact range; clients that
// return after 5m and 15m; one value repeated tens of thousands of times; bursts of new
// values on 10-second and minute edges; the empty value; lines a few seconds out of
// order), replays it through the built exporter, and checks every window's distinct count
// against the exact number of different values among the lines from the start of the
// window's edge slot to the newest line, none older than the longest window: within
// max(2, 2 %).
func TestReplayDistinctReference(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the exporter")
	}
	bin := testexec.BuildExporter(t, false)
	for seed := range uint64(3) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			r := rand.New(rand.NewPCG(seed, 12))
			type line struct {
				at   int64
				addr string
			}
			var lines []line
			end := int64(1_700_000_000 + r.IntN(86400))
			unique := 0
			add := func(now int64, addr string) { lines = append(lines, line{now - r.Int64N(4), addr}) }
			for now := end - 26*3600; now <= end; now++ {
				if r.IntN(2) == 0 {
					add(now, fmt.Sprintf("u%d", unique))
					unique++
				}
				if now < end-3*3600 {
					continue
				}
				// 400 clients active for 7 minutes, then resting for 14.
				add(now, fmt.Sprintf("c%d-%d", now/420%3, r.IntN(400)))
				for range r.IntN(10) {
					add(now, "10.0.0.1")
				}
				if r.IntN(50) == 0 {
					add(now, "")
				}
				if now%10 == 0 || now%10 == 9 || now%60 == 59 {
					for range 30 + r.IntN(30) {
						add(now, fmt.Sprintf("b%d", unique))
						unique++
					}
				}
			}
			var log bytes.Buffer
			newest := int64(math.MinInt64)
			for _, l := range lines {
				fmt.Fprintf(&log, "%s %s\n", time.Unix(l.at, 0).UTC().Format(time.RFC3339), l.addr)
				newest = max(newest, l.at)
			}
			mfs := replayFamilies(t, bin, distinctReplayRules, log.Bytes())
			// The default windows, labelled as global.windows spells them.
			for _, w := range []string{"1m", "5m", "15m", "1h", "24h"} {
				d, err := model.ParseDuration(w)
				if err != nil {
					t.Fatal(err)
				}
				edge := reference.SummaryEdge(newest, time.Duration(d))
				seen := map[string]bool{}
				for _, l := range lines {
					// Lines older than the longest window are late: in no window.
					if l.at >= edge && l.at <= newest && l.at > newest-86400 {
						seen[l.addr] = true
					}
				}
				got, ok := gaugeAt(mfs["app_clients_window_distinct"], w)
				if exact := float64(len(seen)); !ok || math.Abs(got-exact) > max(2, 0.02*exact) {
					t.Errorf("window %v: %v distinct (present %v), exact %v", w, got, ok, exact)
				} else {
					t.Logf("window %v: %v distinct, exact %v", w, got, exact)
				}
			}
		})
	}
}
