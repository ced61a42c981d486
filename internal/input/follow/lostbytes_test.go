package follow

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/logwindow/logwindow_exporter/internal/selfmetric"
	"github.com/logwindow/logwindow_exporter/internal/testutil/testclock"
)

// lossRun is a hand-driven follower, on an injected clock with a minute's rotation grace,
// of a log that held lines 1-100, read: the bytes of the lines it handed on (newlines
// included; a line cut by a truncation has none), those of them before the log's last
// truncation, and its log.
type lossRun struct {
	t            *testing.T
	f            *Follower
	o            Options
	h            func(path string, line []byte)
	clock        *testclock.Clock
	c            *collector
	log          string
	w            *os.File
	handed, base int64
	logged       bytes.Buffer
}

func newLossRun(t *testing.T, glob bool) *lossRun {
	t.Helper()
	r := &lossRun{t: t, c: newCollector(), clock: testclock.New(time.Unix(1_700_000_000, 0))}
	_, r.log, r.w = accessLog(t)
	path := r.log
	if glob {
		path += "*"
	}
	r.o = Options{Path: path, FromBeginning: true, noNotify: true, now: r.clock.Now, RotationGrace: time.Minute, Logger: timelessLogger(&r.logged)}
	r.h = func(path string, line []byte) {
		r.handed += int64(len(line))
		if int64(len(line)) == lineLen-1 {
			r.handed++ // a whole line's newline
		}
		r.c.handle(path, line)
	}
	r.f = discovered(t, r.o, r.h)
	for r.f.readAll() {
	}
	return r
}

// resume stops the follower, which must have counted no byte lost, and goes on with one
// resumed from where it stopped (resumed), as a reload that replaces it or a restart from
// a snapshot does.
func (r *lossRun) resume() {
	r.t.Helper()
	r.f.Stop()
	if n := r.lost(); n != 0 {
		r.t.Errorf("%d bytes lost counted by the follower stopped, whose series the one resumed replaces", n)
	}
	r.f = resumed(r.t, r.f, r.o, r.h)
}

// copyBehind writes lines 101 to 30,000, copies the log to a file outside its directory
// (the copy of a copytruncate whose truncation comes late), then writes lines 30,001 to
// 31,000, which the follower sees but does not read all of, and truncates the log. It
// returns the copy's path and the bytes the log held past the copy when the follower
// last saw it.
func (r *lossRun) copyBehind() (string, int64) {
	r.t.Helper()
	writeLines(r.t, r.w, 101, 30_000)
	tmp := filepath.Join(r.t.TempDir(), "copy")
	copied := int64(copyFile(r.t, r.log, tmp)) * lineLen
	seen := r.behind(30_001, 31_000)
	r.truncate()
	return tmp, seen - copied
}

// size is the log's size now.
func (r *lossRun) size() int64 {
	r.t.Helper()
	fi, err := r.w.Stat()
	if err != nil {
		r.t.Fatal(err)
	}
	return fi.Size()
}

// behind writes lines from..to, more than a turn reads of one file (passBudget), lets the
// follower take one turn, and returns the size it saw the log at.
func (r *lossRun) behind(from, to int) int64 {
	r.t.Helper()
	writeLines(r.t, r.w, from, to)
	size := r.size()
	r.f.readAll()
	if r.handed-r.base >= size {
		r.t.Fatalf("read %d bytes of %d in a turn: not behind", r.handed-r.base, size)
	}
	return size
}

// read is what the follower handed on of the log since its last truncation.
func (r *lossRun) read() int64 { return r.handed - r.base }

// truncate empties the log and lets the follower take a turn, which finds it truncated,
// and returns what it read of the log before (the line it read in part handed on then).
func (r *lossRun) truncate() int64 {
	r.t.Helper()
	if err := r.w.Truncate(0); err != nil {
		r.t.Fatal(err)
	}
	r.f.readAll()
	read := r.read()
	r.base = r.handed
	return read
}

// settle lets the follower read three turns, find the glob's new files, and read three
// more past the rotation grace.
func (r *lossRun) settle() {
	r.f.discover(false)
	settle(r.f, r.clock)
}

// truncateStalled is truncate with the glob's new files found before, which the reader
// comes to judge only past the rotation grace after the log's turn finds it truncated (a
// loaded machine).
func (r *lossRun) truncateStalled() {
	r.t.Helper()
	r.f.discover(false)
	if err := r.w.Truncate(0); err != nil {
		r.t.Fatal(err)
	}
	r.f.mu.Lock()
	log := r.f.files[0]
	r.f.mu.Unlock()
	r.f.step(log, r.log)
	r.base = r.handed
	r.clock.Add(2 * time.Minute)
}

// expectCut fails unless every line of 1..to was handed on once, but for the line read
// in part when the log was found truncated with no copy of it judged yet, which is handed
// on as read (its rest in the copy, read from where the log was read up to, is not).
func (r *lossRun) expectCut(to int) {
	r.t.Helper()
	if lost, dup, malformed := r.c.tally(span{1, to}); lost > 1 || dup != 0 || malformed != lost {
		r.t.Errorf("lost=%d duplicated=%d malformed=%d, want none but one line cut", lost, dup, malformed)
	}
}

// caughtUp writes lines 101 to 200 and nul NUL bytes after them, reads them all and
// truncates the file: nothing was lost that the follower knew of, so it returns 0.
func (r *lossRun) caughtUp(nul int) int64 {
	r.t.Helper()
	writeLines(r.t, r.w, 101, 200)
	if _, err := r.w.Write(make([]byte, nul)); err != nil {
		r.t.Fatal(err)
	}
	for r.f.readAll() {
	}
	r.truncate()
	r.c.expectExactly(r.t, span{1, 200})
	return 0
}

// lost is the follower's count of bytes lost to truncations, which it must report.
func (r *lossRun) lost() int64 {
	r.t.Helper()
	for _, c := range r.f.Stats().Counters {
		if c.Name == selfmetric.InputLostBytes.Name && c.Label == "reason" && c.LabelValue == "truncation" {
			return int64(c.Value)
		}
	}
	r.t.Fatalf("no %s{reason=\"truncation\"} in %+v", selfmetric.InputLostBytes.Name, r.f.Stats().Counters)
	return 0
}

// lossLogged is a warning of bytes lost: its path and byte count.
var lossLogged = regexp.MustCompile(`(?m)^level=WARN msg="file truncated before all it held was read[^"]*: bytes lost" input=web path=(\S+) bytes=(\d+)$`)

// TestTruncatedUnreadCounted: a file truncated while the follower was behind on it (it
// had seen it hold more than it read) loses those bytes, which are counted and logged
// with the file's path, unless a copy of the file holding them is read (a glob that
// matches rotated names reads copytruncate's copy from where the file was read up to). A
// follower caught up loses nothing it knew of: what was written after its last look and
// truncated before its next was never seen, and is not counted. Driven by hand, on an
// injected clock.
func TestTruncatedUnreadCounted(t *testing.T) {
	for _, tc := range []struct {
		name string
		glob bool
		// run makes the case and returns the bytes it loses.
		run func(r *lossRun) int64
	}{{
		// Counted once: past the rotation grace too, when a glob's truncation is settled.
		name: "behind, truncated",
		run: func(r *lossRun) int64 {
			seen := r.behind(101, 30_000)
			seen -= r.truncate()
			r.settle()
			return seen
		},
	}, {
		name: "caught up, truncated",
		run:  func(r *lossRun) int64 { return r.caughtUp(0) },
	}, {
		// The NUL bytes a writer preallocated past its text are held back, not unread text.
		name: "caught up on NULs, truncated",
		run:  func(r *lossRun) int64 { return r.caughtUp(8 << 10) },
	}, {
		name: "caught up, written and truncated between two looks",
		run: func(r *lossRun) int64 {
			writeLines(r.t, r.w, 101, 30_000)
			r.truncate()
			return 0
		},
	}, {
		name: "behind, truncated twice",
		run: func(r *lossRun) int64 {
			first := r.behind(101, 30_000)
			first -= r.truncate()
			second := r.behind(30_001, 60_000)
			second -= r.truncate()
			writeLines(r.t, r.w, 60_001, 60_010)
			for r.f.readAll() {
			}
			if !r.c.has(60_001, 60_010) {
				r.t.Error("the lines after the second truncation were not read")
			}
			return first + second
		},
	}, {
		name: "glob, behind, no copy",
		glob: true,
		run: func(r *lossRun) int64 {
			seen := r.behind(101, 30_000)
			seen -= r.truncate()
			if n := r.lost(); n != 0 {
				r.t.Errorf("%d bytes lost within the rotation grace, while a copy may still be found", n)
			}
			r.settle()
			return seen
		},
	}, {
		// No copy will be read by this follower, but one resumed from its positions and
		// Truncated may find one and read it: what it found truncated lately is handed
		// on, to be counted there, and logged at stop, not counted.
		name: "glob, behind, stopped within the rotation grace",
		glob: true,
		run: func(r *lossRun) int64 {
			seen := r.behind(101, 30_000)
			seen -= r.truncate()
			r.f.Stop()
			if tr := r.f.Truncated(); len(tr) != 1 || tr[0].Path != r.log || tr[0].Lost != seen {
				r.t.Errorf("truncated %+v after stop, want the log's, %d bytes lost unless a copy is read", tr, seen)
			}
			if want := fmt.Sprintf("before the input stopped: the input resumed from its positions counts the bytes as lost unless it finds one\" input=web path=%s bytes=%d\n", r.log, seen); !strings.Contains(r.logged.String(), want) {
				r.t.Errorf("log:\n%s\nwant a warning ending %q", r.logged.String(), want)
			}
			return 0
		},
	}, {
		// The follower resumed counts what the stopped one had not settled, once its own
		// rotation grace passed without a copy.
		name: "glob, behind, stopped within the rotation grace, resumed, no copy",
		glob: true,
		run: func(r *lossRun) int64 {
			seen := r.behind(101, 30_000)
			seen -= r.truncate()
			r.resume()
			if n := r.lost(); n != 0 {
				r.t.Errorf("%d bytes lost within the resumed follower's rotation grace", n)
			}
			r.settle()
			return seen
		},
	}, {
		// Every follower of a glob shared by several (shards) is handed what the stopped
		// ones found truncated: the one its directory is dealt to alone counts, or hands
		// on, what one held unread.
		name: "glob, behind, stopped within the rotation grace, resumed by a follower of other directories",
		glob: true,
		run: func(r *lossRun) int64 {
			r.behind(101, 30_000)
			r.truncate()
			r.o.Select = func(string) bool { return false }
			r.resume()
			for _, tr := range r.f.Truncated() {
				if tr.Lost != 0 {
					r.t.Errorf("truncated %+v handed on with bytes lost, by a follower of other directories", tr)
				}
			}
			r.settle()
			return 0
		},
	}, {
		// A copy the resumed follower finds at its first scan is read from where the log
		// was read up to: what the copy lacks of what the log was seen to hold is lost.
		name: "glob, behind, written past the copy, seen, stopped, resumed, the copy found at the start",
		glob: true,
		run: func(r *lossRun) int64 {
			tmp, lacks := r.copyBehind()
			rename(r.t, tmp, r.log+".1")
			r.resume()
			r.settle()
			r.expectCut(30_000)
			return lacks
		},
	}, {
		// So it is of a copy found after the resumed follower's start, within its grace.
		name: "glob, behind, written past the copy, seen, stopped, resumed, the copy found after",
		glob: true,
		run: func(r *lossRun) int64 {
			tmp, lacks := r.copyBehind()
			r.resume()
			rename(r.t, tmp, r.log+".1")
			r.settle()
			r.expectCut(30_000)
			return lacks
		},
	}, {
		name: "glob, behind, copied then truncated",
		glob: true,
		run: func(r *lossRun) int64 {
			r.behind(101, 30_000)
			copyFile(r.t, r.log, r.log+".1")
			r.f.discover(false)
			r.f.readAll() // the copy judged: it waits for the log's truncation
			r.truncate()
			r.settle()
			r.c.expectExactly(r.t, span{1, 30_000})
			return 0
		},
	}, {
		name: "glob, behind, the copy found after the truncation was read",
		glob: true,
		run: func(r *lossRun) int64 {
			r.behind(101, 30_000)
			tmp := filepath.Join(r.t.TempDir(), "copy")
			copyFile(r.t, r.log, tmp)
			r.truncate()
			rename(r.t, tmp, r.log+".1")
			r.settle()
			r.expectCut(30_000)
			return 0
		},
	}, {
		// A copy still being written when the rotation grace has passed since the
		// truncation (a slow disk) keeps it: the bytes it is read for are not lost.
		name: "glob, behind, the copy written past the rotation grace",
		glob: true,
		run: func(r *lossRun) int64 {
			r.behind(101, 30_000)
			tmp := filepath.Join(r.t.TempDir(), "copy")
			copyFile(r.t, r.log, tmp)
			content, err := os.ReadFile(tmp)
			if err != nil {
				r.t.Fatal(err)
			}
			read := int(r.truncate())
			cp := create(r.t, r.log+".1")
			r.f.discover(false)
			// It grows at each turn, and holds less than the log was read up to: it waits.
			at := 0
			for k := 1; k <= 4; k++ {
				if _, err := cp.Write(content[at : read*k/5]); err != nil {
					r.t.Fatal(err)
				}
				at = read * k / 5
				r.f.readAll()
				r.clock.Add(30 * time.Second)
			}
			if n := r.lost(); n != 0 {
				r.t.Errorf("%d bytes lost while their copy was being written", n)
			}
			if _, err := cp.Write(content[at:]); err != nil {
				r.t.Fatal(err)
			}
			r.settle()
			r.expectCut(30_000)
			return 0
		},
	}, {
		// Kept by the copy found before it was read (keepTruncated): not lost, nor the
		// copy read from its start.
		name: "glob, behind, copied, the copy judged past the rotation grace",
		glob: true,
		run: func(r *lossRun) int64 {
			r.behind(101, 30_000)
			copyFile(r.t, r.log, r.log+".1")
			r.truncateStalled()
			r.settle()
			r.c.expectExactly(r.t, span{1, 30_000})
			return 0
		},
	}, {
		// What the copy lacks is lost, counted once: when the copy is read.
		name: "glob, behind, written past the copy, seen, the copy judged past the rotation grace",
		glob: true,
		run: func(r *lossRun) int64 {
			writeLines(r.t, r.w, 101, 30_000)
			copied := int64(copyFile(r.t, r.log, r.log+".1")) * lineLen
			seen := r.behind(30_001, 31_000)
			r.truncateStalled()
			r.settle()
			r.expectCut(30_000)
			return seen - copied
		},
	}, {
		// The copy was made before the log was written to further; the follower saw that
		// and did not read it: what the copy lacks is lost.
		name: "glob, behind, written past the copy, seen, then truncated",
		glob: true,
		run: func(r *lossRun) int64 {
			writeLines(r.t, r.w, 101, 30_000)
			tmp := filepath.Join(r.t.TempDir(), "copy")
			copied := int64(copyFile(r.t, r.log, tmp)) * lineLen
			seen := r.behind(30_001, 31_000)
			r.truncate()
			rename(r.t, tmp, r.log+".1")
			r.settle()
			r.expectCut(30_000)
			return seen - copied
		},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			r := newLossRun(t, tc.glob)
			want := tc.run(r)
			if got := r.lost(); got != want {
				t.Errorf("%d bytes lost counted, want %d", got, want)
			}
			var logged int64
			for _, m := range lossLogged.FindAllStringSubmatch(r.logged.String(), -1) {
				n, _ := strconv.ParseInt(m[2], 10, 64)
				if logged += n; m[1] != r.log || n <= 0 {
					t.Errorf("logged %d bytes lost of %s, want a positive count of %s", n, m[1], r.log)
				}
			}
			if logged != want {
				t.Errorf("logged %d bytes lost, want %d; log:\n%s", logged, want, r.logged.String())
			}
			t.Logf("%d bytes lost", want)
		})
	}
}
