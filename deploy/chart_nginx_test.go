package deploy

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/logwindow/logwindow_exporter/config/logformat"
	"github.com/logwindow/logwindow_exporter/internal/testutil/metrictest"
	"github.com/logwindow/logwindow_exporter/internal/testutil/testexec"
)

// podFormat is a pod of TestChartPodLogFormats: nginx logging in one format, as the pod's
// container writes it to stdout.
type podFormat struct {
	format    string // the log_format nginx is given, and the candidate auto must choose
	text      string // its format string
	escape    string // its escape=, if any
	namespace string
	pod       string
	container string
	// requestTime reads the $request_time of a line of the format; nil: it has none.
	requestTime func(line string) (string, error)
}

// jsonPodFormat is an escape=json template whose keys are nginx's variable names, what
// auto's json candidate reads.
const jsonPodFormat = `{"remote_addr":"$remote_addr","remote_user":"$remote_user","time_local":"$time_local",` +
	`"request":"$request","status":$status,"body_bytes_sent":$body_bytes_sent,"http_referer":"$http_referer",` +
	`"http_user_agent":"$http_user_agent","request_time":$request_time,"upstream_response_time":"$upstream_response_time"}`

// nextToLast reads the field before the last of a line split at spaces.
func nextToLast(line string) (string, error) {
	f := strings.Fields(line)
	if len(f) < 2 {
		return "", fmt.Errorf("%d fields", len(f))
	}
	return f[len(f)-2], nil
}

var podFormats = []podFormat{
	{format: "combined", text: logformat.NginxPresets["combined"], namespace: "web", pod: "front-7d4b9c8f6d-x2kqz", container: "nginx"},
	{format: "main", text: logformat.NginxPresets["main"], namespace: "web", pod: "static-5lz9w", container: "nginx"},
	{format: "upstreaminfo", text: logformat.NginxPresets["upstreaminfo"], namespace: "ingress-nginx", pod: "ingress-nginx-controller-6c8f9b7d4-q2w8r", container: "controller",
		// After the user agent's closing quote: $request_length $request_time ...
		requestTime: func(line string) (string, error) {
			f := strings.Fields(line[strings.LastIndex(line, `" `)+2:])
			if len(f) < 2 {
				return "", fmt.Errorf("%d fields after the user agent", len(f))
			}
			return f[1], nil
		}},
	{format: "combined_upstream_time", text: logformat.NginxPresets["combined_upstream_time"], namespace: "shop", pod: "cart-0", container: "nginx", requestTime: nextToLast},
	{format: "json", text: jsonPodFormat, escape: "json", namespace: "api", pod: "gateway-59d8f7c6b-abcde", container: "nginx",
		requestTime: func(line string) (string, error) {
			var rec struct {
				RequestTime json.Number `json:"request_time"`
			}
			err := json.Unmarshal([]byte(line), &rec)
			return rec.RequestTime.String(), err
		}},
}

// TestChartPodLogFormats runs a real nginx writing the same requests in five formats
// (combined, the nginx image's main, ingress-nginx's upstreaminfo, combined with the times,
// an escape=json template), each as a pod's container log in the kubelet's tree, its CRI
// stdout lines interleaved with nginx's error log on stderr, and the chart's DaemonSet with
// its defaults (logFormat: auto) reading them: every pod's requests are counted exactly by
// status, its request times summed exactly where its format has them (and no time series
// where it has not), each file is read in its own format, and no line is unmatched or
// dropped.
func TestChartPodLogFormats(t *testing.T) {
	if testing.Short() && !testexec.Required {
		t.Skip("-short: the test runs nginx and the built exporter")
	}
	nginx := testexec.LookTools(t, "Debian: apt-get install nginx", "nginx")["nginx"]
	e, root := startChartDaemonSet(t)
	access, errorLog := runFormatsNginx(t, nginx)
	if len(errorLog) < 3 {
		t.Fatalf("nginx's error log has %d lines, want some to interleave", len(errorLog))
	}

	counts := map[[2]string]float64{} // method, status
	for _, r := range podRequests {
		counts[[2]string{r.method, strconv.Itoa(r.status)}] += podRounds
	}
	var wants []metrictest.Sample
	times := map[string]float64{} // the request times each format's log has, summed
	for _, f := range podFormats {
		logged := access[f.format]
		if len(logged) != len(podRequests)*podRounds {
			t.Fatalf("%s: nginx logged %d lines, want %d", f.format, len(logged), len(podRequests)*podRounds)
		}
		pod := podLabels(f)
		for k, n := range counts {
			labels := metrictest.WithLabel(metrictest.WithLabel(pod, "method", k[0]), "status", k[1])
			wants = append(wants, metrictest.Sample{Family: "nginx_http_requests_total", Labels: labels, Want: n})
		}
		if f.requestTime != nil {
			sum := 0.0
			for _, l := range logged {
				field, err := f.requestTime(l)
				v, err2 := strconv.ParseFloat(field, 64)
				if err != nil || err2 != nil {
					t.Fatalf("%s: %q: request time %q: %v %v", f.format, l, field, err, err2)
				}
				sum += v
			}
			times[f.format] = sum
		}
		writePodLog(t, root, f, logged, errorLog)
	}

	total := float64(len(podFormats) * len(podRequests) * podRounds)
	m := e.WaitCheck(t, func(m metrictest.Families) error {
		if got := metrictest.Sum(m, "nginx_http_requests_total"); got != total {
			return fmt.Errorf("%v requests counted in all, want %v", got, total)
		}
		if err := metrictest.Match(m, wants); err != nil {
			return err
		}
		for _, f := range podFormats {
			if want, ok := times[f.format]; ok && !approx(sumOf(m, "nginx_http_request_duration_seconds_total", podLabels(f)), want) {
				return fmt.Errorf("%s: request times %v, want the %v logged", f.format, sumOf(m, "nginx_http_request_duration_seconds_total", podLabels(f)), want)
			}
		}
		return nil
	})
	for _, f := range podFormats {
		if f.requestTime == nil && metrictest.Value(m, "nginx_http_request_duration_seconds_total", podLabels(f)) >= 0 {
			t.Errorf("%s: a request time of a format without one", f.format)
		}
		// The upstream times: of the /slow requests where the format has them.
		hasUpstream := strings.Contains(f.text, "$upstream_response_time")
		if got := sumOf(m, "nginx_http_upstream_response_time_seconds_total", podLabels(f)); (got >= 0.02*podRounds) != hasUpstream {
			t.Errorf("%s: upstream times %v; the format has them: %v", f.format, got, hasUpstream)
		}
		if n := metrictest.Value(m, "logwindow_input_file_format", map[string]string{"input": f.container, "format": autoChoice(f)}); n < 1 {
			t.Errorf("no file of input %s read as %s", f.container, autoChoice(f))
		}
	}
	t.Logf("%v requests of %d pods counted by status, request times %v, error log lines skipped: %v",
		total, len(podFormats), times, metrictest.Sum(m, "logwindow_input_lines_total")-float64(len(podFormats)*len(podRequests)*podRounds))
	for _, fam := range []string{"logwindow_input_unmatched_lines_total", "logwindow_input_malformed_lines_total", "logwindow_rule_dropped_lines_total"} {
		if m[fam] == nil {
			t.Errorf("%s is not exposed", fam)
		}
		if got := metrictest.Sum(m, fam); got != 0 {
			t.Errorf("%s %v, want 0", fam, got)
		}
	}
}

// podLabels are the labels of the series of f's pod.
func podLabels(f podFormat) map[string]string {
	return map[string]string{"namespace": f.namespace, "pod": f.pod, "container": f.container}
}

// sumOf adds up the samples of a family whose labels include want (the request times of
// a pod are by status class).
func sumOf(m metrictest.Families, family string, want map[string]string) float64 {
	sum := 0.0
next:
	for _, s := range m[family].GetMetric() {
		have := map[string]string{}
		for _, l := range s.GetLabel() {
			have[l.GetName()] = l.GetValue()
		}
		for k, v := range want {
			if have[k] != v {
				continue next
			}
		}
		sum += s.GetCounter().GetValue() + s.GetUntyped().GetValue() + s.GetGauge().GetValue()
	}
	return sum
}

// approx reports whether two sums of the same values, added in different orders, agree.
func approx(a, b float64) bool { return math.Abs(a-b) <= 1e-9*max(1, math.Abs(b)) }

// autoChoice is the format logwindow_input_file_format names for a file of f.
func autoChoice(f podFormat) string {
	if f.escape == "json" {
		return "json"
	}
	return f.format
}

// podRequest is a request of TestChartPodLogFormats and nginx's answer.
type podRequest struct {
	method, target string
	status         int
}

// The requests, each sent podRounds times: answers nginx makes itself, a file it does not
// find and a refused upstream (both logged on its error log too), and an upstream that
// takes its time, so that the times nginx logs are not all 0.000.
var podRequests = []podRequest{
	{"GET", "/", 200},
	{"POST", "/a/b?x=1", 200},
	{"GET", "/missing", 404},
	{"DELETE", "/boom", 500},
	{"GET", "/bad-gateway?z", 502},
	{"GET", "/slow", 200},
}

const podRounds = 3

// podNginxConf writes every request in each of podFormats' formats to a log of its name.
const podNginxConf = `{{user}}worker_processes 1;
pid {{dir}}/nginx.pid;
error_log {{dir}}/error.log notice;
events { worker_connections 64; }
http {
    default_type text/plain;
{{formats}}
    client_body_temp_path {{dir}}/client_temp;
    proxy_temp_path {{dir}}/proxy_temp;
    server {
        listen 127.0.0.1:{{port}};
{{logs}}
        # What the ingress-nginx controller sets for upstreaminfo.
        set $proxy_upstream_name "web-front-80";
        set $proxy_alternative_upstream_name "";
        set $req_id $request_id;
        location = /healthz { access_log off; return 200 "ok\n"; }
        location / { return 200 "hello\n"; }
        location = /missing { root {{dir}}/none; }
        location = /boom { return 500; }
        location = /bad-gateway { proxy_pass http://127.0.0.1:{{closed}}; }
        location = /slow { proxy_pass {{slow}}; }
    }
}
`

// runFormatsNginx serves podNginxConf, sends podRequests, stops nginx and returns the
// lines of each access log, by format, and of its error log.
func runFormatsNginx(t *testing.T, bin string) (map[string][]string, []string) {
	t.Helper()
	dir := t.TempDir()
	port := testexec.FreePort(t)
	// The upstream of /slow: nginx measures the time it takes.
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		time.Sleep(20 * time.Millisecond)
		_, _ = io.WriteString(w, "slow\n")
	}))
	defer slow.Close()
	var formats, logs strings.Builder
	for _, f := range podFormats {
		escape := ""
		if f.escape != "" {
			escape = "escape=" + f.escape + " "
		}
		if f.format != "combined" { // nginx's own
			fmt.Fprintf(&formats, "    log_format %s %s'%s';\n", f.format, escape, f.text)
		}
		fmt.Fprintf(&logs, "        access_log %s/%s.log %s;\n", dir, f.format, f.format)
	}
	user := ""
	if os.Geteuid() == 0 {
		user = "user root;\n"
	}
	conf := strings.NewReplacer("{{user}}", user, "{{dir}}", dir, "{{formats}}", formats.String(), "{{logs}}", logs.String(),
		"{{port}}", strconv.Itoa(port), "{{slow}}", slow.URL, "{{closed}}", strconv.Itoa(testexec.FreePort(t))).Replace(podNginxConf)
	confPath := filepath.Join(dir, "nginx.conf")
	if err := os.WriteFile(confPath, []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	errPath := filepath.Join(dir, "error.log")
	p := testexec.StartTest(t, dir, "nginx", []string{bin, "-p", dir, "-c", confPath, "-e", errPath, "-g", "daemon off;"}, errPath)
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	testexec.WaitHTTP(t, p, base+"/healthz")
	client := &http.Client{Timeout: 5 * time.Second}
	defer client.CloseIdleConnections()
	for range podRounds {
		for _, r := range podRequests {
			req, err := http.NewRequest(r.method, base+r.target, nil)
			if err != nil {
				t.Fatal(err)
			}
			resp, err := client.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != r.status {
				t.Fatalf("%s %s: %s, want %d", r.method, r.target, resp.Status, r.status)
			}
		}
	}
	if err := p.Stop(testexec.StopTimeout); err != nil {
		t.Fatal(err)
	}
	read := func(path string) []string {
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		return strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
	}
	access := map[string][]string{}
	for _, f := range podFormats {
		access[f.format] = read(filepath.Join(dir, f.format+".log"))
	}
	return access, read(errPath)
}

// writePodLog writes a pod's container log as the kubelet does: the access log on stdout,
// nginx's error log on stderr between its lines, in CRI lines, the second access line in
// two parts with an error line between them.
func writePodLog(t *testing.T, root string, f podFormat, access, errorLog []string) {
	t.Helper()
	// The pod's UID: any characters but _ and /.
	dir := filepath.Join(root, fmt.Sprintf("%s_%s_%x", f.namespace, f.pod, f.pod), f.container)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	cri := func(stream, tag, msg string) {
		fmt.Fprintf(&b, "%s %s %s %s\n", time.Now().UTC().Format(time.RFC3339Nano), stream, tag, msg)
	}
	errs := errorLog
	for i, l := range access {
		if i == 1 {
			cri("stdout", "P", l[:len(l)/2])
			cri("stderr", "F", errs[0])
			cri("stdout", "F", l[len(l)/2:])
			errs = errs[1:]
			continue
		}
		cri("stdout", "F", l)
		if len(errs) > 0 {
			cri("stderr", "F", errs[0])
			errs = errs[1:]
		}
	}
	for _, l := range errs {
		cri("stderr", "F", l)
	}
	if err := os.WriteFile(filepath.Join(dir, "0.log"), []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
}
