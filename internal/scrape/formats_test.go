package scrape

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"google.golang.org/protobuf/encoding/protodelim"
	"google.golang.org/protobuf/encoding/prototext"
	"google.golang.org/protobuf/proto"

	"github.com/logwindow/logwindow_exporter/exporter"
	"github.com/logwindow/logwindow_exporter/internal/testutil/metrictest"
	"github.com/logwindow/logwindow_exporter/internal/testutil/testexec"
	"github.com/logwindow/logwindow_exporter/windows/sketch"
)

var update = flag.Bool("update", false, "rewrite the golden files under exporter/testdata/ from the current output")

// formatRules have a family of every kind: counters, gauges, quantiles whose sketch is
// also a native histogram (by default, having no buckets), a histogram with buckets and a
// native one, one with buckets only, top values, and distinct counts with their registers
// (labels sorting before and after theirs); a label sorting after the window's,
// and a HELP text with quotes and a backslash.
const formatRules = `
global: {windows: [1m, 5m], max_series_per_rule: 100}
patterns: {LINE: '^(?P<method>[A-Z]+) (?P<path>[^ ]+) (?P<status>[0-9]{3}) (?P<time>[-0-9.]+)$'}
rules:
  - name: http_requests
    help: 'Requests, "quoted" \ once.'
    match: '%{LINE}'
    labels: {method: '${method}', status: '${status}'}
  - name: request_duration_seconds
    help: Request time.
    match: '%{LINE}'
    value: time
    labels: {method: '${method}'}
    aggregations: [window, quantiles]
  - name: request_time_seconds
    help: Request time by status.
    match: '%{LINE}'
    value: time
    labels: {status: '${status}', zone: eu}
    buckets: [0.1, 1]
    native_histogram: true
  - name: upstream_time_seconds
    help: Upstream time.
    match: '%{LINE}'
    value: time
    buckets: [0.25, 2.5]
  - name: path_requests
    help: Requests by path.
    match: '%{LINE}'
    labels: {method: '${method}', path: '${path}'}
    top: {label: path, k: 2}
  - name: path_clients
    help: Paths.
    match: '%{LINE}'
    labels: {method: '${method}', zone: eu}
    distinct: '${path}'
    distinct_registers: 16
`

// formatScrape is a Collector over formatRules fed lines over two minutes: positive times,
// then in the last minute a zero written -0, which counts, and negative ones, which are
// dropped as negative.
func formatScrape(t testing.TB) *Collector {
	p, set := parserSet(t, formatRules)
	k := set.NewSink()
	k.SetNow(start, start)
	for i := range 300 {
		method := []string{"GET", "POST"}[i%2]
		status := []string{"200", "200", "404", "500"}[i%4]
		path := fmt.Sprintf("/p/%d", i%7)
		p.Parse("app", fmt.Appendf(nil, "%s %s %s %g", method, path, status, math.Exp(float64(i%97)/10-7)), k)
	}
	k.SetNow(start+100, start+100)
	for i := range 10 {
		p.Parse("app", fmt.Appendf(nil, "GET /p/1 200 %g", -float64(i)/20), k)
	}
	now := int64(start + 110)
	return collectorAt(fixed(set), &now)
}

// encoded is a scrape of c in format, with gathered merged in.
func encoded(t testing.TB, c *Collector, gathered []*dto.MetricFamily, format expfmt.Format) []byte {
	t.Helper()
	var b bytes.Buffer
	s := c.Scrape(nil, format)
	defer s.Close()
	x := exporter.NewWriter(&b, format, gathered)
	if err := s.Write(x); err != nil {
		t.Fatal(err)
	}
	if err := x.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// TestFormatsGolden compares a scrape of the rule families in each format with its golden
// file (-update rewrites them): the text format, OpenMetrics and delimited protobuf.
func TestFormatsGolden(t *testing.T) {
	c := formatScrape(t)
	for _, tc := range []struct {
		file   string
		format expfmt.Format
	}{
		{"scrape.prom", expfmt.FmtText},
		{"scrape.om.txt", expfmt.FmtOpenMetrics_1_0_0},
		{"scrape.pb", expfmt.FmtProtoDelim},
	} {
		t.Run(tc.file, func(t *testing.T) {
			got := encoded(t, c, nil, tc.format)
			golden := filepath.Join("..", "..", "exporter", "testdata", tc.file)
			if *update {
				if err := os.WriteFile(golden, got, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatal(err)
			}
			if bytes.Equal(got, want) {
				return
			}
			if tc.format == expfmt.FmtProtoDelim {
				got, want = protoText(t, got), protoText(t, want)
			}
			t.Errorf("scrape differs from %s (rerun with -update and review the diff):\n%s", golden, firstDiff(got, want))
		})
	}
}

// protoText is a delimited protobuf scrape as text, for messages.
func protoText(t testing.TB, b []byte) []byte {
	var out []byte
	for _, mf := range decodeProto(t, b) {
		out = append(out, prototext.Format(mf)...)
		out = append(out, '\n')
	}
	return out
}

// firstDiff shows the first line where got and want differ.
func firstDiff(got, want []byte) string {
	g, w := strings.Split(string(got), "\n"), strings.Split(string(want), "\n")
	for i := range max(len(g), len(w)) {
		var gl, wl string
		if i < len(g) {
			gl = g[i]
		}
		if i < len(w) {
			wl = w[i]
		}
		if gl != wl {
			return fmt.Sprintf("line %d:\n got: %s\nwant: %s", i+1, gl, wl)
		}
	}
	return "(same lines)"
}

func decodeProto(t testing.TB, b []byte) []*dto.MetricFamily {
	t.Helper()
	var out []*dto.MetricFamily
	dec := expfmt.NewDecoder(bytes.NewReader(b), expfmt.NewFormat(expfmt.TypeProtoDelim))
	for {
		mf := &dto.MetricFamily{}
		if err := dec.Decode(mf); errors.Is(err, io.EOF) {
			return out
		} else if err != nil {
			t.Fatal(err)
		}
		out = append(out, mf)
	}
}

// TestProtobufRoundTrip decodes a protobuf scrape with client_golang's expfmt decoder:
// every family marshals back to the bytes sent (the canonical encoding), holds what the
// text format shows (its classic histograms as gauge histograms, without the +Inf bucket
// the count implies), and each native histogram holds the rule's quantile sketch: the
// bucket where its cumulative count reaches rank ⌈q·n⌉ holds the value the quantile gauge
// of the same window reports. The self-metrics come along as the registry gathers them.
func TestProtobufRoundTrip(t *testing.T) {
	c, reg, self := formatScrapeSelf(t)
	raw := encoded(t, c, self, expfmt.FmtProtoDelim)
	got := decodeProto(t, raw)
	var again bytes.Buffer
	for _, mf := range got {
		if _, err := protodelim.MarshalTo(&again, mf); err != nil {
			t.Fatal(err)
		}
	}
	if !bytes.Equal(again.Bytes(), raw) {
		t.Errorf("the decoded families marshal to other bytes than those sent")
	}
	// Served from the registry as a Gatherer only: the handler registers its own counter
	// in a Registerer, which the protobuf scrape above did not gather.
	text, err := metrictest.Scraped(exporter.Handler(c, prometheus.Gatherers{reg}, nil)).Gather()
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]*dto.MetricFamily{}
	for _, mf := range got {
		byName[mf.GetName()] = mf
	}
	natives := 0
	for _, want := range text {
		mf := byName[want.GetName()]
		if mf == nil {
			t.Errorf("protobuf lacks %s", want.GetName())
			continue
		}
		delete(byName, want.GetName())
		mf = proto.Clone(mf).(*dto.MetricFamily)
		if want.GetType() == dto.MetricType_HISTOGRAM {
			want = proto.Clone(want).(*dto.MetricFamily)
			want.Type = dto.MetricType_GAUGE_HISTOGRAM.Enum()
			for _, m := range want.Metric {
				h := m.Histogram
				h.Bucket = slices.DeleteFunc(h.Bucket, func(b *dto.Bucket) bool { return math.IsInf(b.GetUpperBound(), 1) })
			}
			for _, m := range mf.Metric {
				if m.Histogram.Schema != nil {
					natives++
					checkNative(t, mf.GetName(), m, got)
				}
				withoutNative(m.Histogram)
			}
		}
		if !proto.Equal(mf, want) {
			t.Errorf("%s:\n%v\nwant (text):\n%v", want.GetName(), prototext.Format(mf), prototext.Format(want))
		}
	}
	// What the text format has no room for: the native histograms of a rule without buckets.
	for name, mf := range byName {
		if mf.GetType() != dto.MetricType_GAUGE_HISTOGRAM || name != "request_duration_seconds_window_distribution" {
			t.Errorf("protobuf has %s (%v), which the text has not", name, mf.GetType())
			continue
		}
		for _, m := range mf.Metric {
			if len(m.Histogram.Bucket) != 0 {
				t.Errorf("%s has classic buckets", name)
			}
			natives++
			checkNative(t, name, m, got)
		}
	}
	if natives != 2*2+3*2 { // GET and POST, statuses 200, 404 and 500; two windows each
		t.Errorf("%d native histograms, want 10", natives)
	}
}

// withoutNative clears a histogram's native fields.
func withoutNative(h *dto.Histogram) {
	h.Schema, h.ZeroThreshold, h.ZeroCount = nil, nil, nil
	h.PositiveSpan, h.PositiveDelta, h.NegativeSpan, h.NegativeDelta = nil, nil, nil, nil
}

// checkNative checks a native histogram of family name against the quantile gauges of
// the same labels in mfs, when the rule has some, and its counts against its count.
func checkNative(t *testing.T, name string, m *dto.Metric, mfs []*dto.MetricFamily) {
	t.Helper()
	h := nativeFromDTO(t, m.Histogram)
	if h.schema != nativeSchema || m.Histogram.GetZeroThreshold() != nativeZeroThreshold || nativeZeroThreshold >= sketch.MinMagnitude {
		t.Errorf("%s: schema %d, zero threshold %v", name, h.schema, m.Histogram.GetZeroThreshold())
	}
	if n := h.count(); n != float64(m.Histogram.GetSampleCount()) {
		t.Errorf("%s%v: buckets count %v, the histogram %d", name, m.Label, n, m.Histogram.GetSampleCount())
	}
	rule := strings.TrimSuffix(name, "_window_distribution")
	for _, mf := range mfs {
		suffix, _ := strings.CutPrefix(mf.GetName(), rule+"_window_p")
		q, ok := map[string]float64{"50": 0.5, "90": 0.9, "99": 0.99}[suffix]
		if !ok {
			continue
		}
		for _, g := range mf.Metric {
			if !proto.Equal(&dto.Metric{Label: g.Label}, &dto.Metric{Label: m.Label}) {
				continue
			}
			rank := math.Ceil(q * h.count())
			seen := 0.0
			for _, b := range h.buckets() {
				if seen += b.count; seen >= rank {
					if v := g.Gauge.GetValue(); v <= b.lower && !(b.lower == 0 && v == 0) || v > b.upper {
						t.Errorf("%s%v: rank %v is in bucket (%v, %v], the p%s gauge says %v", name, m.Label, rank, b.lower, b.upper, suffix, v)
					}
					break
				}
			}
		}
	}
}

// nativeFromDTO decodes a native histogram's spans and deltas.
func nativeFromDTO(t *testing.T, h *dto.Histogram) *refHistogram {
	out := newRefHistogram(h.GetSchema())
	decode := func(spans []*dto.BucketSpan, deltas []int64, into map[int32]float64) {
		var j int32
		var c int64
		for k, s := range spans {
			if k == 0 {
				j = s.GetOffset()
			} else {
				j += s.GetOffset()
			}
			for range s.GetLength() {
				if len(deltas) == 0 {
					t.Fatalf("spans %v longer than deltas", spans)
				}
				c += deltas[0]
				deltas = deltas[1:]
				if c < 0 {
					t.Fatalf("negative count in %v", h)
				}
				if c != 0 {
					into[j] = float64(c)
				}
				j++
			}
		}
		if len(deltas) != 0 {
			t.Fatalf("deltas %v past the spans", deltas)
		}
	}
	decode(h.PositiveSpan, h.PositiveDelta, out.pos)
	decode(h.NegativeSpan, h.NegativeDelta, out.neg)
	out.zero = float64(h.GetZeroCount())
	return out
}

// TestOpenMetricsPython has Python's prometheus_client parse an OpenMetrics scrape, the
// registry's self-metrics merged in: its parser checks what OpenMetrics 1.0 requires (one
// TYPE per family, a counter's _total samples, a gauge histogram's _bucket, _gcount and
// _gsum and their consistency, # EOF at the end). Debian: apt-get install
// python3-prometheus-client; skipped without it unless LOGWINDOW_E2E=1.
func TestOpenMetricsPython(t *testing.T) {
	c, _, self := formatScrapeSelf(t)
	out := []byte("\n" + testexec.ParseOpenMetrics(t, encoded(t, c, self, expfmt.FmtOpenMetrics_1_0_0)))
	for _, want := range []string{
		"http_requests counter 4",
		"request_time_seconds_window_distribution gaugehistogram ",
		"upstream_time_seconds_window_distribution gaugehistogram ",
		"path_requests_window_top gauge ",
		"path_clients_window_distinct_register gauge 64",
		"logwindow_rule_series gauge 6",
	} {
		if !bytes.Contains(out, []byte("\n"+want)) {
			t.Errorf("parsed families lack %q:\n%s", want, out)
		}
	}
}

// TestPromtoolText has promtool check metrics the text scrape of every kind of family:
// no findings.
func TestPromtoolText(t *testing.T) {
	tools := testexec.LookTools(t, "Debian: apt-get install prometheus", "promtool")
	cmd := exec.Command(tools["promtool"], "check", "metrics")
	cmd.Stdin = bytes.NewReader(encoded(t, formatScrape(t), nil, expfmt.FmtText))
	if out, err := cmd.CombinedOutput(); err != nil || len(out) > 0 {
		t.Fatalf("promtool check metrics: %v\n%s", err, out)
	}
}

// TestProtobufTextFormats writes the protobuf text formats: the families of the delimited
// protobuf as expfmt writes them as text, native histograms included.
func TestProtobufTextFormats(t *testing.T) {
	c := formatScrape(t)
	for _, format := range []expfmt.Format{expfmt.FmtProtoText, expfmt.FmtProtoCompact} {
		got := string(encoded(t, c, nil, format))
		for _, want := range []string{`"request_duration_seconds_window_distribution"`, "GAUGE_HISTOGRAM", "schema:", `"http_requests_total"`} {
			if !strings.Contains(got, want) {
				t.Errorf("%s: no %s in\n%.2000s", format, want, got)
			}
		}
	}
}

// formatScrapeSelf is formatScrape's collector, a registry of it and the self-metrics the
// registry gathers, which every format's scrape merges in.
func formatScrapeSelf(t *testing.T) (*Collector, *prometheus.Registry, []*dto.MetricFamily) {
	t.Helper()
	c := formatScrape(t)
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(c)
	self, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	return c, reg, self
}
