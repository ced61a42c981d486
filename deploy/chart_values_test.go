package deploy

import (
	"slices"
	"strings"
	"testing"

	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart/loader"
	corev1 "k8s.io/api/core/v1"
)

// TestChartValueMistakes: values the schema cannot judge alone, whose pod Kubernetes would
// refuse to start or whose rule file the exporter would refuse, fail the install (helm
// install, upgrade and template; helm lint logs a template's fail and goes on) with an
// error naming the value, instead of a pod that never runs.
func TestChartValueMistakes(t *testing.T) {
	for _, c := range []struct{ name, values, want string }{
		// auto's candidates are each of their own escape; the exporter refuses one for all.
		{"escape with auto", "logFormatEscape: json\n", "logFormatEscape"},
		{"escape with auto in syslog mode", "mode: syslog\nlogFormatEscape: none\n", "logFormatEscape"},
		// A pasted directive says its own escape=.
		{"escape with a directive", "logFormat: |\n  log_format x escape=json '$remote_addr [$time_local] \"$request\" $status $body_bytes_sent';\nlogFormatEscape: none\n", "logFormatEscape"},
		// The kubelet refuses to run a container as root that must not be root.
		{"pod as root and non-root", "podSecurityContext: {runAsUser: 0}\n", "runAsNonRoot"},
		{"container as root and non-root", "securityContext: {runAsUser: 0}\n", "runAsNonRoot"},
		{"syslog pod as root and non-root", "mode: syslog\npodSecurityContext: {runAsUser: 0}\n", "runAsNonRoot"},
	} {
		t.Run(c.name, func(t *testing.T) {
			ch, err := loader.Load(chartDir)
			if err != nil {
				t.Fatal(err)
			}
			install := action.NewInstall(&action.Configuration{Log: func(string, ...any) {}})
			install.DryRun, install.ClientOnly, install.Replace = true, true, true
			install.ReleaseName, install.Namespace = "lw", "monitoring"
			cc := chartCase{values: c.values}
			if _, err := install.Run(ch, cc.vals(t)); err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("install with %q: %v, want an error naming %s", c.values, err, c.want)
			}
		})
	}
}

// TestChartRunAsUser: a DaemonSet run as another user, root for a runtime that writes the
// logs 0600 as the README says (runAsUser 0 with runAsNonRoot false), or a user the
// container's securityContext sets, gets its snapshot directory chowned to the user it
// runs as, so that the snapshot can be written.
func TestChartRunAsUser(t *testing.T) {
	for _, c := range []struct{ name, values, owner string }{
		{"default", "", "65532:65532"},
		{"root, as the README says for CRI-O", "podSecurityContext: {runAsUser: 0, runAsNonRoot: false}\n", "0:65532"},
		{"the container's user", "securityContext: {runAsUser: 1000, runAsGroup: 1000}\n", "1000:1000"},
		{"the image's user", "podSecurityContext: {runAsUser: null, runAsGroup: null}\n", "65532:65532"},
	} {
		t.Run(c.name, func(t *testing.T) {
			m := renderChart(t, chartCase{name: c.name, values: c.values, mode: "daemonset"})
			for _, d := range m.daemonSets {
				spec := &d.Spec.Template.Spec
				k := slices.IndexFunc(spec.InitContainers, func(c corev1.Container) bool { return c.Name == "storage-owner" })
				if k < 0 {
					t.Fatal("no init container storage-owner")
				}
				dir, _ := flagValue(chartExporter(t, spec).Args, "--storage.path")
				if got := spec.InitContainers[k].Command; !slices.Equal(got, []string{"chown", c.owner, dir}) {
					t.Errorf("init container runs %q, want chown %s %s", got, c.owner, dir)
				}
				lintChart(t, chartCase{values: c.values}.vals(t))
			}
		})
	}
}
