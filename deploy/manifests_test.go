package deploy

import (
	"bytes"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"

	"github.com/logwindow/logwindow_exporter/config"
	"github.com/logwindow/logwindow_exporter/deploy/internal/release"
	"github.com/logwindow/logwindow_exporter/internal/testutil/deploytest"
)

// manifests are the objects under k8s/, by kind, each strictly decoded.
type manifests struct {
	deployments     map[string]*appsv1.Deployment
	daemonSets      map[string]*appsv1.DaemonSet
	services        map[string]*corev1.Service
	configMaps      map[string]*corev1.ConfigMap
	budgets         map[string]*policyv1.PodDisruptionBudget
	secrets         map[string]*corev1.Secret
	netPolicies     map[string]*networkingv1.NetworkPolicy
	podMonitors     map[string]*monitoringv1.PodMonitor
	prometheusRules map[string]*monitoringv1.PrometheusRule
	objects         []string // kind/name of each, as rendered
}

// decodeManifest strictly decodes one single-object manifest into the type its apiVersion
// and kind name, so a misspelt or misplaced field is an error here rather than a field
// the API server silently drops.
func decodeManifest(data []byte, m *manifests) error {
	if regexp.MustCompile(`(?m)^---`).Match(bytes.TrimPrefix(data, []byte("---\n"))) {
		return fmt.Errorf("more than one object: keep one per file")
	}
	var tm metav1.TypeMeta
	if err := yaml.Unmarshal(data, &tm); err != nil {
		return err
	}
	var obj interface{ GetName() string }
	var add func()
	switch gvk := tm.APIVersion + " " + tm.Kind; gvk {
	case "apps/v1 Deployment":
		o := &appsv1.Deployment{}
		obj, add = o, func() { m.deployments[o.Name] = o }
	case "apps/v1 DaemonSet":
		o := &appsv1.DaemonSet{}
		obj, add = o, func() { m.daemonSets[o.Name] = o }
	case "v1 Service":
		o := &corev1.Service{}
		obj, add = o, func() { m.services[o.Name] = o }
	case "v1 ConfigMap":
		o := &corev1.ConfigMap{}
		obj, add = o, func() { m.configMaps[o.Name] = o }
	case "v1 Secret":
		o := &corev1.Secret{}
		obj, add = o, func() { m.secrets[o.Name] = o }
	case "networking.k8s.io/v1 NetworkPolicy":
		o := &networkingv1.NetworkPolicy{}
		obj, add = o, func() { m.netPolicies[o.Name] = o }
	case "policy/v1 PodDisruptionBudget":
		o := &policyv1.PodDisruptionBudget{}
		obj, add = o, func() { m.budgets[o.Name] = o }
	case "monitoring.coreos.com/v1 PodMonitor":
		o := &monitoringv1.PodMonitor{}
		obj, add = o, func() { m.podMonitors[o.Name] = o }
	case "monitoring.coreos.com/v1 PrometheusRule":
		o := &monitoringv1.PrometheusRule{}
		obj, add = o, func() { m.prometheusRules[o.Name] = o }
	default:
		return fmt.Errorf("unexpected apiVersion and kind %q", gvk)
	}
	if err := yaml.UnmarshalStrict(data, obj); err != nil {
		return err
	}
	if obj.GetName() == "" {
		return fmt.Errorf("%s without metadata.name", tm.Kind)
	}
	add()
	return nil
}

func newManifests() *manifests {
	return &manifests{
		deployments:     map[string]*appsv1.Deployment{},
		daemonSets:      map[string]*appsv1.DaemonSet{},
		services:        map[string]*corev1.Service{},
		configMaps:      map[string]*corev1.ConfigMap{},
		budgets:         map[string]*policyv1.PodDisruptionBudget{},
		secrets:         map[string]*corev1.Secret{},
		netPolicies:     map[string]*networkingv1.NetworkPolicy{},
		podMonitors:     map[string]*monitoringv1.PodMonitor{},
		prometheusRules: map[string]*monitoringv1.PrometheusRule{},
	}
}

// renderTargets are the kustomizations a user applies: the base, the file overlay and an
// overlay as a user writes one (namespace, image, rules, the operator component). The
// Grafana kustomization holds only the dashboard ConfigMap and is rendered on its own.
var renderTargets = []string{"k8s", "overlays/file", "testdata/overlay"}

// render builds a kustomization as `kubectl kustomize` does (kustomize's own Go API) and
// strictly decodes every object it outputs.
func render(t *testing.T, dir string) *manifests {
	t.Helper()
	k := krusty.MakeKustomizer(krusty.MakeDefaultOptions())
	rm, err := k.Run(filesys.MakeFsOnDisk(), dir)
	if err != nil {
		t.Fatalf("kustomize build %s: %v", dir, err)
	}
	m := newManifests()
	if rm.Size() == 0 {
		t.Fatalf("kustomize build %s: no objects", dir)
	}
	for _, r := range rm.Resources() {
		data, err := r.AsYAML()
		if err != nil {
			t.Fatal(err)
		}
		if err := decodeManifest(data, m); err != nil {
			t.Fatalf("kustomize build %s: %s %s: %v", dir, r.GetKind(), r.GetName(), err)
		}
		m.objects = append(m.objects, r.GetKind()+"/"+r.GetName())
	}
	return m
}

// forEachRender runs f on every rendered target, as a subtest named by the target.
func forEachRender(t *testing.T, f func(t *testing.T, m *manifests)) {
	for _, dir := range renderTargets {
		t.Run(dir, func(t *testing.T) { f(t, render(t, dir)) })
	}
}

// TestEveryManifestRendered: every manifest under k8s/ and overlays/ is part of some rendered target, so
// no file escapes the checks (or the user's kubectl apply -k).
func TestEveryManifestRendered(t *testing.T) {
	rendered := map[string]bool{}
	for _, dir := range append(slices.Clone(renderTargets), "k8s/grafana") {
		for _, name := range render(t, dir).objects {
			rendered[name] = true
		}
	}
	walk := func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".yaml") || path.Base(p) == "kustomization.yaml" {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		var obj struct {
			Kind     string `json:"kind"`
			Metadata struct {
				Name string `json:"name"`
			} `json:"metadata"`
		}
		if err := yaml.Unmarshal(data, &obj); err != nil {
			return fmt.Errorf("%s: %w", p, err)
		}
		if !rendered[obj.Kind+"/"+obj.Metadata.Name] {
			t.Errorf("%s (%s %s) is in no rendered kustomization", p, obj.Kind, obj.Metadata.Name)
		}
		return nil
	}
	for _, dir := range []string{"k8s", "overlays"} {
		if err := filepath.WalkDir(dir, walk); err != nil {
			t.Fatal(err)
		}
	}
}

func TestDecodeManifestIsStrict(t *testing.T) {
	cases := []struct {
		name, yaml, wantErr string
	}{
		{"valid", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\ndata: {a: b}\n", ""},
		{"unknown field", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\ndatas: {a: b}\n", "unknown field"},
		{"misplaced field", "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: x}\nspec: {template: {containers: []}}\n", "unknown field"},
		{"duplicate field", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\ndata: {a: b}\ndata: {c: d}\n", "already set"},
		{"wrong type", "apiVersion: v1\nkind: Service\nmetadata: {name: x}\nspec: {ports: [{port: eighty}]}\n", "cannot unmarshal"},
		{"unknown kind", "apiVersion: v1\nkind: Sevice\nmetadata: {name: x}\n", "unexpected apiVersion and kind"},
		{"budget field", "apiVersion: policy/v1\nkind: PodDisruptionBudget\nmetadata: {name: x}\nspec: {maxUnavailable: 1, selector: {}, unhealthyPodEvictionPolicy: AlwaysAllow, minReady: 1}\n", "unknown field"},
		{"operator field", "apiVersion: monitoring.coreos.com/v1\nkind: PodMonitor\nmetadata: {name: x}\nspec: {selector: {}, podMetricsEndpoints: [{prot: metrics}]}\n", "unknown field"},
		{"two objects", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: y}\n", "more than one object"},
		{"no name", "apiVersion: v1\nkind: ConfigMap\ndata: {a: b}\n", "without metadata.name"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := decodeManifest([]byte(c.yaml), newManifests())
			switch {
			case c.wantErr == "" && err != nil:
				t.Fatalf("unexpected error: %v", err)
			case c.wantErr != "" && (err == nil || !strings.Contains(err.Error(), c.wantErr)):
				t.Fatalf("error %v, want one containing %q", err, c.wantErr)
			}
		})
	}
}

// podOf returns the Deployment whose pods carry every label of sel.
func (m *manifests) podOf(t *testing.T, what string, sel *metav1.LabelSelector) *appsv1.Deployment {
	t.Helper()
	s, err := metav1.LabelSelectorAsSelector(sel)
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	if s.Empty() {
		t.Fatalf("%s: empty selector selects every pod", what)
	}
	var found *appsv1.Deployment
	for _, d := range m.deployments {
		if s.Matches(labels.Set(d.Spec.Template.Labels)) {
			if found != nil {
				t.Fatalf("%s: selector %v matches the pods of both %s and %s", what, s, found.Name, d.Name)
			}
			found = d
		}
	}
	if found == nil {
		t.Fatalf("%s: selector %v matches no Deployment's pods", what, s)
	}
	return found
}

// containerPort finds a named port among a pod's containers.
func containerPort(spec *corev1.PodSpec, name string) (*corev1.Container, *corev1.ContainerPort) {
	for i := range spec.Containers {
		c := &spec.Containers[i]
		for j := range c.Ports {
			if c.Ports[j].Name == name {
				return c, &c.Ports[j]
			}
		}
	}
	return nil, nil
}

// exporterContainer is the container that serves the port named "metrics".
func exporterContainer(t *testing.T, d *appsv1.Deployment) *corev1.Container {
	t.Helper()
	c, _ := containerPort(&d.Spec.Template.Spec, "metrics")
	if c == nil {
		t.Fatalf("deployment %s: no container port named metrics", d.Name)
	}
	return c
}

// nginxContainer is the container that runs nginx itself (not the image's entrypoint).
func nginxContainer(t *testing.T, d *appsv1.Deployment) *corev1.Container {
	t.Helper()
	for i, c := range d.Spec.Template.Spec.Containers {
		if len(c.Command) > 0 && c.Command[0] == "nginx" {
			return &d.Spec.Template.Spec.Containers[i]
		}
	}
	t.Fatalf("deployment %s: no container with command nginx", d.Name)
	return nil
}

// resolveMount says which volume holds file p as c sees it, and p's path inside it.
func resolveMount(spec *corev1.PodSpec, c *corev1.Container, p string) (*corev1.Volume, string, error) {
	var best *corev1.VolumeMount
	for i, vm := range c.VolumeMounts {
		mp := path.Clean(vm.MountPath)
		if (p == mp || strings.HasPrefix(p, mp+"/")) && (best == nil || len(mp) > len(path.Clean(best.MountPath))) {
			best = &c.VolumeMounts[i]
		}
	}
	if best == nil {
		return nil, "", fmt.Errorf("container %s: %s is on no volume (the root filesystem is read-only)", c.Name, p)
	}
	rel := strings.TrimPrefix(strings.TrimPrefix(p, path.Clean(best.MountPath)), "/")
	rel = path.Join(best.SubPath, rel)
	for i, v := range spec.Volumes {
		if v.Name == best.Name {
			return &spec.Volumes[i], rel, nil
		}
	}
	return nil, "", fmt.Errorf("container %s: mount %s names no volume", c.Name, best.Name)
}

// configMapFile returns the text of the file p in c, which must come from a ConfigMap.
func (m *manifests) configMapFile(t *testing.T, spec *corev1.PodSpec, c *corev1.Container, p string) (string, *corev1.ConfigMap) {
	t.Helper()
	v, key, err := resolveMount(spec, c, p)
	if err != nil {
		t.Fatal(err)
	}
	if v.ConfigMap == nil {
		t.Fatalf("container %s: %s is on volume %s, not a ConfigMap", c.Name, p, v.Name)
	}
	cm := m.configMaps[v.ConfigMap.Name]
	if cm == nil {
		t.Fatalf("volume %s: no ConfigMap %s among the manifests", v.Name, v.ConfigMap.Name)
	}
	text, ok := cm.Data[key]
	if !ok {
		t.Fatalf("container %s reads %s, but ConfigMap %s has no key %q", c.Name, p, cm.Name, key)
	}
	return text, cm
}

// flagValue returns the value of a --name=value or -name value argument.
func flagValue(args []string, name string) (string, bool) {
	for i, a := range args {
		if v, ok := strings.CutPrefix(a, name+"="); ok {
			return v, true
		}
		if a == name && i+1 < len(args) {
			return args[i+1], true
		}
	}
	return "", false
}

func TestPodWiring(t *testing.T) {
	forEachRender(t, podWiring)
}

func podWiring(t *testing.T, m *manifests) {
	if len(m.deployments) == 0 {
		t.Fatal("no Deployment")
	}
	for _, d := range m.deployments {
		t.Run(d.Name, func(t *testing.T) {
			spec := &d.Spec.Template.Spec
			if d.Spec.Selector == nil {
				t.Fatal("no selector")
			}
			if m.podOf(t, "deployment "+d.Name, d.Spec.Selector) != d {
				t.Fatal("selector does not select its own pods")
			}
			volumes := map[string]bool{}
			for _, v := range spec.Volumes {
				volumes[v.Name] = true
				if v.ConfigMap != nil && m.configMaps[v.ConfigMap.Name] == nil {
					t.Errorf("volume %s: ConfigMap %s is not among the manifests", v.Name, v.ConfigMap.Name)
				}
			}
			for _, c := range spec.Containers {
				ports := map[string]bool{}
				for _, p := range c.Ports {
					ports[p.Name] = true
				}
				for _, vm := range c.VolumeMounts {
					if !volumes[vm.Name] {
						t.Errorf("container %s mounts %s, which is no volume", c.Name, vm.Name)
					}
				}
				if len(c.Ports) > 0 && c.LivenessProbe == nil {
					t.Errorf("container %s serves ports but has no liveness probe", c.Name)
				}
				for what, pr := range map[string]*corev1.Probe{"liveness": c.LivenessProbe, "readiness": c.ReadinessProbe, "startup": c.StartupProbe} {
					if pr == nil {
						continue
					}
					if pr.HTTPGet == nil {
						t.Errorf("container %s: %s probe is not HTTP", c.Name, what)
						continue
					}
					if !ports[pr.HTTPGet.Port.String()] {
						t.Errorf("container %s: %s probe port %s is no port of the container", c.Name, what, pr.HTTPGet.Port.String())
					}
				}
			}
		})
	}
}

// expectedRules is the rule file each rendered target mounts: the base receives from the
// socket, the file overlay follows the file, the user's overlay brings its own.
func expectedRules(t *testing.T, target string) string {
	t.Helper()
	switch target {
	case "overlays/file":
		return string(mustRead(t, "../example-rules.yaml"))
	case "testdata/overlay":
		return string(mustRead(t, "testdata/overlay/rules.yaml"))
	default:
		rules, err := replaceOnce(string(mustRead(t, "../example-rules.yaml")), fileInput, socketInput, "example-rules.yaml")
		if err != nil {
			t.Fatal(err)
		}
		return rules
	}
}

// loadRules loads a mounted rule file as the exporter would, so a rendered ConfigMap that
// the exporter refuses fails here.
func loadRules(t *testing.T, text string) *config.Config {
	t.Helper()
	p := filepath.Join(t.TempDir(), "rules.yaml")
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(p)
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// receivesOn reports whether in is a syslog input receiving on the socket address as
// written in the rules.
func receivesOn(in config.Input, address string) bool {
	return in.Syslog != nil && in.Syslog.Address == address
}

// TestExporterSidecar checks, for every rendered target, that the exporter receives what
// nginx logs, through a volume both mount, with the expected rules; and the probes and
// flags that keep the sidecar from taking nginx out of the Service or opening a reload
// endpoint.
func TestExporterSidecar(t *testing.T) {
	for _, target := range renderTargets {
		t.Run(target, func(t *testing.T) {
			m := render(t, target)
			if len(m.deployments) == 0 {
				t.Fatal("no Deployment")
			}
			for _, d := range m.deployments {
				checkSidecar(t, m, d, expectedRules(t, target))
			}
		})
	}
}

func checkSidecar(t *testing.T, m *manifests, d *appsv1.Deployment, wantRules string) {
	t.Helper()
	spec := &d.Spec.Template.Spec
	exp, ngx := exporterContainer(t, d), nginxContainer(t, d)

	// A sidecar's readiness is the pod's: a readinessProbe would let the exporter take
	// nginx out of the Service. The startup probe holds the pod back only until the
	// inputs are open, and liveness restarts the exporter alone.
	if exp.ReadinessProbe != nil {
		t.Error("exporter has a readinessProbe: it would take nginx out of the Service")
	}
	for what, want := range map[*corev1.Probe]string{exp.StartupProbe: "/-/ready", exp.LivenessProbe: "/-/healthy"} {
		if what == nil || what.HTTPGet == nil || what.HTTPGet.Path != want || what.HTTPGet.Port.String() != "metrics" {
			t.Errorf("exporter probe %+v, want an HTTP probe of %s on port metrics", what, want)
		}
	}
	if exp.StartupProbe != nil && exp.StartupProbe.FailureThreshold*max(exp.StartupProbe.PeriodSeconds, 1) > 60 {
		t.Error("startup probe may hold the pod for more than a minute")
	}
	if slices.Contains(exp.Args, "--web.enable-lifecycle") {
		t.Error("--web.enable-lifecycle opens an unauthenticated POST /-/reload to anything reaching the pod")
	}
	if !slices.Contains(exp.Args, "--config.watch") {
		t.Error("no --config.watch: a rules ConfigMap update would not be loaded")
	}

	rulesPath, ok := flagValue(exp.Args, "--config.file")
	if !ok {
		t.Fatal("exporter has no --config.file")
	}
	rules, cm := m.configMapFile(t, spec, exp, rulesPath)
	if rules != wantRules {
		t.Errorf("ConfigMap %s is not the expected rules (generated ones: cd deploy && go test -run TestGenerated -update)", cm.Name)
	}
	cfg := loadRules(t, rules)

	confPath, ok := flagValue(ngx.Command, "-c")
	if !ok {
		t.Fatal("nginx runs without -c")
	}
	conf, _ := m.configMapFile(t, spec, ngx, confPath)
	targets, format, err := deploytest.NginxAccessLogs(conf)
	if err != nil {
		t.Fatalf("%s: %v", confPath, err)
	}
	// Tests running their own nginx take the format from the base's nginx.conf.
	if _, base, err := deploytest.NginxAccessLogs(string(nginxConf)); err != nil || base != format {
		t.Errorf("k8s/nginx.conf logs with %q (%v); the pod's nginx with %q", base, err, format)
	}

	// Each place nginx logs to is stdout or one of the exporter's inputs: the same UDP
	// address on the pod's loopback, or the same file on a volume both containers mount.
	received := 0
	for _, target := range targets {
		if target == "/dev/stdout" {
			continue
		}
		if server, ok := strings.CutPrefix(target, "syslog:server="); ok {
			server, _, _ = strings.Cut(server, ",")
			host, _, err := net.SplitHostPort(server)
			if err != nil || !net.ParseIP(host).IsLoopback() {
				t.Errorf("nginx sends its log to %s: want an address on the pod's loopback", server)
			}
			if slices.ContainsFunc(cfg.Inputs, func(in config.Input) bool { return receivesOn(in, "udp://"+server) }) {
				received++
			}
			continue
		}
		vol, rel, err := resolveMount(spec, ngx, target)
		if err != nil {
			t.Error(err)
			continue
		}
		if vol.EmptyDir == nil || vol.EmptyDir.SizeLimit == nil {
			t.Errorf("nginx logs to %s on volume %s, not a size-limited emptyDir shared with the exporter", target, vol.Name)
		}
		for _, in := range cfg.Inputs {
			if in.File == nil {
				continue
			}
			v, r, err := resolveMount(spec, exp, in.File.Path)
			if err != nil {
				t.Error(err)
				continue
			}
			if matched, err := path.Match(r, rel); v.Name == vol.Name && err == nil && matched {
				received++
			}
		}
	}
	if received != len(cfg.Inputs) {
		t.Errorf("nginx logs to %q; the exporter's %d inputs receive %d of them", targets, len(cfg.Inputs), received)
	}
	if slices.ContainsFunc(cfg.Inputs, func(in config.Input) bool { return in.Syslog != nil }) && !slices.Contains(targets, "/dev/stdout") {
		t.Error("nginx logs only to the exporter: kubectl logs would show nothing")
	}
}

func TestSecurityAndResources(t *testing.T) {
	forEachRender(t, securityAndResources)
}

func securityAndResources(t *testing.T, m *manifests) {
	for _, d := range m.deployments {
		spec := &d.Spec.Template.Spec
		t.Run(d.Name, func(t *testing.T) {
			psc := spec.SecurityContext
			if psc == nil || psc.RunAsNonRoot == nil || !*psc.RunAsNonRoot {
				t.Error("pod: runAsNonRoot is not true")
			}
			if psc == nil || psc.SeccompProfile == nil || psc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
				t.Error("pod: seccompProfile is not RuntimeDefault")
			}
			if spec.HostNetwork || spec.HostPID || spec.HostIPC {
				t.Error("pod shares a host namespace")
			}
			if spec.AutomountServiceAccountToken == nil || *spec.AutomountServiceAccountToken {
				t.Error("pod mounts a service account token: nothing in it uses the Kubernetes API")
			}
		})
		for _, c := range spec.Containers {
			t.Run(d.Name+"/"+c.Name, func(t *testing.T) {
				sc := c.SecurityContext
				if sc == nil {
					t.Fatal("no securityContext")
				}
				if sc.RunAsUser == nil || *sc.RunAsUser == 0 {
					t.Error("runAsUser is not a non-root uid")
				}
				if sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem {
					t.Error("root filesystem is not read-only")
				}
				if sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation {
					t.Error("privilege escalation is not disabled")
				}
				if sc.Privileged != nil && *sc.Privileged {
					t.Error("privileged")
				}
				if sc.Capabilities == nil || !slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) || len(sc.Capabilities.Add) > 0 {
					t.Error("capabilities are not exactly drop [ALL]")
				}
				for _, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
					req, hasReq := c.Resources.Requests[r]
					lim, hasLim := c.Resources.Limits[r]
					if !hasReq || !hasLim {
						t.Errorf("%s: request or limit missing", r)
						continue
					}
					if req.Cmp(lim) > 0 {
						t.Errorf("%s: request %s above limit %s", r, req.String(), lim.String())
					}
				}
				for _, vm := range c.VolumeMounts {
					if vm.Name == "rules" || strings.HasPrefix(vm.Name, "nginx-config") {
						if !vm.ReadOnly {
							t.Errorf("config volume %s mounted writable", vm.Name)
						}
					}
				}
			})
		}
	}
}

func TestScrapeTargets(t *testing.T) {
	forEachRender(t, scrapeTargets)
	// The base leaves the operator out (its CRDs may be missing); the user's overlay adds it.
	if len(render(t, "testdata/overlay").podMonitors) == 0 {
		t.Error("no PodMonitor in an overlay with the operator component")
	}
}

func scrapeTargets(t *testing.T, m *manifests) {
	for _, pm := range m.podMonitors {
		t.Run("podmonitor/"+pm.Name, func(t *testing.T) {
			if len(pm.Spec.NamespaceSelector.MatchNames) > 0 || pm.Spec.NamespaceSelector.Any {
				t.Error("namespaceSelector set: the example lives in one namespace with its pods")
			}
			d := m.podOf(t, "podmonitor "+pm.Name, &pm.Spec.Selector)
			if len(pm.Spec.PodMetricsEndpoints) == 0 {
				t.Fatal("no podMetricsEndpoints")
			}
			for _, ep := range pm.Spec.PodMetricsEndpoints {
				if ep.Port == nil {
					t.Error("endpoint without a port name")
					continue
				}
				c, _ := containerPort(&d.Spec.Template.Spec, *ep.Port)
				if c == nil {
					t.Errorf("port %q is no container port of deployment %s", *ep.Port, d.Name)
					continue
				}
				if *ep.Port != "metrics" {
					t.Errorf("port %q, want the exporter's port named metrics", *ep.Port)
				}
				if ep.Path != "" && ep.Path != "/metrics" {
					t.Errorf("path %s, the exporter serves /metrics", ep.Path)
				}
			}
		})
	}
	for _, s := range m.services {
		t.Run("service/"+s.Name, func(t *testing.T) {
			d := m.podOf(t, "service "+s.Name, &metav1.LabelSelector{MatchLabels: s.Spec.Selector})
			for _, p := range s.Spec.Ports {
				if p.TargetPort.StrVal == "" {
					t.Errorf("port %s: targetPort should name a container port, not repeat its number", p.Name)
					continue
				}
				c, _ := containerPort(&d.Spec.Template.Spec, p.TargetPort.StrVal)
				if c == nil {
					t.Errorf("port %s: targetPort %q is no container port of deployment %s", p.Name, p.TargetPort.StrVal, d.Name)
					continue
				}
				// Metrics are scraped on the pods; the Service is for traffic.
				if c == exporterContainer(t, d) {
					t.Errorf("port %s exposes the exporter's port %s on the traffic Service", p.Name, p.TargetPort.StrVal)
				}
			}
		})
	}
	for _, pr := range m.prometheusRules {
		t.Run("prometheusrule/"+pr.Name, func(t *testing.T) {
			if len(pr.Spec.Groups) == 0 {
				t.Error("no rule groups")
			}
		})
	}
}

// TestUserOverlay: the settings a user's overlay makes (testdata/overlay) reach the
// rendered objects: the namespace on each, the image of the exporter, and the rules under
// the name the Deployment mounts, without a hash suffix so that an update is reloaded in
// place (checked with the rules themselves in TestExporterSidecar).
func TestUserOverlay(t *testing.T) {
	m := render(t, "testdata/overlay")
	var metas []metav1.Object
	for _, d := range m.deployments {
		metas = append(metas, d)
		if got := exporterContainer(t, d).Image; got != "registry.example.com/logwindow_exporter:0.1.0" {
			t.Errorf("exporter image %s, want the overlay's", got)
		}
	}
	for _, o := range m.services {
		metas = append(metas, o)
	}
	for _, o := range m.configMaps {
		metas = append(metas, o)
	}
	for _, o := range m.budgets {
		metas = append(metas, o)
	}
	for _, o := range m.podMonitors {
		metas = append(metas, o)
	}
	for _, o := range m.prometheusRules {
		metas = append(metas, o)
	}
	if len(metas) != len(m.objects) {
		t.Fatalf("%d objects checked of %d rendered", len(metas), len(m.objects))
	}
	for _, o := range metas {
		if o.GetNamespace() != "web" {
			t.Errorf("%s in namespace %q, want the overlay's web", o.GetName(), o.GetNamespace())
		}
	}
	if m.configMaps["logwindow-rules"] == nil {
		t.Error("no ConfigMap logwindow-rules: a hash suffix would roll the pods at each rules change")
	}
}

// TestDisruptionBudget: each Deployment runs more than one pod and has a budget that lets
// a drain evict one at a time while the others serve: one that allowed no eviction would
// block node drains and upgrades forever, one that allowed all would let them take nginx
// down.
func TestDisruptionBudget(t *testing.T) {
	forEachRender(t, func(t *testing.T, m *manifests) {
		budgetOf := map[*appsv1.Deployment]*policyv1.PodDisruptionBudget{}
		for _, b := range m.budgets {
			d := m.podOf(t, "PodDisruptionBudget "+b.Name, b.Spec.Selector)
			if budgetOf[d] != nil {
				t.Errorf("deployment %s has two budgets, %s and %s: the eviction API refuses its pods", d.Name, budgetOf[d].Name, b.Name)
			}
			budgetOf[d] = b
		}
		for _, d := range m.deployments {
			t.Run(d.Name, func(t *testing.T) {
				replicas := 1
				if d.Spec.Replicas != nil {
					replicas = int(*d.Spec.Replicas)
				}
				if replicas < 2 {
					t.Errorf("%d replica: a drain or a rollout leaves nginx without a pod", replicas)
				}
				b := budgetOf[d]
				if b == nil {
					t.Fatal("no PodDisruptionBudget selects its pods")
				}
				var evictable int
				switch s := b.Spec; {
				case (s.MaxUnavailable == nil) == (s.MinAvailable == nil):
					t.Fatal("want exactly one of maxUnavailable and minAvailable")
				case s.MaxUnavailable != nil:
					n, err := intstr.GetScaledValueFromIntOrPercent(s.MaxUnavailable, replicas, true)
					if err != nil {
						t.Fatal(err)
					}
					evictable = n
				default:
					n, err := intstr.GetScaledValueFromIntOrPercent(s.MinAvailable, replicas, true)
					if err != nil {
						t.Fatal(err)
					}
					evictable = replicas - n
				}
				if evictable < 1 || evictable >= replicas {
					t.Errorf("budget %s lets %d of %d pods be evicted at once: want at least one, and fewer than all", b.Name, evictable, replicas)
				}
			})
		}
	})
}

// TestNginxWorkers: nginx's worker_processes is a number no larger than its container's
// CPU limit. "auto" counts the node's CPUs, not the container's: on a large node that many
// workers would share a 1-CPU limit and a 128Mi memory limit.
func TestNginxWorkers(t *testing.T) {
	re := regexp.MustCompile(`(?m)^\s*worker_processes\s+(\S+)\s*;`)
	forEachRender(t, func(t *testing.T, m *manifests) {
		for _, d := range m.deployments {
			spec := &d.Spec.Template.Spec
			ngx := nginxContainer(t, d)
			confPath, _ := flagValue(ngx.Command, "-c")
			conf, _ := m.configMapFile(t, spec, ngx, confPath)
			w := re.FindAllStringSubmatch(conf, -1)
			if len(w) != 1 {
				t.Fatalf("%s: %d worker_processes, want one", confPath, len(w))
			}
			n, err := strconv.Atoi(w[0][1])
			if err != nil {
				t.Fatalf("worker_processes %s, want a number: auto counts the node's CPUs", w[0][1])
			}
			limit, ok := ngx.Resources.Limits[corev1.ResourceCPU]
			if !ok {
				t.Fatal("nginx has no CPU limit")
			}
			if cpus := int((limit.MilliValue() + 999) / 1000); n < 1 || n > cpus {
				t.Errorf("worker_processes %d, want 1 to the container's CPU limit (%s)", n, limit.String())
			}
		}
	})
}

// TestConfigMapNames: nginx.conf's ConfigMap is named by a hash of its content, so an edit
// rolls the pods onto it (nginx never rereads it); the rules keep a stable name, so an
// edit reaches the running exporter, which reloads it and keeps its windows.
func TestConfigMapNames(t *testing.T) {
	hashed := regexp.MustCompile(`^nginx-config-[a-z0-9]{10}$`)
	forEachRender(t, func(t *testing.T, m *manifests) {
		for _, d := range m.deployments {
			spec := &d.Spec.Template.Spec
			ngx, exp := nginxContainer(t, d), exporterContainer(t, d)
			confPath, _ := flagValue(ngx.Command, "-c")
			if _, cm := m.configMapFile(t, spec, ngx, confPath); !hashed.MatchString(cm.Name) {
				t.Errorf("nginx.conf is in ConfigMap %s, want nginx-config-<hash> (configMapGenerator): an edit would not roll the pods", cm.Name)
			}
			rulesPath, _ := flagValue(exp.Args, "--config.file")
			if _, cm := m.configMapFile(t, spec, exp, rulesPath); cm.Name != "logwindow-rules" {
				t.Errorf("the rules are in ConfigMap %s, want logwindow-rules: a hash suffix would roll the pods at each rules change", cm.Name)
			}
		}
	})
}

// TestExporterImage: the exporter's image is a version, never :latest or no tag (which a
// node keeps as it first pulled it under IfNotPresent): in the shipped kustomizations the
// name cmd/image and the Dockerfile build and the VERSION file's version, in the user's
// overlay the registry's image its images: entry sets.
func TestExporterImage(t *testing.T) {
	version := strings.TrimSpace(string(mustRead(t, "../VERSION")))
	want := map[string]string{
		"k8s":              release.Repository + ":" + version,
		"overlays/file":    release.Repository + ":" + version,
		"testdata/overlay": "registry.example.com/logwindow_exporter:0.1.0",
	}
	for _, target := range renderTargets {
		t.Run(target, func(t *testing.T) {
			for _, d := range render(t, target).deployments {
				c := exporterContainer(t, d)
				if c.Image != want[target] {
					t.Errorf("exporter image %s, want %s", c.Image, want[target])
				}
				if c.ImagePullPolicy != corev1.PullIfNotPresent {
					t.Errorf("imagePullPolicy %q, want IfNotPresent for a version tag", c.ImagePullPolicy)
				}
			}
		})
	}
}
