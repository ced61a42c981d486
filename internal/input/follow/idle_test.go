package follow

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/logwindow/logwindow_exporter/internal/testutil/testclock"
)

// statCount counts the reader's looks at each open file (Options.stat), by name.
type statCount struct {
	mu sync.Mutex
	by map[string]int
}

func (s *statCount) stat(file *os.File) (os.FileInfo, error) {
	s.mu.Lock()
	s.by[file.Name()]++
	s.mu.Unlock()
	return file.Stat()
}

// take returns the looks counted since the last take, by name, and their sum.
func (s *statCount) take() (by map[string]int, sum int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	by, s.by = s.by, make(map[string]int)
	for _, n := range by {
		sum += n
	}
	return by, sum
}

// A glob of idle files in their pods' directories, polled: each whole poll looks at every
// directory (one stat each) and the reader at every file (an fstat, a pread). With
// inotify covering every directory on a local file system, only every quietPolls-th poll
// is whole, and between them a write costs a look at its own file; polling alone, or a
// network file system whose writes from other hosts inotify does not report, keeps the
// whole poll at every interval. Counted in looks, polls and turns driven by the test.
func TestIdlePolls(t *testing.T) {
	const pods = 20
	cases := []struct {
		name     string
		noNotify bool
		local    bool
		quiet    bool // polls are skipped between whole ones
	}{
		{name: "inotify on a local file system", local: true, quiet: true},
		{name: "inotify on a network file system"},
		{name: "polling", noNotify: true, local: true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			root := t.TempDir()
			logs := make([]string, pods)
			writers := make([]*os.File, pods)
			for i := range pods {
				dir := filepath.Join(root, "p"+string(rune('a'+i)), "nginx")
				mkdirs(t, dir)
				logs[i] = filepath.Join(dir, "0.log")
				writers[i] = create(t, logs[i])
				writeLines(t, writers[i], i+1, i+1)
			}
			clock := testclock.New(time.Now().Add(time.Hour)) // the directories settled
			var n counting
			s := &statCount{by: map[string]int{}}
			o := n.options(Options{Path: filepath.Join(root, "*", "nginx", "*.log"), FromBeginning: true, RotationGrace: time.Minute,
				noNotify: c.noNotify, now: clock.Now, stat: s.stat, local: func(string) bool { return c.local }, Logger: testLogger(t)})
			col := newCollector()
			f := discovered(t, o, col.handle)
			if !c.noNotify && f.w == nil {
				t.Skip("inotify unavailable")
			}
			f.readAll()
			col.expectExactly(t, span{1, pods})
			n.take()
			s.take()

			// One poll and the reader's turn it wakes, with the looks they made.
			poll := func() (looks int64, stats int) {
				f.poll(true)
				f.turn()
				_, looks = n.take()
				_, stats = s.take()
				return looks, stats
			}
			var got, want strings.Builder
			for i := range 2 * quietPolls {
				switch looks, stats := poll(); {
				case looks == 1+2*pods && stats == pods:
					got.WriteByte('W') // whole: every directory, every file
				case looks == 0 && stats == 0:
					got.WriteByte('.')
				default:
					t.Fatalf("poll %d: %d looks at directories, %d at files: neither a whole poll (%d, %d) nor none", i, looks, stats, 1+2*pods, pods)
				}
				if !c.quiet || (i+1)%quietPolls == 0 {
					want.WriteByte('W')
				} else {
					want.WriteByte('.')
				}
			}
			if got.String() != want.String() {
				t.Errorf("polls %s, want %s (W whole, . skipped)", got.String(), want.String())
			}
			if !c.quiet {
				return
			}

			// A write, whose event nudges the reader: its turn looks at the file
			// written alone.
			writeLines(t, writers[3], 100, 100)
			f.nudge(logs[3])
			f.turn()
			by, _ := s.take()
			if len(by) != 1 || by[logs[3]] == 0 {
				t.Errorf("a write's turn looked at %v, want %s alone", by, logs[3])
			}
			col.expectExactly(t, span{1, pods}, span{100, 100})

			// A write under a path no file is read under (a symlink's target, a file
			// renamed away under another name) may be any file's: the turn looks at all.
			f.nudge(logs[3] + ".1")
			f.turn()
			if _, sum := s.take(); sum != pods {
				t.Errorf("the turn of a write to an unknown path looked at %d files, want %d", sum, pods)
			}

			// A file deleted, found gone by the scan its event makes: looked at by every
			// turn until its grace has passed, as it may be written on, and retired then.
			if err := os.Remove(logs[5]); err != nil {
				t.Fatal(err)
			}
			f.tree.changed(logs[5])
			f.rescan()
			f.readAll()
			n.take()
			s.take()
			for i := range 3 {
				if _, stats := poll(); stats != 1 {
					t.Fatalf("poll %d after the delete: %d looks at files, want 1 (the deleted one)", i, stats)
				}
			}
			writeLines(t, writers[5], 101, 101) // unlinked: no event
			poll()
			col.expectExactly(t, span{1, pods}, span{100, 101})
			clock.Add(time.Minute)
			poll()
			if st := f.Stats(); len(st.Files) != pods-1 {
				t.Errorf("%d files open after the grace, want %d", len(st.Files), pods-1)
			}
			if _, stats := poll(); stats != 0 {
				t.Errorf("a poll after the deleted file was retired looked at %d files", stats)
			}
		})
	}
}
