package e2e

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/api"
	promv1 "github.com/prometheus/client_golang/api/prometheus/v1"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"google.golang.org/protobuf/proto"

	"github.com/logwindow/logwindow_exporter/internal/testutil/deploytest"
	"github.com/logwindow/logwindow_exporter/internal/testutil/testexec"
)

// fleetQuantiles are the quantiles the fleet tests ask Prometheus for, and fleetError the
// relative error histogram_quantile over the summed native histograms may have.
var fleetQuantiles = []float64{0.99, 0.9, 0.5}

const fleetError = 0.02

// pod is one exporter's share of the fleet's latencies: a fast pod and a slow one, with
// different counts, so that the fleet's quantiles are neither pod's.
type pod struct {
	name   string
	n      int
	median float64 // seconds
}

var fleetPods = []pod{{"fast", 3000, 0.02}, {"slow", 700, 0.4}}

// latencies returns p's n values, log-normal around its median, in milliseconds-rounded
// seconds as a log line writes them, always the same for a pod.
func (p pod) latencies() []float64 {
	r := rand.New(rand.NewPCG(uint64(p.n), uint64(p.median*1000)))
	vs := make([]float64, p.n)
	for i := range vs {
		v := p.median * math.Exp(0.6*r.NormFloat64())
		vs[i] = max(math.Round(v*1000), 1) / 1000
	}
	return vs
}

// exactQuantile is the value of rank ⌈q·n⌉ among vs, sorted.
func exactQuantile(sorted []float64, q float64) float64 {
	return sorted[max(int(math.Ceil(q*float64(len(sorted))))-1, 0)]
}

// allLatencies is every pod's values, sorted.
func allLatencies() []float64 {
	var all []float64
	for _, p := range fleetPods {
		all = append(all, p.latencies()...)
	}
	slices.Sort(all)
	return all
}

// nativePrometheus runs p in dir (made here) scraping targets for native histograms (see
// prometheus-native.yml.tmpl: a feature flag before 3.9, the configuration since).
func nativePrometheus(t *testing.T, p testexec.Prometheus, dir string, targets ...string) promv1.API {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	scrapeNative := p.AtLeast(3, 9)
	config := filepath.Join(dir, "prometheus.yml")
	render(t, "prometheus-native.yml.tmpl", config, map[string]any{"Job": job, "Targets": targets, "ScrapeNative": scrapeNative})
	addr := fmt.Sprintf("127.0.0.1:%d", testexec.FreePort(t))
	argv := []string{
		p.Path,
		"--config.file=" + config,
		"--storage.tsdb.path=" + filepath.Join(dir, "prometheus-data"),
		"--web.listen-address=" + addr,
	}
	if !scrapeNative {
		argv = append(argv, "--enable-feature=native-histograms")
	}
	prom := testexec.StartTest(t, dir, "prometheus", argv)
	testexec.WaitHTTP(t, prom, "http://"+addr+"/-/ready")
	client, err := api.NewClient(api.Config{Address: "http://" + addr})
	if err != nil {
		t.Fatal(err)
	}
	return promv1.NewAPI(client)
}

// quantileQuery is a query of the fleet's quantile q.
type quantileQuery struct {
	q    float64
	expr string
}

// checkFleetQuantiles waits until Prometheus has scraped every value of the fleet in the
// window distribution family, then wants histogram_quantile over the sum of every pod's
// native histogram, and each of more, within fleetError of the exact quantile of all
// values.
func checkFleetQuantiles(ctx context.Context, t *testing.T, prom promv1.API, family string, more ...quantileQuery) {
	t.Helper()
	all := allLatencies()
	sum := fmt.Sprintf(`sum(%s{job=%q, window="5m"})`, family, job)
	at := waitExact(ctx, t, prom, []exact{{"histogram_count(" + sum + ")", map[string]float64{"{}": float64(len(all))}}})
	var qs []quantileQuery
	for _, q := range fleetQuantiles {
		qs = append(qs, quantileQuery{q, fmt.Sprintf("histogram_quantile(%g, %s)", q, sum)})
	}
	for _, qq := range append(qs, more...) {
		q, expr := qq.q, qq.expr
		got, err := query(ctx, prom, expr, at)
		if err != nil {
			t.Fatalf("%s: %v", expr, err)
		}
		want := exactQuantile(all, q)
		v, ok := got["{}"]
		if len(got) != 1 || !ok || math.Abs(v-want) > fleetError*want {
			t.Errorf("%s => %s, want %v within %g%%", expr, formatSeries(got), want, 100*fleetError)
			continue
		}
		t.Logf("%s => %.6g, exact %.6g (%+.2f%%)", expr, v, want, 100*(v-want)/want)
	}
	var pods []float64
	for _, p := range fleetPods {
		vs := p.latencies()
		slices.Sort(vs)
		pods = append(pods, exactQuantile(vs, 0.99))
	}
	t.Logf("the pods' own p99: %v; the fleet's: %v", pods, exactQuantile(all, 0.99))
}

// nativeSchema is the schema of the hand-made histograms: buckets 2^(2^-8) ≈ 1.0027 wide,
// so that the bucketing itself errs by under 0.3%.
const nativeSchema = 8

// nativeGaugeHistogram is a native histogram of vs (all positive) at schema s, as a
// client_model histogram: spans of consecutive buckets and deltas of their counts.
func nativeGaugeHistogram(vs []float64, s int32) *dto.Histogram {
	counts := map[int32]uint64{}
	sum := 0.0
	for _, v := range vs {
		// Bucket i holds (2^((i−1)·2^−s), 2^(i·2^−s)].
		counts[int32(math.Ceil(math.Log2(v)*math.Ldexp(1, int(s))))]++
		sum += v
	}
	idx := slices.Sorted(func(yield func(int32) bool) {
		for i := range counts {
			if !yield(i) {
				return
			}
		}
	})
	h := &dto.Histogram{
		SampleCount:   proto.Uint64(uint64(len(vs))),
		SampleSum:     proto.Float64(sum),
		Schema:        proto.Int32(s),
		ZeroThreshold: proto.Float64(math.Ldexp(1, -128)),
		ZeroCount:     proto.Uint64(0),
	}
	var prev int64
	for k, i := range idx {
		if k == 0 || i != idx[k-1]+1 {
			offset := i
			if k > 0 {
				offset = i - idx[k-1] - 1
			}
			h.PositiveSpan = append(h.PositiveSpan, &dto.BucketSpan{Offset: proto.Int32(offset), Length: proto.Uint32(0)})
		}
		span := h.PositiveSpan[len(h.PositiveSpan)-1]
		span.Length = proto.Uint32(span.GetLength() + 1)
		c := int64(counts[i])
		h.PositiveDelta = append(h.PositiveDelta, c-prev)
		prev = c
	}
	return h
}

// serveNative serves, as a delimited protobuf scrape, one gauge histogram family named
// family with a native histogram of vs under window="5m", until the test ends.
func serveNative(t *testing.T, family string, vs []float64) string {
	t.Helper()
	mf := &dto.MetricFamily{
		Name: proto.String(family),
		Help: proto.String("Hand-made window distribution."),
		Type: dto.MetricType_GAUGE_HISTOGRAM.Enum(),
		Metric: []*dto.Metric{{
			Label:     []*dto.LabelPair{{Name: proto.String("window"), Value: proto.String("5m")}},
			Histogram: nativeGaugeHistogram(vs, nativeSchema),
		}},
	}
	format := expfmt.NewFormat(expfmt.TypeProtoDelim)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", string(format))
		if err := expfmt.NewEncoder(w, format).Encode(mf); err != nil {
			t.Errorf("encoding the hand-made scrape: %v", err)
		}
	})}
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(func() { _ = srv.Close() })
	return l.Addr().String()
}

// TestPrometheusMergesNativeGaugeHistograms checks the Prometheus side of the fleet's
// quantiles with no exporter: two hand-made targets serve a protobuf scrape holding one
// native gauge histogram each (a fast pod's and a slow pod's latencies, with different
// counts), and histogram_quantile over their sum is within 2% of the exact quantiles of
// all values. It says whether the Prometheus installed ingests native gauge histograms and
// merges them as the fleet test needs.
func TestPrometheusMergesNativeGaugeHistograms(t *testing.T) {
	if testing.Short() && !testexec.Required {
		t.Skip("-short: the end-to-end test runs Prometheus")
	}
	const family = "handmade_request_seconds_window_distribution"
	var targets []string
	for _, p := range fleetPods {
		targets = append(targets, serveNative(t, family, p.latencies()))
	}
	for _, p := range testexec.Prometheuses(t) {
		t.Run("prometheus "+p.Name(), func(t *testing.T) {
			checkFleetQuantiles(t.Context(), t, nativePrometheus(t, p, t.TempDir(), targets...), family)
		})
	}
}

// nativeRules is the rule both fleet exporters run: request times from a log of one number
// a line, quantiles over 5m and no buckets, so that the window distribution is exposed as
// a native histogram only.
const nativeRules = `
inputs:
  - {name: app, path: %q}
rules:
  - name: app_request_seconds
    match: '^(?P<t>[0-9.]+)$'
    value: t
    windows: [5m]
    aggregations: [window, quantiles]
    quantiles: [0.5, 0.9, 0.99]
`

// hasNativeHistogram reports whether the exporter's protobuf scrape holds family with a
// native histogram (a schema and buckets or a zero bucket) in a sample.
func hasNativeHistogram(t *testing.T, e *testexec.Exporter, family string) bool {
	t.Helper()
	format := expfmt.NewFormat(expfmt.TypeProtoDelim)
	body, err := e.Fetch("/metrics", http.Header{"Accept": {string(format)}})
	if err != nil {
		t.Fatal(err)
	}
	dec := expfmt.NewDecoder(bytes.NewReader(body), format)
	for {
		var mf dto.MetricFamily
		switch err := dec.Decode(&mf); {
		case err == io.EOF:
			return false
		case err != nil:
			t.Logf("the scrape asked for as protobuf does not decode as protobuf: %v", err)
			return false
		}
		if mf.GetName() != family {
			continue
		}
		for _, m := range mf.GetMetric() {
			h := m.GetHistogram()
			if h != nil && (len(h.GetPositiveSpan()) > 0 || len(h.GetNegativeSpan()) > 0 || h.GetZeroThreshold() > 0) {
				return true
			}
		}
	}
}

// TestFleetNativeHistograms runs two exporters, each following its own log, one of a fast
// pod's request times and one of a slow pod's with fewer lines, and one Prometheus
// scraping both with native histograms: histogram_quantile(q, sum(...)) over their window
// distributions is within 2% of the exact quantiles of all the values of both logs, for
// the p99, p90 and p50, with no buckets in the rules; so are the queries of the fleet-wide
// quantile panel --dashboard makes for the rules.
func TestFleetNativeHistograms(t *testing.T) {
	if testing.Short() && !testexec.Required {
		t.Skip("-short: the end-to-end test runs two built exporters and Prometheus")
	}
	proms := testexec.Prometheuses(t)
	dir := t.TempDir()
	bin := testexec.BuildExporter(t, testexec.Race)
	const family = "app_request_seconds_window_distribution"
	var exporters []*testexec.Exporter
	var addrs []string
	for _, p := range fleetPods {
		log := filepath.Join(dir, p.name+".log")
		writeFileLines(t, log, "", 0)
		config := filepath.Join(dir, p.name+".yaml")
		writeFile(t, config, fmt.Appendf(nil, nativeRules, log), 0o644)
		e := testexec.StartExporter(t, bin, "--config.file="+config)
		exporters = append(exporters, e)
		addrs = append(addrs, e.Addr())
	}
	if !hasNativeHistogram(t, exporters[0], family) {
		t.Fatal("the exporter's protobuf scrape has no native histogram in " + family)
	}
	for i, p := range fleetPods {
		var lines []string
		for _, v := range p.latencies() {
			lines = append(lines, strconv.FormatFloat(v, 'g', -1, 64))
		}
		writeFileLines(t, filepath.Join(dir, p.name+".log"), strings.Join(lines, "\n"), 1)
		exporters[i].WaitLines(t, float64(p.n))
	}
	panel := fleetPanelQueries(t, bin, filepath.Join(dir, fleetPods[0].name+".yaml"))
	for _, p := range proms {
		t.Run("prometheus "+p.Name(), func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
			defer cancel()
			checkFleetQuantiles(ctx, t, nativePrometheus(t, p, filepath.Join(dir, "prometheus-"+p.Name()), addrs...), family, panel...)
		})
	}
}

// fleetPanelQueries returns the queries of the fleet-wide quantile panel of the dashboard
// bin --dashboard makes for the rule file config, over every instance of the job and the
// 5m window.
func fleetPanelQueries(t *testing.T, bin, config string) []quantileQuery {
	t.Helper()
	out, err := exec.Command(bin, "--config.file="+config, "--dashboard").Output()
	if err != nil {
		t.Fatalf("--dashboard: %v", err)
	}
	qs, err := deploytest.DashboardQueries(out, deploytest.Vars{Job: job, Instance: ".+", Window: "5m", RateInterval: "1m"})
	if err != nil {
		t.Fatal(err)
	}
	var panel []quantileQuery
	for _, q := range qs {
		if !strings.HasPrefix(q.Source, `panel "Fleet-wide quantiles`) {
			continue
		}
		var quantile float64
		if _, err := fmt.Sscanf(q.Expr, "histogram_quantile(%g,", &quantile); err != nil {
			t.Fatalf("%s: %s: %v", q.Source, q.Expr, err)
		}
		panel = append(panel, quantileQuery{quantile, q.Expr})
	}
	if len(panel) != len(fleetQuantiles) {
		t.Fatalf("the dashboard's fleet-wide quantile panel has %d queries, want one per quantile of the rule (%d)", len(panel), len(fleetQuantiles))
	}
	return panel
}
