package deploy

import (
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/yaml"
)

// manifests are the objects under k8s/, by kind, each strictly decoded.
type manifests struct {
	deployments     map[string]*appsv1.Deployment
	services        map[string]*corev1.Service
	configMaps      map[string]*corev1.ConfigMap
	podMonitors     map[string]*monitoringv1.PodMonitor
	prometheusRules map[string]*monitoringv1.PrometheusRule
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
	case "v1 Service":
		o := &corev1.Service{}
		obj, add = o, func() { m.services[o.Name] = o }
	case "v1 ConfigMap":
		o := &corev1.ConfigMap{}
		obj, add = o, func() { m.configMaps[o.Name] = o }
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
		services:        map[string]*corev1.Service{},
		configMaps:      map[string]*corev1.ConfigMap{},
		podMonitors:     map[string]*monitoringv1.PodMonitor{},
		prometheusRules: map[string]*monitoringv1.PrometheusRule{},
	}
}

// loadManifests decodes every YAML file under k8s/.
func loadManifests(t *testing.T) *manifests {
	t.Helper()
	m := newManifests()
	n := 0
	err := filepath.WalkDir("k8s", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !(strings.HasSuffix(p, ".yaml") || strings.HasSuffix(p, ".yml")) {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		n++
		if err := decodeManifest(data, m); err != nil {
			return fmt.Errorf("%s: %w", p, err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n == 0 {
		t.Fatal("no manifest under k8s/")
	}
	return m
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

func TestNginxAccessLog(t *testing.T) {
	cases := []struct {
		name, conf, file, format, wantErr string
	}{
		{"joined", "log_format main '$a '\n   '$b';\naccess_log /l/a.log main;\n", "/l/a.log", "$a $b", ""},
		{"undefined format", "log_format main '$a';\naccess_log /l/a.log combined;\n", "", "", "no log_format"},
		{"no access log", "log_format main '$a';\n", "", "", "found 0"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			file, format, err := nginxAccessLog(c.conf)
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("error %v, want %q", err, c.wantErr)
				}
				return
			}
			if err != nil || file != c.file || format != c.format {
				t.Fatalf("got %q %q %v, want %q %q", file, format, err, c.file, c.format)
			}
		})
	}
}

func TestPodWiring(t *testing.T) {
	m := loadManifests(t)
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
				for what, pr := range map[string]*corev1.Probe{"liveness": c.LivenessProbe, "readiness": c.ReadinessProbe} {
					if pr == nil || pr.HTTPGet == nil {
						t.Errorf("container %s: no HTTP %s probe", c.Name, what)
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

// TestExporterSidecar checks that the exporter reads the file nginx writes, through a
// volume both mount, with the rules from the generated ConfigMap.
func TestExporterSidecar(t *testing.T) {
	m := loadManifests(t)
	for _, d := range m.deployments {
		t.Run(d.Name, func(t *testing.T) {
			spec := &d.Spec.Template.Spec
			exp, ngx := exporterContainer(t, d), nginxContainer(t, d)

			if got := exp.LivenessProbe.HTTPGet.Path; got != "/-/healthy" {
				t.Errorf("exporter liveness probe on %s, want /-/healthy", got)
			}
			if got := exp.ReadinessProbe.HTTPGet.Path; got != "/-/ready" {
				t.Errorf("exporter readiness probe on %s, want /-/ready", got)
			}

			rulesPath, ok := flagValue(exp.Args, "--config.file")
			if !ok {
				t.Fatal("exporter has no --config.file")
			}
			rules, cm := m.configMapFile(t, spec, exp, rulesPath)
			example, err := os.ReadFile("../example-rules.yaml")
			if err != nil {
				t.Fatal(err)
			}
			if rules != string(example) {
				t.Errorf("ConfigMap %s differs from example-rules.yaml: run go test ./deploy -run TestGenerated -update", cm.Name)
			}

			confPath, ok := flagValue(ngx.Command, "-c")
			if !ok {
				t.Fatal("nginx runs without -c")
			}
			conf, _ := m.configMapFile(t, spec, ngx, confPath)
			logFile, format, err := nginxAccessLog(conf)
			if err != nil {
				t.Fatalf("%s: %v", confPath, err)
			}
			// Tests running their own nginx take the format from NginxLogFormat.
			if exported, err := NginxLogFormat(); err != nil || exported != format {
				t.Errorf("NginxLogFormat() = %q, %v; the pod's nginx logs with %q", exported, err, format)
			}
			logVol, logRel, err := resolveMount(spec, ngx, logFile)
			if err != nil {
				t.Fatal(err)
			}
			if logVol.EmptyDir == nil {
				t.Fatalf("nginx writes %s to volume %s, not an emptyDir shared with the exporter", logFile, logVol.Name)
			}
			if logVol.EmptyDir.SizeLimit == nil {
				t.Errorf("volume %s: no sizeLimit, an unrotated log could fill the node's disk", logVol.Name)
			}

			inputs := inputPaths(t, rules)
			for _, in := range inputs {
				v, rel, err := resolveMount(spec, exp, in)
				if err != nil {
					t.Error(err)
					continue
				}
				matched, err := path.Match(rel, logRel)
				if v.Name != logVol.Name || err != nil || !matched {
					t.Errorf("exporter input %s is %s on volume %s; nginx writes %s on volume %s", in, rel, v.Name, logRel, logVol.Name)
				}
			}
		})
	}
}

// inputPaths reads the input paths of a rule file. Only that key is decoded here: the
// exporter's own --config.check validates the whole file (see TestDockerfileBuild).
func inputPaths(t *testing.T, rules string) []string {
	t.Helper()
	var f struct {
		Inputs []struct {
			Path string `json:"path"`
		} `json:"inputs"`
	}
	if err := yaml.Unmarshal([]byte(rules), &f); err != nil {
		t.Fatal(err)
	}
	var paths []string
	for _, in := range f.Inputs {
		paths = append(paths, in.Path)
	}
	if len(paths) == 0 {
		t.Fatal("rule file has no inputs")
	}
	return paths
}

func TestSecurityAndResources(t *testing.T) {
	m := loadManifests(t)
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
	m := loadManifests(t)
	if len(m.podMonitors) == 0 {
		t.Fatal("no PodMonitor")
	}
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
				if c, _ := containerPort(&d.Spec.Template.Spec, p.TargetPort.StrVal); c == nil {
					t.Errorf("port %s: targetPort %q is no container port of deployment %s", p.Name, p.TargetPort.StrVal, d.Name)
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
