package server

import (
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/prometheus/common/promslog"

	"github.com/logwindow/logwindow_exporter/config"
	"github.com/logwindow/logwindow_exporter/internal/pipeline"
)

// documentedFamily is a row of docs/metrics.md's self-metrics tables.
type documentedFamily struct {
	typ    string
	labels []string
}

// backticked is a name written as code in a table's cell.
var backticked = regexp.MustCompile("`([^`]*)`")

// selfMetricsDoc reads the self-metrics of docs/metrics.md: the exporter's own families
// (logwindow_ and promhttp_) of its Self-metrics section's tables, with their types and
// label names.
func selfMetricsDoc(t *testing.T) map[string]documentedFamily {
	t.Helper()
	doc, err := os.ReadFile("../../docs/metrics.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(doc), "\n## Self-metrics\n")
	if !ok {
		t.Fatal("docs/metrics.md has no Self-metrics section")
	}
	section, _, _ = strings.Cut(section, "\n## ")
	out := map[string]documentedFamily{}
	for line := range strings.Lines(section) {
		cells := strings.Split(line, "|")
		if len(cells) < 4 || !strings.HasPrefix(strings.TrimSpace(cells[1]), "`") {
			continue
		}
		typ := strings.TrimSpace(cells[2])
		for _, m := range backticked.FindAllStringSubmatch(cells[1], -1) {
			name := m[1]
			if !strings.HasPrefix(name, "logwindow_") && !strings.HasPrefix(name, "promhttp_") {
				continue
			}
			var labels []string
			if base, list, ok := strings.Cut(name, "{"); ok {
				name = base
				for l := range strings.SplitSeq(strings.TrimSuffix(list, "}"), ",") {
					labels = append(labels, strings.TrimSpace(l))
				}
			}
			if _, dup := out[name]; dup {
				t.Errorf("docs/metrics.md lists %s twice", name)
			}
			out[name] = documentedFamily{typ, labels}
		}
	}
	if len(out) < 30 {
		t.Fatalf("read only %d self-metrics of docs/metrics.md: %v", len(out), out)
	}
	return out
}

// TestSelfMetricsDocumented holds docs/metrics.md to what a scrape exposes: an exporter
// with a file input whose format is chosen, a syslog socket, a storage directory written
// to and the scrape limiter with a budget shows every self-metric the docs list, of the
// type and with the labels they give, and none they do not.
func TestSelfMetricsDocumented(t *testing.T) {
	docs := selfMetricsDoc(t)
	dir := t.TempDir()
	logPath, sock := filepath.Join(dir, "access.log"), filepath.Join(dir, "sys.sock")
	cfgPath := filepath.Join(dir, "rules.yaml")
	rules := fmt.Sprintf(`
global: {windows: [1m]}
inputs:
  - name: web
    path: %s
    log_format: [combined, apache_common]
    start_at: beginning
  - name: sys
    syslog: unixgram://%s
    log_format: combined
rules:
  - name: http_requests
    help: Requests.
    labels: {status: '${status}'}
`, logPath, sock)
	if err := os.WriteFile(cfgPath, []byte(rules), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(logPath, []byte(accessLine("GET", "/", 200, 5)+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	logger := promslog.NewNopLogger()
	p, err := pipeline.Start(cfg, pipeline.Options{Now: time.Now, Logger: logger, PollInterval: 20 * time.Millisecond,
		StoragePath: filepath.Join(dir, "state"), SnapshotInterval: 20 * time.Millisecond, SeriesMaxBytes: 64 << 20, SeriesMaxBytesSource: "flag"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Stop)
	coll := p.Collector()
	reg := NewRegistry(coll)
	// As Serve registers it with a --web.config.file.
	reg.MustRegister(newWebConfigErrors(filepath.Join(dir, "web.yml"), logger, time.Now),
		handshakeErrors{newHTTPServer(http.NotFoundHandler(), Options{Logger: logger}).ErrorLog.Writer().(*serverLog)})
	srv := httptest.NewServer(NewMux(p, coll, reg, Options{Logger: logger, MetricsPath: "/metrics",
		MaxRequests: 2, MaxScrapeBytes: 64 << 20}))
	t.Cleanup(srv.Close)
	conn, err := net.Dial("unixgram", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.Write([]byte("<190>Nov 14 22:13:20 web nginx: " + accessLine("GET", "/", 200, 5))); err != nil {
		t.Fatal(err)
	}
	// The families that wait for an event: a file's format chosen, a snapshot written.
	var got map[string]*dto.MetricFamily
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		got = scrapeText(t, srv.URL+"/metrics")
		if got["logwindow_input_file_format"] != nil && got["logwindow_storage_last_snapshot_timestamp_seconds"] != nil &&
			got["logwindow_input_datagrams_total"] != nil && got["http_requests_total"] != nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for a file's format, a snapshot and a datagram: format %v, snapshot %v, datagrams %v, rule %v",
				got["logwindow_input_file_format"] != nil, got["logwindow_storage_last_snapshot_timestamp_seconds"] != nil,
				got["logwindow_input_datagrams_total"] != nil, got["http_requests_total"] != nil)
		}
	}
	for name, mf := range got {
		if !strings.HasPrefix(name, "logwindow_") && !strings.HasPrefix(name, "promhttp_") {
			continue
		}
		doc, ok := docs[name]
		if !ok {
			t.Errorf("%s is exposed but not in docs/metrics.md", name)
			continue
		}
		if typ := strings.ToLower(mf.GetType().String()); typ != doc.typ {
			t.Errorf("%s: a %s, docs/metrics.md says %s", name, typ, doc.typ)
		}
		for _, m := range mf.GetMetric() {
			var labels []string
			for _, l := range m.GetLabel() {
				labels = append(labels, l.GetName())
			}
			if !slices.Equal(slices.Sorted(slices.Values(labels)), slices.Sorted(slices.Values(doc.labels))) {
				t.Errorf("%s: labels %v, docs/metrics.md says %v", name, labels, doc.labels)
				break
			}
		}
	}
	for name := range docs {
		if got[name] == nil {
			t.Errorf("docs/metrics.md lists %s, which a scrape does not expose", name)
		}
	}
}

// scrapeText fetches url and parses the exposition text.
func scrapeText(t *testing.T, url string) map[string]*dto.MetricFamily {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("scrape: HTTP %d", resp.StatusCode)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return families
}
