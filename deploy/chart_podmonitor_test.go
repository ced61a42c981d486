package deploy

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/logwindow/logwindow_exporter/internal/testutil/testexec"
)

// TestChartDaemonSetPodMonitorLabels scrapes the chart's DaemonSet exporter with a real
// Prometheus configured as the Prometheus operator configures it from the chart's
// PodMonitor: the operator gives every target of a PodMonitor the labels namespace, pod and
// container of the pod scraped (the exporter's), and honor_labels as the endpoint says.
// The chart's rules label nginx's series by the namespace, pod and container whose log
// they counted: those must reach Prometheus as they are, not be renamed exported_namespace
// and the like under the exporter pod's own, which would put every request of a node on
// the exporter. The exporter's own series, which have none of them, keep the target's.
func TestChartDaemonSetPodMonitorLabels(t *testing.T) {
	proms := testexec.Prometheuses(t)
	m := renderChart(t, chartCase{name: "daemonset", mode: "daemonset", operator: true})
	if len(m.podMonitors) != 1 {
		t.Fatalf("%d PodMonitors, want one", len(m.podMonitors))
	}
	var honor bool
	var path string
	for _, pm := range m.podMonitors {
		e := pm.Spec.PodMetricsEndpoints[0]
		honor = e.HonorLabels
		path = e.Path
	}

	e, root := startChartDaemonSet(t)
	now := time.Now().UTC()
	dir := filepath.Join(root, "web_front-1_0d2f3c4e-1111-4222-8333-000000000001", "nginx")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	line := fmt.Sprintf("%s stdout F 10.0.0.1 - - [%s] \"GET / HTTP/1.1\" 503 612 \"-\" \"curl/8.5\" 0.004 0.003\n",
		now.Format(time.RFC3339Nano), now.Format("02/Jan/2006:15:04:05 -0700"))
	if err := os.WriteFile(filepath.Join(dir, "0.log"), []byte(line), 0o644); err != nil {
		t.Fatal(err)
	}

	// The exporter pod's labels, as the operator's relabelings set them from
	// __meta_kubernetes_namespace, __meta_kubernetes_pod_name and
	// __meta_kubernetes_pod_container_name.
	target := map[string]string{"namespace": "monitoring", "pod": "lw-logwindow-exporter-x7k2p", "container": "logwindow-exporter"}
	for _, p := range proms {
		t.Run(p.Name(), func(t *testing.T) {
			dir := t.TempDir()
			config := filepath.Join(dir, "prometheus.yml")
			text := fmt.Sprintf(`global: {scrape_interval: 1s, scrape_timeout: 1s}
scrape_configs:
  - job_name: podMonitor/monitoring/lw-logwindow-exporter/0
    honor_labels: %t
    metrics_path: %q
    static_configs:
      - targets: [%q]
        labels: {namespace: %q, pod: %q, container: %q, endpoint: metrics}
`, honor, path, e.Addr(), target["namespace"], target["pod"], target["container"])
			if err := os.WriteFile(config, []byte(text), 0o644); err != nil {
				t.Fatal(err)
			}
			addr := fmt.Sprintf("127.0.0.1:%d", testexec.FreePort(t))
			proc := testexec.StartTest(t, dir, "prometheus", []string{
				p.Path, "--config.file=" + config, "--storage.tsdb.path=" + filepath.Join(dir, "data"), "--web.listen-address=" + addr,
			})
			testexec.WaitHTTP(t, proc, "http://"+addr+"/-/ready")

			requests := promSeries(t, addr, `nginx_http_requests_total{status="503"}`)
			if len(requests) != 1 {
				t.Fatalf("nginx_http_requests_total{status=\"503\"}: %v, want one series", requests)
			}
			for k, want := range map[string]string{"namespace": "web", "pod": "front-1", "container": "nginx"} {
				if got := requests[0][k]; got != want {
					t.Errorf("Prometheus has %s=%q, want the nginx pod's %q: %v", k, got, want, requests[0])
				}
				if got, ok := requests[0]["exported_"+k]; ok {
					t.Errorf("Prometheus renamed the nginx pod's %s to exported_%s=%q: %v", k, k, got, requests[0])
				}
			}
			files := promSeries(t, addr, `logwindow_input_files{input="nginx"}`)
			for k, want := range target {
				if len(files) != 1 || files[0][k] != want {
					t.Errorf("logwindow_input_files: %v, want the exporter pod's %s=%q", files, k, want)
				}
			}
		})
	}
}

// promSeries waits up to 30 s for the Prometheus at addr to have series of the instant
// query q, and returns their label sets.
func promSeries(t *testing.T, addr, q string) []map[string]string {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := http.Get("http://" + addr + "/api/v1/query?query=" + url.QueryEscape(q))
		var body struct {
			Status string `json:"status"`
			Data   struct {
				Result []struct {
					Metric map[string]string `json:"metric"`
				} `json:"result"`
			} `json:"data"`
		}
		if err == nil {
			err = json.NewDecoder(resp.Body).Decode(&body)
			resp.Body.Close()
		}
		if err == nil && body.Status == "success" && len(body.Data.Result) > 0 {
			var out []map[string]string
			for _, r := range body.Data.Result {
				out = append(out, r.Metric)
			}
			return out
		}
		if time.Now().After(deadline) {
			t.Fatalf("query %s: no series after 30 s (%v, %s)", q, err, strings.TrimSpace(body.Status))
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// TestChartPodMonitorHonorsLabelsInEveryMode: in syslog and sidecar modes too the series
// are of other pods than the exporter's own (the nginx that sent a datagram, the backends
// an ingress controller proxies to), and a rule that labels them so (pod:
// '${syslog_hostname}', the hostname nginx sends being its pod's name; a namespace from
// $proxy_upstream_name) must not have them renamed exported_pod and the like under the
// target's. The exporter's own series, which have none of those labels, keep the target's.
func TestChartPodMonitorHonorsLabelsInEveryMode(t *testing.T) {
	for _, c := range chartCases {
		if !c.operator {
			continue
		}
		t.Run(c.name, func(t *testing.T) {
			m := renderChart(t, c)
			if len(m.podMonitors) != 1 {
				t.Fatalf("%d PodMonitors, want one", len(m.podMonitors))
			}
			for name, pm := range m.podMonitors {
				for i, e := range pm.Spec.PodMetricsEndpoints {
					if !e.HonorLabels {
						t.Errorf("PodMonitor %s endpoint %d: honorLabels false", name, i)
					}
				}
			}
		})
	}
}
