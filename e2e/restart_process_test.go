package e2e

// Windows that survive a restart, through the built binary with --storage.path: every
// line is counted once across a SIGTERM and a kill -9, in the totals and in every window
// of a processing-time and an event-time rule, with the log rotated by rename while the
// exporter was down; the same for a CRI tree.

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/logwindow/logwindow_exporter/internal/storage"
	"github.com/logwindow/logwindow_exporter/internal/testutil/await"
	"github.com/logwindow/logwindow_exporter/internal/testutil/metrictest"
	"github.com/logwindow/logwindow_exporter/internal/testutil/testexec"
)

// restartConfig: a file read from its end and a CRI tree, both counted at processing time
// and, the file, at its lines' own time; windows far longer than the test.
const restartConfig = `
global: {windows: [5m, 15m]}
inputs:
  - {name: web, path: 'DIR/access.log', start_at: end}
  - {name: pods, path: 'DIR/pods/*/nginx/*.log', wrapper: cri, start_at: end, path_captures: '/pods/(?P<pod>[^/]+)/nginx/'}
rules:
  - {name: arrived, match: 'n=', inputs: [web]}
  - name: timed
    match: 'ts=(?P<ts>\S+) n='
    timestamp: {capture: ts, layout: '2006-01-02T15:04:05Z07:00'}
    inputs: [web]
  - {name: pod_lines, match: 'n=', inputs: [pods], labels: {pod: '${pod}'}}
`

// restartLogs are the two logs of restartConfig: the file, and one pod's CRI log.
type restartLogs struct{ file, pod string }

// write appends lines from..to to both logs, the pod's as CRI lines.
func (l restartLogs) write(t *testing.T, from, to int) {
	t.Helper()
	var file, pod strings.Builder
	now := time.Now().UTC().Format(time.RFC3339)
	for n := from; n <= to; n++ {
		fmt.Fprintf(&file, "ts=%s n=%d\n", now, n)
		fmt.Fprintf(&pod, "%s stdout F ts=%s n=%d\n", time.Now().UTC().Format(time.RFC3339Nano), now, n)
	}
	for path, text := range map[string]string{l.file: file.String(), l.pod: pod.String()} {
		f, err := os.OpenFile(path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.WriteString(text); err != nil {
			t.Fatal(err)
		}
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// rotate renames both logs away, as logrotate and the kubelet do; the next write makes
// new ones.
func (l restartLogs) rotate(t *testing.T) {
	t.Helper()
	for path, to := range map[string]string{l.file: l.file + ".1", l.pod: l.pod + ".20240301-120000"} {
		if err := os.Rename(path, to); err != nil {
			t.Fatal(err)
		}
	}
}

// waitCounted waits until every total and window of the three rules reads n.
func waitCounted(t *testing.T, e *testexec.Exporter, n float64) {
	t.Helper()
	e.WaitCheck(t, func(m metrictest.Families) error {
		var off []string
		for _, s := range []struct {
			family string
			labels map[string]string
		}{
			{"arrived_total", nil}, {"timed_total", nil}, {"pod_lines_total", map[string]string{"pod": "a"}},
			{"arrived_window", map[string]string{"window": "5m"}}, {"arrived_window", map[string]string{"window": "15m"}},
			{"timed_window", map[string]string{"window": "5m"}}, {"timed_window", map[string]string{"window": "15m"}},
			{"pod_lines_window", map[string]string{"pod": "a", "window": "5m"}}, {"pod_lines_window", map[string]string{"pod": "a", "window": "15m"}},
		} {
			if v := metrictest.Value(m, s.family, s.labels); v != n {
				off = append(off, fmt.Sprintf("%s%v %v", s.family, s.labels, v))
			}
		}
		if len(off) > 0 {
			return fmt.Errorf("want %v; got %s", n, strings.Join(off, ", "))
		}
		return nil
	})
}

func TestProcessRestartKeepsWindows(t *testing.T) {
	bin := testexec.BuildExporter(t, false)
	dir, state := t.TempDir(), t.TempDir()
	logs := restartLogs{file: filepath.Join(dir, "access.log"), pod: filepath.Join(dir, "pods", "a", "nginx", "0.log")}
	if err := os.MkdirAll(filepath.Dir(logs.pod), 0o755); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(dir, "rules.yaml")
	if err := os.WriteFile(cfg, []byte(strings.ReplaceAll(restartConfig, "DIR", dir)), 0o644); err != nil {
		t.Fatal(err)
	}
	logs.write(t, -9, 0) // before the first start: start_at: end skips them
	args := []string{"--config.file=" + cfg, "--storage.path=" + state, "--storage.snapshot-interval=200ms",
		"--input.poll-interval=50ms", "--input.rotation-grace=1s", "--input.backfill-bytes=0"}
	start := func() *testexec.Exporter { return testexec.StartExporter(t, bin, args...) }

	e := start()
	logs.write(t, 1, 1000)
	waitCounted(t, e, 1000)

	t.Run("SIGTERM, written and rotated while down", func(t *testing.T) {
		if err := e.Stop(testexec.DefaultTimeout); err != nil {
			t.Fatal(err)
		}
		logs.write(t, 1001, 1300)
		logs.rotate(t)
		logs.write(t, 1301, 1500)
		e = start()
		waitCounted(t, e, 1500)
	})

	t.Run("kill -9 after a burst", func(t *testing.T) {
		// A periodic snapshot of this process first: the kill leaves it, not the burst's.
		restarted := time.Now()
		snapshot := filepath.Join(state, storage.FileName)
		if !await.Until(t, func() bool {
			fi, err := os.Stat(snapshot)
			return err == nil && fi.ModTime().After(restarted)
		}) {
			t.Fatal("no periodic snapshot")
		}
		logs.write(t, 1501, 2500)
		waitCounted(t, e, 2500)
		if err := e.Kill(); err == nil {
			t.Fatal("the exporter exited cleanly after SIGKILL")
		}
		logs.write(t, 2501, 2600)
		e = start()
		waitCounted(t, e, 2600)
	})
}
