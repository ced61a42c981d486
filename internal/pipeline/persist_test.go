package pipeline

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/logwindow/logwindow_exporter/config"
	"github.com/logwindow/logwindow_exporter/internal/input/cri"
	"github.com/logwindow/logwindow_exporter/internal/input/cri/critest"
	"github.com/logwindow/logwindow_exporter/internal/input/follow"
	"github.com/logwindow/logwindow_exporter/internal/selfmetric"
	"github.com/logwindow/logwindow_exporter/internal/storage"
	"github.com/logwindow/logwindow_exporter/internal/store"
	"github.com/logwindow/logwindow_exporter/internal/testutil/asother"
	"github.com/logwindow/logwindow_exporter/internal/testutil/await"
	"github.com/logwindow/logwindow_exporter/internal/testutil/storetest"
	"github.com/logwindow/logwindow_exporter/internal/testutil/syncbuf"
	"github.com/logwindow/logwindow_exporter/internal/testutil/testclock"
	"github.com/logwindow/logwindow_exporter/windows/wire"
)

// persistRules count lines twice: at their own time and at processing time, both in
// windows longer than any test; the input starts at the end of its file, so that only a
// restored position can make it read what was written while it was down.
const persistRules = `
global: {windows: [1m, 5m]}
inputs: [{name: web, path: 'LOG', start_at: end}]
rules:
  - name: timed
    match: 'ts=(?P<ts>\S+) n='
    timestamp: {capture: ts, layout: '2006-01-02T15:04:05Z07:00'}
  - name: arrived
    match: 'n='
`

// persistLines appends lines from..to to path, stamped now.
func persistLines(t *testing.T, path string, from, to int) {
	t.Helper()
	var b strings.Builder
	stamp := time.Now().UTC().Format(time.RFC3339)
	for n := from; n <= to; n++ {
		fmt.Fprintf(&b, "ts=%s n=%d\n", stamp, n)
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(b.String()); err != nil {
		t.Fatal(err)
	}
}

// startStored starts a pipeline on persistRules for log with the storage directory dir
// and what it logs in out.
func startStored(t *testing.T, log, dir string, out *syncbuf.Buffer, o Options) *Pipeline {
	t.Helper()
	return startStoredOn(t, strings.ReplaceAll(persistRules, "LOG", log), dir, out, o)
}

// startStoredOn is startStored on rules of its own.
func startStoredOn(t *testing.T, rules, dir string, out *syncbuf.Buffer, o Options) *Pipeline {
	t.Helper()
	cfg, o := storedOn(t, rules, dir, out, o)
	p, err := Start(cfg, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Stop)
	return p
}

// storedOn is what startStoredOn starts, on o's clock (Now) when it has one, else the host's.
func storedOn(t *testing.T, rules, dir string, out *syncbuf.Buffer, o Options) (*config.Config, Options) {
	t.Helper()
	cfg, err := config.Parse([]byte(rules), "rules.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	o.PollInterval, o.RotationGrace = 10*time.Millisecond, 50*time.Millisecond
	o.BackfillBytes, o.StoragePath = DefaultBackfillBytes, dir
	o.Logger = slog.New(slog.NewTextHandler(out, &slog.HandlerOptions{Level: slog.LevelDebug}))
	return cfg, o
}

// startStoredAsOther is startStored as another user than the one that made dir's files
// (asother): what an exporter restarted as another user (a chart's runAsUser changed) does.
func startStoredAsOther(t *testing.T, log, dir string, out *syncbuf.Buffer, o Options) *Pipeline {
	t.Helper()
	cfg, o := storedOn(t, strings.ReplaceAll(persistRules, "LOG", log), dir, out, o)
	var p *Pipeline
	var err error
	asother.Run(t, []string{dir}, func() { p, err = Start(cfg, o) })
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Stop)
	return p
}

// startSnapshotted starts a pipeline on persistRules with the storage directory dir/storage
// of the test's, what it logs in out, and writes a snapshot once it counted 10 lines.
func startSnapshotted(t *testing.T, out *syncbuf.Buffer) (*Pipeline, string) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "storage")
	log := filepath.Join(t.TempDir(), "access.log")
	p := startStored(t, log, dir, out, Options{SnapshotInterval: time.Hour})
	persistLines(t, log, 1, 10)
	waitCounted(t, p, 10)
	if err := p.Snapshot(); err != nil {
		t.Fatal(err)
	}
	return p, dir
}

// countSpills has p's snapshots count in the int it returns the spills they encode the
// series ahead into.
func countSpills(p *Pipeline) *int {
	n := new(int)
	p.storage.encodeAhead = func(set *store.Set, sp *storage.Spill) (*store.Encoded, error) {
		*n++
		return set.EncodeAhead(sp)
	}
	return n
}

// periodicSnapshot takes a snapshot of p while it runs, as the periodic ones are taken,
// and returns its file as written in dir.
func periodicSnapshot(t *testing.T, p *Pipeline, dir string) []byte {
	t.Helper()
	if err := p.Snapshot(); err != nil {
		t.Fatal(err)
	}
	kept, err := os.ReadFile(filepath.Join(dir, storage.FileName))
	if err != nil {
		t.Fatal(err)
	}
	return kept
}

// kill ends p as a kill after the snapshot kept (periodicSnapshot) would: what a restart
// finds in dir is that snapshot, not the one the shutdown writes.
func kill(t *testing.T, p *Pipeline, dir string, kept []byte) {
	t.Helper()
	p.Stop()
	if err := os.WriteFile(filepath.Join(dir, storage.FileName), kept, 0o600); err != nil {
		t.Fatal(err)
	}
}

// waitCounted waits until the rules' totals and windows read want, and fails the test
// if they do not before await.Deadline.
func waitCounted(t *testing.T, p *Pipeline, want float64) {
	t.Helper()
	var off []string
	if !await.Until(t, func() bool {
		off = nil
		samples := gatherPipeline(t, p)
		for _, name := range []string{`timed_total{}`, `timed_window{window="1m"}`, `timed_window{window="5m"}`, `arrived_total{}`, `arrived_window{window="1m"}`, `arrived_window{window="5m"}`} {
			if v, ok := samples[name]; !ok || v != want {
				off = append(off, fmt.Sprintf("%s %v", name, v))
			}
		}
		return len(off) == 0
	}) {
		t.Fatalf("want %v in every window and total; got %s", want, strings.Join(off, ", "))
	}
}

// TestStorageRestart: every line is counted exactly once across a restart, in the totals
// and in every window of a processing-time and an event-time rule, whether the exporter
// stopped (a shutdown's snapshot) or was killed after a periodic snapshot (the lines
// since are read again), and whatever happened to the log while it was down.
func TestStorageRestart(t *testing.T) {
	cases := []struct {
		name   string
		killed bool
		rotate bool
	}{
		{name: "stopped, appended"},
		{name: "stopped, rotated by rename", rotate: true},
		{name: "killed after a snapshot, rotated by rename", killed: true, rotate: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir, logDir := t.TempDir(), t.TempDir()
			log := filepath.Join(logDir, "access.log")
			// Before the first start, older than every window: start_at: end skips them,
			// and the warm start finds nothing to fill the windows with.
			old := "ts=" + time.Now().Add(-time.Hour).UTC().Format(time.RFC3339) + " n=0\n"
			if err := os.WriteFile(log, []byte(strings.Repeat(old, 10)), 0o644); err != nil {
				t.Fatal(err)
			}
			var out syncbuf.Buffer
			p := startStored(t, log, dir, &out, Options{})
			persistLines(t, log, 1, 1000)
			waitCounted(t, p, 1000)
			lines := 1000
			if tc.killed {
				kept := periodicSnapshot(t, p, dir)
				persistLines(t, log, 1001, 1200)
				waitCounted(t, p, 1200)
				kill(t, p, dir, kept)
				lines = 1200
			} else {
				p.Stop()
			}
			persistLines(t, log, lines+1, lines+300)
			if tc.rotate {
				if err := os.Rename(log, log+".1"); err != nil {
					t.Fatal(err)
				}
			}
			persistLines(t, log, lines+301, lines+500)
			var restarted syncbuf.Buffer
			p = startStored(t, log, dir, &restarted, Options{})
			waitCounted(t, p, float64(lines+500))
			if s := p.StorageStats(); s.RestoredRules != 2 || s.RestoreFailures != 0 {
				t.Errorf("storage stats %+v, want 2 rules restored and no failure", s)
			}
			if strings.Contains(restarted.String(), "warm start") {
				t.Errorf("a warm start ran on a restored position:\n%s", restarted.String())
			}
		})
	}
}

// TestStorageKeepsLeftFiles: a file the follower closed after it left its path (blue and
// green releases behind one symlink, the link retargeted from blue to green) is read on
// from where it was left when the link comes back to it after a restart, killed after a
// periodic snapshot or stopped, not again from its start: its lines are counted once.
func TestStorageKeepsLeftFiles(t *testing.T) {
	for _, killed := range []bool{false, true} {
		t.Run(fmt.Sprintf("killed %v", killed), func(t *testing.T) {
			dir, logDir := t.TempDir(), t.TempDir()
			link := filepath.Join(logDir, "current.log")
			blue, green := filepath.Join(logDir, "blue.log"), filepath.Join(logDir, "green.log")
			retarget := blueGreen(t, link, blue, green)
			var out syncbuf.Buffer
			p := startStored(t, link, dir, &out, Options{})
			persistLines(t, blue, 1, 100)
			waitCounted(t, p, 100)
			retarget(green)
			persistLines(t, green, 101, 200)
			waitCounted(t, p, 200)
			waitLogged(t, &out, "closed rotated file after its grace period", 1)
			if killed {
				kill(t, p, dir, periodicSnapshot(t, p, dir))
			} else {
				p.Stop()
			}
			retarget(blue)
			persistLines(t, blue, 201, 300)
			var restarted syncbuf.Buffer
			p = startStored(t, link, dir, &restarted, Options{})
			waitCounted(t, p, 300)
			waitCaughtUp(t, p)
			waitCounted(t, p, 300)
		})
	}
}

// TestStorageKeepsTruncations: a snapshot keeps what the files its followers found
// truncated within the rotation grace held (the log's copy, should a restart find it
// after the truncation was read, is read from where the log was read up to), and a
// restart's followers, which found none truncated, keep none.
func TestStorageKeepsTruncations(t *testing.T) {
	dir, logDir := t.TempDir(), t.TempDir()
	log := filepath.Join(logDir, "access.log")
	var out syncbuf.Buffer
	rules := strings.ReplaceAll(persistRules, "LOG", filepath.Join(logDir, "access.log*"))
	start := func() *Pipeline {
		cfg, o := storedOn(t, rules, dir, &out, Options{})
		o.RotationGrace = time.Hour // the truncation is recent at the snapshot
		p, err := Start(cfg, o)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(p.Stop)
		return p
	}
	p := start()
	persistLines(t, log, 1, 100)
	waitCounted(t, p, 100)
	if err := os.Truncate(log, 0); err != nil {
		t.Fatal(err)
	}
	persistLines(t, log, 101, 110)
	waitCounted(t, p, 110)
	truncated := func() []follow.Position {
		t.Helper()
		snap, err := storage.Read(dir, math.MaxInt64)
		if err != nil {
			t.Fatal(err)
		}
		files, skipped := decodeFiles(snap, sectionTruncated, nil)
		if len(skipped) != 0 {
			t.Fatalf("records skipped: %v", skipped)
		}
		return files[filepath.Join(logDir, "access.log*")]
	}
	p.Stop()
	kept := truncated()
	if len(kept) != 1 || kept[0].Path != log || kept[0].Offset == 0 {
		t.Fatalf("truncated files %+v, want the log's, as read before its truncation", kept)
	}
	p = start()
	waitCounted(t, p, 110)
	p.Stop()
	if again := truncated(); len(again) != 0 {
		t.Errorf("truncated files %+v after a restart, want none: the restart's follower found no truncation", again)
	}
}

// TestStorageBadSnapshot: a snapshot that cannot be read is logged, counted and set
// aside, and the exporter starts empty; a directory that cannot be written fails each
// snapshot, logged and counted, and nothing else.
func TestStorageBadSnapshot(t *testing.T) {
	good := func(t *testing.T, dir string) []byte {
		t.Helper()
		log := filepath.Join(t.TempDir(), "access.log")
		var out syncbuf.Buffer
		p := startStored(t, log, dir, &out, Options{})
		persistLines(t, log, 1, 10)
		waitCounted(t, p, 10)
		p.Stop()
		b, err := os.ReadFile(filepath.Join(dir, storage.FileName))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	type badCase struct {
		name  string
		spoil func(b []byte) []byte
		// rewrite, when set, writes each section of the snapshot spoilt again (rewriteSnapshot).
		rewrite func(w *storage.Writer, sec storage.Section) error
		opts    Options
		// aside: the snapshot is set aside; logged is what the log says.
		aside  bool
		logged string
	}
	cases := []badCase{{
		name:   "corrupt",
		spoil:  func(b []byte) []byte { b[len(b)/2] ^= 0x55; return b },
		aside:  true,
		logged: "corrupt",
	}, {
		name:   "truncated",
		spoil:  func(b []byte) []byte { return b[:len(b)*2/3] },
		aside:  true,
		logged: "corrupt",
	}, {
		name: "another version",
		spoil: func(b []byte) []byte {
			binary.LittleEndian.PutUint32(b[8:], storage.Version+1)
			return b
		},
		aside:  true,
		logged: "another format version",
	}, {
		name:   "over --series.max-bytes",
		spoil:  func(b []byte) []byte { return b },
		opts:   Options{SeriesMaxBytes: 64},
		aside:  true,
		logged: "too large",
	}, {
		// A position of a file the input does not name: a restart read the file of its
		// device and inode in the position's directory (any the exporter may read) to its
		// end, as a file rotated away while the exporter was down.
		name:  "a position the input does not name",
		spoil: func(b []byte) []byte { return b },
		rewrite: func(w *storage.Writer, sec storage.Section) error {
			if err := storetest.CopySection(w, sec); err != nil || sec.Name != sectionFiles {
				return err
			}
			return w.Record(appendPositions(nil, "/var/log/nginx/*.log", []follow.Position{{Path: "/etc/shadow", Dev: 2049, Ino: 131}}))
		},
		aside:  true,
		logged: `corrupt encoding: position of \"/etc/shadow\", which \"/var/log/nginx/*.log\" does not name`,
	}}
	// A second no clock reaches, in the cut or as the process's start: held to it,
	// processing time wrapped to negative seconds as it moved on, and rates counted from it
	// were read over spans that overflowed.
	for _, far := range []int64{-1, store.LatestSecond + 1, math.MaxInt64 - 1, math.MinInt64} {
		for _, sec := range []string{"cut", sectionPipeline} {
			cases = append(cases, badCase{
				name:  fmt.Sprintf("%s at second %d", sec, far),
				spoil: func(b []byte) []byte { return b },
				rewrite: func(w *storage.Writer, s storage.Section) error {
					if s.Name != sec {
						return storetest.CopySection(w, s)
					}
					if err := w.Section(s.Name); err != nil {
						return err
					}
					return w.Record(wire.AppendVarint(nil, far))
				},
				aside:  true,
				logged: fmt.Sprintf("at second %d", far),
			})
		}
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			b := tc.spoil(good(t, dir))
			if err := os.WriteFile(filepath.Join(dir, storage.FileName), b, 0o600); err != nil {
				t.Fatal(err)
			}
			if tc.rewrite != nil {
				rewriteSnapshot(t, dir, tc.rewrite)
			}
			var out syncbuf.Buffer
			p := startStored(t, filepath.Join(t.TempDir(), "access.log"), dir, &out, tc.opts)
			if s := p.StorageStats(); s.RestoreFailures != 1 || s.RestoredRules != 0 {
				t.Errorf("storage stats %+v, want one restore failure", s)
			}
			if !strings.Contains(out.String(), "cannot restore the snapshot: starting empty") || !strings.Contains(out.String(), tc.logged) {
				t.Errorf("log lacks the failure (%q):\n%s", tc.logged, out.String())
			}
			aside, _ := filepath.Glob(filepath.Join(dir, storage.FileName+".bad-*"))
			if tc.aside != (len(aside) == 1) {
				t.Errorf("set aside: %v, want %v", aside, tc.aside)
			}
			if samples := gatherPipeline(t, p); samples[`arrived_total{}`] != 0 {
				t.Errorf("arrived_total %v after a failed restore, want 0", samples[`arrived_total{}`])
			}
		})
	}
	t.Run("unwritable directory", func(t *testing.T) {
		// A regular file where the directory should be: unwritable even for root.
		dir := filepath.Join(t.TempDir(), "not-a-dir")
		if err := os.WriteFile(dir, nil, 0o600); err != nil {
			t.Fatal(err)
		}
		var out syncbuf.Buffer
		log := filepath.Join(t.TempDir(), "access.log")
		p := startStored(t, log, dir, &out, Options{})
		persistLines(t, log, 1, 10)
		waitCounted(t, p, 10)
		if err := p.Snapshot(); err == nil {
			t.Error("a snapshot into a file succeeded")
		}
		s := p.StorageStats()
		if s.Failures != 1 || s.Snapshots != 0 || s.RestoreFailures != 1 {
			t.Errorf("storage stats %+v, want one failed snapshot and one failed restore", s)
		}
		if !strings.Contains(out.String(), "cannot write the snapshot") {
			t.Errorf("log lacks the failure:\n%s", out.String())
		}
	})
}

// TestStorageBadOptionalRecord: a bad record (its checksums right: a snapshot of another
// build, or one edited) in a section that only helps a rare case (messages in parts,
// files left, files found truncated, files read to their end) costs that record, warned of by its section and
// counted, not the snapshot: its series and positions are restored, and the lines
// appended while the exporter was down are counted once. It set the snapshot aside whole.
func TestStorageBadOptionalRecord(t *testing.T) {
	const criSource = "/var/log/pods/*/*/*.log"
	cutShort := func(rec []byte) []byte { return rec[:len(rec)-3] }
	type bad struct {
		section string
		record  func(log string) []byte
		logged  string
	}
	cutShortParts := bad{sectionParts, func(string) []byte { return cutShort(partsRecord()) }, "corrupt"}
	// A stream name no CRI line has, long: it was held, and charged to the memory bound,
	// bounded only by the snapshot's size.
	forgedStream := bad{sectionParts, func(string) []byte {
		const path = "/var/log/pods/web/nginx/0.log"
		return appendPathParts(nil, criSource, pathParts{
			path:  path,
			files: []follow.Position{{Path: path, Dev: 2049, Ino: 131, Offset: 90}},
			parts: []cri.Part{{Stream: strings.Repeat("s", 1<<20), Joined: []byte("a")}},
		})
	}, "stream name"}
	files := func(section string) []bad {
		return []bad{{section, func(log string) []byte {
			return cutShort(appendPositions(nil, log, []follow.Position{{Path: log, Dev: 2049, Ino: 131, Offset: 90}}))
		}, "corrupt"}, {section, func(log string) []byte {
			// A file the input does not name would be looked for by device and inode in
			// its directory and read as the input's.
			return appendPositions(nil, log, []follow.Position{{Path: "/etc/shadow", Dev: 2049, Ino: 131}})
		}, "does not name"}}
	}
	cases := map[string][]bad{
		"messages in parts cut short":          {cutShortParts},
		"messages in parts of a forged stream": {forgedStream},
		"files left cut short":                 files(sectionLeft)[:1],
		"files left the input does not name":   files(sectionLeft)[1:],
		"truncated files cut short":            files(sectionTruncated)[:1],
		"truncated files not named":            files(sectionTruncated)[1:],
		"drained files cut short":              files(sectionDrained)[:1],
		"drained files not named":              files(sectionDrained)[1:],
		"one in each":                          {cutShortParts, forgedStream, files(sectionLeft)[1], files(sectionTruncated)[0]},
	}
	for name, bads := range cases {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			log := filepath.Join(t.TempDir(), "access.log")
			var out syncbuf.Buffer
			p := startStored(t, log, dir, &out, Options{})
			persistLines(t, log, 1, 10)
			waitCounted(t, p, 10)
			p.Stop()
			rewriteSnapshot(t, dir, func(w *storage.Writer, sec storage.Section) error {
				if err := storetest.CopySection(w, sec); err != nil {
					return err
				}
				for _, b := range bads {
					if b.section == sec.Name {
						if err := w.Record(b.record(log)); err != nil {
							return err
						}
					}
				}
				return nil
			})
			persistLines(t, log, 11, 15)
			var restarted syncbuf.Buffer
			p = startStored(t, log, dir, &restarted, Options{})
			waitCounted(t, p, 15)
			s := p.StorageStats()
			if s.RestoreFailures != 0 || s.RestoredRules != 2 || s.SkippedRecords != len(bads) {
				t.Errorf("storage stats %+v, want 2 rules restored, %d records skipped, no failure", s, len(bads))
			}
			if aside, _ := filepath.Glob(filepath.Join(dir, storage.FileName+".bad-*")); len(aside) != 0 {
				t.Errorf("set aside: %v", aside)
			}
			logged := restarted.String()
			for _, b := range bads {
				if !strings.Contains(logged, "section="+b.section) || !strings.Contains(logged, b.logged) {
					t.Errorf("log lacks the %s record skipped (%q):\n%s", b.section, b.logged, logged)
				}
			}
			if strings.Contains(logged, "cannot restore the snapshot") || strings.Contains(logged, "warm start") {
				t.Errorf("the snapshot was not restored:\n%s", logged)
			}
		})
	}
}

// TestStorageUnreadableSnapshot: a snapshot the exporter cannot open (one root wrote,
// mode 0600, read by an exporter restarted as another user; a link loop) is set aside
// whole, logged and counted, and the exporter starts empty: it was left in place, and
// the first snapshot written over it, lost without a trace. The next start restores the
// snapshot written since, without a failure.
func TestStorageUnreadableSnapshot(t *testing.T) {
	for _, tc := range []struct {
		name   string
		spoil  func(path string) error
		asUser bool
		logged string
	}{
		{"refused to the exporter's user", func(path string) error { return os.Chmod(path, 0) }, true, "permission denied"},
		{"a link loop", func(path string) error {
			if err := os.Remove(path); err != nil {
				return err
			}
			return os.Symlink(storage.FileName, path)
		}, false, "too many levels of symbolic links"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir, log := t.TempDir(), filepath.Join(t.TempDir(), "access.log")
			var out syncbuf.Buffer
			p := startStored(t, log, dir, &out, Options{SnapshotInterval: time.Hour})
			persistLines(t, log, 1, 10)
			waitCounted(t, p, 10)
			p.Stop()
			path := filepath.Join(dir, storage.FileName)
			if err := tc.spoil(path); err != nil {
				t.Fatal(err)
			}
			kept, err := os.Lstat(path)
			if err != nil {
				t.Fatal(err)
			}
			var restarted syncbuf.Buffer
			if tc.asUser {
				p = startStoredAsOther(t, log, dir, &restarted, Options{SnapshotInterval: time.Hour})
			} else {
				p = startStored(t, log, dir, &restarted, Options{SnapshotInterval: time.Hour})
			}
			if s := p.StorageStats(); s.RestoreFailures != 1 || s.RestoredRules != 0 {
				t.Errorf("storage stats %+v, want one restore failure", s)
			}
			if !strings.Contains(restarted.String(), "cannot restore the snapshot: starting empty") || !strings.Contains(restarted.String(), tc.logged) {
				t.Errorf("log lacks the failure (%q):\n%s", tc.logged, restarted.String())
			}
			aside, _ := filepath.Glob(filepath.Join(dir, storage.FileName+".bad-*"))
			if len(aside) != 1 {
				t.Fatalf("set aside: %v, want one\n%s", aside, restarted.String())
			}
			if fi, err := os.Lstat(aside[0]); err != nil || !os.SameFile(fi, kept) {
				t.Errorf("set aside %s is not the snapshot (%v)", aside[0], err)
			}
			if err := p.Snapshot(); err != nil {
				t.Fatal(err)
			}
			p.Stop()
			var again syncbuf.Buffer
			p = startStored(t, log, dir, &again, Options{SnapshotInterval: time.Hour})
			if s := p.StorageStats(); s.RestoreFailures != 0 || s.RestoredRules != 2 {
				t.Errorf("storage stats %+v at the next start, want the snapshot written since restored\n%s", s, again.String())
			}
		})
	}
}

// An exporter restarted as another user than root, which ran it before (the chart's
// runAsUser changed), in the directory root's exporter left (given to the new user, as the
// chart's init container does, but not its files, mode 0600): it went on without a lock,
// only warned of, and two exporters given the directory were no longer told of; it
// replaces the lock file, says so, and keeps the next one out. The snapshot it may not
// read is set aside.
func TestStorageUserChanged(t *testing.T) {
	dir, log := t.TempDir(), filepath.Join(t.TempDir(), "access.log")
	var out syncbuf.Buffer
	p := startStored(t, log, dir, &out, Options{SnapshotInterval: time.Hour})
	persistLines(t, log, 1, 10)
	waitCounted(t, p, 10)
	p.Stop()
	for _, name := range []string{storage.LockName, storage.FileName} {
		// An earlier build made its lock file 0600 too; mode 0 refuses a user not root
		// running the tests as asother's user refuses root's 0600.
		if err := os.Chmod(filepath.Join(dir, name), 0); err != nil {
			t.Fatal(err)
		}
	}
	var restarted syncbuf.Buffer
	p = startStoredAsOther(t, log, dir, &restarted, Options{SnapshotInterval: time.Hour})
	if !strings.Contains(restarted.String(), "replaced the storage directory's lock file") || strings.Contains(restarted.String(), "cannot lock") {
		t.Errorf("the log does not say the lock file was replaced:\n%s", restarted.String())
	}
	if l, err := storage.TakeLock(dir); !errors.Is(err, storage.ErrLocked) {
		if l != nil {
			l.Release()
		}
		t.Errorf("another exporter taking the directory: %v, want ErrLocked", err)
	}
	if s := p.StorageStats(); s.RestoreFailures != 1 {
		t.Errorf("storage stats %+v, want the snapshot not restored", s)
	}
	if aside, _ := filepath.Glob(filepath.Join(dir, storage.FileName+".bad-*")); len(aside) != 1 {
		t.Errorf("set aside: %v, want the snapshot", aside)
	}
}

// TestStorageCutWhileReading: a snapshot is one cut: taken while lines keep coming,
// restored, and the rest read from its positions, it counts every line once.
func TestStorageCutWhileReading(t *testing.T) {
	dir, logDir := t.TempDir(), t.TempDir()
	log := filepath.Join(logDir, "access.log")
	var out syncbuf.Buffer
	p := startStored(t, log, dir, &out, Options{})
	var b bytes.Buffer
	const n = 10000
	for i := range n {
		fmt.Fprintf(&b, "ts=%s n=%d\n", time.Now().UTC().Format(time.RFC3339), i)
	}
	if err := os.WriteFile(log, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	var kept []byte
	for range 5 {
		kept = periodicSnapshot(t, p, dir)
	}
	waitCounted(t, p, n)
	kill(t, p, dir, kept)
	p = startStored(t, log, dir, &out, Options{})
	waitCounted(t, p, n)
}

// BenchmarkSnapshot10kSeries measures a snapshot of 10,000 series, and reports the
// longest pause of the inputs it caused (the cut) besides the time of the whole write.
func BenchmarkSnapshot10kSeries(b *testing.B) {
	const rules = `
global: {max_series_per_rule: 20000}
inputs: [{name: web, path: LOG}]
rules:
  - {name: paths, match: 'path=(?P<p>\S+)', labels: {path: '${p}'}}
`
	log := filepath.Join(b.TempDir(), "access.log")
	var text strings.Builder
	const n = 10000
	for i := range n {
		fmt.Fprintf(&text, "path=/p/%d\n", i)
	}
	if err := os.WriteFile(log, []byte(text.String()), 0o644); err != nil {
		b.Fatal(err)
	}
	cfg, err := config.Parse([]byte(strings.ReplaceAll(strings.Replace(rules, "path: LOG", "path: LOG, start_at: beginning", 1), "LOG", log)), "rules.yaml")
	if err != nil {
		b.Fatal(err)
	}
	p, err := Start(cfg, Options{Now: time.Now, StoragePath: b.TempDir(), SnapshotInterval: time.Hour})
	if err != nil {
		b.Fatal(err)
	}
	defer p.Stop()
	for s := p.inputStats(); len(s) != 1 || s[0].LinesRead != n; s = p.inputStats() {
		time.Sleep(5 * time.Millisecond) // a benchmark has no deadline: go test's -timeout ends a wait that never ends
	}
	// What a scrape's look at the inputs waits for while snapshots are taken: the
	// readiness check takes the lock it takes, every millisecond.
	stop, waited := make(chan struct{}), make(chan time.Duration)
	go func() {
		var most time.Duration
		for {
			select {
			case <-stop:
				waited <- most
				return
			case <-time.After(time.Millisecond):
			}
			t := time.Now()
			p.Ready()
			most = max(most, time.Since(t))
		}
	}()
	var longest time.Duration
	for b.Loop() {
		if err := p.Snapshot(); err != nil {
			b.Fatal(err)
		}
		longest = max(longest, p.StorageStats().LastPause)
	}
	close(stop)
	b.ReportMetric(float64(longest.Microseconds()), "max-pause-µs")
	b.ReportMetric(float64((<-waited).Microseconds()), "max-ready-wait-µs")
	b.ReportMetric(float64(p.StorageStats().LastBytes), "snapshot-bytes")
}

// The lines an input of candidate formats holds while a file's format is chosen are
// parsed when it stops (its files are done with): at shutdown, before the snapshot that
// records its positions past them, so that a restart has them counted rather than lost.
func TestStorageKeepsHeldLines(t *testing.T) {
	const combined = `10.0.0.1 - - [01/Mar/2024:12:00:00 +0000] "GET / HTTP/1.1" 200 5 "-" "curl"` + "\n"
	dir, log := t.TempDir(), filepath.Join(t.TempDir(), "access.log")
	if err := os.WriteFile(log, []byte(combined+"a line of no format\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Parse([]byte(`
inputs: [{path: '`+log+`', log_format: auto, start_at: beginning}]
rules:
  - {name: all, match: '.'}
  - {name: requests, labels: {status: '${status}'}}
`), "rules.yaml")
	if err != nil {
		t.Fatal(err)
	}
	// The clock stands still: the line of no format stays held until the stop, never
	// settled as a file quiet for a minute is.
	now := time.Date(2024, 3, 1, 12, 0, 0, 0, time.UTC)
	start := func() *Pipeline {
		p, err := Start(cfg, Options{Now: func() time.Time { return now }, PollInterval: 10 * time.Millisecond, StoragePath: dir})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(p.Stop)
		return p
	}
	// counted checks both rules' totals once p read the lines it is to read: a line counts
	// as read once all its events are written, one rule's after another's, which a
	// gathering taken meanwhile sees in part (requests counted, all not yet).
	counted := func(p *Pipeline, what string, read uint64, all, requests float64) {
		t.Helper()
		waitRead(t, p, read)
		s := gatherPipeline(t, p)
		if got := s[`all_total{}`]; got != all {
			t.Errorf("%s: %v lines counted by the rule that reads every line, want %v", what, got, all)
		}
		if got := s[`requests_total{status="200"}`]; got != requests {
			t.Errorf("%s: %v requests counted, want %v", what, got, requests)
		}
	}
	p := start()
	counted(p, "before the restart", 2, 1, 1) // the line of no format held
	p.Stop()
	p = start()
	counted(p, "at the restart", 0, 2, 1) // the stop counted it
	appendTo(t, log, combined)
	counted(p, "after the restart", 1, 3, 2) // read on past it
}

// The lines held while a file's format is chosen are not counted yet: a periodic snapshot
// positions their file at the first of them, so that a restart after a kill reads them
// again, and each line is counted once, those held included, whichever of its files hold
// lines and however a CRI input's streams interleave their messages and parts.
func TestStorageKillKeepsHeldLines(t *testing.T) {
	const request = `10.0.0.1 - - [01/Mar/2024:12:00:00 +0000] "GET / HTTP/1.1" 200 5 "-" "curl"`
	plain := func(msg string) string { return msg + "\n" }
	cri := func(msg string) string { return "2024-03-01T12:00:00Z stdout F " + msg + "\n" }
	cases := []struct {
		name  string
		input string // the input's keys besides its path
		// files are the glob's files; wrap makes a message a line of them. held is what
		// each ends with at the snapshot, after a request: lines that fit no format, and
		// so held, which make heldMessages messages.
		files        []string
		wrap         func(string) string
		held         string
		heldMessages int
		// rotated: before the snapshot, each file is renamed away and closed after its
		// grace period, its successor holding a line too.
		rotated bool
	}{{
		name:  "one file",
		input: "log_format: auto", files: []string{"a.log"}, wrap: plain,
		held: "starting\nlistening on :80\n", heldMessages: 2,
	}, {
		name:  "several files",
		input: "log_format: auto", files: []string{"a.log", "b.log", "c.log"}, wrap: plain,
		held: "starting\nlistening on :80\n", heldMessages: 2,
	}, {
		name:  "a rotated file",
		input: "log_format: auto", files: []string{"a.log"}, wrap: plain,
		held: "starting\nlistening on :80\n", heldMessages: 2, rotated: true,
	}, {
		// A message in parts (P) whose last part comes after a held line is read again
		// whole; one whose last part is the first held line is read again from that part.
		name:  "CRI, streams interleaved",
		input: "log_format: auto, wrapper: cri", files: []string{"a.log"}, wrap: cri,
		held: "2024-03-01T12:00:00Z stdout P sta\n" +
			"2024-03-01T12:00:00Z stdout F rting\n" +
			"2024-03-01T12:00:01Z stderr F no config\n" +
			"2024-03-01T12:00:02Z stdout P listen\n" +
			"2024-03-01T12:00:02Z stderr F using defaults\n" +
			"2024-03-01T12:00:02Z stdout F ing on :80\n",
		heldMessages: 4,
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir, logs := t.TempDir(), t.TempDir()
			rules := `
inputs: [{path: '` + logs + `/*.log', start_at: beginning, ` + tc.input + `}]
rules:
  - {name: all, match: '.'}
  - {name: requests, labels: {status: '${status}'}}
`
			write := func(text string) {
				for _, f := range tc.files {
					appendTo(t, filepath.Join(logs, f), text)
				}
			}
			create := func() {
				for _, f := range tc.files {
					if err := os.WriteFile(filepath.Join(logs, f), nil, 0o644); err != nil {
						t.Fatal(err)
					}
				}
			}
			create()
			var out syncbuf.Buffer
			p := startStoredOn(t, rules, dir, &out, Options{SnapshotInterval: time.Hour})
			lines := func(text string) uint64 { return uint64(strings.Count(text, "\n") * len(tc.files)) }
			read := lines(tc.wrap(request) + tc.held)
			messages := 1 + tc.heldMessages
			write(tc.wrap(request) + tc.held)
			waitRead(t, p, read)
			if tc.rotated {
				for _, f := range tc.files {
					if err := os.Rename(filepath.Join(logs, f), filepath.Join(logs, f+".1")); err != nil {
						t.Fatal(err)
					}
				}
				create()
				write(tc.wrap("a line of the successor"))
				read += lines(tc.wrap(""))
				messages++
				waitRead(t, p, read)
				waitLogged(t, &out, "closed rotated file after its grace period", len(tc.files))
			}
			requests := float64(len(tc.files))
			// counted waits until both rules count what they are to: a line's events are
			// written rule by rule, and a gathering taken between two rules' writes sees one
			// rule's count of it and not the other's.
			counted := func(what string, all, reqs float64) {
				t.Helper()
				waitTotals(t, p, what, map[string]float64{`all_total{}`: all, `requests_total{status="200"}`: reqs})
			}
			counted("before the snapshot (the lines of no format held)", requests, requests)
			kept := periodicSnapshot(t, p, dir)
			// The held lines are counted after the snapshot: the restart must not count them
			// again, nor miss them.
			write(tc.wrap(request))
			messages++
			waitTotal(t, p, "after the snapshot", `all_total{}`, float64(messages*len(tc.files)))
			kill(t, p, dir, kept)
			write(tc.wrap(request)) // while it is down
			messages++
			p = startStoredOn(t, rules, dir, &out, Options{SnapshotInterval: time.Hour})
			all := float64(messages * len(tc.files))
			counted("after the restart", all, 3*requests)
			// Nothing comes later: every file is read to its end, and the readers stopped.
			waitCaughtUp(t, p)
			p.Stop()
			got := gatherPipeline(t, p)
			if got[`all_total{}`] != all || got[`requests_total{status="200"}`] != 3*requests {
				t.Errorf("once the files were read, %v lines and %v requests counted, want %v and %v", got[`all_total{}`], got[`requests_total{status="200"}`], all, 3*requests)
			}
		})
	}
}

// waitTotals gathers p until every sample of want reads at least its value, and fails the
// test, saying what was awaited, when one then passes it (a line counted twice) or they do
// not reach them before await.Deadline.
func waitTotals(t *testing.T, p *Pipeline, what string, want map[string]float64) {
	t.Helper()
	var samples map[string]float64
	await.Until(t, func() bool {
		samples = gatherPipeline(t, p)
		for name, v := range want {
			if samples[name] < v {
				return false
			}
		}
		return true
	})
	for name, v := range want {
		if samples[name] != v {
			t.Fatalf("%s: %s %v, want %v (of %v)", what, name, samples[name], v, want)
		}
	}
}

// waitLogged waits until what out holds says what n times.
func waitLogged(t *testing.T, out *syncbuf.Buffer, what string, n int) {
	t.Helper()
	if !await.Until(t, func() bool { return strings.Count(out.String(), what) >= n }) {
		t.Fatalf("the log does not say %q %d times:\n%s", what, n, out.String())
	}
}

// waitCaughtUp waits until the pipeline's one input has read every file to its end.
func waitCaughtUp(t *testing.T, p *Pipeline) {
	t.Helper()
	var s []selfmetric.InputStats
	if !await.Until(t, func() bool {
		s = p.inputStats()
		behind := len(s) != 1
		for i := range s {
			for _, f := range s[i].Files {
				behind = behind || f.BytesBehind > 0
			}
		}
		return !behind
	}) {
		t.Fatalf("input stats %+v: files not read to their end", s)
	}
}

// TestSnapshotHoldsNoLock: while a snapshot encodes the series ahead of its cut (many
// series) or writes its file (a slow or hung disk), a scrape, the readiness check and a
// reload go on: they wait for the cut at most. The snapshot is still written, of its cut.
func TestSnapshotHoldsNoLock(t *testing.T) {
	for _, stall := range []string{"series encoded ahead", "file written"} {
		t.Run(stall, func(t *testing.T) {
			dir, log := t.TempDir(), filepath.Join(t.TempDir(), "access.log")
			var out syncbuf.Buffer
			p := startStored(t, log, dir, &out, Options{SnapshotInterval: time.Hour})
			persistLines(t, log, 1, 10)
			waitCounted(t, p, 10)
			stalled, resume := make(chan struct{}), make(chan struct{})
			var once sync.Once // Stop's snapshot at the end goes through the same hooks
			wait := func() { once.Do(func() { close(stalled); <-resume }) }
			if stall == "file written" {
				p.storage.writeFile = func(dir string, fill func(w *storage.Writer) error) error {
					wait()
					return storage.Write(dir, fill)
				}
			} else {
				p.storage.encodeAhead = func(set *store.Set, sp *storage.Spill) (*store.Encoded, error) {
					wait()
					return set.EncodeAhead(sp)
				}
			}
			written := make(chan error, 1)
			go func() { written <- p.Snapshot() }()
			<-stalled
			reg := prometheus.NewRegistry()
			reg.MustRegister(p.Collector())
			cfg := p.Config()
			checked := make(chan error, 1)
			go func() {
				_, err := reg.Gather()
				if err == nil && !p.Ready() {
					err = fmt.Errorf("not ready")
				}
				checked <- errors.Join(err, p.Reload(cfg))
			}()
			// A wait that is given up fails rather than hangs: nothing waits when all is well.
			if err, ok := await.Receive(t, checked); !ok {
				t.Errorf("a scrape, the readiness check or a reload waited while the snapshot's %s", stall)
			} else if err != nil {
				t.Error(err)
			}
			close(resume)
			if err := <-written; err != nil {
				t.Fatal(err)
			}
			if s := p.StorageStats(); s.Snapshots != 1 || s.Failures != 0 {
				t.Errorf("storage stats %+v, want one snapshot written", s)
			}
		})
	}
}

// A CRI message whose parts straddle a restart is counted once, whole, as if the
// exporter had not stopped: the snapshot keeps what the joiner had joined of it (each
// stream's) and the restart gives that back before its file is read on, whether a kill
// came after a periodic snapshot or the exporter stopped. Its first part holds the
// capture its rule's label reads. Lines of the other stream between its parts, counted
// after the snapshot before a kill, are read again and counted once. A file rewritten
// while the exporter was down is not read on from its position: the first parts are lost
// then, and said to be. A snapshot of an earlier version, which did not keep them,
// restores as it did: the message is counted from its last part alone.
func TestStorageKeepsMessagesInParts(t *testing.T) {
	line := func(stream, tag, msg string) string {
		return critest.Line("2024-03-01T12:00:00Z", stream, tag, msg) + "\n"
	}
	cases := []struct {
		name string
		// killed: a periodic snapshot, lines after it, then a kill; else a shutdown, and
		// those lines are written while the exporter is down.
		killed bool
		// interleaved: stderr messages, in parts too, between the parts.
		interleaved bool
		// rotated: the file is renamed away while the exporter is down, after the last
		// part was written to it, and another takes its path; rewritten: the file is
		// replaced by one that holds the last part alone, whose first parts are lost.
		rotated, rewritten bool
		// earlier: the snapshot is one of an earlier version, without the messages.
		earlier bool
	}{
		{name: "killed after a periodic snapshot", killed: true},
		{name: "killed after a periodic snapshot, streams interleaved", killed: true, interleaved: true},
		{name: "stopped"},
		{name: "stopped, streams interleaved", interleaved: true},
		{name: "stopped, rotated while down", interleaved: true, rotated: true},
		{name: "killed, rewritten while down", killed: true, interleaved: true, rewritten: true},
		{name: "killed, a snapshot of an earlier version", killed: true, interleaved: true, earlier: true},
	}
	const rules = `
rules:
  - {name: all, match: '.'}
  - {name: users, match: '^user=(?P<user>\w+) .* done$', labels: {user: '${user}'}}
`
	const users, all = `users_total{user="alice"}`, `all_total{}`
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir, log := t.TempDir(), filepath.Join(t.TempDir(), "0.log")
			if err := os.WriteFile(log, nil, 0o644); err != nil {
				t.Fatal(err)
			}
			cfg := "inputs: [{path: '" + log + "', wrapper: cri, start_at: beginning}]" + rules
			var out syncbuf.Buffer
			p := startStoredOn(t, cfg, dir, &out, Options{SnapshotInterval: time.Hour})
			text := line("stdout", "P", "user=alice ")
			if tc.interleaved {
				text += line("stderr", "P", "warn") + line("stderr", "F", "ing one")
			}
			text += line("stdout", "P", "took=5 ")
			if tc.interleaved {
				text += line("stderr", "P", "warning ")
			}
			appendTo(t, log, text)
			waitRead(t, p, uint64(strings.Count(text, "\n")))
			counted := 0.0 // messages complete, counted once each by the end
			if tc.interleaved {
				counted = 1
			}
			waitTotal(t, p, "before the restart", all, counted)
			after := line("stderr", "F", "two")
			if tc.interleaved {
				after += line("stderr", "P", "three ") + line("stderr", "F", "four")
			}
			if tc.killed {
				kept := periodicSnapshot(t, p, dir)
				appendTo(t, log, after)
				waitTotal(t, p, "after the snapshot", all, counted+float64(strings.Count(after, " F ")))
				kill(t, p, dir, kept)
			} else {
				p.Stop()
				appendTo(t, log, after) // while it is down
			}
			appendTo(t, log, line("stdout", "F", "done"))
			counted += float64(strings.Count(after, " F ")) + 1
			want := 1.0
			if tc.earlier {
				rewriteSnapshot(t, dir, func(w *storage.Writer, sec storage.Section) error {
					if sec.Name == sectionParts {
						return nil
					}
					return storetest.CopySection(w, sec)
				})
				want = 0
			}
			switch {
			case tc.rotated:
				if err := os.Rename(log, log+".1"); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(log, []byte(line("stderr", "F", "a new file")), 0o644); err != nil {
					t.Fatal(err)
				}
				counted++
			case tc.rewritten:
				if err := os.Remove(log); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(log, []byte(line("stdout", "F", "done")), 0o644); err != nil {
					t.Fatal(err)
				}
				// The lines after the snapshot went with the file; the last part is read
				// as a message of its own.
				counted, want = counted-float64(strings.Count(after, " F ")), 0
			}
			p = startStoredOn(t, cfg, dir, &out, Options{SnapshotInterval: time.Hour})
			waitTotal(t, p, "after the restart", all, counted)
			// A flush writes one rule after the other: all's count may be seen first.
			if got := waitTotal(t, p, "the message in parts", "users_total", want); got[users] != want {
				t.Errorf("users_total %v of alice, want %v", got[users], want)
			}
			if s := p.StorageStats(); s.RestoredRules != 2 || s.RestoreFailures != 0 {
				t.Errorf("storage stats %+v, want 2 rules restored and no failure", s)
			}
			if said := strings.Contains(out.String(), "the first parts of messages in parts are lost"); said != tc.rewritten {
				t.Errorf("the log says the parts are lost: %v, want %v:\n%s", said, tc.rewritten, out.String())
			}
			waitCaughtUp(t, p)
			p.mu.Lock()
			defer p.mu.Unlock()
			p.cut.Lock() // under which the reading goroutine charges what the joiner holds
			defer p.cut.Unlock()
			for _, in := range p.inputs {
				if n := in.cri.HeldBytes(); n != 0 || in.held != 0 {
					t.Errorf("the joiner holds %d bytes (%d charged) once every message ended", n, in.held)
				}
			}
		})
	}
}

// A CRI message in parts begun after the first held line of a file, which was rotated
// away and closed and the message goes on in its successor, is read again whole at a
// restart after a kill: its first part from that file, the next from the successor, which
// holds no line; the snapshot does not keep it in parts too, which would join those
// twice, whether the successor had a part of it by then or nothing yet.
func TestStorageKillKeepsHeldLinesAndParts(t *testing.T) {
	line := func(stream, tag, msg string) string {
		return critest.Line("2024-03-01T12:00:00Z", stream, tag, msg) + "\n"
	}
	const request = `10.0.0.1 - - [01/Mar/2024:12:00:00 +0000] "GET / HTTP/1.1" 200 5 "-" "curl"`
	next, last := line("stderr", "P", "took=5 "), line("stderr", "F", "done")
	cases := []struct {
		name string
		// successor is what the file that took the path holds at the snapshot; down what
		// is written to it while the exporter is down: the rest of the message, and a
		// request that has the held lines parsed.
		successor, down string
	}{
		{name: "a part in the successor", successor: next, down: last + line("stdout", "F", request)},
		{name: "nothing in the successor", down: next + last + line("stdout", "F", request)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir, logs := t.TempDir(), t.TempDir()
			log := filepath.Join(logs, "a.log")
			rules := `
inputs: [{path: '` + logs + `/*.log', start_at: beginning, log_format: auto, wrapper: cri}]
rules:
  - {name: all, match: '.'}
  - {name: requests, labels: {status: '${status}'}}
  - {name: users, match: '^user=(?P<user>\w+) took=5 done$', labels: {user: '${user}'}}
`
			var out syncbuf.Buffer
			p := startStoredOn(t, rules, dir, &out, Options{SnapshotInterval: time.Hour})
			// A request chooses the format; the line after is held, and the stderr message
			// begun after it is in parts.
			text := line("stdout", "F", request) + line("stdout", "F", "starting") + line("stderr", "P", "user=alice ")
			if err := os.WriteFile(log, []byte(text), 0o644); err != nil {
				t.Fatal(err)
			}
			waitRead(t, p, 3)
			waitTotal(t, p, "before the rotation", `requests_total{status="200"}`, 1)
			if err := os.Rename(log, log+".1"); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(log, []byte(tc.successor), 0o644); err != nil {
				t.Fatal(err)
			}
			waitRead(t, p, uint64(3+strings.Count(tc.successor, "\n")))
			waitLogged(t, &out, "closed rotated file after its grace period", 1)
			kill(t, p, dir, periodicSnapshot(t, p, dir))
			appendTo(t, log, tc.down)
			p = startStoredOn(t, rules, dir, &out, Options{SnapshotInterval: time.Hour})
			waitTotal(t, p, "after the restart", `all_total{}`, 4)
			waitCaughtUp(t, p)
			p.Stop()
			got := gatherPipeline(t, p)
			for _, c := range []struct {
				name string
				want float64
			}{{`all_total{}`, 4}, {`requests_total{status="200"}`, 2}, {`users_total{user="alice"}`, 1}} {
				if got[c.name] != c.want {
					t.Errorf("%s %v, want %v", c.name, got[c.name], c.want)
				}
			}
		})
	}
}

// rewriteSnapshot writes the snapshot in dir again, each section as edit writes it to w
// (storetest.CopySection as it was).
func rewriteSnapshot(t *testing.T, dir string, edit func(w *storage.Writer, sec storage.Section) error) {
	t.Helper()
	snap, err := storage.Read(dir, math.MaxInt64)
	if err != nil {
		t.Fatal(err)
	}
	err = storage.Write(dir, func(w *storage.Writer) error {
		for _, sec := range snap.Sections {
			if err := edit(w, sec); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// partsRecord is the record of a cri input's messages in parts: a stdout message joined
// from two parts, a stderr one being skipped, in a file read up to offset 90.
func partsRecord() []byte {
	in := &stream{source: "/var/log/pods/*/*/*.log", cri: cri.New(16)}
	const path = "/var/log/pods/web/nginx/0.log"
	for _, line := range []string{"t1 stdout P user=alice ", "t1 stderr P " + strings.Repeat("x", 20), "t2 stdout P took=5 "} {
		in.cri.Feed(path, []byte(line))
	}
	pps := in.partsAt([]follow.Position{{Path: path, Dev: 2049, Ino: 131, Offset: 90}}, func() []follow.Position { return nil })
	return appendPathParts(nil, in.source, pps[0])
}

// resumeFrom gives a joiner back the messages in parts of a path only when its follower
// reads on each file they were kept with from where it was: not those of another shard's
// path, nor those of a record that names no file (an edited snapshot), which no line
// would ever end and which would hold memory for good.
func TestResumeParts(t *testing.T) {
	const path = "/var/log/pods/web/nginx/0.log"
	at := follow.Position{Path: path, Dev: 2049, Ino: 131, Offset: 90}
	parts := []cri.Part{{Stream: "stdout", Joined: []byte("user=alice ")}}
	cases := []struct {
		name  string
		files []follow.Position // those the messages were kept with
		from  []follow.Position // where the follower reads each file from
		given bool
	}{
		{name: "read on", files: []follow.Position{at}, from: []follow.Position{at}, given: true},
		{name: "another shard's path", files: []follow.Position{at}, from: []follow.Position{{Path: "/var/log/pods/api/app/0.log", Dev: 2049, Ino: 7}}},
		{name: "no file", from: []follow.Position{at}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			in := &stream{cri: cri.New(64), log: slog.New(slog.DiscardHandler)}
			in.resumeFrom(tc.from, false, []pathParts{{path: path, files: tc.files, parts: parts}})
			if given := in.cri.HeldBytes() > 0; given != tc.given {
				t.Errorf("the joiner holds %d bytes: given back %v, want %v", in.cri.HeldBytes(), given, tc.given)
			}
		})
	}
}

// Two removed inputs that read one file both held its message in parts, given back to the
// joiner of the input added in their place in whatever order a map gave them: the joiner
// goes on with the copy of the first input by name, whichever came first, and the
// other's counts once as too long (not the one its reader counted already).
func TestResumePartsHeldTwiceFirstByName(t *testing.T) {
	const path = "/var/log/pods/web/nginx/0.log"
	at := follow.Position{Path: path, Dev: 2049, Ino: 131, Offset: 90}
	held := func(from, joined string, counted bool) pathParts {
		part := cri.Part{Stream: "stdout", Joined: []byte(joined)}
		if counted {
			part = cri.Part{Stream: "stdout", Skipped: true, Counted: true}
		}
		return pathParts{path: path, files: []follow.Position{at}, parts: []cri.Part{part}, from: from}
	}
	for _, tc := range []struct {
		name     string
		given    []pathParts
		want     string // the message the joiner goes on with, at its last part
		tooLong  uint64
		lost, on string // of_input of the copy lost, and of the one gone on with
	}{
		{name: "in order", given: []pathParts{held("a", "from a ", false), held("b", "from b ", false)}, want: "from a end", tooLong: 1, lost: "b", on: "a"},
		{name: "reversed", given: []pathParts{held("b", "from b ", false), held("a", "from a ", false)}, want: "from a end", tooLong: 1, lost: "b", on: "a"},
		{name: "the lost copy counted by its reader", given: []pathParts{held("b", "", true), held("a", "from a ", false)}, want: "from a end", lost: "b", on: "a"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out syncbuf.Buffer
			in := &stream{cri: cri.New(64), log: slog.New(slog.NewTextHandler(&out, nil))}
			in.resumeFrom([]follow.Position{at}, false, nil, tc.given)
			if got := in.tooLong.Load(); got != tc.tooLong {
				t.Errorf("%d too long, want %d", got, tc.tooLong)
			}
			if msg, _, _ := in.cri.Feed(path, []byte("t2 stdout F end")); string(msg) != tc.want {
				t.Errorf("the joiner went on with %q, want %q", msg, tc.want)
			}
			for _, want := range []string{"of_input=" + tc.lost, "goes_on_with_of_input=" + tc.on} {
				if !strings.Contains(out.String(), want) {
					t.Errorf("the log does not say %s:\n%s", want, out.String())
				}
			}
		})
	}
}

// Past cri.MaxTracked messages in parts given back to one joiner (a snapshot of a glob's
// shards restored with fewer of them), the rest were dropped without a word: their first
// parts lost, their last read as whole messages. Then they were logged, never counted.
// Each counts as too long in the input, as any other message in parts lost at a restart
// does, but one whose part the reader counted already (Counted); the log says how many.
func TestResumePartsPastMaxTracked(t *testing.T) {
	const over = 5
	var pps []pathParts
	var from []follow.Position
	for i := range cri.MaxTracked + over {
		at := follow.Position{Path: fmt.Sprintf("/var/log/pods/web-%d/nginx/0.log", i), Dev: 2049, Ino: uint64(i), Offset: 90}
		part := cri.Part{Stream: "stdout", Joined: []byte("a")}
		if i == cri.MaxTracked+over-1 {
			part = cri.Part{Stream: "stdout", Skipped: true, Counted: true}
		}
		pps = append(pps, pathParts{path: at.Path, files: []follow.Position{at}, parts: []cri.Part{part}})
		from = append(from, at)
	}
	var out syncbuf.Buffer
	in := &stream{cri: cri.New(64), log: slog.New(slog.NewTextHandler(&out, nil))}
	in.resumeFrom(from, false, pps)
	if got := in.tooLong.Load(); got != over-1 {
		t.Errorf("%d too long, want %d: the messages not resumed, but the one the reader counted", got, over-1)
	}
	if want := fmt.Sprintf("messages=%d counted=%d limit=%d", over, over-1, cri.MaxTracked); !strings.Contains(out.String(), "messages in parts not resumed") || !strings.Contains(out.String(), want) {
		t.Errorf("the log does not say %s were not resumed:\n%s", want, out.String())
	}
}

// FuzzDecodePathParts: a record of messages in parts, whatever its bytes (a snapshot of
// another build, or one edited, its checksums right), is refused as corrupt or decodes to
// what encodes to it again, and its messages resume into a joiner within its bounds.
func FuzzDecodePathParts(f *testing.F) {
	rec := partsRecord()
	f.Add(rec)
	f.Add(rec[:len(rec)-3])
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, rec []byte) {
		source, pp, err := decodePathParts(rec)
		if err != nil {
			if !errors.Is(err, storage.ErrCorrupt) {
				t.Fatalf("%v: not corrupt", err)
			}
			return
		}
		if again := appendPathParts(nil, source, pp); !bytes.Equal(again, rec) {
			t.Fatalf("decoded %+v, which encodes to %q, not %q", pp, again, rec)
		}
		const limit = 64
		in := &stream{cri: cri.New(limit), log: slog.New(slog.DiscardHandler)}
		in.resumeFrom(pp.files, false, []pathParts{pp})
		for _, part := range pp.parts {
			msg, _, _ := in.cri.Feed(pp.path, []byte("t "+part.Stream+" F end"))
			if len(msg) > limit {
				t.Fatalf("a message of %d bytes past the cap %d", len(msg), limit)
			}
		}
		in.cri.Release(pp.path)
		if in.cri.HeldBytes() != 0 {
			t.Fatalf("%d bytes held once the file was released", in.cri.HeldBytes())
		}
	})
}

// FuzzDecodePositions: a record of an input's positions, whatever its bytes (a snapshot of
// another build, or one edited, its checksums right), is refused as corrupt or decodes to
// positions each of a file its input names, which encode to the record again.
func FuzzDecodePositions(f *testing.F) {
	at := follow.Position{Path: "/var/log/pods/web/nginx/0.log", Dev: 2049, Ino: 131, Offset: 90, Head: 7}
	glob := appendPositions(nil, "/var/log/pods/*/*/*.log", []follow.Position{at, at})
	f.Add(glob)
	f.Add(glob[:len(glob)-3])
	f.Add(appendPositions(nil, "/var/log/a.log", []follow.Position{{Path: "/var/log/a.log", Dev: 1, Ino: 2, Offset: 3}}))
	f.Add(appendPositions(nil, "/var/log/pods/*/../*.log", []follow.Position{{Path: "/var/log/pods/x.log"}}))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, rec []byte) {
		source, ps, err := decodePositions(rec)
		if err != nil {
			if !errors.Is(err, storage.ErrCorrupt) {
				t.Fatalf("%v: not corrupt", err)
			}
			return
		}
		for _, pos := range ps {
			if !follow.Names(source, pos.Path) || pos.Offset < 0 {
				t.Fatalf("%q: position %+v", source, pos)
			}
		}
		if again := appendPositions(nil, source, ps); !bytes.Equal(again, rec) {
			t.Fatalf("decoded %q %+v, which encodes to %q, not %q", source, ps, again, rec)
		}
	})
}

// TestDecodeClaimedCount: a record of positions that claims as many of them as it has
// bytes (an edited snapshot, its checksums made again) is refused before a slice of that
// many is made: a position takes at least 12 bytes, and the decoders made room for one
// per byte, 48 and 64 times the record's size (3 GiB for a snapshot of 64 MiB), which a
// legitimate record never asks for.
func TestDecodeClaimedCount(t *testing.T) {
	const claimed = 1 << 20
	rec := wire.AppendUvarint(wire.AppendBytes(nil, []byte("/var/log/a.log")), claimed)
	rec = append(rec, make([]byte, claimed)...)
	for _, tc := range []struct {
		name   string
		decode func([]byte) error
	}{
		{"positions", func(b []byte) error { _, _, err := decodePositions(b); return err }},
		{"truncated-unread", func(b []byte) error { _, _, err := decodeUnread(b); return err }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			err := tc.decode(rec)
			runtime.ReadMemStats(&after)
			if !errors.Is(err, storage.ErrCorrupt) {
				t.Fatalf("decoded: %v, want corrupt", err)
			}
			// What a decoding of such a record made of whole positions would take.
			if got, most := after.TotalAlloc-before.TotalAlloc, uint64(4*len(rec)); got > most {
				t.Errorf("allocated %d bytes for a record of %d, more than %d", got, len(rec), most)
			}
		})
	}
}

// Two exporters given one storage directory (two releases of one name on a node, or a
// copy-paste): the second neither restores the first's snapshot, whose positions and
// series are not of its files (a file it reads that the snapshot has no position of was
// read from its start, its lines counted again), nor writes over it, nor spills its
// series into the directory ahead of each snapshot refused (which took the first's disk,
// and CPU, every interval); it says so, counts it, and takes the directory once the first
// let it go.
func TestStorageTwoExporters(t *testing.T) {
	dir := t.TempDir()
	first, second := filepath.Join(t.TempDir(), "access.log"), filepath.Join(t.TempDir(), "access.log")
	var out1, out2 syncbuf.Buffer
	p1 := startStored(t, first, dir, &out1, Options{SnapshotInterval: time.Hour})
	persistLines(t, first, 1, 10)
	waitCounted(t, p1, 10)
	kept := periodicSnapshot(t, p1, dir)

	p2 := startStored(t, second, dir, &out2, Options{SnapshotInterval: time.Hour, StorageLockWait: time.Millisecond})
	if !strings.Contains(out2.String(), "another exporter") {
		t.Errorf("the log does not say another exporter uses the directory:\n%s", out2.String())
	}
	if s := p2.StorageStats(); s.RestoreFailures != 1 || s.RestoredRules != 0 {
		t.Errorf("storage stats %+v, want one restore failure and nothing restored", s)
	}
	persistLines(t, second, 1, 3)
	waitCounted(t, p2, 3)
	spilled := countSpills(p2)
	if err := p2.Snapshot(); !errors.Is(err, storage.ErrLocked) {
		t.Errorf("a snapshot while the first exporter runs: %v, want ErrLocked", err)
	}
	if *spilled != 0 {
		t.Errorf("the series were spilled into the directory the first exporter holds")
	}
	if s := p2.StorageStats(); s.Failures != 1 {
		t.Errorf("storage stats %+v, want the snapshot counted as failed", s)
	}
	if b, err := os.ReadFile(filepath.Join(dir, storage.FileName)); err != nil || !bytes.Equal(b, kept) {
		t.Errorf("the first exporter's snapshot was written over (%v)", err)
	}

	p1.Stop()
	if err := p2.Snapshot(); err != nil {
		t.Fatalf("a snapshot once the first exporter stopped: %v", err)
	}
	if *spilled != 1 {
		t.Errorf("the series were spilled ahead %d times for the snapshot once the first exporter stopped, want once", *spilled)
	}
	p2.Stop()
	var out3 syncbuf.Buffer
	p3 := startStored(t, second, dir, &out3, Options{SnapshotInterval: time.Hour})
	waitCounted(t, p3, 3)
	if s := p3.StorageStats(); s.RestoreFailures != 0 || s.RestoredRules != 2 {
		t.Errorf("storage stats %+v after the second exporter's restart, want its snapshot restored", s)
	}
}

// An exporter started while the one it replaces still holds the storage directory (a
// DaemonSet deleted and made again, whose new pod starts while the old one is still
// terminating) waits for it to let the directory go and restores the snapshot it wrote
// as it stopped: it started empty, and the old one's windows and counters were lost.
func TestStorageWaitsForTheLock(t *testing.T) {
	dir := t.TempDir()
	log := filepath.Join(t.TempDir(), "access.log")
	var out1, out2 syncbuf.Buffer
	p1 := startStored(t, log, dir, &out1, Options{SnapshotInterval: time.Hour})
	persistLines(t, log, 1, 10)
	waitCounted(t, p1, 10)

	cfg, err := config.Parse([]byte(strings.ReplaceAll(persistRules, "LOG", log)), "rules.yaml")
	if err != nil {
		t.Fatal(err)
	}
	type started struct {
		p   *Pipeline
		err error
	}
	done := make(chan started, 1)
	go func() {
		p, err := Start(cfg, Options{
			Now: time.Now, PollInterval: 10 * time.Millisecond, RotationGrace: 50 * time.Millisecond,
			BackfillBytes: DefaultBackfillBytes, StoragePath: dir, SnapshotInterval: time.Hour, StorageLockWait: 24 * time.Hour,
			Logger: slog.New(slog.NewTextHandler(&out2, &slog.HandlerOptions{Level: slog.LevelDebug})),
		})
		done <- started{p, err}
	}()
	select {
	case second := <-done:
		if second.p != nil {
			second.p.Stop()
		}
		t.Fatalf("started (%v) while the exporter it replaces held the directory:\n%s", second.err, out2.String())
	case <-out2.Holds(lockWaitWord):
	case <-await.After(t):
		t.Fatalf("no word of waiting:\n%s", out2.String())
	}
	p1.Stop() // its last snapshot, then the directory let go
	second, ok := await.Receive(t, done)
	if !ok {
		t.Fatalf("still waiting for the directory let go:\n%s", out2.String())
	}
	if second.err != nil {
		t.Fatal(second.err)
	}
	p2 := second.p
	t.Cleanup(p2.Stop)
	if s := p2.StorageStats(); s.RestoreFailures != 0 || s.RestoredRules != 2 {
		t.Errorf("storage stats %+v, want the snapshot of the exporter replaced restored\n%s", s, out2.String())
	}
	waitCounted(t, p2, 10)
}

// lockWaitWord is what a start logs as it begins to wait for the storage directory.
const lockWaitWord = "waiting for it to let the directory go"

// A storage directory whose lock cannot be taken for another reason than another holder
// (here DIR/lock a link to nowhere; a file system without flock alike) is warned of and
// used unguarded: the start does not wait for it, snapshots are written and restored.
func TestStorageLockFails(t *testing.T) {
	dir := t.TempDir()
	if err := os.Symlink(filepath.Join(dir, "nowhere", "lock"), filepath.Join(dir, storage.LockName)); err != nil {
		t.Fatal(err)
	}
	log := filepath.Join(t.TempDir(), "access.log")
	var out1, out2 syncbuf.Buffer
	// Told of, not timed: a start that waited for the lock would say so, and wait for a
	// day, but for its interrupt, which its word of the wait is.
	cfg, o := storedOn(t, strings.ReplaceAll(persistRules, "LOG", log), dir, &out1, Options{SnapshotInterval: time.Hour, StorageLockWait: 24 * time.Hour})
	o.Interrupt = out1.Holds(lockWaitWord)
	p1, err := Start(cfg, o)
	if err != nil {
		t.Fatalf("the start waited for a lock it cannot take: %v\n%s", err, out1.String())
	}
	t.Cleanup(p1.Stop)
	if !strings.Contains(out1.String(), "cannot lock the storage directory") {
		t.Errorf("want a warning of the lock:\n%s", out1.String())
	}
	persistLines(t, log, 1, 10)
	waitCounted(t, p1, 10)
	p1.Stop()
	if s := p1.StorageStats(); s.Failures != 0 {
		t.Errorf("storage stats %+v, want the snapshot at shutdown written", s)
	}
	p2 := startStored(t, log, dir, &out2, Options{SnapshotInterval: time.Hour})
	if s := p2.StorageStats(); s.RestoreFailures != 0 || s.RestoredRules != 2 {
		t.Errorf("storage stats %+v, want the snapshot restored\n%s", s, out2.String())
	}
	waitCounted(t, p2, 10)
}

// A start told to stop (SIGTERM, Options.Interrupt) while it waits for the storage
// directory stops waiting and fails at once, writing nothing: the exporter is not deaf to
// signals for the length of the wait.
func TestStorageWaitInterrupted(t *testing.T) {
	dir := t.TempDir()
	held, err := storage.TakeLock(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer held.Release()
	cfg, err := config.Parse([]byte(strings.ReplaceAll(persistRules, "LOG", filepath.Join(t.TempDir(), "access.log"))), "rules.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var out syncbuf.Buffer
	// The interrupt comes as the start says it waits.
	p, err := Start(cfg, Options{Now: time.Now, StoragePath: dir, StorageLockWait: time.Hour, Interrupt: out.Holds(lockWaitWord), Logger: slog.New(slog.NewTextHandler(&out, nil))})
	if p != nil {
		p.Stop()
	}
	if !errors.Is(err, storage.ErrStopped) {
		t.Fatalf("Start interrupted while waiting: %v, want ErrStopped\n%s", err, out.String())
	}
	if _, err := os.Stat(filepath.Join(dir, storage.FileName)); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a snapshot was written: %v", err)
	}
}

// TestStorageRestartClockBehind: a restart whose wall clock is behind the processing
// second of the newest line the snapshot holds (the host's clock stepped back while the
// exporter was down, or was ahead before) goes on from that second, not the snapshot's:
// the lines read after the restart are in every window with the restored ones, however
// far behind the clock is. The windows were read at that second until the clock caught up, so lines placed
// at the clock's were left out of the windows shorter than the step; past the longest
// window the restored windows read nothing at all. The restart warns of it: processing time
// runs that far ahead of the clock from then on.
func TestStorageRestartClockBehind(t *testing.T) {
	const rules = `
global: {windows: [1m, 5m]}
inputs: [{name: web, path: 'LOG', start_at: end}]
rules:
  - name: arrived
    match: 'n='
`
	t0 := time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)
	for _, behind := range []time.Duration{2 * time.Minute, time.Hour} {
		t.Run(fmt.Sprint("behind ", behind), func(t *testing.T) {
			dir, logDir := t.TempDir(), t.TempDir()
			log := filepath.Join(logDir, "access.log")
			if err := os.WriteFile(log, nil, 0o644); err != nil {
				t.Fatal(err)
			}
			start := func(clock *testclock.Clock, out *syncbuf.Buffer) *Pipeline {
				return startStoredOn(t, strings.ReplaceAll(rules, "LOG", log), dir, out, Options{Now: clock.Now})
			}
			const held = "the host's clock is behind the processing time of the snapshot's newest lines"
			want := func(p *Pipeline, n float64) {
				t.Helper()
				var got []float64
				if !await.Until(t, func() bool {
					s := gatherPipeline(t, p)
					got = []float64{s[`arrived_total{}`], s[`arrived_window{window="1m"}`], s[`arrived_window{window="5m"}`]}
					return got[0] == n && got[1] == n && got[2] == n
				}) {
					t.Fatalf("total, 1m, 5m = %v, want %v each", got, n)
				}
			}
			var first, restarted syncbuf.Buffer
			clock := testclock.New(t0)
			p := start(clock, &first)
			persistLines(t, log, 1, 10)
			want(p, 10)
			if strings.Contains(first.String(), held) {
				t.Errorf("a start without a snapshot logged %q:\n%s", held, first.String())
			}
			clock.Add(10 * time.Second)
			p.Stop()
			p = start(testclock.New(t0.Add(10*time.Second-behind)), &restarted)
			// A person is told, and how far ahead of the clock processing time runs: the
			// lines were read 10 s before the snapshot.
			ahead := behind - 10*time.Second
			if got := restarted.String(); !strings.Contains(got, held) || !strings.Contains(got, "ahead="+ahead.String()) {
				t.Errorf("restart %v behind the snapshot logged no warning %q with ahead=%v:\n%s", behind, held, ahead, got)
			}
			persistLines(t, log, 11, 15)
			want(p, 15)
		})
	}
}

// TestStorageRestartKeepsHeldClock: after a restart held processing time at its snapshot's
// second, ahead of the wall clock, a label set of an event-time rule active then is
// restored by the next restart as active at the processing second of its last line, as
// it was, and holds the clock there: not at its windows' (wall-clock) second, which would
// take it as active that much earlier at each restart, and, without processing-time rules,
// let processing time go back across the restart by as much.
func TestStorageRestartKeepsHeldClock(t *testing.T) {
	const rules = `
global: {windows: [1m, 5m]}
inputs: [{name: web, path: 'LOG', start_at: end}]
rules:
  - name: timed
    match: 'ts=(?P<ts>\S+) id=(?P<id>\S+)'
    labels: {id: '${id}'}
    timestamp: {capture: ts, layout: '2006-01-02T15:04:05Z07:00'}
`
	t0 := time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)
	dir, logDir := t.TempDir(), t.TempDir()
	log := filepath.Join(logDir, "access.log")
	if err := os.WriteFile(log, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	start := func(clock *testclock.Clock) *Pipeline {
		var out syncbuf.Buffer
		return startStoredOn(t, strings.ReplaceAll(rules, "LOG", log), dir, &out, Options{Now: clock.Now})
	}
	line := func(p *Pipeline, at time.Time, id string) {
		t.Helper()
		f, err := os.OpenFile(log, os.O_APPEND|os.O_WRONLY, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		_, err = fmt.Fprintf(f, "ts=%s id=%s\n", at.Format(time.RFC3339), id)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			t.Fatal(err)
		}
		name := fmt.Sprintf("timed_total{id=%q}", id)
		if !await.Until(t, func() bool { return gatherPipeline(t, p)[name] == 1 }) {
			t.Fatalf("%s not counted", name)
		}
	}

	clock := testclock.New(t0)
	p := start(clock)
	line(p, t0, "a")
	clock.Add(10 * time.Second)
	p.Stop()

	// The host's clock an hour behind: processing time goes on from t0 (a's last line).
	behind := t0.Add(-time.Hour)
	clock = testclock.New(behind)
	p = start(clock)
	if got := p.clock.second(); got != t0.Unix() {
		t.Fatalf("processing second %d after the first restart, want t0 %d", got, t0.Unix())
	}
	clock.Add(5 * time.Minute)
	line(p, behind.Add(5*time.Minute), "b") // at processing second t0+5m
	clock.Add(10 * time.Second)
	p.Stop()

	p = start(testclock.New(behind.Add(5*time.Minute + 10*time.Second)))
	if got, want := p.clock.second(), t0.Add(5*time.Minute).Unix(); got < want {
		t.Errorf("processing second %d after the second restart, %d s behind b's last line", got, want-got)
	}
}

// TestReloadHandsOverLeftFiles: TestStorageKeepsLeftFiles at a reload that replaces the
// followers (the glob's shards changed): the file the follower closed after the symlink
// left it is read on from where it was left when the link comes back to it after the
// reload, not again from its start, by the follower that replaced it.
func TestReloadHandsOverLeftFiles(t *testing.T) {
	root := t.TempDir()
	app, rel := filepath.Join(root, "app"), filepath.Join(root, "releases")
	for _, d := range []string{app, rel} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	link := filepath.Join(app, "current.log")
	blue, green := filepath.Join(rel, "blue.log"), filepath.Join(rel, "green.log")
	retarget := blueGreen(t, link, blue, green)
	rules := func(shards int) *config.Config {
		t.Helper()
		cfg, err := config.Parse(fmt.Appendf(nil, "inputs: [{path: %s/*/current.log, start_at: beginning, shards: %d}]\nrules: [{name: lines, match: x}]\n", root, shards), "rules.yaml")
		if err != nil {
			t.Fatal(err)
		}
		return cfg
	}
	var out syncbuf.Buffer
	p, err := Start(rules(2), Options{Now: time.Now, PollInterval: 10 * time.Millisecond, RotationGrace: 50 * time.Millisecond,
		Logger: slog.New(slog.NewTextHandler(&out, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Stop)
	waitReady(t, p)
	appendTo(t, blue, "x\nx\nx\n")
	waitTotal(t, p, "the first target's lines", "lines_total{", 3)
	retarget(green)
	appendTo(t, green, "x\n")
	waitTotal(t, p, "the second target's line", "lines_total{", 4)
	waitLogged(t, &out, "closed rotated file after its grace period", 1)
	if err := p.Reload(rules(1)); err != nil {
		t.Fatal(err)
	}
	waitReady(t, p)
	retarget(blue)
	appendTo(t, blue, "x\n")
	waitTotal(t, p, "the line written to the first target again", "lines_total{", 5)
	waitCaughtUp(t, p)
	waitTotal(t, p, "no line counted twice", "lines_total{", 5)
}

// blueGreen makes blue and green empty and link a symbolic link to blue, as a blue/green
// deployment's current log; retarget points link at another file at once (a rename over
// it, as a deployment switches).
func blueGreen(t *testing.T, link, blue, green string) (retarget func(to string)) {
	t.Helper()
	retarget = func(to string) {
		if err := os.Symlink(to, link+".tmp"); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(link+".tmp", link); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{blue, green} {
		if err := os.WriteFile(f, nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	retarget(blue)
	return retarget
}

// TestStorageRestartNoRuleRestored: a restart that restores no line (none of the
// snapshot's rules, their windows changed while the exporter was down; or a snapshot of
// rules that had read none) has no processing second to go on from, and does not warn
// that the host's clock is behind the snapshot's lines by a nonsense duration, which the
// newest second of no line at all read as. Rules it could not restore it names.
func TestStorageRestartNoRuleRestored(t *testing.T) {
	const rules = `
global: {windows: [WINDOWS]}
inputs: [{name: web, path: 'LOG', start_at: end}]
rules:
  - name: arrived
    match: 'n='
`
	for _, tc := range []struct {
		name, restart string
		lines         int
		skipped       bool
	}{
		{"windows changed", "1m, 5m", 10, true},
		{"no line read", "1m", 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir, logDir := t.TempDir(), t.TempDir()
			log := filepath.Join(logDir, "access.log")
			if err := os.WriteFile(log, nil, 0o644); err != nil {
				t.Fatal(err)
			}
			clock := testclock.New(time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC))
			start := func(windows string, out *syncbuf.Buffer) *Pipeline {
				text := strings.NewReplacer("LOG", log, "WINDOWS", windows).Replace(rules)
				return startStoredOn(t, text, dir, out, Options{Now: clock.Now})
			}
			var first, restarted syncbuf.Buffer
			p := start("1m", &first)
			if tc.lines > 0 {
				persistLines(t, log, 1, tc.lines)
			}
			if !await.Until(t, func() bool { return gatherPipeline(t, p)[`arrived_total{}`] == float64(tc.lines) }) {
				t.Fatal("the lines were not read")
			}
			clock.Add(10 * time.Second)
			p.Stop()
			start(tc.restart, &restarted)
			got := restarted.String()
			if strings.Contains(got, "clock is behind") {
				t.Errorf("a restart that restored no line warned of the clock:\n%s", got)
			}
			if skipped := strings.Contains(got, "a rule of the snapshot was not restored"); skipped != tc.skipped {
				t.Errorf("the restart said a rule was not restored: %v, want %v:\n%s", skipped, tc.skipped, got)
			}
		})
	}
}

// TestStorageRestartSnapshotAheadRotated: a snapshot written while the host's clock ran
// ahead has a modification time ahead of the files written after the clock was set right
// while the exporter was down. Those rotated away are found by their times, after the
// snapshot's (follow.Options.Taken): by a time ahead of the clock, the file rotated away
// between the snapshot's and the one at the path now was left out, its lines lost. A
// snapshot's time ahead of the clock is one the restart cannot go by.
func TestStorageRestartSnapshotAheadRotated(t *testing.T) {
	// A second before the rotations, as a snapshot written before the exporter went down
	// is (the file system's clock is coarser than time.Now), or an hour ahead.
	for _, ahead := range []time.Duration{-time.Second, time.Hour} {
		t.Run(fmt.Sprint("written ", ahead), func(t *testing.T) {
			dir, logDir := t.TempDir(), t.TempDir()
			log := filepath.Join(logDir, "access.log")
			if err := os.WriteFile(log, nil, 0o644); err != nil {
				t.Fatal(err)
			}
			start := func(out *syncbuf.Buffer) *Pipeline {
				cfg, o := storedOn(t, strings.ReplaceAll(persistRules, "LOG", log), dir, out, Options{})
				p, err := Start(cfg, o)
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(p.Stop)
				return p
			}
			want := func(p *Pipeline, n float64) {
				t.Helper()
				if !await.Until(t, func() bool { return gatherPipeline(t, p)[`arrived_total{}`] == n }) {
					t.Fatalf("arrived_total %v, want %v", gatherPipeline(t, p)[`arrived_total{}`], n)
				}
			}
			rename := func(from, to string) {
				t.Helper()
				if err := os.Rename(from, to); err != nil {
					t.Fatal(err)
				}
			}
			var first, restarted syncbuf.Buffer
			p := start(&first)
			persistLines(t, log, 1, 5)
			want(p, 5)
			p.Stop()
			at := time.Now().Add(ahead)
			if err := os.Chtimes(filepath.Join(dir, storage.FileName), at, at); err != nil {
				t.Fatal(err)
			}
			// While down, with the clock right: rotated twice.
			rename(log, log+".1")
			persistLines(t, log, 6, 10)
			rename(log+".1", log+".2")
			rename(log, log+".1")
			persistLines(t, log, 11, 15)
			want(start(&restarted), 15)
		})
	}
}

// TestStorageKeepsTruncationsUnread: what a file found truncated held unread that its
// follower had not settled (no copy read, the rotation grace not passed) goes with its
// position in the snapshot, for the restart's follower to count as lost; a snapshot
// without it (an earlier build's) gives none, and a record that does not decode is
// skipped alone, the positions kept.
func TestStorageKeepsTruncationsUnread(t *testing.T) {
	const source = "/var/log/nginx/access.log*"
	a := follow.Position{Path: "/var/log/nginx/access.log", Dev: 2049, Ino: 131, Offset: 900, Head: 7}
	b := follow.Position{Path: "/var/log/nginx/access.log-api", Dev: 2049, Ino: 132, Offset: 40, Head: 8}
	unread := func(ts ...follow.Truncation) []byte { return appendUnread(nil, source, ts) }
	for _, c := range []struct {
		name    string
		records [][]byte // of sectionTruncatedUnread; nil: no such section
		want    []follow.Truncation
		skipped int
	}{
		{"none", nil, []follow.Truncation{{Position: a}, {Position: b}}, 0},
		{"unread of one", [][]byte{unread(follow.Truncation{Position: b, Seen: 5000, Lost: 4960}, follow.Truncation{Position: a})},
			[]follow.Truncation{{Position: a}, {Position: b, Seen: 5000, Lost: 4960}}, 0},
		{"unread of a position not kept", [][]byte{unread(follow.Truncation{Position: follow.Position{Path: a.Path, Dev: 2049, Ino: 999, Offset: 900}, Seen: 5000, Lost: 4100})},
			[]follow.Truncation{{Position: a}, {Position: b}}, 0},
		{"more lost than seen", [][]byte{wire.AppendUvarint(wire.AppendUvarint(appendPosition(wire.AppendUvarint(wire.AppendBytes(nil, []byte(source)), 1), a), 10), 11)},
			[]follow.Truncation{{Position: a}, {Position: b}}, 1},
		{"of a path the input does not name", [][]byte{unread(follow.Truncation{Position: follow.Position{Path: "/etc/shadow", Offset: 900}, Seen: 5000, Lost: 4100})},
			[]follow.Truncation{{Position: a}, {Position: b}}, 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			err := storage.Write(dir, func(w *storage.Writer) error {
				if err := w.Section(sectionTruncated); err != nil {
					return err
				}
				if err := w.Record(appendPositions(nil, source, []follow.Position{a, b})); err != nil {
					return err
				}
				if c.records == nil {
					return nil
				}
				if err := w.Section(sectionTruncatedUnread); err != nil {
					return err
				}
				for _, rec := range c.records {
					if err := w.Record(rec); err != nil {
						return err
					}
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			snap, err := storage.Read(dir, math.MaxInt64)
			if err != nil {
				t.Fatal(err)
			}
			at, skipped := decodeFiles(snap, sectionTruncated, nil)
			got, skipped := decodeTruncated(snap, at, skipped)
			if !slices.Equal(got[source], c.want) {
				t.Errorf("truncations %+v, want %+v", got[source], c.want)
			}
			if len(skipped) != c.skipped {
				t.Errorf("records skipped %v, want %d", skipped, c.skipped)
			}
		})
	}
}

// TestInputOfAnotherPathReadsOn: an input whose path changed (a file given as a glob that
// matches it too, `access.log` made `access.log*`) is an input of its own, started anew;
// a file the input it replaces read is read on from where that one stopped, at a reload
// and at a restart with the rule file changed while down: from its start (start_at:
// beginning), its lines would count twice in the rules that kept their series.
func TestInputOfAnotherPathReadsOn(t *testing.T) {
	for _, restart := range []bool{false, true} {
		t.Run(fmt.Sprintf("restart %v", restart), func(t *testing.T) {
			logDir, dir := t.TempDir(), t.TempDir()
			log := filepath.Join(logDir, "access.log")
			rules := func(path string) string {
				return strings.ReplaceAll(strings.ReplaceAll(persistRules, "LOG", path), "start_at: end", "start_at: beginning")
			}
			var out syncbuf.Buffer
			persistLines(t, log, 1, 100)
			p := startStoredOn(t, rules(log), dir, &out, Options{})
			waitCounted(t, p, 100)
			if restart {
				p.Stop()
				persistLines(t, log, 101, 150)
				p = startStoredOn(t, rules(log+"*"), dir, &out, Options{})
			} else {
				cfg, err := config.Parse([]byte(rules(log+"*")), "rules.yaml")
				if err != nil {
					t.Fatal(err)
				}
				if err := p.Reload(cfg); err != nil {
					t.Fatal(err)
				}
				persistLines(t, log, 101, 150)
			}
			waitCounted(t, p, 150)
			waitCaughtUp(t, p)
			waitCounted(t, p, 150)
		})
	}
}

// TestInputOfAnotherPathKeepsNoForeignFile: the positions of an input the configuration
// no longer names, given to a new input's followers, stay in what they remember of the
// files closed, those of files the new path does not name (`access.log` replaced by
// `error.log`) too, but the snapshot leaves those out: under the new input, its record of
// them would be skipped whole by a restart, as of a path the input does not name.
func TestInputOfAnotherPathKeepsNoForeignFile(t *testing.T) {
	for _, c := range []struct {
		name string
		path string // of the new input, in the log's directory
	}{
		{"another file", "error.log"},
		{"another glob", "error.log*"},
		{"a glob that names it", "access.log*"},
	} {
		t.Run(c.name, func(t *testing.T) {
			logDir, dir := t.TempDir(), t.TempDir()
			log := filepath.Join(logDir, "access.log")
			rules := func(path string) string { return strings.ReplaceAll(persistRules, "LOG", path) }
			var out syncbuf.Buffer
			persistLines(t, filepath.Join(logDir, "error.log"), 1, 10)
			p := startStoredOn(t, rules(log), dir, &out, Options{})
			persistLines(t, log, 1, 100)
			waitCounted(t, p, 100)
			cfg, err := config.Parse([]byte(rules(filepath.Join(logDir, c.path))), "rules.yaml")
			if err != nil {
				t.Fatal(err)
			}
			if err := p.Reload(cfg); err != nil {
				t.Fatal(err)
			}
			p.Stop()
			snap, err := storage.Read(dir, math.MaxInt64)
			if err != nil {
				t.Fatal(err)
			}
			left, skipped := decodeFiles(snap, sectionLeft, nil)
			if len(skipped) != 0 {
				t.Errorf("records of the files closed skipped at a restart: %v", skipped)
			}
			if len(left) != 0 {
				t.Errorf("files closed kept, of no file that left its path: %v", left)
			}
		})
	}
}

// TestStorageRestartCountsTruncationUnread: what a file found truncated held unread, not
// settled when the exporter stopped, is counted as lost by the input after the restart
// once its rotation grace passes without a copy; an exporter stopped again within that
// grace keeps it in its own snapshot for the next. The snapshot is given the truncation
// by hand: a follower behind on its file at a truncation is follow's to bring about.
func TestStorageRestartCountsTruncationUnread(t *testing.T) {
	logDir, dir := t.TempDir(), t.TempDir()
	log := filepath.Join(logDir, "access.log")
	source := log + "*"
	rules := strings.ReplaceAll(strings.ReplaceAll(persistRules, "LOG", source), "start_at: end", "start_at: beginning")
	var out syncbuf.Buffer
	persistLines(t, log, 1, 100)
	p := startStoredOn(t, rules, dir, &out, Options{})
	waitCounted(t, p, 100)
	p.Stop()

	fi, err := os.Stat(log)
	if err != nil {
		t.Fatal(err)
	}
	st := fi.Sys().(*syscall.Stat_t)
	// Of another inode than the log's, none of whose files is its copy.
	cut := follow.Truncation{Position: follow.Position{Path: log, Dev: uint64(st.Dev), Ino: st.Ino + 1_000_003, Offset: 4000, Head: 7}, Seen: 9000, Lost: 5000}
	snap, err := storage.Read(dir, math.MaxInt64)
	if err != nil {
		t.Fatal(err)
	}
	err = storage.Write(dir, func(w *storage.Writer) error {
		for _, sec := range snap.Sections {
			if sec.Name == sectionTruncated || sec.Name == sectionTruncatedUnread {
				continue
			}
			if err := w.Section(sec.Name); err != nil {
				return err
			}
			for rec := range sec.Records() {
				if err := w.Record(rec); err != nil {
					return err
				}
			}
		}
		if err := w.Section(sectionTruncated); err != nil {
			return err
		}
		if err := w.Record(appendPositions(nil, source, []follow.Position{cut.Position})); err != nil {
			return err
		}
		if err := w.Section(sectionTruncatedUnread); err != nil {
			return err
		}
		return w.Record(appendUnread(nil, source, []follow.Truncation{cut}))
	})
	if err != nil {
		t.Fatal(err)
	}

	lost := func(p *Pipeline) float64 {
		return gatherPipeline(t, p)[`logwindow_input_lost_bytes_total{input="web",reason="truncation"}`]
	}
	// Stopped within its rotation grace: nothing counted, the truncation kept.
	cfg, o := storedOn(t, rules, dir, &out, Options{})
	o.RotationGrace = time.Hour
	p, err = Start(cfg, o)
	if err != nil {
		t.Fatal(err)
	}
	waitCounted(t, p, 100)
	if n := lost(p); n != 0 {
		t.Errorf("%v bytes lost counted within the rotation grace", n)
	}
	p.Stop()
	snap, err = storage.Read(dir, math.MaxInt64)
	if err != nil {
		t.Fatal(err)
	}
	at, skipped := decodeFiles(snap, sectionTruncated, nil)
	kept, skipped := decodeTruncated(snap, at, skipped)
	if len(skipped) != 0 || !slices.Contains(kept[source], cut) {
		t.Fatalf("truncations kept %+v (records skipped %v), want %+v", kept[source], skipped, cut)
	}

	p = startStoredOn(t, rules, dir, &out, Options{})
	waitCounted(t, p, 100)
	if !await.Until(t, func() bool { return lost(p) == float64(cut.Lost) }) {
		t.Errorf("%v bytes lost counted after the rotation grace, want %d", lost(p), cut.Lost)
	}
}

// TestStorageDirectoryLost: the storage directory removed or replaced while the exporter
// runs, or its lock file removed, took the snapshot and the lock along. The next snapshot
// logs it, counts it as a failure, makes the directory again and takes its lock again,
// so that another exporter given the directory finds it taken; one another exporter took
// meanwhile (made again, or a link put in its place to that one's) stays its own,
// unwritten and with no spill of this one's series, until it lets it go. Before, the lock stayed on a
// file of no directory: snapshots failed without end in a directory removed, and in one
// made again a second exporter took the lock while the first wrote its snapshots there.
func TestStorageDirectoryLost(t *testing.T) {
	cases := []struct {
		name string
		// lose loses the directory dir, and returns the lock of another exporter that
		// took it meanwhile, if one did.
		lose func(t *testing.T, dir string) *storage.Lock
	}{
		{"removed", func(t *testing.T, dir string) *storage.Lock {
			if err := os.RemoveAll(dir); err != nil {
				t.Fatal(err)
			}
			return nil
		}},
		{"lock file removed", func(t *testing.T, dir string) *storage.Lock {
			if err := os.Remove(filepath.Join(dir, storage.LockName)); err != nil {
				t.Fatal(err)
			}
			return nil
		}},
		{"replaced, taken by another exporter", func(t *testing.T, dir string) *storage.Lock {
			if err := os.RemoveAll(dir); err != nil {
				t.Fatal(err)
			}
			if err := os.Mkdir(dir, 0o750); err != nil {
				t.Fatal(err)
			}
			l, err := storage.TakeLock(dir)
			if err != nil {
				t.Fatalf("another exporter takes the directory made again: %v", err)
			}
			t.Cleanup(l.Release)
			return l
		}},
		{"replaced by a link to another exporter's directory", func(t *testing.T, dir string) *storage.Lock {
			if err := os.RemoveAll(dir); err != nil {
				t.Fatal(err)
			}
			other := t.TempDir()
			l, err := storage.TakeLock(other)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(l.Release)
			if err := os.Symlink(other, dir); err != nil {
				t.Fatal(err)
			}
			return l
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var out syncbuf.Buffer
			p, dir := startSnapshotted(t, &out)
			other := tc.lose(t, dir)
			snap := filepath.Join(dir, storage.FileName)
			spilled := countSpills(p)
			err := p.Snapshot()
			if !strings.Contains(out.String(), "was removed or replaced while the exporter ran") {
				t.Errorf("the loss is not logged:\n%s", out.String())
			}
			if other == nil {
				if err != nil {
					t.Fatalf("the snapshot after the loss: %v", err)
				}
				if _, err := os.Stat(snap); err != nil {
					t.Errorf("no snapshot in the directory made again: %v", err)
				}
				if l, err := storage.TakeLock(dir); !errors.Is(err, storage.ErrLocked) {
					if l != nil {
						l.Release()
					}
					t.Errorf("another exporter takes the directory after the snapshot: %v, want ErrLocked", err)
				}
				if s := p.StorageStats(); s.Failures != 1 || s.Snapshots != 2 {
					t.Errorf("storage stats %+v, want the loss counted as a failure beside two snapshots written", s)
				}
				return
			}
			if !errors.Is(err, storage.ErrLocked) {
				t.Errorf("the snapshot in the directory another exporter took: %v, want ErrLocked", err)
			}
			if *spilled != 0 {
				t.Errorf("the series were spilled into the directory another exporter took")
			}
			if _, err := os.Stat(snap); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("a snapshot written in the directory another exporter holds (%v)", err)
			}
			if s := p.StorageStats(); s.Failures != 2 {
				t.Errorf("storage stats %+v, want the loss and the refused snapshot counted as failures", s)
			}
			other.Release()
			if err := p.Snapshot(); err != nil {
				t.Fatalf("the snapshot once the other exporter let the directory go: %v", err)
			}
			if _, err := os.Stat(snap); err != nil {
				t.Errorf("no snapshot once the other exporter let the directory go: %v", err)
			}
		})
	}
}

// A storage directory that could not be made at start (a file where its parent should
// be, a volume mounted read-only until later) is made by the first snapshot that can:
// snapshots fail only until it can be written, as start says. Before, only a directory
// lost while its lock was held was made again, and one the exporter held no lock of
// failed every snapshot until a restart.
func TestStorageDirectoryMadeLater(t *testing.T) {
	parent := filepath.Join(t.TempDir(), "volume")
	if err := os.WriteFile(parent, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	dir, log := filepath.Join(parent, "storage"), filepath.Join(t.TempDir(), "access.log")
	var out syncbuf.Buffer
	p := startStored(t, log, dir, &out, Options{SnapshotInterval: time.Hour})
	persistLines(t, log, 1, 3)
	waitCounted(t, p, 3)
	if err := p.Snapshot(); err == nil {
		t.Fatal("a snapshot under a file succeeded")
	}
	if err := os.Remove(parent); err != nil {
		t.Fatal(err)
	}
	if err := p.Snapshot(); err != nil {
		t.Fatalf("the snapshot once the directory can be made: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, storage.FileName)); err != nil {
		t.Errorf("no snapshot once the directory can be made: %v", err)
	}
	if l, err := storage.TakeLock(dir); !errors.Is(err, storage.ErrLocked) {
		if l != nil {
			l.Release()
		}
		t.Errorf("another exporter takes the directory made: %v, want ErrLocked", err)
	}
}
