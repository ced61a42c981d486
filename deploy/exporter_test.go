package deploy

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

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

// counterSum adds up the samples of a counter family.
func counterSum(f *dto.MetricFamily) float64 {
	var sum float64
	for _, m := range f.GetMetric() {
		sum += m.GetCounter().GetValue()
	}
	return sum
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
	out := runTool(t, ".", bin, "--config.file=../example-rules.yaml", "--replay="+log)
	fams := parseExposition(t, []byte(out))
	if got := counterSum(fams["nginx_http_requests_total"]); got != 3 {
		t.Errorf("nginx_http_requests_total is %v, want the 3 requests nginx logged:\n%s\nexporter output:\n%s", got, strings.Join(lines, "\n"), out)
	}
	// nginx logs $request_time for every request: the duration rule sees all three.
	if got := windowSum(fams["nginx_http_request_duration_seconds_window_events"], "5m"); got != 3 {
		t.Errorf("nginx_http_request_duration_seconds_window_events{window=\"5m\"} sums to %v, want 3", got)
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

// servedConfig is example-rules.yaml following path from its beginning.
func servedConfig(t *testing.T, dir, path string) string {
	t.Helper()
	text, err := ServeRulesFrom(mustRead(t, "../example-rules.yaml"), path)
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, "rules.yaml")
	if err := os.WriteFile(p, text, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestDashboardMetricsExist serves example-rules.yaml over a log with a line of each kind
// the dashboard and alerts show, then checks that every metric name they use is exposed.
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
	addr := fmt.Sprintf("127.0.0.1:%d", testexec.FreePort(t))
	p, err := testexec.Launch(dir, "logwindow_exporter", []string{bin, "--config.file=" + servedConfig(t, dir, log), "--web.listen-address=" + addr})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = p.Stop(testexec.StopTimeout) }()

	want := queryMetricNames(t)
	client := &http.Client{Timeout: 5 * time.Second}
	var fams map[string]*dto.MetricFamily
	var missing []string
	for deadline := time.Now().Add(15 * time.Second); ; {
		missing = missing[:0]
		if resp, err := client.Get("http://" + addr + "/metrics"); err == nil {
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			fams = parseExposition(t, body)
			for name := range want {
				if !exposes(fams, name) {
					missing = append(missing, name)
				}
			}
			if len(missing) == 0 {
				break
			}
		}
		if time.Now().After(deadline) {
			sort.Strings(missing)
			for _, name := range missing {
				t.Errorf("%s, used by %q, is not exposed", name, want[name])
			}
			t.Fatalf("end of the exporter's log:\n%s", testexec.Tail(p.Output, 40))
		}
		time.Sleep(100 * time.Millisecond)
	}
	if got := counterSum(fams["nginx_http_requests_total"]); got != float64(len(lines)) {
		t.Errorf("nginx_http_requests_total is %v, want %d", got, len(lines))
	}
}

func TestServeRulesFrom(t *testing.T) {
	example := string(mustRead(t, "../example-rules.yaml"))
	cases := []struct {
		name, rules, wantErr string
	}{
		{"example", example, ""},
		{"no input path", strings.Replace(example, "/var/log/nginx/access.log", "/logs/*.log", 1), `"path: /var/log/nginx/access.log" 0 times`},
		{"start_at twice", example + "# start_at: end\n", `"start_at: end" 2 times`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := ServeRulesFrom([]byte(c.rules), "/tmp/x/access.log")
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("error %v, want one holding %q", err, c.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			// Only the two lines of the input change, in place.
			was, is := strings.Split(c.rules, "\n"), strings.Split(string(got), "\n")
			if len(was) != len(is) {
				t.Fatalf("%d lines became %d", len(was), len(is))
			}
			var changed []string
			for i := range was {
				if was[i] != is[i] {
					changed = append(changed, strings.TrimSpace(is[i]))
				}
			}
			if want := []string{"path: /tmp/x/access.log", "start_at: beginning"}; !slices.Equal(changed, want) {
				t.Errorf("changed lines %q, want %q", changed, want)
			}
		})
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
