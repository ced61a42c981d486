package e2e

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	promv1 "github.com/prometheus/client_golang/api/prometheus/v1"

	"github.com/logwindow/logwindow_exporter/internal/testutil/testexec"
)

// TestFleetQuantiles runs two exporters on one nginx log, as the sidecars of two pods
// serving the same traffic would, and each Prometheus (testexec.Prometheuses) scraping both: the fleet-wide p99 of
// the docs, histogram_quantile over the window histograms summed by le, answers; it equals one
// pod's (both saw the same lines), the fleet's _count is both pods' lines, and each pod has
// its own p99 gauge.
func TestFleetQuantiles(t *testing.T) {
	if testing.Short() && !testexec.Required {
		t.Skip("-short: the end-to-end test runs nginx, two built exporters and Prometheus")
	}
	tools := testexec.LookTools(t, "Debian: apt-get install nginx", "nginx")
	dir := t.TempDir()
	bin := testexec.BuildExporter(t, testexec.Race)
	ngx := startNginx(t, tools["nginx"], dir)
	var addrs []string
	for _, pod := range []string{"a", "b"} {
		podDir := filepath.Join(dir, pod)
		if err := os.Mkdir(podDir, 0o755); err != nil {
			t.Fatal(err)
		}
		addrs = append(addrs, startExporter(t, bin, podDir, ngx.accessLog).Addr())
	}
	proms := startPrometheuses(t, dir, false, addrs...)
	ctx := t.Context()

	s := newSent()
	client := &http.Client{Timeout: 5 * time.Second}
	defer client.CloseIdleConnections()
	s.send(t, client, ngx.base, []batch{{path: "/", status: 200, n: 60}, {path: "/missing", status: 404, n: 9}, {path: "/bad-gateway", status: 502, n: 3, proxied: true}})
	waitLines(t, ngx.accessLog, s.requests)

	for _, p := range proms {
		t.Run("prometheus "+p.name, func(t *testing.T) { checkFleetP99(ctx, t, p.api, s.requests, addrs) })
	}
}

// checkFleetP99 waits until prom has both pods' lines and p99 gauges, then wants the fleet's
// p99 finite and equal to one pod's.
func checkFleetP99(ctx context.Context, t *testing.T, prom promv1.API, requests int, addrs []string) {
	t.Helper()
	const family = "nginx_http_request_duration_seconds_window_distribution"
	sel := fmt.Sprintf(`{job=%q, window="5m"}`, job)
	fleet := fmt.Sprintf("histogram_quantile(0.99, sum by (le) (%s_bucket%s))", family, sel)
	onePod := fmt.Sprintf(`histogram_quantile(0.99, sum by (le) (%s_bucket{job=%q, window="5m", instance=%q}))`, family, job, addrs[0])
	at := waitExact(ctx, t, prom, []exact{
		{fmt.Sprintf("sum(%s_gcount%s)", family, sel), map[string]float64{"{}": float64(2 * requests)}},
		{fmt.Sprintf("count by (instance) (sum by (instance, status_class) (nginx_http_request_duration_seconds_window_p99%s))", sel),
			map[string]float64{series("instance", addrs[0]): 3, series("instance", addrs[1]): 3}}, // 2xx, 4xx, 5xx
	})
	got, err := query(ctx, prom, fleet, at)
	if err != nil {
		t.Fatal(err)
	}
	want, err := query(ctx, prom, onePod, at)
	if err != nil {
		t.Fatal(err)
	}
	p99, ok := got["{}"]
	if len(got) != 1 || !ok || math.IsNaN(p99) || math.IsInf(p99, 0) || p99 < 0 || p99 != want["{}"] {
		t.Fatalf("fleet p99 %s => %s, one pod's %s", fleet, formatSeries(got), formatSeries(want))
	}
	t.Logf("%s => %v over %d requests seen by two exporters (one pod's: %v)", fleet, p99, requests, want["{}"])
}
