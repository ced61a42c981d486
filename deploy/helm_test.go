package deploy

import (
	"cmp"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	helmrelease "helm.sh/helm/v3/pkg/release"
	"helm.sh/helm/v3/pkg/releaseutil"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/yaml"

	"github.com/logwindow/logwindow_exporter/config"
	"github.com/logwindow/logwindow_exporter/config/logformat"
	"github.com/logwindow/logwindow_exporter/deploy/internal/release"
	"github.com/logwindow/logwindow_exporter/internal/server"
	"github.com/logwindow/logwindow_exporter/internal/testutil/metrictest"
	"github.com/logwindow/logwindow_exporter/internal/testutil/testexec"
)

// chartDir is the Helm chart, as `helm install ./deploy/helm/logwindow-exporter` reads it.
const chartDir = "helm/logwindow-exporter"

// operatorAPI is what the chart looks for before it renders the operator's objects.
const operatorAPI = "monitoring.coreos.com/v1"

// chartCase is one way of installing the chart.
type chartCase struct {
	name     string
	values   string // values.yaml of the install, as a user writes it
	mode     string
	operator bool   // the cluster has the operator's CRDs
	release  string // the release's name; lw when empty
	// namespace is the release's namespace; monitoring when empty.
	namespace string
}

var chartCases = []chartCase{
	{"daemonset", "", "daemonset", true, "", ""},
	{"daemonset without the operator", "", "daemonset", false, "", ""},
	{"daemonset of ingress-nginx controllers", "daemonset: {containers: [controller, nginx]}\npodMonitor: {labels: {release: kps}}\n", "daemonset", true, "", ""},
	{"syslog", "mode: syslog\nsyslog: {replicas: 3, port: 1514}\n", "syslog", true, "", ""},
	{"syslog without the operator", "mode: syslog\n", "syslog", false, "", ""},
	{"sidecar", "mode: sidecar\n", "sidecar", true, "", ""},
	{"existing rules", "mode: syslog\nrules: {existingConfigMap: my-rules}\ndashboard: {enabled: false}\n", "syslog", true, "", ""},
	{"image", "image: {repository: registry.example.com/logwindow_exporter, tag: 9.9.9}\nextraArgs: [--log.level=debug]\n", "daemonset", false, "", ""},
}

func (c chartCase) vals(t *testing.T) map[string]any {
	t.Helper()
	vals := map[string]any{}
	if err := yaml.Unmarshal([]byte(c.values), &vals); err != nil {
		t.Fatal(err)
	}
	return vals
}

// installChart is `helm install --dry-run` (or `helm template`) of the chart with Helm's
// own engine: the manifest it renders, or the error it fails with (the schema's, a
// template's).
func installChart(t *testing.T, c chartCase) (string, error) {
	t.Helper()
	rel, err := installRelease(t, c)
	if err != nil {
		return "", err
	}
	return rel.Manifest, nil
}

// installRelease is installChart's release, whose Info.Notes is what `helm install`
// prints after it: the rendered NOTES.txt.
func installRelease(t *testing.T, c chartCase) (*helmrelease.Release, error) {
	t.Helper()
	ch, err := loader.Load(chartDir)
	if err != nil {
		t.Fatal(err)
	}
	install := action.NewInstall(&action.Configuration{Log: func(string, ...any) {}})
	install.DryRun, install.ClientOnly, install.Replace = true, true, true
	install.ReleaseName, install.Namespace = cmp.Or(c.release, "lw"), cmp.Or(c.namespace, "monitoring")
	if c.operator {
		install.APIVersions = chartutil.VersionSet{operatorAPI}
	}
	return install.Run(ch, c.vals(t))
}

// renderChart renders the chart as `helm install --dry-run` (or `helm template`) does,
// with Helm's own engine, and strictly decodes every object.
func renderChart(t *testing.T, c chartCase) *manifests {
	t.Helper()
	manifest, err := installChart(t, c)
	if err != nil {
		t.Fatalf("helm install --dry-run: %v", err)
	}
	namespace := cmp.Or(c.namespace, "monitoring")
	m := newManifests()
	docs := releaseutil.SplitManifests(manifest)
	for _, k := range slices.Sorted(maps.Keys(docs)) {
		// SplitManifests trims each document; in the release's manifest, as the cluster
		// gets it, a newline ends its last block scalar.
		doc := docs[k] + "\n"
		if err := decodeManifest([]byte(doc), m); err != nil {
			t.Fatalf("%v in\n%s", err, doc)
		}
		var obj struct {
			Kind     string            `json:"kind"`
			Metadata metav1.ObjectMeta `json:"metadata"`
		}
		if err := yaml.Unmarshal([]byte(doc), &obj); err != nil {
			t.Fatal(err)
		}
		want := namespace
		dashboard, _ := c.vals(t)["dashboard"].(map[string]any)
		if ns, ok := dashboard["namespace"].(string); ok && ns != "" && obj.Kind == "ConfigMap" && strings.HasSuffix(obj.Metadata.Name, "-dashboard") {
			want = ns // the namespace Grafana's sidecar watches
		}
		if obj.Metadata.Namespace != want {
			t.Errorf("%s %s is in namespace %q, not the release's", obj.Kind, obj.Metadata.Name, obj.Metadata.Namespace)
		}
		m.objects = append(m.objects, obj.Kind+"/"+obj.Metadata.Name)
	}
	return m
}

// TestChartRenders renders every case and checks what each mode must hold.
func TestChartRenders(t *testing.T) {
	for _, c := range chartCases {
		t.Run(c.name, func(t *testing.T) {
			m := renderChart(t, c)
			t.Logf("objects: %v", m.objects)
			checkChart(t, c, m)
		})
	}
}

func checkChart(t *testing.T, c chartCase, m *manifests) {
	workloads := len(m.daemonSets) + len(m.deployments)
	var pod *corev1.PodTemplateSpec
	var selector *metav1.LabelSelector
	switch c.mode {
	case "daemonset":
		if len(m.daemonSets) != 1 || workloads != 1 {
			t.Fatalf("%d DaemonSets and %d Deployments, want one DaemonSet", len(m.daemonSets), len(m.deployments))
		}
		for _, d := range m.daemonSets {
			pod, selector = &d.Spec.Template, d.Spec.Selector
		}
	case "syslog":
		if len(m.deployments) != 1 || workloads != 1 {
			t.Fatalf("%d DaemonSets and %d Deployments, want one Deployment", len(m.daemonSets), len(m.deployments))
		}
		for _, d := range m.deployments {
			pod, selector = &d.Spec.Template, d.Spec.Selector
			if d.Spec.Replicas == nil || *d.Spec.Replicas < 2 {
				t.Errorf("replicas %v: want two or more, so one serves while another is evicted", d.Spec.Replicas)
			}
		}
	case "sidecar":
		if workloads != 0 {
			t.Fatalf("a sidecar install runs %d workloads of its own", workloads)
		}
	}

	rules := mountedChartRules(t, c, m, pod)
	if pod != nil {
		checkChartPod(t, c, m, pod, selector, rules)
	}
	checkOperator(t, c, m, pod, rules)

	dash := m.configMaps["lw-logwindow-exporter-dashboard"]
	if enabled := !strings.Contains(c.values, "dashboard: {enabled: false}"); (dash != nil) != enabled {
		t.Errorf("dashboard ConfigMap rendered %v, want %v", dash != nil, enabled)
	} else if dash != nil {
		if dash.Labels["grafana_dashboard"] != "1" {
			t.Errorf("dashboard ConfigMap labels %v: Grafana's sidecar looks for grafana_dashboard: \"1\"", dash.Labels)
		}
		if dash.Data["logwindow-nginx.json"] != string(mustRead(t, "grafana-dashboard.json")) {
			t.Error("the dashboard ConfigMap is not grafana-dashboard.json")
		}
	}
}

// mountedChartRules returns the rule file the exporter mounts (or, in sidecar mode, the one the
// chart makes for the sidecar), loaded as the exporter loads it, and checks its inputs
// are the mode's.
func mountedChartRules(t *testing.T, c chartCase, m *manifests, pod *corev1.PodTemplateSpec) *config.Config {
	t.Helper()
	if strings.Contains(c.values, "existingConfigMap") {
		if len(m.configMaps) != 0 && m.configMaps["my-rules"] == nil {
			for name := range m.configMaps {
				if strings.HasSuffix(name, "-rules") {
					t.Errorf("ConfigMap %s made although rules.existingConfigMap is given", name)
				}
			}
		}
		vol := slices.IndexFunc(pod.Spec.Volumes, func(v corev1.Volume) bool { return v.ConfigMap != nil && v.ConfigMap.Name == "my-rules" })
		if vol < 0 {
			t.Error("no volume of the existing ConfigMap my-rules")
		}
		return nil
	}
	var text string
	if pod != nil {
		exp := chartExporter(t, &pod.Spec)
		file, ok := flagValue(exp.Args, "--config.file")
		if !ok {
			t.Fatal("no --config.file")
		}
		text, _ = m.configMapFile(t, &pod.Spec, exp, file)
	} else {
		cm := m.configMaps["lw-logwindow-exporter-rules"]
		if cm == nil {
			t.Fatal("no rules ConfigMap")
		}
		text = cm.Data["rules.yaml"]
	}
	cfg := loadRules(t, text)
	switch c.mode {
	case "daemonset":
		containers := []string{"nginx", "controller"}
		if strings.Contains(c.values, "[controller, nginx]") {
			containers = []string{"controller", "nginx"}
		}
		if len(cfg.Inputs) != len(containers) {
			t.Fatalf("%d inputs, want one per container %v", len(cfg.Inputs), containers)
		}
		for i, in := range cfg.Inputs {
			if want := "/var/log/pods/*_*_*/" + containers[i] + "/*.log"; in.File == nil || in.File.Path != want || in.Wrapper != config.WrapperCRI {
				t.Errorf("input %d: path %q, wrapper %q; want %q, cri", i, in.Source(), in.Wrapper, want)
			}
			// The path's, and those the exporter derives: stream (of CRI lines) and workload (of pod).
			if got := in.PathCaptureNames(); !slices.Equal(got, []string{"namespace", "pod", "container", "stream", "workload"}) {
				t.Errorf("input %d: path captures %v", i, got)
			}
		}
		for _, r := range cfg.Rules {
			if !slices.Equal(r.PathCaptures, []string{"namespace", "pod", "container"}) {
				t.Errorf("rule %s reads path captures %v: want every rule labelled by namespace, pod and container", r.Name, r.PathCaptures)
			}
		}
	case "syslog":
		port := 5140
		if strings.Contains(c.values, "port: 1514") {
			port = 1514
		}
		if len(cfg.Inputs) != 1 || !receivesOn(cfg.Inputs[0], fmt.Sprintf("udp://0.0.0.0:%d", port)) {
			t.Errorf("inputs %+v: want one receiving on udp://0.0.0.0:%d", cfg.Inputs, port)
		}
	case "sidecar":
		if len(cfg.Inputs) != 1 || !receivesOn(cfg.Inputs[0], "udp://127.0.0.1:5140") {
			t.Errorf("inputs %+v: want one receiving on the pod's loopback, udp://127.0.0.1:5140", cfg.Inputs)
		}
	}
	// The default format, auto, has the times: every rule of example-rules.yaml, those
	// reading the times last (the chart adds them after the others).
	if names, want := ruleNames(cfg), ruleNames(loadRules(t, string(mustRead(t, "../example-rules.yaml")))); !slices.Equal(slices.Sorted(slices.Values(names)), slices.Sorted(slices.Values(want))) {
		t.Errorf("rules %v: want example-rules.yaml's %v", names, want)
	}
	return cfg
}

func ruleNames(cfg *config.Config) []string {
	var out []string
	for _, r := range cfg.Rules {
		out = append(out, r.Name)
	}
	return out
}

// publishedArchs is the architectures release.yml publishes the image for (-platforms).
func publishedArchs(t *testing.T) []string {
	t.Helper()
	m := regexp.MustCompile(`-platforms (\S+)`).FindSubmatch(mustRead(t, "../.github/workflows/release.yml"))
	if m == nil {
		t.Fatal("release.yml has no -platforms")
	}
	var archs []string
	for p := range strings.SplitSeq(string(m[1]), ",") {
		archs = append(archs, strings.TrimPrefix(p, "linux/"))
	}
	return archs
}

// archAffinity is the kubernetes.io/arch values every required node selector term of
// spec's affinity allows (nil when a term does not restrict the architecture).
func archAffinity(spec *corev1.PodSpec) []string {
	if spec.Affinity == nil || spec.Affinity.NodeAffinity == nil || spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution == nil {
		return nil
	}
	var archs []string
	for _, term := range spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms {
		i := slices.IndexFunc(term.MatchExpressions, func(e corev1.NodeSelectorRequirement) bool {
			return e.Key == "kubernetes.io/arch" && e.Operator == corev1.NodeSelectorOpIn
		})
		if i < 0 {
			return nil
		}
		archs = append(archs, term.MatchExpressions[i].Values...)
	}
	return archs
}

// chartExporter is the exporter's container of a pod the chart renders.
func chartExporter(t *testing.T, spec *corev1.PodSpec) *corev1.Container {
	t.Helper()
	if len(spec.Containers) != 1 || spec.Containers[0].Name != "logwindow-exporter" {
		t.Fatalf("containers %v: want logwindow-exporter alone", spec.Containers)
	}
	return &spec.Containers[0]
}

// checkChartPod checks the pod of the DaemonSet or Deployment: selector, image, hardening,
// resources, probes, mounts, and the mode's own wiring.
func checkChartPod(t *testing.T, c chartCase, m *manifests, pod *corev1.PodTemplateSpec, selector *metav1.LabelSelector, cfg *config.Config) {
	t.Helper()
	spec := &pod.Spec
	sel, err := metav1.LabelSelectorAsSelector(selector)
	if err != nil || sel.Empty() || !sel.Matches(labels.Set(pod.Labels)) {
		t.Errorf("selector %v (%v) does not select the pods (labels %v)", selector, err, pod.Labels)
	}
	exp := chartExporter(t, spec)
	image := release.Repository + ":" + strings.TrimSpace(string(mustRead(t, "../VERSION")))
	if strings.Contains(c.values, "registry.example.com") {
		image = "registry.example.com/logwindow_exporter:9.9.9"
	}
	if exp.Image != image {
		t.Errorf("image %s, want %s", exp.Image, image)
	}

	// The image is linux's: a DaemonSet tolerating every taint would otherwise land on a
	// cluster's Windows nodes too, and never start there.
	if spec.NodeSelector["kubernetes.io/os"] != "linux" {
		t.Errorf("nodeSelector %v: want kubernetes.io/os: linux", spec.NodeSelector)
	}
	// The image is published for release.yml's platforms only: on a node of another
	// architecture the pod would fail to start (exec format error), again and again.
	if !strings.Contains(c.values, "affinity") {
		if got, want := archAffinity(spec), publishedArchs(t); !slices.Equal(got, want) {
			t.Errorf("affinity %+v: want the pods required on kubernetes.io/arch %v", spec.Affinity, want)
		}
	}
	if spec.AutomountServiceAccountToken == nil || *spec.AutomountServiceAccountToken {
		t.Error("the pod gets a service-account token; the exporter never talks to the API")
	}
	psc := spec.SecurityContext
	if psc == nil || psc.RunAsNonRoot == nil || !*psc.RunAsNonRoot || psc.RunAsUser == nil || *psc.RunAsUser == 0 ||
		psc.SeccompProfile == nil || psc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
		t.Errorf("pod securityContext %+v: want non-root, a user that is not 0, RuntimeDefault seccomp", psc)
	}
	sc := exp.SecurityContext
	if sc == nil || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem || sc.AllowPrivilegeEscalation == nil ||
		*sc.AllowPrivilegeEscalation || sc.Capabilities == nil || !slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) || len(sc.Capabilities.Add) > 0 {
		t.Errorf("container securityContext %+v: want a read-only root, no escalation, every capability dropped", sc)
	}
	for _, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		if _, ok := exp.Resources.Requests[r]; !ok {
			t.Errorf("no %s request", r)
		}
		if _, ok := exp.Resources.Limits[r]; !ok {
			t.Errorf("no %s limit", r)
		}
	}
	_, metrics := containerPort(spec, "metrics")
	if metrics == nil {
		t.Fatal("no port named metrics")
	}
	if addr, _ := flagValue(exp.Args, "--web.listen-address"); addr != fmt.Sprintf(":%d", metrics.ContainerPort) {
		t.Errorf("--web.listen-address=%s, but the port named metrics is %d", addr, metrics.ContainerPort)
	}
	for what, want := range map[*corev1.Probe]string{exp.StartupProbe: "/-/ready", exp.LivenessProbe: "/-/healthy", exp.ReadinessProbe: "/-/ready"} {
		if what == nil || what.HTTPGet == nil || what.HTTPGet.Path != want || what.HTTPGet.Port.String() != "metrics" {
			t.Errorf("probe %+v: want an HTTP probe of %s on port metrics", what, want)
		}
	}
	if !slices.Contains(exp.Args, "--config.watch") || slices.Contains(exp.Args, "--web.enable-lifecycle") {
		t.Errorf("args %q: want --config.watch (rules updated in place) and no --web.enable-lifecycle", exp.Args)
	}
	if strings.Contains(c.values, "extraArgs") && !slices.Contains(exp.Args, "--log.level=debug") {
		t.Errorf("args %q lack extraArgs", exp.Args)
	}
	volumes := map[string]*corev1.Volume{}
	for i, v := range spec.Volumes {
		volumes[v.Name] = &spec.Volumes[i]
		if v.ConfigMap != nil && m.configMaps[v.ConfigMap.Name] == nil && v.ConfigMap.Name != "my-rules" {
			t.Errorf("volume %s: ConfigMap %s is not among the objects", v.Name, v.ConfigMap.Name)
		}
	}
	for _, vm := range exp.VolumeMounts {
		if volumes[vm.Name] == nil {
			t.Errorf("mount of %s, which is no volume", vm.Name)
		}
		// The snapshot's directory alone is written (TestStorageVolumes); what the
		// exporter reads is mounted read-only.
		if dir, _ := flagValue(exp.Args, "--storage.path"); !vm.ReadOnly && vm.MountPath != dir {
			t.Errorf("mount of %s is writable", vm.Name)
		}
	}

	switch c.mode {
	case "daemonset":
		logs := volumes["pod-logs"]
		if logs == nil || logs.HostPath == nil || logs.HostPath.Path != "/var/log/pods" {
			t.Fatalf("volume pod-logs %+v: want the node's /var/log/pods", logs)
		}
		i := slices.IndexFunc(exp.VolumeMounts, func(vm corev1.VolumeMount) bool { return vm.Name == "pod-logs" })
		if i < 0 || exp.VolumeMounts[i].MountPath != "/var/log/pods" {
			t.Error("pod-logs is not mounted at /var/log/pods, where the rules' inputs read")
		}
		if !slices.ContainsFunc(spec.Tolerations, func(tl corev1.Toleration) bool { return tl.Operator == corev1.TolerationOpExists && tl.Key == "" }) {
			t.Errorf("tolerations %+v: want every taint tolerated, so that every node's pods are counted", spec.Tolerations)
		}
		if !slices.Contains(psc.SupplementalGroups, 0) {
			t.Errorf("supplementalGroups %v: the logs are root:root 0640, readable by the group root", psc.SupplementalGroups)
		}
	case "syslog":
		_, port := containerPort(spec, "syslog")
		if port == nil || port.Protocol != corev1.ProtocolUDP {
			t.Fatalf("syslog port %+v: want a UDP port named syslog", port)
		}
		if cfg != nil && (cfg.Inputs[0].Syslog == nil || cfg.Inputs[0].Syslog.Socket.Addr != fmt.Sprintf("0.0.0.0:%d", port.ContainerPort)) {
			t.Errorf("the rules receive on %s, the container's syslog port is %d", cfg.Inputs[0].Source(), port.ContainerPort)
		}
		if len(m.services) != 1 {
			t.Fatalf("%d Services, want one", len(m.services))
		}
		for _, s := range m.services {
			if s.Spec.Selector == nil || !labels.SelectorFromSet(s.Spec.Selector).Matches(labels.Set(pod.Labels)) {
				t.Errorf("Service %s selects %v, not the pods", s.Name, s.Spec.Selector)
			}
			if len(s.Spec.Ports) != 1 || s.Spec.Ports[0].Protocol != corev1.ProtocolUDP || s.Spec.Ports[0].TargetPort.String() != "syslog" ||
				s.Spec.Ports[0].Port != port.ContainerPort {
				t.Errorf("Service ports %+v: want the syslog port alone (metrics are scraped from the pods)", s.Spec.Ports)
			}
		}
		if len(m.budgets) != 1 {
			t.Fatalf("%d PodDisruptionBudgets, want one", len(m.budgets))
		}
		for _, b := range m.budgets {
			s, err := metav1.LabelSelectorAsSelector(b.Spec.Selector)
			if err != nil || s.Empty() || !s.Matches(labels.Set(pod.Labels)) {
				t.Errorf("PodDisruptionBudget %s does not select the pods", b.Name)
			}
			if b.Spec.MaxUnavailable == nil || b.Spec.MaxUnavailable.IntValue() != 1 {
				t.Errorf("PodDisruptionBudget %s: maxUnavailable %v, want 1", b.Name, b.Spec.MaxUnavailable)
			}
		}
	}
}

// checkOperator checks the PodMonitor and the PrometheusRule: there exactly when the
// operator's CRDs are, scraping the port named metrics of the right pods, with the node.
func checkOperator(t *testing.T, c chartCase, m *manifests, pod *corev1.PodTemplateSpec, rules *config.Config) {
	t.Helper()
	if got := len(m.podMonitors) + len(m.prometheusRules); (got == 2) != c.operator || got%2 != 0 {
		t.Fatalf("%d PodMonitors and %d PrometheusRules with the operator's CRDs %v", len(m.podMonitors), len(m.prometheusRules), c.operator)
	}
	for _, pm := range m.podMonitors {
		port := "metrics"
		if pod == nil {
			port = "logwindow" // the sidecar's, beside ingress-nginx's own metrics port
		}
		if len(pm.Spec.PodMetricsEndpoints) != 1 || pm.Spec.PodMetricsEndpoints[0].Port == nil || *pm.Spec.PodMetricsEndpoints[0].Port != port {
			t.Errorf("PodMonitor endpoints %+v: want the port named %s", pm.Spec.PodMetricsEndpoints, port)
		} else if !slices.ContainsFunc(pm.Spec.PodMetricsEndpoints[0].RelabelConfigs, func(r monitoringv1.RelabelConfig) bool {
			return r.TargetLabel == "node" && slices.Equal(r.SourceLabels, []monitoringv1.LabelName{"__meta_kubernetes_pod_node_name"})
		}) {
			t.Error("PodMonitor does not label the series by node")
		}
		s, err := metav1.LabelSelectorAsSelector(&pm.Spec.Selector)
		if err != nil || s.Empty() {
			t.Fatalf("PodMonitor selector %v: %v", pm.Spec.Selector, err)
		}
		switch {
		case pod != nil && !s.Matches(labels.Set(pod.Labels)):
			t.Errorf("PodMonitor selects %v, not the exporter's pods (%v)", s, pod.Labels)
		case pod == nil && !s.Matches(labels.Set{"app.kubernetes.io/name": "ingress-nginx", "app.kubernetes.io/component": "controller"}):
			t.Errorf("sidecar PodMonitor selects %v, not ingress-nginx's controller pods", s)
		}
		if strings.Contains(c.values, "release: kps") && pm.Labels["release"] != "kps" {
			t.Errorf("PodMonitor labels %v lack podMonitor.labels", pm.Labels)
		}
	}
	for _, pr := range m.prometheusRules {
		var f ruleFile
		if err := yaml.UnmarshalStrict(mustRead(t, "alerts.yaml"), &f); err != nil {
			t.Fatal(err)
		}
		// The DaemonSet's inputs are alternatives, one per container name: the chart's
		// LogwindowInputNoFile takes them together (TestChartDaemonSetNoFileAlert).
		if c.mode == "daemonset" && rules != nil && len(rules.Inputs) > 1 {
			for _, g := range f.Groups {
				for i, r := range g.Rules {
					if r.Alert != "LogwindowInputNoFile" {
						continue
					}
					r.Expr.StrVal = strings.Replace(r.Expr.StrVal, "max by (job, input) (", "max by (job) (", 1)
					for _, pg := range pr.Spec.Groups {
						for _, rendered := range pg.Rules {
							if rendered.Alert == r.Alert {
								r.Annotations["description"] = rendered.Annotations["description"]
							}
						}
					}
					g.Rules[i] = r
				}
			}
		}
		if !equalJSON(t, pr.Spec.Groups, f.Groups) {
			t.Error("the PrometheusRule's groups are not alerts.yaml's")
		}
	}
}

func equalJSON(t *testing.T, a, b any) bool {
	t.Helper()
	ja, err := yaml.Marshal(a)
	if err != nil {
		t.Fatal(err)
	}
	jb, err := yaml.Marshal(b)
	if err != nil {
		t.Fatal(err)
	}
	return string(ja) == string(jb)
}

// TestChartLint is `helm lint --strict` of every case, with Helm's own linter: an error or
// a warning fails.
func TestChartLint(t *testing.T) {
	for _, c := range chartCases {
		t.Run(c.name, func(t *testing.T) { lintChart(t, c.vals(t)) })
	}
}

// The chart's version and appVersion are the repository's VERSION, so that the image tag
// it defaults to is the one cmd/image builds.
func TestChartVersion(t *testing.T) {
	ch, err := loader.Load(chartDir)
	if err != nil {
		t.Fatal(err)
	}
	v := strings.TrimSpace(string(mustRead(t, "../VERSION")))
	if ch.Metadata.Version != v || ch.Metadata.AppVersion != v {
		t.Errorf("Chart.yaml: version %s, appVersion %s; VERSION is %s", ch.Metadata.Version, ch.Metadata.AppVersion, v)
	}
}

// startChartDaemonSet runs the DaemonSet's pod of the chart's defaults as a local process:
// the built exporter with the rendered arguments and rules, reading the directory it
// returns as the node's /var/log/pods. It returns once the exporter answers the pod's
// startup probe.
func startChartDaemonSet(t *testing.T) (*testexec.Exporter, string) {
	t.Helper()
	m := renderChart(t, chartCase{name: "daemonset", mode: "daemonset"})
	var spec *corev1.PodSpec
	for _, d := range m.daemonSets {
		spec = &d.Spec.Template.Spec
	}
	args, root := localDaemonSetArgs(t, m, spec)
	e := testexec.StartExporter(t, builtBinary(t), args...)
	e.Get(t, chartExporter(t, spec).StartupProbe.HTTPGet.Path)
	return e, root
}

// localDaemonSetArgs are the arguments of the rendered DaemonSet pod's exporter (spec) for a
// local process: its rule file written to a temporary directory, reading the directory it
// returns as the node's pod logs, its snapshot in a temporary directory, and no
// --web.listen-address.
func localDaemonSetArgs(t *testing.T, m *manifests, spec *corev1.PodSpec) ([]string, string) {
	t.Helper()
	exp := chartExporter(t, spec)
	file, _ := flagValue(exp.Args, "--config.file")
	rules, _ := m.configMapFile(t, spec, exp, file)
	i := slices.IndexFunc(exp.VolumeMounts, func(vm corev1.VolumeMount) bool { return vm.Name == "pod-logs" })
	mount := exp.VolumeMounts[i].MountPath

	root := filepath.Join(t.TempDir(), "pods")
	if regexp.QuoteMeta(root) != root {
		t.Skipf("the test's directory %s has regex metacharacters", root)
	}
	local := filepath.Join(t.TempDir(), "rules.yaml")
	if err := os.WriteFile(local, []byte(strings.ReplaceAll(rules, mount, root)), 0o644); err != nil {
		t.Fatal(err)
	}
	args := []string{"--config.file=" + local}
	for _, a := range exp.Args {
		switch {
		case strings.HasPrefix(a, "--storage.path="):
			args = append(args, "--storage.path="+t.TempDir()) // the node's hostPath
		case !strings.HasPrefix(a, "--config.file=") && !strings.HasPrefix(a, "--web.listen-address="):
			args = append(args, a)
		}
	}
	return args, root
}

// TestChartDaemonSetPod runs the DaemonSet's pod as a local process: the built exporter
// with the rendered arguments and rules, the node's /var/log/pods a directory laid out as
// the kubelet does. Pods' nginx logs written in CRI lines are counted by namespace, pod
// and container; another container's log beside nginx's is not read.
func TestChartDaemonSetPod(t *testing.T) {
	e, root := startChartDaemonSet(t)

	// Pods started after the exporter: their logs are read from the first line.
	now := time.Now().UTC().Format("02/Jan/2006:15:04:05 -0700")
	podLog := func(ns, pod, container string, statuses ...string) {
		dir := filepath.Join(root, fmt.Sprintf("%s_%s_0d2f3c4e-1111-4222-8333-%012d", ns, pod, len(pod)), container)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		var b strings.Builder
		for _, s := range statuses {
			fmt.Fprintf(&b, "%s stdout F 10.0.0.1 - - [%s] \"GET /index.html HTTP/1.1\" %s 612 \"-\" \"curl/8.5\" 0.004 0.003\n",
				time.Now().UTC().Format(time.RFC3339Nano), now, s)
		}
		if err := os.WriteFile(filepath.Join(dir, "0.log"), []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	podLog("web", "front-1", "nginx", "200", "200", "503")
	podLog("web", "front-1", "istio-proxy", "200", "200", "200", "200")
	podLog("web", "front-2", "nginx", "404")
	podLog("shop", "cart-1", "nginx", "200", "200")

	want := []metrictest.Sample{
		{Family: "nginx_http_requests_total", Labels: map[string]string{"namespace": "web", "pod": "front-1", "container": "nginx", "status": "200"}, Want: 2},
		{Family: "nginx_http_requests_total", Labels: map[string]string{"namespace": "web", "pod": "front-1", "container": "nginx", "status": "503"}, Want: 1},
		{Family: "nginx_http_requests_total", Labels: map[string]string{"namespace": "web", "pod": "front-2", "container": "nginx", "status": "404"}, Want: 1},
		{Family: "nginx_http_requests_total", Labels: map[string]string{"namespace": "shop", "pod": "cart-1", "container": "nginx", "status": "200"}, Want: 2},
	}
	got := e.WaitCheck(t, func(f metrictest.Families) error {
		if err := metrictest.Match(f, want); err != nil {
			return err
		}
		if n := metrictest.Sum(f, "nginx_http_requests_total"); n != 6 {
			return fmt.Errorf("%v requests counted, want 6 (the sidecar's log is not nginx's)", n)
		}
		return nil
	})
	if v := metrictest.LabelValues(got, "nginx_http_requests_total", "container"); slices.ContainsFunc(v, func(s string) bool { return s != "nginx" }) {
		t.Errorf("containers counted: %v, want nginx only", v)
	}
	if n := metrictest.Value(got, "logwindow_input_files", map[string]string{"input": "nginx"}); n != 3 {
		t.Errorf("logwindow_input_files %v, want the three nginx logs", n)
	}
}

// TestChartSidecarValues checks the README's ingress-nginx values against the chart: the
// container decodes strictly, mounts the rules ConfigMap the chart makes in sidecar mode
// (release logwindow-exporter) and loads them, receives where the controller sends its
// log, serves the port the PodMonitor scrapes, and is hardened and probed as the chart's
// own pods are, without a readinessProbe.
func TestChartSidecarValues(t *testing.T) {
	readme := string(mustRead(t, chartDir+"/README.md"))
	_, block, ok := strings.Cut(readme, "```yaml\ncontroller:\n")
	if !ok {
		t.Fatal("README: no ```yaml block of controller: values")
	}
	block, _, _ = strings.Cut(block, "```")
	var values struct {
		Controller struct {
			Config          map[string]string  `json:"config"`
			ExtraContainers []corev1.Container `json:"extraContainers"`
			ExtraVolumes    []corev1.Volume    `json:"extraVolumes"`
		} `json:"controller"`
	}
	if err := yaml.UnmarshalStrict([]byte("controller:\n"+block), &values); err != nil {
		t.Fatal(err)
	}
	ctl := values.Controller
	if len(ctl.ExtraContainers) != 1 {
		t.Fatalf("%d extra containers", len(ctl.ExtraContainers))
	}
	m := renderChart(t, chartCase{name: "sidecar", values: "mode: sidecar\n", mode: "sidecar", operator: true, release: "logwindow-exporter"})
	spec := &corev1.PodSpec{Containers: ctl.ExtraContainers, Volumes: ctl.ExtraVolumes}
	exp := &spec.Containers[0]
	file, _ := flagValue(exp.Args, "--config.file")
	rules, _ := m.configMapFile(t, spec, exp, file)
	cfg := loadRules(t, rules)
	if want := "udp://" + ctl.Config["syslog-host"] + ":" + ctl.Config["syslog-port"]; ctl.Config["enable-syslog"] != "true" || !receivesOn(cfg.Inputs[0], want) {
		t.Errorf("the controller sends to %s (enable-syslog %q); the rules receive on %s", want, ctl.Config["enable-syslog"], cfg.Inputs[0].Source())
	}
	var port *corev1.ContainerPort
	for _, pm := range m.podMonitors {
		_, port = containerPort(spec, *pm.Spec.PodMetricsEndpoints[0].Port)
	}
	if port == nil {
		t.Fatal("the sidecar has no port the PodMonitor scrapes")
	}
	if addr, _ := flagValue(exp.Args, "--web.listen-address"); addr != fmt.Sprintf(":%d", port.ContainerPort) {
		t.Errorf("--web.listen-address=%s, the scraped port is %d", addr, port.ContainerPort)
	}
	if exp.ReadinessProbe != nil || exp.StartupProbe == nil || exp.StartupProbe.HTTPGet.Path != "/-/ready" || exp.LivenessProbe == nil || exp.LivenessProbe.HTTPGet.Path != "/-/healthy" {
		t.Error("want a startupProbe on /-/ready, a livenessProbe on /-/healthy and no readinessProbe")
	}
	sc := exp.SecurityContext
	if sc == nil || sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem ||
		sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation || sc.Capabilities == nil || !slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) {
		t.Errorf("securityContext %+v: want the chart's hardening", sc)
	}
	if exp.Resources.Limits.Memory().IsZero() || exp.Resources.Requests.Cpu().IsZero() {
		t.Error("no resources")
	}
	// Its windows survive a restart of the container, as the chart's own pods' do.
	dir, _ := flagValue(exp.Args, "--storage.path")
	if i := slices.IndexFunc(exp.VolumeMounts, func(vm corev1.VolumeMount) bool { return vm.MountPath == dir }); dir == "" || i < 0 || exp.VolumeMounts[i].ReadOnly ||
		!slices.ContainsFunc(spec.Volumes, func(v corev1.Volume) bool { return v.Name == exp.VolumeMounts[i].Name && v.EmptyDir != nil }) {
		t.Errorf("--storage.path %q: want a writable mount of an emptyDir", dir)
	}
	// The image the release publishes and the chart's NOTES name: a copy of the values
	// pulls it as it is.
	if want := release.Repository + ":" + strings.TrimSpace(string(mustRead(t, "../VERSION"))); exp.Image != want {
		t.Errorf("image %s, want the published %s", exp.Image, want)
	}
	// The controller keeps its own format, upstreaminfo, which the rules' auto reads: a
	// global log-format-upstream would change the log of every ingress.
	if f, ok := ctl.Config["log-format-upstream"]; ok {
		t.Errorf("log-format-upstream %q: the chart's rules read ingress-nginx's own upstreaminfo", f)
	}
	if !slices.ContainsFunc(cfg.Inputs[0].LogFormats, func(f *logformat.Format) bool { return f.Preset == "upstreaminfo" }) {
		t.Error("the sidecar's rules do not read ingress-nginx's upstreaminfo")
	}
}

// TestChartSidecarTelemetryPath: in sidecar mode the exporter's flags are those of the
// container the user adds, not the chart's extraArgs (which sidecar mode refuses): the
// path it serves its metrics on (--web.telemetry-path) is sidecar.telemetryPath, which the
// PodMonitor scrapes and the NOTES put among the flags to give the container. A path
// the PodMonitor did not follow would have every scrape answered 404.
func TestChartSidecarTelemetryPath(t *testing.T) {
	for _, c := range []struct {
		name, values, path string
		flag               bool // the NOTES name --web.telemetry-path
	}{
		{"default", "mode: sidecar\n", "/metrics", false},
		{"a path of its own", "mode: sidecar\nsidecar: {telemetryPath: /lw/metrics}\n", "/lw/metrics", true},
	} {
		t.Run(c.name, func(t *testing.T) {
			rel, err := installRelease(t, chartCase{values: c.values, operator: true})
			if err != nil {
				t.Fatal(err)
			}
			m := renderChart(t, chartCase{name: c.name, values: c.values, mode: "sidecar", operator: true})
			for _, pm := range m.podMonitors {
				if got := pm.Spec.PodMetricsEndpoints[0].Path; got != c.path {
					t.Errorf("the PodMonitor scrapes %q, want %q, where the sidecar serves its metrics", got, c.path)
				}
			}
			if len(m.podMonitors) != 1 {
				t.Fatalf("%d PodMonitors, want one", len(m.podMonitors))
			}
			if flag := "--web.telemetry-path=" + c.path; strings.Contains(rel.Info.Notes, flag) != c.flag {
				t.Errorf("NOTES name %s: %v, want %v:\n%s", flag, !c.flag, c.flag, rel.Info.Notes)
			}
		})
	}
	// A path the exporter refuses (not starting with /, one of its own, not clean, with a
	// query or a wildcard) would keep the sidecar from starting: the chart refuses
	// exactly what the exporter's own check refuses.
	for _, path := range []string{
		"/metrics", "/lw/metrics", "/metrics/", "/-/metrics", "/.well-known/metrics", "/a..b", "/...", "/é",
		"metrics", "/", "/-/ready", "/-/explain", "//metrics", "/a//b", "/a/./b", "/a/../b", "/a/.", "/a/..",
		"/metrics//", "/m?x", "/m#x", "/{x}", "/a b", "/a\tb", "",
	} {
		values := "mode: sidecar\nsidecar: {telemetryPath: " + strconv.Quote(path) + "}\n"
		_, err := installChart(t, chartCase{values: values})
		exporter := server.CheckTelemetryPath(path)
		switch {
		case exporter == nil && err != nil:
			t.Errorf("telemetryPath %q: the install fails (%v), where the exporter serves it", path, err)
		case exporter != nil && (err == nil || !strings.Contains(err.Error(), "telemetryPath")):
			t.Errorf("telemetryPath %q: install %v, want it refused naming telemetryPath, as the exporter refuses it: %v", path, err, exporter)
		}
	}
}

// TestChartNotesWithoutOperator: without the Prometheus operator's CRDs the chart makes no
// PodMonitor and no PrometheusRule, whatever podMonitor.* and prometheusRule.* say: the
// notes `helm install` prints say so, and what scrapes the exporter instead (the port and
// path, and honor_labels, which in every mode keeps the series' own pod labels), rather
// than leaving an install nothing scrapes without a word. Not with the operator, nor with
// both objects turned off.
func TestChartNotesWithoutOperator(t *testing.T) {
	for _, c := range []struct {
		name, values string
		operator     bool
		want         string // in the notes; empty: no word of the operator
	}{
		{"daemonset", "", false, "port metrics, path /metrics, honor_labels: true"},
		{"syslog with a telemetry path", "mode: syslog\nextraArgs: [--web.telemetry-path=/prom]\n", false, "port metrics, path /prom, honor_labels: true"},
		{"sidecar", "mode: sidecar\n", false, "port logwindow, path /metrics, honor_labels: true"},
		{"with the operator", "", true, ""},
		{"objects off", "podMonitor: {enabled: false}\nprometheusRule: {enabled: false}\n", false, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			rel, err := installRelease(t, chartCase{values: c.values, operator: c.operator})
			if err != nil {
				t.Fatal(err)
			}
			notes := rel.Info.Notes
			if said := strings.Contains(notes, operatorAPI); said != (c.want != "") || !strings.Contains(notes, c.want) {
				t.Errorf("install with %q (operator %v): notes\n%s\nwant them to say %q of the missing %s: %v", c.values, c.operator, notes, c.want, operatorAPI, c.want != "")
			}
		})
	}
}

// TestChartNotesOwnRules: with a rule file of the user's, the dashboard's rows of the
// chart's rules and the alert NginxHighServerErrorRatio read families the file may not
// export: the notes name those of rules.content's that are missing (none when it has them
// all), and with rules.existingConfigMap, which the chart does not read, say so.
func TestChartNotesOwnRules(t *testing.T) {
	example := string(mustRead(t, "../example-rules.yaml"))
	example = strings.Replace(example, "path: /var/log/nginx/access.log\n    start_at: end", "syslog: udp://0.0.0.0:5140", 1)
	var indented strings.Builder
	for _, l := range strings.Split(example, "\n") {
		indented.WriteString("    " + l + "\n")
	}
	allRules := "mode: syslog\nrules:\n  content: |\n" + indented.String()
	for _, c := range []struct {
		name, values string
		operator     bool
		want, not    []string // in the notes, and not
	}{
		{"the chart's rules", "mode: syslog\n", true, nil, []string{"NginxHighServerErrorRatio", "--dashboard"}},
		{"rules.content of every rule of the chart's", allRules, true, nil, []string{"NginxHighServerErrorRatio", "--dashboard"}},
		{"rules.content of one rule", "mode: syslog\n" + readmeRules, true,
			[]string{"rows of nginx_http_server_errors, nginx_http_clients", "--dashboard", "NginxHighServerErrorRatio", "without nginx_http_server_errors it never fires"},
			[]string{"rows of nginx_http_requests"}},
		{"rules.content of one rule without the operator", "mode: syslog\n" + readmeRules, false, []string{"--dashboard"}, []string{"NginxHighServerErrorRatio"}},
		{"rules.content of one rule without the dashboard", "mode: syslog\ndashboard: {enabled: false}\n" + readmeRules, true, []string{"NginxHighServerErrorRatio"}, []string{"--dashboard"}},
		{"existing ConfigMap", "mode: syslog\nrules: {existingConfigMap: mine}\n", true, []string{"ConfigMap's", "--dashboard", "NginxHighServerErrorRatio"}, nil},
		{"existing ConfigMap, no dashboard nor operator", "mode: syslog\nrules: {existingConfigMap: mine}\ndashboard: {enabled: false}\n", false, nil, []string{"ConfigMap's", "--dashboard"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			rel, err := installRelease(t, chartCase{values: c.values, operator: c.operator})
			if err != nil {
				t.Fatal(err)
			}
			for _, w := range c.want {
				if !strings.Contains(rel.Info.Notes, w) {
					t.Errorf("notes\n%s\nwant them to say %q", rel.Info.Notes, w)
				}
			}
			for _, w := range c.not {
				if strings.Contains(rel.Info.Notes, w) {
					t.Errorf("notes\n%s\nsay %q", rel.Info.Notes, w)
				}
			}
		})
	}
}

// TestChartSurgeWithStorage: a DaemonSet rolled out with a surge starts a node's new pod
// while the old one holds the storage directory, and stops the old one only once the new
// one is ready: the new one starts empty and writes over the old one's snapshot. The chart
// refuses the two together, naming the setting, instead of losing the windows and
// counters at every rollout; either alone, or a surge of 0, installs.
func TestChartSurgeWithStorage(t *testing.T) {
	for _, c := range []struct {
		name, values string
		refused      bool
	}{
		{"default", "", false},
		{"surge of one", "daemonset: {updateStrategy: {type: RollingUpdate, rollingUpdate: {maxSurge: 1, maxUnavailable: 0}}}\n", true},
		{"surge of a percentage", "daemonset: {updateStrategy: {rollingUpdate: {maxSurge: '10%', maxUnavailable: 0}}}\n", true},
		{"surge without storage", "storage: {enabled: false}\ndaemonset: {updateStrategy: {type: RollingUpdate, rollingUpdate: {maxSurge: 1, maxUnavailable: 0}}}\n", false},
		{"surge of zero", "daemonset: {updateStrategy: {type: RollingUpdate, rollingUpdate: {maxSurge: 0, maxUnavailable: 2}}}\n", false},
		{"surge of zero percent", "daemonset: {updateStrategy: {type: RollingUpdate, rollingUpdate: {maxSurge: '0%', maxUnavailable: '10%'}}}\n", false},
		{"on delete", "daemonset: {updateStrategy: {type: OnDelete}}\n", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := installChart(t, chartCase{values: c.values})
			switch {
			case c.refused && (err == nil || !strings.Contains(err.Error(), "maxSurge") || !strings.Contains(err.Error(), "storage.enabled")):
				t.Errorf("install with %q: %v, want it refused, naming maxSurge and storage.enabled", c.values, err)
			case !c.refused && err != nil:
				t.Errorf("install with %q: %v", c.values, err)
			}
		})
	}
}
