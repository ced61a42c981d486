package server

import (
	"fmt"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/logwindow/logwindow_exporter/internal/testutil/metrictest"
)

// TestPageNowIsExported reads the status page and /metrics of one exporter at one instant
// of its clock, over a socket: a rule whose aggregations leave out `window` showed as its
// value now its `_window`, which /metrics has not; it shows the sum of the family it
// exports, `_window_per_second`, which /metrics has, and says so.
func TestPageNowIsExported(t *testing.T) {
	e := startExporterWith(t, func(logPath string) string {
		return fmt.Sprintf("global: {windows: [1m, 5m]}\ninputs: [{name: web, path: %s}]\nrules:\n"+
			"  - {name: rate, match: ' (?P<status>[0-9]{3}) ', labels: {status: '${status}'}, aggregations: [per_second]}\n", logPath)
	}, false)
	e.request(3, "GET", "/", 200, 5)
	e.request(2, "GET", "/", 404, 5)
	e.clock.Advance(7 * time.Second)
	scrape := e.scrape()
	if _, ok := scrape["rate_window"]; ok {
		t.Fatal("the rule exports rate_window: the test tests nothing")
	}
	want := 0.0
	for _, status := range []string{"200", "404"} {
		want += metrictest.Value(scrape, "rate_window_per_second", map[string]string{"window": "5m", "status": status})
	}
	if want == 0 {
		t.Fatal("no rate_window_per_second in 5m to compare with")
	}
	_, page := getBody(t, e.url+"/")
	now := regexp.MustCompile(`<td class="n now">([^<]*)<br><span class="muted">([^<]*)</span>`).FindStringSubmatch(page)
	if now == nil {
		t.Fatalf("no value now on the page: %.3000s", page)
	}
	got, err := strconv.ParseFloat(now[1], 64)
	if err != nil || strconv.FormatFloat(got, 'g', 6, 64) != strconv.FormatFloat(want, 'g', 6, 64) || now[2] != "per-second rate of matched lines in 5m" {
		t.Errorf("the page shows %q of %q; want %v, the sum of rate_window_per_second{window=\"5m\"}, of \"per-second rate of matched lines in 5m\"", now[1], now[2], want)
	}
}
