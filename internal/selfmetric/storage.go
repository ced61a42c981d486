package selfmetric

import (
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// StorageStats says how the snapshots of --storage.path fare.
type StorageStats struct {
	// Enabled: a storage path is set.
	Enabled bool
	// Snapshots and Failures count the snapshots written and those that failed (an
	// unwritable directory, a full disk); each failure is logged.
	Snapshots, Failures uint64
	// Unsynced counts the snapshots written (in Snapshots) whose directory could not be
	// synced after the rename: in place, but not known to last a crash of the host.
	// AheadFailures counts the snapshots whose series could not be encoded ahead of the
	// cut, and were at it while the inputs waited (or the snapshot then failed). Each is
	// logged; counted too, so that a disk failing so can be alerted on.
	Unsynced, AheadFailures uint64
	// LastBytes, LastDuration and LastPause are of the last snapshot written: its size,
	// how long it took whole, and how long the inputs waited for it (the cut).
	LastBytes    int64
	LastDuration time.Duration
	LastPause    time.Duration
	// LastSuccess is when the last snapshot was written; zero before the first.
	LastSuccess time.Time
	// RestoreFailures counts the snapshots that could not be read at start (corrupt,
	// truncated, of another version, too large, unreadable), which were set aside; the
	// exporter started without them.
	RestoreFailures uint64
	// RestoredRules and RestoredSeries are what the start took from the snapshot;
	// SkippedRules the rules of the snapshot that were not restored (changed or removed
	// rules, series that did not decode with the rule's layout).
	RestoredRules, RestoredSeries, SkippedRules int
	// SkippedRecords are the records of the snapshot's optional sections (messages in
	// parts, files left or found truncated) that did not decode and were left out; the
	// rest of the snapshot was restored.
	SkippedRecords int
}

// The storage's self-metrics, exported while a storage path is set.
var (
	StorageSnapshots = Metric{"logwindow_storage_snapshots_total",
		"Snapshots of the series and the files' positions written to --storage.path.",
		nil}
	StorageSnapshotFailures = Metric{"logwindow_storage_snapshot_failures_total",
		"Snapshots that could not be written (an unwritable directory, a full disk); each is logged, the one before is kept.",
		nil}
	StorageSnapshotUnsynced = Metric{"logwindow_storage_snapshot_unsynced_total",
		"Snapshots written whose storage directory could not be synced after the rename (in logwindow_storage_snapshots_total too): in place, but may not last a crash of the host; each is logged.",
		nil}
	StorageAheadFailures = Metric{"logwindow_storage_snapshot_ahead_failures_total",
		"Snapshots whose series could not be encoded ahead of the cut (a full disk under the spill): encoded at the cut while the inputs waited, or the snapshot then failed; each is logged.",
		nil}
	StorageSnapshotBytes = Metric{"logwindow_storage_snapshot_bytes",
		"Size of the last snapshot written.",
		nil}
	StorageSnapshotDuration = Metric{"logwindow_storage_snapshot_duration_seconds",
		"How long the last snapshot took, encoding and writing.",
		nil}
	StorageSnapshotPause = Metric{"logwindow_storage_snapshot_pause_seconds",
		"How long the inputs waited for the last snapshot's cut (its series and positions taken as one).",
		nil}
	StorageLastSnapshot = Metric{"logwindow_storage_last_snapshot_timestamp_seconds",
		"Unix time of the last snapshot written.",
		nil}
	StorageRestoreFailures = Metric{"logwindow_storage_restore_failures_total",
		"Snapshots that could not be read at start (corrupt, truncated, of another version, over the memory bound, not a regular file, refused to the exporter's user), each set aside, or not read because another exporter used the storage directory; the exporter started empty.",
		nil}
	StorageRestoredSeries = Metric{"logwindow_storage_restored_series",
		"Series the start took from the snapshot.",
		nil}
	StorageSkippedRules = Metric{"logwindow_storage_skipped_rules",
		"Rules of the snapshot not restored at start: changed or removed since, whose series did not decode, or would pass --series.max-bytes.",
		nil}
	StorageSkippedRecords = Metric{"logwindow_storage_skipped_records",
		"Records of the snapshot's optional sections (messages in parts, files left or found truncated) not restored at start because they did not decode; each is logged, the rest of the snapshot was restored.",
		nil}
)

// Storage collects the snapshots' statistics.
type Storage struct {
	read   func() StorageStats
	failed *atomic.Uint64
	descs  [12]*prometheus.Desc
}

// NewStorage returns the collector of what read returns; it sends nothing while no
// storage path is set.
func NewStorage(read func() StorageStats, failed *atomic.Uint64) *Storage {
	c := &Storage{read: read, failed: failed}
	for i, m := range []Metric{StorageSnapshots, StorageSnapshotFailures, StorageSnapshotBytes, StorageSnapshotDuration,
		StorageSnapshotPause, StorageLastSnapshot, StorageRestoreFailures, StorageRestoredSeries, StorageSkippedRules, StorageSkippedRecords,
		StorageSnapshotUnsynced, StorageAheadFailures} {
		c.descs[i] = m.Desc()
	}
	return c
}

// Describe sends nothing (see Rules.Describe).
func (c *Storage) Describe(chan<- *prometheus.Desc) {}

// Collect sends the storage's samples.
func (c *Storage) Collect(ch chan<- prometheus.Metric) {
	st := c.read()
	if !st.Enabled {
		return
	}
	e := emitter{ch, c.failed}
	e.emit(c.descs[0], prometheus.CounterValue, float64(st.Snapshots))
	e.emit(c.descs[1], prometheus.CounterValue, float64(st.Failures))
	e.emit(c.descs[2], prometheus.GaugeValue, float64(st.LastBytes))
	e.emit(c.descs[3], prometheus.GaugeValue, st.LastDuration.Seconds())
	e.emit(c.descs[4], prometheus.GaugeValue, st.LastPause.Seconds())
	if !st.LastSuccess.IsZero() {
		e.emit(c.descs[5], prometheus.GaugeValue, float64(st.LastSuccess.UnixNano())/1e9)
	}
	e.emit(c.descs[6], prometheus.CounterValue, float64(st.RestoreFailures))
	e.emit(c.descs[7], prometheus.GaugeValue, float64(st.RestoredSeries))
	e.emit(c.descs[8], prometheus.GaugeValue, float64(st.SkippedRules))
	e.emit(c.descs[9], prometheus.GaugeValue, float64(st.SkippedRecords))
	e.emit(c.descs[10], prometheus.CounterValue, float64(st.Unsynced))
	e.emit(c.descs[11], prometheus.CounterValue, float64(st.AheadFailures))
}
