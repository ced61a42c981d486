package e2e

import (
	"context"
	"fmt"
	"maps"
	"math"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	promv1 "github.com/prometheus/client_golang/api/prometheus/v1"

	"github.com/logwindow/logwindow_exporter/internal/dashboard"
	"github.com/logwindow/logwindow_exporter/internal/testutil/testexec"
)

// distinctRules count the different clients of each set of a log of "<set> <client>"
// lines over 5m, exporting the registers at each of distinctMs.
const distinctRules = `
inputs:
  - {name: app, path: %q, start_at: beginning}
rules:
%s`

var distinctMs = []int{64, 1024}

// clientRange is a pod's clients of one set: client from to to−1.
type clientRange struct{ from, to int }

// distinctPods are three pods' clients per set, overlapping: "large" is a union of 60,000
// (each pod's sketch dense), "medium" 200 (in linear counting's range at m = 1024, not at
// 64), "small" 20 (linear counting at both).
var distinctPods = []map[string]clientRange{
	{"large": {0, 30000}, "medium": {0, 100}, "small": {0, 10}},
	{"large": {20000, 50000}, "medium": {50, 180}, "small": {5, 20}},
	{"large": {45000, 60000}, "medium": {170, 200}},
}

var distinctUnions = map[string]float64{"large": 60000, "medium": 200, "small": 20}

// TestFleetDistinct runs three exporters, each following its own log of clients that
// overlap with the others', and each Prometheus (testexec.Prometheuses) scraping them: the documented fleet query
// over their _window_distinct_register families (dashboard.FleetDistinct, the dashboard
// panel's) is within three standard errors, 3·1.04/√m, of the exact number of different
// clients of all three logs, for each m and set, from 20 clients to 60,000. The sum of the
// pods' own counts, which counts a shared client once per pod, is logged beside it.
func TestFleetDistinct(t *testing.T) {
	if testing.Short() && !testexec.Required {
		t.Skip("-short: the end-to-end test runs three built exporters and Prometheus")
	}
	dir := t.TempDir()
	bin := testexec.BuildExporter(t, testexec.Race)
	var rules strings.Builder
	for _, m := range distinctMs {
		fmt.Fprintf(&rules, `  - name: app_clients_m%d
    match: '^(?P<set>[a-z]+) (?P<client>\S+)$'
    labels: {set: '${set}'}
    windows: [5m]
    aggregations: [window]
    distinct: '${client}'
    distinct_registers: %d
`, m, m)
	}
	var addrs []string
	var pods []*testexec.Exporter
	lines := map[string]float64{}
	for i, pod := range distinctPods {
		log := filepath.Join(dir, fmt.Sprintf("pod%d.log", i))
		var text []string
		for set, r := range pod {
			for c := r.from; c < r.to; c++ {
				text = append(text, fmt.Sprintf("%s 10.%d.%d.%d", set, c>>16, c>>8&0xff, c&0xff))
			}
			lines[set] += float64(r.to - r.from)
		}
		writeFile(t, log, []byte(strings.Join(text, "\n")+"\n"), 0o644)
		config := filepath.Join(dir, fmt.Sprintf("pod%d.yaml", i))
		writeFile(t, config, fmt.Appendf(nil, distinctRules, log, rules.String()), 0o644)
		e := testexec.StartExporter(t, bin, "--config.file="+config)
		e.WaitLines(t, float64(len(text)))
		addrs = append(addrs, e.Addr())
		pods = append(pods, e)
	}
	for _, p := range startPrometheuses(t, dir, false, addrs...) {
		t.Run("prometheus "+p.name, func(t *testing.T) { checkFleetDistinct(t, p.api, lines, pods[len(pods)-1]) })
	}
}

// checkFleetDistinct waits until prom has every pod's lines and registers, then wants the
// fleet query, at the instant they were all there, within three standard errors of each
// set's exact union, for each m. Meanwhile the stalled pod stops answering until a scrape
// of it fails, as on a loaded machine, which hides its series from a query at any later
// instant: the last pod's registers missing read the large set 18% low.
func checkFleetDistinct(t *testing.T, prom promv1.API, lines map[string]float64, stalled *testexec.Exporter) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	sel := func(family string) string { return fmt.Sprintf(`%s{job=%q, window="5m"}`, family, job) }
	var checks []exact
	for _, m := range distinctMs {
		want := map[string]float64{}
		for set, n := range lines {
			want[series("set", set)] = n
		}
		// Every pod's lines, and each pod's m registers per set: all scraped.
		checks = append(checks,
			exact{fmt.Sprintf("sum by (set) (%s)", sel(fmt.Sprintf("app_clients_m%d_window", m))), want},
			exact{fmt.Sprintf("count by (set) (%s)", sel(fmt.Sprintf("app_clients_m%d_window_distinct_register", m))), map[string]float64{
				series("set", "large"): float64(3 * m), series("set", "medium"): float64(3 * m), series("set", "small"): float64(2 * m)}})
	}
	at := waitExact(ctx, t, prom, checks)
	defer stall(ctx, t, prom, stalled)()
	for _, m := range distinctMs {
		expr := dashboard.FleetDistinct(sel(fmt.Sprintf("app_clients_m%d_window_distinct_register", m)), m, []string{"set"})
		got, err := query(ctx, prom, expr, at)
		if err != nil {
			t.Fatalf("%s: %v", expr, err)
		}
		pods, err := query(ctx, prom, fmt.Sprintf("sum by (set) (%s)", sel(fmt.Sprintf("app_clients_m%d_window_distinct", m))), at)
		if err != nil {
			t.Fatal(err)
		}
		bound := 3 * 1.04 / math.Sqrt(float64(m))
		for set, union := range distinctUnions {
			key := series("set", set)
			v, ok := got[key]
			if !ok || math.Abs(v-union) > bound*union {
				t.Errorf("m=%d, %s: %s => %s, want %v within %.3g%%", m, set, expr, formatSeries(got), union, 100*bound)
				continue
			}
			t.Logf("m=%d, %s clients: the fleet query says %.1f of %v (%+.2f%%, 3σ = %.2f%%); the pods' counts sum to %v",
				m, set, v, union, 100*(v-union)/union, 100*bound, pods[key])
		}
		if len(got) != len(distinctUnions) {
			t.Errorf("m=%d: %s => %s, want one series per set", m, expr, formatSeries(got))
		}
	}
}

// stall stops the exporter e (SIGSTOP) until prom has recorded a failed scrape of it, and
// returns the function that lets it go on.
func stall(ctx context.Context, t *testing.T, prom promv1.API, e *testexec.Exporter) func() {
	t.Helper()
	resume := func() {
		if err := e.Cmd.Process.Signal(syscall.SIGCONT); err != nil {
			t.Error(err)
		}
	}
	if err := e.Cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	failed := map[string]float64{series("__name__", "up", "instance", e.Addr(), "job", job): 0}
	for deadline := time.Now().Add(convergeTimeout); ; time.Sleep(100 * time.Millisecond) {
		got, err := query(ctx, prom, fmt.Sprintf("up{job=%q, instance=%q}", job, e.Addr()), time.Now())
		if err != nil {
			resume()
			t.Fatal(err)
		}
		if maps.Equal(got, failed) {
			return resume
		}
		if time.Now().After(deadline) {
			resume()
			t.Fatalf("after %v, a stopped exporter's up is still %s", convergeTimeout, formatSeries(got))
		}
	}
}
