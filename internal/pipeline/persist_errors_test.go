package pipeline

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/logwindow/logwindow_exporter/internal/storage"
	"github.com/logwindow/logwindow_exporter/internal/store"
	"github.com/logwindow/logwindow_exporter/internal/testutil/syncbuf"
)

// TestSnapshotNotSynced: a snapshot whose directory could not be synced after the rename
// (storage.ErrNotSynced) is in place: it is counted as written (and as not synced), not
// as a failure, and warned of as not known to last a crash, naming the directory and the
// error. The next snapshot is written and counted as any other, and a restart restores
// the one not synced.
func TestSnapshotNotSynced(t *testing.T) {
	dir, log := filepath.Join(t.TempDir(), "storage"), filepath.Join(t.TempDir(), "access.log")
	var out syncbuf.Buffer
	p := startStored(t, log, dir, &out, Options{SnapshotInterval: time.Hour})
	persistLines(t, log, 1, 10)
	waitCounted(t, p, 10)
	p.storage.writeFile = func(dir string, fill func(w *storage.Writer) error) error {
		if err := storage.Write(dir, fill); err != nil {
			return err
		}
		// What Commit returns when the directory's sync after the rename fails, as
		// storage's TestCommitNotSynced has it do.
		return fmt.Errorf("snapshot %s %w: %w", filepath.Join(dir, storage.FileName), storage.ErrNotSynced, &fs.PathError{Op: "sync", Path: dir, Err: syscall.EIO})
	}
	if err := p.Snapshot(); err != nil {
		t.Fatalf("Snapshot: %v, want it written", err)
	}
	if s := p.StorageStats(); s.Snapshots != 1 || s.Failures != 0 || s.Unsynced != 1 || s.LastBytes == 0 || s.LastSuccess.IsZero() {
		t.Errorf("storage stats %+v, want one snapshot written, not synced", s)
	}
	logged := out.String()
	for _, want := range []string{"the storage directory could not be synced", "dir=" + dir, "sync " + dir + ": input/output error"} {
		if !strings.Contains(logged, want) {
			t.Errorf("log lacks %q:\n%s", want, logged)
		}
	}
	if strings.Contains(logged, "cannot write the snapshot") {
		t.Errorf("a snapshot in place logged as failed:\n%s", logged)
	}
	kept, err := os.ReadFile(filepath.Join(dir, storage.FileName))
	if err != nil {
		t.Fatal(err)
	}

	p.storage.writeFile = storage.Write
	persistLines(t, log, 11, 12)
	waitCounted(t, p, 12)
	if err := p.Snapshot(); err != nil {
		t.Fatalf("the next snapshot: %v", err)
	}
	if s := p.StorageStats(); s.Snapshots != 2 || s.Failures != 0 || s.Unsynced != 1 {
		t.Errorf("storage stats %+v after the next snapshot, want two written, one not synced", s)
	}

	kill(t, p, dir, kept)
	var again syncbuf.Buffer
	// Lines 11 and 12, after the snapshot not synced, are read again from its positions.
	waitCounted(t, startStored(t, log, dir, &again, Options{SnapshotInterval: time.Hour}), 12)
}

// TestSnapshotAheadFails: series that cannot be encoded ahead of the cut (a full disk
// under the spill) are encoded at the cut; that is not silent: a snapshot written so is
// warned of, naming the error (the rule, the spill's file, ENOSPC), and one that then fails
// says it beside its own error. Only a snapshot that failed is counted as one; either
// is counted as not encoded ahead.
func TestSnapshotAheadFails(t *testing.T) {
	for _, tc := range []struct {
		name       string
		writeFails bool
		want       string
	}{
		{name: "the snapshot written", want: `the series could not be encoded ahead of the snapshot's cut`},
		{name: "the snapshot failed", writeFails: true, want: `cannot write the snapshot`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir, log := filepath.Join(t.TempDir(), "storage"), filepath.Join(t.TempDir(), "access.log")
			var out syncbuf.Buffer
			p := startStored(t, log, dir, &out, Options{SnapshotInterval: time.Hour})
			persistLines(t, log, 1, 10)
			waitCounted(t, p, 10)
			spill := filepath.Join(dir, "snapshot.tmp-123")
			p.storage.encodeAhead = func(*store.Set, *storage.Spill) (*store.Encoded, error) {
				return nil, fmt.Errorf("rule %q: snapshot: spill: %w", "timed", &fs.PathError{Op: "write", Path: spill, Err: syscall.ENOSPC})
			}
			if tc.writeFails {
				p.storage.writeFile = func(string, func(w *storage.Writer) error) error { return errors.New("the disk failed") }
			}
			err := p.Snapshot()
			if tc.writeFails != (err != nil) {
				t.Fatalf("Snapshot: %v, want failed %v", err, tc.writeFails)
			}
			wantStats := [3]uint64{1, 0, 1} // written, failed, not encoded ahead
			if tc.writeFails {
				wantStats = [3]uint64{0, 1, 1}
			}
			if s := p.StorageStats(); [3]uint64{s.Snapshots, s.Failures, s.AheadFailures} != wantStats {
				t.Errorf("storage stats %+v, want written, failed and not encoded ahead %v", s, wantStats)
			}
			var line string
			for l := range strings.Lines(out.String()) {
				if strings.Contains(l, tc.want) {
					line = l
				}
			}
			for _, want := range []string{`rule \"timed\"`, "write " + spill + ": no space left on device"} {
				if !strings.Contains(line, want) {
					t.Errorf("log line %q lacks %q:\n%s", tc.want, want, out.String())
				}
			}
		})
	}
}
