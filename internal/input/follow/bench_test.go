package follow

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
	"time"
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
		select {
		case <-done:
		case <-time.After(waitLimit):
			b.Fatal("lines not read in time")
		}
		f.Stop()
	}
}
