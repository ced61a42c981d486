package deploy

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// chartPodTemplate is the pod template of the DaemonSet or Deployment rendered.
func chartPodTemplate(t *testing.T, m *manifests) *corev1.PodTemplateSpec {
	t.Helper()
	for _, d := range m.daemonSets {
		return &d.Spec.Template
	}
	for _, d := range m.deployments {
		return &d.Spec.Template
	}
	t.Fatal("no DaemonSet or Deployment")
	return nil
}

// TestChartRulesChangeReachesPods: a `helm upgrade` that changes the chart's rule file
// reaches the running exporters. With configWatch (the default) they reload it in place,
// keeping the windows of the rules that did not change, so the pod template stays the same
// and no pod is replaced; with configWatch: false nothing reads the updated file, so the
// pod template changes with it and the pods roll, each starting on the new rules.
func TestChartRulesChangeReachesPods(t *testing.T) {
	for _, mode := range []string{"daemonset", "syslog"} {
		for _, watch := range []bool{true, false} {
			name := mode + map[bool]string{true: " watching", false: " not watching"}[watch]
			t.Run(name, func(t *testing.T) {
				values := "mode: " + mode + "\n"
				if !watch {
					values += "configWatch: false\n"
				}
				render := func(more string) *corev1.PodTemplateSpec {
					return chartPodTemplate(t, renderChart(t, chartCase{values: values + more, mode: mode}))
				}
				before, after := render("logFormat: main\n"), render("logFormat: combined\n")
				if watch && !equalJSON(t, before, after) {
					t.Errorf("a rules change alters the pod template although the exporter reloads the rules: every pod would be replaced, its windows lost (annotations %v, then %v)", before.Annotations, after.Annotations)
				}
				if !watch && equalJSON(t, before, after) {
					t.Error("with configWatch: false a rules change leaves the pod template as it was: no pod is replaced and the exporters keep the old rules until they restart")
				}
				// The same rules render the same template: an upgrade that changes nothing
				// replaces no pod.
				if again := render("logFormat: main\n"); !equalJSON(t, before, again) {
					t.Error("the same values render two pod templates")
				}
			})
		}
	}
}
