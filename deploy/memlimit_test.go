package deploy

import (
	"fmt"
	"strings"
	"testing"
	"testing/fstest"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/logwindow/logwindow_exporter/internal/memlimit"
)

// TestMemoryBound: the memory limit each manifest gives the exporter's container and the
// bound the exporter derives from it agree. With no --series.max-bytes the exporter reads
// its cgroup's limit (memlimit.Choose, here over a cgroup v2 file system holding the
// rendered limit, as the container's cgroup namespace shows it): the series get half, and
// the Go runtime's soft limit sits above them and below the limit, so the bound folds
// label sets before the kernel kills the process. A --series.max-bytes the manifest passes
// must keep to the same half.
func TestMemoryBound(t *testing.T) {
	chartPod := func(values string) func(t *testing.T) *corev1.Container {
		return func(t *testing.T) *corev1.Container {
			m := renderChart(t, chartCase{values: values})
			for _, d := range m.daemonSets {
				return chartExporter(t, &d.Spec.Template.Spec)
			}
			for _, d := range m.deployments {
				return chartExporter(t, &d.Spec.Template.Spec)
			}
			t.Fatal("no workload")
			return nil
		}
	}
	kustomized := func(target string) func(t *testing.T) *corev1.Container {
		return func(t *testing.T) *corev1.Container {
			d := render(t, target).deployments["nginx"]
			if d == nil {
				t.Fatal("no Deployment nginx")
			}
			return exporterContainer(t, d)
		}
	}
	for _, c := range []struct {
		name      string
		container func(t *testing.T) *corev1.Container
		limit     int64 // the limit the manifest gives
	}{
		{"chart daemonset", chartPod(""), 256 << 20},
		{"chart syslog", chartPod("mode: syslog\n"), 256 << 20},
		{"chart with another limit", chartPod("resources: {limits: {memory: 1Gi}}\n"), 1 << 30},
		{"chart with a consistent --series.max-bytes", chartPod("resources: {limits: {memory: 1Gi}}\nextraArgs: [--series.max-bytes=256MiB]\n"), 1 << 30},
		{"kustomize sidecar", kustomized("k8s"), 256 << 20},
		{"kustomize file overlay", kustomized("overlays/file"), 256 << 20},
	} {
		t.Run(c.name, func(t *testing.T) {
			exp := c.container(t)
			q, ok := exp.Resources.Limits[corev1.ResourceMemory]
			if !ok {
				t.Fatal("no memory limit: the exporter's bound would be its 512MiB default, whatever the node has")
			}
			limit := q.Value()
			if limit != c.limit {
				t.Errorf("memory limit %s (%d bytes), want %d", q.String(), limit, c.limit)
			}
			fsys := fstest.MapFS{
				"proc/self/cgroup":         {Data: []byte("0::/\n")},
				"sys/fs/cgroup/memory.max": {Data: fmt.Appendf(nil, "%d\n", limit)},
			}
			flag, set := flagValue(exp.Args, "--series.max-bytes")
			var flagBytes int64
			if set {
				// kingpin's units (MiB) as a Kubernetes quantity (Mi).
				fq, err := resource.ParseQuantity(strings.TrimSuffix(flag, "B"))
				if err != nil {
					t.Fatalf("--series.max-bytes=%s: %v", flag, err)
				}
				flagBytes = fq.Value()
			}
			b, err := memlimit.Choose(fsys, flagBytes, set)
			if err != nil {
				t.Fatal(err)
			}
			if !set && (b.Source != memlimit.CgroupV2 || b.Limit != limit || b.Bytes != limit/2) {
				t.Errorf("bound %+v: want half the limit %d from the cgroup", b, limit)
			}
			if b.Bytes <= 0 || b.Bytes > limit/2 {
				t.Errorf("--series.max-bytes %d: want at most half the limit, %d", b.Bytes, limit/2)
			}
			if b.SoftLimit <= b.Bytes || b.SoftLimit >= limit {
				t.Errorf("soft limit %d: want above the series' bound %d and below the container's limit %d", b.SoftLimit, b.Bytes, limit)
			}
			t.Logf("limit %s: series bound %d MiB, soft limit %d MiB (%s)", q.String(), b.Bytes>>20, b.SoftLimit>>20, b.Source)
		})
	}
}
