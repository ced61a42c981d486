package deploy

import (
	"slices"
	"strconv"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

// The windows survive what each deployment's volume survives: the chart's DaemonSet keeps
// its snapshot in a hostPath of the node, its release's own (namespace and name), made for the exporter's user
// by an init container with CHOWN alone; its syslog Deployment and the kustomize sidecar
// in an emptyDir. Each passes --storage.path where the volume is mounted.
func TestStorageVolumes(t *testing.T) {
	check := func(t *testing.T, spec *corev1.PodSpec, exp *corev1.Container, wantHostPath string) {
		t.Helper()
		dir, ok := flagValue(exp.Args, "--storage.path")
		if !ok {
			t.Fatalf("args %q: no --storage.path", exp.Args)
		}
		i := slices.IndexFunc(exp.VolumeMounts, func(vm corev1.VolumeMount) bool { return vm.MountPath == dir })
		if i < 0 || exp.VolumeMounts[i].ReadOnly {
			t.Fatalf("--storage.path=%s is no writable mount of the container", dir)
		}
		j := slices.IndexFunc(spec.Volumes, func(v corev1.Volume) bool { return v.Name == exp.VolumeMounts[i].Name })
		if j < 0 {
			t.Fatalf("no volume %s", exp.VolumeMounts[i].Name)
		}
		v := spec.Volumes[j]
		if wantHostPath == "" {
			if v.EmptyDir == nil {
				t.Errorf("volume %+v: want an emptyDir", v)
			}
			return
		}
		if v.HostPath == nil || v.HostPath.Path != wantHostPath || v.HostPath.Type == nil || *v.HostPath.Type != corev1.HostPathDirectoryOrCreate {
			t.Fatalf("volume %+v: want the hostPath %s, made if missing", v, wantHostPath)
		}
		k := slices.IndexFunc(spec.InitContainers, func(c corev1.Container) bool {
			return slices.ContainsFunc(c.VolumeMounts, func(vm corev1.VolumeMount) bool { return vm.Name == v.Name })
		})
		if k < 0 {
			t.Fatal("no init container gives the hostPath to the exporter's user")
		}
		init := spec.InitContainers[k]
		user := spec.SecurityContext.RunAsUser
		// -R: the snapshot and lock an exporter run as another user left (a changed
		// runAsUser, or root before) are given over too, or the new user cannot read
		// the snapshot and starts with empty windows.
		if user == nil || !strings.Contains(strings.Join(init.Command, " "), "chown -R "+strconv.FormatInt(*user, 10)+":") {
			t.Errorf("init container %q: want a chown of the directory and its files to the pod's user", init.Command)
		}
		sc := init.SecurityContext
		if sc == nil || sc.Capabilities == nil || !slices.Equal(sc.Capabilities.Add, []corev1.Capability{"CHOWN"}) ||
			!slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) || sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation {
			t.Errorf("init container's securityContext %+v: want CHOWN alone", sc)
		}
	}
	t.Run("chart daemonset", func(t *testing.T) {
		m := renderChart(t, chartCase{name: "daemonset", mode: "daemonset", release: "edge"})
		for _, d := range m.daemonSets {
			check(t, &d.Spec.Template.Spec, chartExporter(t, &d.Spec.Template.Spec), "/var/lib/logwindow-exporter/monitoring/edge")
		}
	})
	// Release names are unique in a namespace only: two DaemonSets of one name in two
	// namespaces run on the same nodes, and a shared directory would have each restore
	// and overwrite the other's snapshot.
	t.Run("chart daemonset in another namespace", func(t *testing.T) {
		m := renderChart(t, chartCase{name: "daemonset", mode: "daemonset", release: "edge", namespace: "ingress"})
		for _, d := range m.daemonSets {
			check(t, &d.Spec.Template.Spec, chartExporter(t, &d.Spec.Template.Spec), "/var/lib/logwindow-exporter/ingress/edge")
		}
	})
	t.Run("chart syslog", func(t *testing.T) {
		m := renderChart(t, chartCase{name: "syslog", values: "mode: syslog\n", mode: "syslog"})
		for _, d := range m.deployments {
			check(t, &d.Spec.Template.Spec, chartExporter(t, &d.Spec.Template.Spec), "")
		}
	})
	t.Run("chart without storage", func(t *testing.T) {
		m := renderChart(t, chartCase{name: "daemonset", values: "storage: {enabled: false}\n", mode: "daemonset"})
		for _, d := range m.daemonSets {
			spec := &d.Spec.Template.Spec
			if _, ok := flagValue(chartExporter(t, spec).Args, "--storage.path"); ok || len(spec.InitContainers) > 0 {
				t.Error("storage off, the pod still keeps a snapshot")
			}
		}
	})
	t.Run("kustomize sidecar", func(t *testing.T) {
		d := render(t, "k8s").deployments["nginx"]
		check(t, &d.Spec.Template.Spec, exporterContainer(t, d), "")
	})
}

// TestStorageInitResources: a namespace's ResourceQuota on cpu and memory (or on any
// resource the user gives the exporter) makes the API server refuse a pod any container of
// which, its init containers included, lacks that request or limit: the DaemonSet would
// make no pod, the install succeeding. The init container that gives the snapshot's
// directory away takes the exporter's resources, which leaves the pod's own (the larger of
// its init containers' and the sum of its containers') as they were.
func TestStorageInitResources(t *testing.T) {
	for _, c := range []struct{ name, values string }{
		{"defaults", ""},
		{"ephemeral storage too", "resources: {requests: {cpu: 20m, memory: 32Mi, ephemeral-storage: 10Mi}, limits: {cpu: 200m, memory: 128Mi, ephemeral-storage: 20Mi}}\n"},
	} {
		t.Run(c.name, func(t *testing.T) {
			m := renderChart(t, chartCase{values: c.values, mode: "daemonset"})
			spec := chartPodSpec(m)
			if len(spec.InitContainers) == 0 {
				t.Fatal("no init container")
			}
			want := chartExporter(t, spec).Resources
			for _, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
				if _, ok := want.Requests[r]; !ok {
					t.Fatalf("the exporter has no %s request", r)
				}
			}
			for _, init := range spec.InitContainers {
				if !equalJSON(t, init.Resources, want) {
					got, _ := yaml.Marshal(init.Resources)
					exp, _ := yaml.Marshal(want)
					t.Errorf("init container %s: resources\n%s\nwant the exporter's, which a quota of the namespace admits:\n%s", init.Name, got, exp)
				}
			}
		})
	}
}
