package deploy

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/logwindow/logwindow_exporter/internal/input/follow"
)

// TestStartupProbeAllowsWarmStart: /-/ready answers once the warm start is done, or once
// follow.BackfillReadyWait has passed since the start (a wait for the storage directory
// counting in it), plus the time the inputs take to list and open their files. A
// startupProbe that gives up at that bound kills the exporter as it becomes ready, on a
// slow node again and again. Every exporter shipped allows the bound and as long again, as
// the chart's minute does.
func TestStartupProbeAllowsWarmStart(t *testing.T) {
	check := func(t *testing.T, c *corev1.Container) {
		t.Helper()
		p := c.StartupProbe
		if p == nil {
			t.Fatal("no startupProbe")
		}
		period, threshold := p.PeriodSeconds, p.FailureThreshold
		if period == 0 {
			period = 10 // Kubernetes' defaults
		}
		if threshold == 0 {
			threshold = 3
		}
		allowed := time.Duration(p.InitialDelaySeconds+period*threshold) * time.Second
		if want := 2 * follow.BackfillReadyWait; allowed < want {
			t.Errorf("startupProbe gives up after %v: want %v at least, the warm start's %v and as long again to list and open the files", allowed, want, follow.BackfillReadyWait)
		}
	}
	for _, dir := range renderTargets {
		t.Run(dir, func(t *testing.T) {
			for _, d := range render(t, dir).deployments {
				check(t, exporterContainer(t, d))
			}
		})
	}
	for _, mode := range []string{"daemonset", "syslog"} {
		t.Run("chart "+mode, func(t *testing.T) {
			m := renderChart(t, chartCase{values: "mode: " + mode + "\n", mode: mode})
			check(t, chartExporter(t, chartPodSpec(m)))
		})
	}
}
