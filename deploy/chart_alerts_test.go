package deploy

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"text/template"

	"sigs.k8s.io/yaml"

	"github.com/logwindow/logwindow_exporter/internal/testutil/testexec"
)

// chartNoFileTest is a promtool unit test of LogwindowInputNoFile as the chart's
// DaemonSet exports it: two nodes, an input per container name of daemonset.containers
// (nginx, controller), and a cluster without ingress-nginx's controller.
const chartNoFileTest = `rule_files: [rules.yaml]
evaluation_interval: 1m
tests:
  - name: a container name no pod of the cluster has
    interval: 1m
    input_series:
      - series: 'logwindow_input_files{job="monitoring/lw", instance="a:9907", input="nginx"}'
        values: '1x30'
      - series: 'logwindow_input_files{job="monitoring/lw", instance="b:9907", input="nginx"}'
        values: '0x30'
      - series: 'logwindow_input_files{job="monitoring/lw", instance="a:9907", input="controller"}'
        values: '0x30'
      - series: 'logwindow_input_files{job="monitoring/lw", instance="b:9907", input="controller"}'
        values: '0x30'
    alert_rule_test:
      - eval_time: 20m
        alertname: LogwindowInputNoFile
        exp_alerts: []
  - name: no file of any container on any node
    interval: 1m
    input_series:
      - series: 'logwindow_input_files{job="monitoring/lw", instance="a:9907", input="nginx"}'
        values: '0x30'
      - series: 'logwindow_input_files{job="monitoring/lw", instance="a:9907", input="controller"}'
        values: '0x30'
    alert_rule_test:
      - eval_time: 9m
        alertname: LogwindowInputNoFile
        exp_alerts: []
      - eval_time: 11m
        alertname: LogwindowInputNoFile
        exp_alerts:
          - exp_labels: {severity: warning, job: monitoring/lw}
            exp_annotations: {summary: %q, description: %q}
`

// TestChartDaemonSetNoFileAlert: the chart's DaemonSet reads each name of
// daemonset.containers in an input of its own, nginx and controller by default, and a
// cluster runs one of them or the other: the input of the name it lacks finds no file on
// any node. LogwindowInputNoFile, which fires for an input without a file on every
// instance, would fire for it on every such install, for ever. The chart's PrometheusRule
// fires when no input of the DaemonSet has a file instead (the pod logs unreadable,
// unmounted, elsewhere); with one container name it is alerts.yaml's.
func TestChartDaemonSetNoFileAlert(t *testing.T) {
	promtool := testexec.LookTools(t, "Debian: apt-get install prometheus", "promtool")["promtool"]
	m := renderChart(t, chartCase{mode: "daemonset", operator: true})
	pr := m.prometheusRules["lw-logwindow-exporter"]
	if pr == nil {
		t.Fatal("no PrometheusRule")
	}
	rules, err := yaml.Marshal(ruleFile{Groups: pr.Spec.Groups})
	if err != nil {
		t.Fatal(err)
	}
	var annotations map[string]string
	for _, g := range pr.Spec.Groups {
		for _, r := range g.Rules {
			if r.Alert == "LogwindowInputNoFile" {
				annotations = r.Annotations
			}
		}
	}
	if d := annotations["description"]; strings.Contains(d, "$labels.input") || !strings.Contains(d, "nginx, controller") {
		t.Errorf("description %q: it has no input label to name, and should name the containers read", d)
	}
	// As promtool renders them, which checks they are templates it can.
	description := strings.ReplaceAll(annotations["description"], "{{ $labels.job }}", "monitoring/lw")
	test := fmt.Sprintf(chartNoFileTest, annotations["summary"], description)
	dir := t.TempDir()
	for name, body := range map[string][]byte{"rules.yaml": rules, "test.yaml": []byte(test)} {
		if err := os.WriteFile(filepath.Join(dir, name), body, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	runTool(t, dir, promtool, "test", "rules", "test.yaml")

	// alerts.yaml's alert, per input: one container name, one input; or a rule file of the
	// user's, whose inputs are none of daemonset.containers' and may each miss its files.
	var f ruleFile
	if err := yaml.UnmarshalStrict(mustRead(t, "alerts.yaml"), &f); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ name, values string }{
		{"one container name", "daemonset: {containers: [nginx]}\n"},
		{"rules.existingConfigMap", "rules: {existingConfigMap: my-rules}\ndashboard: {enabled: false}\n"},
		{"rules.content", "rules:\n  content: |\n    inputs:\n      - {name: web, path: '/var/log/pods/*/web/*.log', wrapper: cri}\n    rules:\n      - {name: r, match: x}\n"},
	} {
		t.Run(c.name, func(t *testing.T) {
			m := renderChart(t, chartCase{values: c.values, mode: "daemonset", operator: true})
			if !equalJSON(t, m.prometheusRules["lw-logwindow-exporter"].Spec.Groups, f.Groups) {
				t.Errorf("with %q the PrometheusRule's groups are not alerts.yaml's", c.values)
			}
		})
	}
}

// Prometheus runs an alert's annotations as Go templates, so a daemonset.podLogs with
// "{{" in it, which the chart writes into LogwindowInputNoFile's description, must come
// out of them as written, not be taken for an action (which breaks the rule, or runs what
// the value says). The description is parsed and run here as Prometheus does (its
// variables defined before it, text/template), for values with delimiters in them.
func TestChartNoFileAlertPodLogsLiteral(t *testing.T) {
	for _, podLogs := range []string{
		"/var/log/pods",
		"/var/log/{{pods}}",
		"/logs/a}}b{{c",
		`/logs/{{ .Labels }}/{{ printf "%d" 1 }}`,
		`/logs/{{"q\"`,
		"/logs/{{",
	} {
		t.Run(podLogs, func(t *testing.T) {
			values, err := yaml.Marshal(map[string]any{"daemonset": map[string]any{"podLogs": podLogs}})
			if err != nil {
				t.Fatal(err)
			}
			m := renderChart(t, chartCase{values: string(values), mode: "daemonset", operator: true})
			var description string
			for _, g := range m.prometheusRules["lw-logwindow-exporter"].Spec.Groups {
				for _, r := range g.Rules {
					if r.Alert == "LogwindowInputNoFile" {
						description = r.Annotations["description"]
					}
				}
			}
			got, err := expandAlertTemplate(description, map[string]string{"job": "monitoring/lw"})
			if err != nil {
				t.Fatalf("the description is no template Prometheus can run: %v\n%s", err, description)
			}
			if want := "No instance of monitoring/lw has a readable file of any of its inputs (the logs of the containers nginx, controller under " + podLogs + ")"; !strings.HasPrefix(got, want) {
				t.Errorf("description as Prometheus shows it:\n%s\nwant it to start with\n%s", got, want)
			}
		})
	}
}

// expandAlertTemplate runs an alert annotation as Prometheus does (template.Expander):
// text/template, with $labels, $externalLabels, $externalURL and $value defined before
// it; the functions it adds (humanize, ...) are not needed by the chart's annotations.
func expandAlertTemplate(text string, labels map[string]string) (string, error) {
	const defs = "{{$labels := .Labels}}{{$externalLabels := .ExternalLabels}}{{$externalURL := .ExternalURL}}{{$value := .Value}}"
	tmpl, err := template.New("description").Option("missingkey=zero").Parse(defs + text)
	if err != nil {
		return "", err
	}
	var out strings.Builder
	data := struct {
		Labels, ExternalLabels map[string]string
		ExternalURL            string
		Value                  float64
	}{Labels: labels}
	if err := tmpl.Execute(&out, data); err != nil {
		return "", err
	}
	return out.String(), nil
}
