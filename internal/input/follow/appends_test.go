package follow

import (
	"errors"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// statAs is what stat shows of a file while a write() to it is under way: the
// kernel sets the new mtime at the start of the write, before the new bytes
// and the new size are visible.
type statAs struct {
	os.FileInfo
	size  int64
	mtime time.Time
}

func (s statAs) Size() int64        { return s.size }
func (s statAs) ModTime() time.Time { return s.mtime }

// A write in progress seen on several consecutive looks (a newer mtime with
// the old size, as a coarse or merely unlucky clock shows it) is an append,
// not a rewrite: nothing is read twice.
func TestWriteInProgress(t *testing.T) {
	const looks = 3 // a turn's first stat, its read-back, the next turn's first stat
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "access.log")
			w := create(t, p)
			writeLines(t, w, 1, 10)

			var (
				mu      sync.Mutex
				armed   bool
				faked   int
				writeEr error
			)
			o := m.options(p)
			o.FromBeginning = true
			o.stat = func(f *os.File) (os.FileInfo, error) {
				mu.Lock()
				defer mu.Unlock()
				fi, err := f.Stat()
				if err != nil || !armed {
					return fi, err
				}
				if faked < looks {
					faked++
					return statAs{FileInfo: fi, size: fi.Size(), mtime: fi.ModTime().Add(time.Second)}, nil
				}
				// The write completes: its bytes and the new size appear together.
				armed = false
				_, writeEr = w.Write(numbered(11))
				return f.Stat()
			}
			c := newCollector()
			f := start(t, o, c.handle)
			waitFor(t, "the first lines", func() bool { return c.has(1, 10) })
			// A whole turn after the last line, so that the write starts
			// on a file whose state after the read is known.
			waitTurns(t, f, 1, "a quiet turn")
			mu.Lock()
			armed = true
			mu.Unlock()

			waitFor(t, "the line written meanwhile", func() bool { return c.has(11, 11) })
			mu.Lock()
			n, err := faked, writeEr
			mu.Unlock()
			if err != nil {
				t.Fatal(err)
			}
			if n != looks {
				t.Fatalf("%d looks saw the write in progress, want %d", n, looks)
			}
			c.expectExactly(t, span{1, 11})
			if s := f.Stats(); s.Truncations != 0 {
				t.Errorf("%d truncations declared, want 0", s.Truncations)
			}
		})
	}
}

// Several writers append to one file at once with O_APPEND, as nginx's
// workers do: most of them one write() per line, one in three 32 KiB at a
// time (access_log ... buffer=32k). They pause between writes, so that the
// reader keeps reaching the end of the file, where a write in progress is
// seen. CI runs it, and TestAppendedLines, many times over.
func TestConcurrentAppenders(t *testing.T) {
	const (
		writers = 6
		each    = 4000
	)
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "access.log")
			create(t, p)
			c := newCollector()
			f := start(t, m.options(p), c.handle)
			var wg sync.WaitGroup
			errs := make(chan error, writers)
			for i := range writers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					per := 1
					if i%3 == 2 {
						per = 32 << 10 / int(lineLen)
					}
					errs <- appendLines(p, i*each+1, (i+1)*each, per)
				}()
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				if err != nil {
					t.Fatal(err)
				}
			}
			waitFor(t, "every line", func() bool { return c.has(1, writers*each) })
			// A full turn after the last line: a false truncation would
			// have been declared by then.
			waitTurns(t, f, 2, "a quiet turn")
			c.expectExactly(t, span{1, writers * each})
			if s := f.Stats(); s.Truncations != 0 || s.LinesRead != writers*each {
				t.Fatalf("stats %+v, want %d lines and no truncation", s, writers*each)
			}
		})
	}
}

// appendLines writes lines from..to through a descriptor of its own opened
// with O_APPEND, per lines in each write(), pausing briefly after each.
func appendLines(path string, from, to, per int) error {
	w, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return err
	}
	var buf []byte
	for n := from; n <= to; n++ {
		buf = append(buf, numbered(n)...)
		if (n-from)%per != per-1 && n != to {
			continue
		}
		if _, err := w.Write(buf); err != nil {
			return errors.Join(err, w.Close())
		}
		buf = buf[:0]
		time.Sleep(20 * time.Microsecond)
	}
	return w.Close()
}
