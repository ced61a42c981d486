package selfmetric

import (
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// The memory collector says where its bound came from when told, and nothing of it
// otherwise; it sends nothing without a Set to read.
func TestMemorySource(t *testing.T) {
	for _, tc := range []struct {
		name, source string
		ok           bool
		want         string
	}{
		{name: "from a cgroup", source: "cgroup_v2", ok: true, want: `
# HELP logwindow_series_max_bytes_source 1 for where the --series.max-bytes bound came from: flag, cgroup_v2 or cgroup_v1 (half the container's memory limit), or default (512MiB: no limit found).
# TYPE logwindow_series_max_bytes_source gauge
logwindow_series_max_bytes_source{source="cgroup_v2"} 1
# HELP logwindow_series_max_bytes The --series.max-bytes bound; 0 is none.
# TYPE logwindow_series_max_bytes gauge
logwindow_series_max_bytes 1.34217728e+08
`},
		{name: "no source", ok: true, want: `
# HELP logwindow_series_max_bytes The --series.max-bytes bound; 0 is none.
# TYPE logwindow_series_max_bytes gauge
logwindow_series_max_bytes 1.34217728e+08
`},
		{name: "no set", source: "flag"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var failed atomic.Uint64
			c := NewMemory(func() (int64, int64, bool) { return 5, 128 << 20, tc.ok }, tc.source, &failed)
			reg := prometheus.NewPedanticRegistry()
			reg.MustRegister(c)
			if err := testutil.GatherAndCompare(reg, strings.NewReader(tc.want), SeriesMaxBytesSource.Name, SeriesMaxBytes.Name); err != nil {
				t.Error(err)
			}
			if failed.Load() != 0 {
				t.Errorf("%d metrics failed", failed.Load())
			}
		})
	}
}

// The storage collector says nothing while no storage path is set, and every figure of
// the snapshots once one is.
func TestStorage(t *testing.T) {
	names := []string{StorageSnapshots.Name, StorageSnapshotFailures.Name, StorageSnapshotBytes.Name,
		StorageSnapshotDuration.Name, StorageSnapshotPause.Name, StorageLastSnapshot.Name,
		StorageRestoreFailures.Name, StorageRestoredSeries.Name, StorageSkippedRules.Name, StorageSkippedRecords.Name,
		StorageSnapshotUnsynced.Name, StorageAheadFailures.Name}
	for _, tc := range []struct {
		name string
		st   StorageStats
		want []string
	}{
		{name: "off", st: StorageStats{Snapshots: 3}},
		{name: "on", st: StorageStats{Enabled: true, Snapshots: 3, Failures: 1, LastBytes: 690000,
			LastDuration: 60 * time.Millisecond, LastPause: 9 * time.Millisecond, LastSuccess: time.Unix(1500, 0),
			RestoreFailures: 1, RestoredSeries: 10000, SkippedRules: 2, SkippedRecords: 3, Unsynced: 4, AheadFailures: 5},
			want: []string{
				"logwindow_storage_snapshots_total 3", "logwindow_storage_snapshot_failures_total 1",
				"logwindow_storage_snapshot_bytes 690000", "logwindow_storage_snapshot_duration_seconds 0.06",
				"logwindow_storage_snapshot_pause_seconds 0.009", "logwindow_storage_last_snapshot_timestamp_seconds 1500",
				"logwindow_storage_restore_failures_total 1", "logwindow_storage_restored_series 10000",
				"logwindow_storage_skipped_rules 2", "logwindow_storage_skipped_records 3",
				"logwindow_storage_snapshot_unsynced_total 4", "logwindow_storage_snapshot_ahead_failures_total 5"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var failed atomic.Uint64
			reg := prometheus.NewPedanticRegistry()
			reg.MustRegister(NewStorage(func() StorageStats { return tc.st }, &failed))
			n, err := testutil.GatherAndCount(reg, names...)
			if err != nil || n != len(tc.want) {
				t.Fatalf("%d samples (%v), want %d", n, err, len(tc.want))
			}
			var text strings.Builder
			for _, name := range names {
				if v, err := testutil.GatherAndLint(reg, name); err != nil || len(v) > 0 {
					t.Errorf("lint %s: %v %v", name, err, v)
				}
			}
			mfs, _ := reg.Gather()
			for _, mf := range mfs {
				for _, m := range mf.GetMetric() {
					v := m.GetGauge().GetValue() + m.GetCounter().GetValue()
					text.WriteString(mf.GetName() + " " + strconv.FormatFloat(v, 'g', -1, 64) + "\n")
				}
			}
			for _, w := range tc.want {
				if !strings.Contains(text.String(), w+"\n") {
					t.Errorf("no %q in\n%s", w, text.String())
				}
			}
		})
	}
}
