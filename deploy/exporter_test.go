package deploy

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/logwindow/logwindow_exporter/config"
	"github.com/logwindow/logwindow_exporter/internal/testutil/deploytest"
	"github.com/logwindow/logwindow_exporter/internal/testutil/metrictest"
	"github.com/logwindow/logwindow_exporter/internal/testutil/testexec"
)

// nginxTimeLayout is nginx's $time_local.
const nginxTimeLayout = "02/Jan/2006:15:04:05 -0700"

// parseExposition decodes the text exposition format.
func parseExposition(t *testing.T, text []byte) map[string]*dto.MetricFamily {
	t.Helper()
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(bytes.NewReader(text))
	if err != nil {
		t.Fatalf("%v\n%s", err, text)
	}
	return fams
}

// TestNginxLogMatchesRules has the exporter replay what nginx, run with the example's
// nginx.conf, logged: every request must be counted by example-rules.yaml.
func TestNginxLogMatchesRules(t *testing.T) {
	bin := builtBinary(t)
	lines := runNginx(t, []string{"/", "/missing?q=1", "/"})
	log := filepath.Join(t.TempDir(), "access.log")
	if err := os.WriteFile(log, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// The exposition is stdout; the log (which warns that the example's input is another
	// path) is stderr.
	replay := exec.Command(bin, "--config.file=../example-rules.yaml", "--replay="+log)
	var stderr strings.Builder
	replay.Stderr = &stderr
	stdout, err := replay.Output()
	if err != nil {
		t.Fatalf("--replay: %v\n%s", err, stderr.String())
	}
	out := string(stdout)
	fams := parseExposition(t, []byte(out))
	if got := metrictest.Sum(fams, "nginx_http_requests_total"); got != 3 {
		t.Errorf("nginx_http_requests_total is %v, want the 3 requests nginx logged:\n%s\nexporter output:\n%s", got, strings.Join(lines, "\n"), out)
	}
	// nginx logs $request_time for every request: the duration rule sees all three.
	if got := windowSum(fams["nginx_http_request_duration_seconds_window_events"], "5m"); got != 3 {
		t.Errorf("nginx_http_request_duration_seconds_window_events{window=\"5m\"} sums to %v, want 3", got)
	}
}

// TestRulesReadNginxFormat: the log_format of example-rules.yaml's input is the start of the
// example nginx's, so nginx's lines fit it (a line may go on after the format), up to a
// variable's end: a format ending inside nginx's next literal text would not be its start.
func TestRulesReadNginxFormat(t *testing.T) {
	_, nginx, err := deploytest.NginxAccessLogs(string(mustRead(t, "k8s/nginx.conf")))
	if err != nil {
		t.Fatal(err)
	}
	c, err := config.Load("../example-rules.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Inputs) != 1 || c.Inputs[0].LogFormat == nil {
		t.Fatalf("example-rules.yaml has %d inputs, want one with a log_format", len(c.Inputs))
	}
	rules := c.Inputs[0].LogFormat.Text
	if rest, ok := strings.CutPrefix(nginx, rules); !ok || rest != "" && rest[0] != ' ' {
		t.Errorf("nginx writes %q,\nthe rules read %q: not its start", nginx, rules)
	}
}

// windowSum adds up the samples of a gauge family for one window.
func windowSum(f *dto.MetricFamily, window string) float64 {
	var sum float64
	for _, m := range f.GetMetric() {
		for _, l := range m.GetLabel() {
			if l.GetName() == "window" && l.GetValue() == window {
				sum += m.GetGauge().GetValue()
			}
		}
	}
	return sum
}

// TestDashboardMetricsExist serves example-rules.yaml over a log with a line of each kind
// the dashboard and alerts show, then checks that every metric name they use is exposed,
// in text or, for a native histogram, in the protobuf scrape Prometheus asks for with
// native histograms on.
func TestDashboardMetricsExist(t *testing.T) {
	bin := builtBinary(t)
	dir := t.TempDir()
	now := time.Now().Format(nginxTimeLayout)
	lines := []string{
		`192.0.2.1 - - [` + now + `] "GET /api/items?id=3 HTTP/1.1" 200 512 "-" "curl/8.5.0" 0.004 0.003`,
		`192.0.2.2 - - [` + now + `] "POST /api/orders HTTP/1.1" 502 157 "-" "curl/8.5.0" 0.120 0.001, 0.118`,
		`192.0.2.3 - - [` + now + `] "GET /static/app.js HTTP/1.1" 304 0 "https://shop.example.com/" "Mozilla/5.0" 0.000 -`,
	}
	log := filepath.Join(dir, "access.log")
	if err := os.WriteFile(log, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	config := deploytest.WriteServedRules(t, mustRead(t, "../example-rules.yaml"), dir, log)
	withSyslogInput(t, config)
	e := testexec.StartExporter(t, bin, "--config.file="+config)
	want := queryMetricNames(t)
	fams := e.WaitCheck(t, func(m metrictest.Families) error {
		native, err := nativeHistograms(e)
		if err != nil {
			return err
		}
		var missing []string
		for name, users := range want {
			if !exposes(m, name) && !native[name] {
				missing = append(missing, fmt.Sprintf("%s, used by %q", name, users))
			}
		}
		if len(missing) > 0 {
			sort.Strings(missing)
			return fmt.Errorf("not exposed: %s", strings.Join(missing, "; "))
		}
		return nil
	})
	if got := metrictest.Sum(fams, "nginx_http_requests_total"); got != float64(len(lines)) {
		t.Errorf("nginx_http_requests_total is %v, want %d", got, len(lines))
	}
}

// nativeHistograms scrapes e in protobuf and returns the families holding a native
// histogram.
func nativeHistograms(e *testexec.Exporter) (map[string]bool, error) {
	format := expfmt.NewFormat(expfmt.TypeProtoDelim)
	body, err := e.Fetch("/metrics", http.Header{"Accept": {string(format)}})
	if err != nil {
		return nil, err
	}
	native := map[string]bool{}
	dec := expfmt.NewDecoder(bytes.NewReader(body), format)
	for {
		var mf dto.MetricFamily
		if err := dec.Decode(&mf); err == io.EOF {
			return native, nil
		} else if err != nil {
			return nil, err
		}
		for _, m := range mf.GetMetric() {
			if h := m.GetHistogram(); h.GetZeroThreshold() > 0 || len(h.GetPositiveSpan())+len(h.GetNegativeSpan()) > 0 {
				native[mf.GetName()] = true
			}
		}
	}
}

// withSyslogInput adds to the rule file config a syslog input on a free UDP port, in the
// format of its file input, so that the self-metrics of socket inputs are exposed too.
func withSyslogInput(t *testing.T, config string) {
	t.Helper()
	text := string(mustRead(t, config))
	format := regexp.MustCompile(`(?m)^    log_format: .*$`).FindString(text)
	if format == "" {
		t.Fatal("the rule file's input has no log_format")
	}
	input := fmt.Sprintf("\ninputs:\n  - name: syslog\n    syslog: udp://127.0.0.1:%d\n%s\n", testexec.FreeUDPPort(t), format)
	text, err := replaceOnce(text, "\ninputs:\n", input, config)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(config, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

// exposes reports whether fams has the series name: a family, or the _bucket, _sum or
// _count series of a histogram family.
func exposes(fams map[string]*dto.MetricFamily, name string) bool {
	if fams[name] != nil {
		return true
	}
	for _, suffix := range []string{"_bucket", "_sum", "_count"} {
		if base, ok := strings.CutSuffix(name, suffix); ok && fams[base].GetType() == dto.MetricType_HISTOGRAM {
			return true
		}
	}
	return false
}
