package follow

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"syscall"
	"testing"
	"time"

	"github.com/cespare/xxhash/v2"
)

// benchFile writes n numbered access-log-like lines and returns the path and size.
func benchFile(b *testing.B, n int) (string, int64) {
	b.Helper()
	var buf bytes.Buffer
	for i := 1; i <= n; i++ {
		buf.Write(numbered(i))
	}
	p := filepath.Join(b.TempDir(), "access.log")
	if err := os.WriteFile(p, buf.Bytes(), 0o644); err != nil {
		b.Fatal(err)
	}
	return p, int64(buf.Len())
}

// BenchmarkReadToEnd is the line splitter alone: the replay path.
func BenchmarkReadToEnd(b *testing.B) {
	const lines = 200_000
	p, size := benchFile(b, lines)
	b.SetBytes(size)
	b.ReportAllocs()
	for b.Loop() {
		s, err := ReadToEnd(Options{Path: p}, func(string, []byte) {})
		if err != nil || s.LinesRead != lines {
			b.Fatalf("%d lines, %v", s.LinesRead, err)
		}
	}
}

// BenchmarkReadToEndBlocks is the replay path with every read's lines taken as a block
// (Options.Block), as the pipeline's follower offers them: what the reader does per read
// besides the taker's own pass over the lines.
func BenchmarkReadToEndBlocks(b *testing.B) {
	const lines = 200_000
	p, size := benchFile(b, lines)
	b.SetBytes(size)
	b.ReportAllocs()
	for b.Loop() {
		blocks := 0
		s, err := ReadToEnd(Options{Path: p, Block: func(string, []byte) bool { blocks++; return true }}, func(string, []byte) {})
		if err != nil || s.LinesRead != 0 || blocks == 0 {
			b.Fatalf("%d lines handed on, %d blocks, %v", s.LinesRead, blocks, err)
		}
	}
}

// BenchmarkFollow reads an existing file from its beginning through a
// Follower: discovery, the reader goroutine and the truncation checks on top
// of the splitter.
func BenchmarkFollow(b *testing.B) {
	const lines = 200_000
	p, size := benchFile(b, lines)
	b.SetBytes(size)
	b.ReportAllocs()
	for b.Loop() {
		done := make(chan struct{})
		n := 0
		f, err := Start(Options{Path: p, FromBeginning: true}, func(string, []byte) {
			if n++; n == lines {
				close(done)
			}
		})
		if err != nil {
			b.Fatal(err)
		}
		<-done // a benchmark that never ends is stopped by go test's -timeout
		f.Stop()
	}
}

// BenchmarkArchiveDir is a restart's search for the olddir of 1,000 logs of one directory
// whose files of positions were rotated into one olddir and compressed there (logrotate's
// olddir and compress) while the exporter was down: 30 archives of each, 30,000 in all.
// Each log's archive of its position's file is its second, and, as logrotate numbers them,
// the higher an archive's number the older it is.
func BenchmarkArchiveDir(b *testing.B) {
	const logs, kept = 1000, 30
	dir := b.TempDir()
	old := filepath.Join(dir, "old")
	if err := os.Mkdir(old, 0o755); err != nil {
		b.Fatal(err)
	}
	ps := make([]Position, 0, logs)
	var gz bytes.Buffer
	z := gzip.NewWriter(&gz)
	for i := range logs {
		path := filepath.Join(dir, fmt.Sprintf("app-%04d.log", i))
		for k := 1; k <= kept; k++ {
			gz.Reset()
			z.Reset(&gz)
			_, _ = z.Write(numbered(i*100 + k))
			_ = z.Close()
			name := filepath.Join(old, fmt.Sprintf("app-%04d.log.%d.gz", i, k))
			if err := os.WriteFile(name, gz.Bytes(), 0o644); err != nil {
				b.Fatal(err)
			}
			at := time.Unix(1_700_000_000, 0).Add(-time.Duration(k) * 24 * time.Hour)
			if err := os.Chtimes(name, at, at); err != nil {
				b.Fatal(err)
			}
		}
		ps = append(ps, Position{Path: path, Dev: 1, Ino: uint64(i + 1), Offset: lineLen, Head: xxhash.Sum64(numbered(i*100 + 2))})
	}
	f, err := newFollower(Options{Path: filepath.Join(dir, "*.log"), noNotify: true}, func(string, []byte) {})
	if err != nil {
		b.Fatal(err)
	}
	defer f.Stop()
	runtime.GC() // the set-up's garbage
	before := cpuTime(b)
	for b.Loop() {
		dirs, r := newListings(os.ReadDir), newResume(ps, nil, nil)
		for _, p := range ps {
			if got := f.archiveDir(dirs, p.Path, r); got != old {
				b.Fatalf("%s: olddir %q, want %q", p.Path, got, old)
			}
		}
	}
	// The process's CPU time too: on a machine shared with other work, the time a
	// search waits for a core is not its cost.
	b.ReportMetric(float64(cpuTime(b)-before)/float64(b.N), "cpu-ns/op")
}

// cpuTime is the CPU time the process has used, user and system.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// readDir is a follower of the logs of dir, each read to its end, stopped at b's end.
func readDir(b *testing.B, dir string) *Follower {
	f, err := newFollower(Options{Path: filepath.Join(dir, "*.log"), FromBeginning: true, noNotify: true}, func(string, []byte) {})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(f.Stop)
	f.discover(true)
	f.readAll()
	return f
}

// BenchmarkStats is what a scrape asks of a follower of a node's pod logs: the stats of
// 500 files, each read to its end.
func BenchmarkStats(b *testing.B) {
	const files = 500
	dir := b.TempDir()
	for i := range files {
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("pod-%03d.log", i)), numbered(i), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	f := readDir(b, dir)
	b.ReportAllocs()
	for b.Loop() {
		if s := f.Stats(); len(s.Files) != files || s.Files[0].BytesBehind != 0 {
			b.Fatalf("%d files, %+v", len(s.Files), s.Files[0])
		}
	}
}

// BenchmarkLookHeld is a turn over 100 files each holding back space preallocated (NULs
// after its lines, not yet filled in): what every wake of the reader costs them while
// nothing is written, a look for text over their NULs each.
func BenchmarkLookHeld(b *testing.B) {
	const files = 100
	dir := b.TempDir()
	lines := bytes.Repeat(numbered(1), 10)
	for i := range files {
		path := filepath.Join(dir, fmt.Sprintf("pod-%03d.log", i))
		if err := os.WriteFile(path, lines, 0o644); err != nil {
			b.Fatal(err)
		}
		if err := os.Truncate(path, int64(len(lines))+200<<10); err != nil {
			b.Fatal(err)
		}
	}
	f := readDir(b, dir)
	b.ReportAllocs()
	for b.Loop() {
		if f.readAll() {
			b.Fatal("more to read where only NULs are")
		}
	}
	if s := f.Stats(); len(s.Files) != files || s.Files[0].BytesBehind != 0 {
		b.Fatalf("%d files, %+v: want each read up to its NULs", len(s.Files), s.Files[0])
	}
}
