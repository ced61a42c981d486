package storage

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
)

// swap sets *v to to until the test ends: a hook of the package's.
func swap[T any](t *testing.T, v *T, to T) {
	t.Helper()
	was := *v
	*v = to
	t.Cleanup(func() { *v = was })
}

// fullDisk is a file's writer on a full disk: it writes nothing, and says so as the
// system does, with a bare errno.
type fullDisk struct{}

func (fullDisk) Write([]byte) (int, error) { return 0, syscall.ENOSPC }

// writing has the files of the Writers and Spills made from now on written through
// fullDisk if full, else as they are, and returns the names of those files so far.
func writing(t *testing.T, full bool) *[]string {
	names := new([]string)
	swap(t, &fileWriter, func(f *os.File) io.Writer {
		*names = append(*names, f.Name())
		if full {
			return fullDisk{}
		}
		return f
	})
	return names
}

// TestWriteErrorNamesFiles: a write that fails on a full disk (ENOSPC, which names no
// file) fails with an error that says which snapshot and which of its files: the
// temporary file the snapshot is written to, or the spill its series were on their way
// in; whether it fails as the records are written, at the commit, or as a spill is
// added to or copied from. The last snapshot stays, and no temporary file is left.
func TestWriteErrorNamesFiles(t *testing.T) {
	big := []byte(strings.Repeat("r", 2*spillBuffer))
	for _, tc := range []struct {
		name string
		// spill: a spill is made on the full disk, before the snapshot, whose file is
		// written as any other; write: what the snapshot is written with.
		spill bool
		write func(w *Writer, sp *Spill) error
	}{
		{name: "at the commit", write: func(w *Writer, _ *Spill) error { return fill(w) }},
		{name: "as a record is written", write: func(w *Writer, _ *Spill) error {
			w.Section("rules")
			return w.Record(big)
		}},
		{name: "as the spill is added to", spill: true, write: func(_ *Writer, sp *Spill) error {
			_, err := sp.Add(big)
			return err
		}},
		{name: "as the spill is copied", spill: true, write: func(w *Writer, sp *Spill) error {
			span, err := sp.Add([]byte("held in the spill's buffer"))
			if err != nil {
				return err
			}
			w.Section("rules")
			return w.Spilled(sp, []Span{span})
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := Write(dir, fill); err != nil {
				t.Fatal(err)
			}
			var sp *Spill
			var files *[]string
			if tc.spill {
				files = writing(t, true)
				var err error
				if sp, err = NewSpill(dir); err != nil {
					t.Fatal(err)
				}
				defer sp.Close()
				writing(t, false)
			} else {
				files = writing(t, true)
			}
			err := Write(dir, func(w *Writer) error { return tc.write(w, sp) })
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatalf("Write: %v, want ENOSPC", err)
			}
			// The file that failed is the spill when there is one: it was made first.
			failed := (*files)[0]
			for _, want := range []string{filepath.Join(dir, FileName) + ":", failed + ":"} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("Write: %q does not name %s", err, want)
				}
			}
			snap, rerr := Read(dir, 1<<20)
			if rerr != nil {
				t.Fatal(rerr)
			}
			if err := check(snap); err != nil {
				t.Errorf("the last snapshot changed: %v", err)
			}
			if tmps := named(dir, tmpPrefix); len(tmps) != 0 {
				t.Errorf("temporary files left: %v", tmps)
			}
		})
	}
}

// TestCommitNotSynced: a directory that cannot be synced after the rename leaves the new
// snapshot in place, and says so: its error wraps ErrNotSynced (and the sync's error,
// naming the directory), not that of a snapshot that failed. The next snapshot writes
// over it as over any other.
func TestCommitNotSynced(t *testing.T) {
	dir := t.TempDir()
	if err := Write(dir, fill); err != nil {
		t.Fatal(err)
	}
	var synced []string
	swap(t, &syncDirectory, func(d *os.File) error {
		synced = append(synced, d.Name())
		return syscall.EIO
	})
	err := Write(dir, func(w *Writer) error {
		if err := w.Section("new"); err != nil {
			return err
		}
		return w.Record([]byte("in place"))
	})
	if !errors.Is(err, ErrNotSynced) || !errors.Is(err, syscall.EIO) {
		t.Fatalf("Write: %v, want ErrNotSynced of EIO", err)
	}
	if !slices.Equal(synced, []string{dir}) || !strings.Contains(err.Error(), "sync "+dir+":") {
		t.Errorf("Write: %v, synced %q, want the sync of %s named", err, synced, dir)
	}
	snap, err := Read(dir, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	if got := sections(snap); len(got) != 1 || got[0][0] != "new" {
		t.Errorf("snapshot holds %q, want the new one", got)
	}
	if tmps := named(dir, tmpPrefix); len(tmps) != 0 {
		t.Errorf("temporary files left: %v", tmps)
	}
	syncDirectory = (*os.File).Sync
	if err := Write(dir, fill); err != nil {
		t.Fatalf("the next snapshot: %v", err)
	}
	if snap, err = Read(dir, 1<<20); err != nil {
		t.Fatal(err)
	} else if err := check(snap); err != nil {
		t.Errorf("the next snapshot: %v", err)
	}
}
