package follow

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/logwindow/logwindow_exporter/internal/testutil/testclock"
)

// TestFilesBoundChurn: whatever closes a file (a rotation's grace, a deletion, a
// truncation read past, a follower stopped and another started from its positions, a
// file deleted between its stat and its open, which fails, the inotify watcher's close)
// gives its place back once and only once: after every step the places taken are the
// files the followers hold open and their watchers, and none, nor any claim
// (Options.Claim), once they all stopped. No line is handed on twice, and once the churn
// ends no file waits while a place is free. Random steps, from fixed seeds.
func TestFilesBoundChurn(t *testing.T) {
	for _, c := range []struct {
		name   string
		seed   uint64
		bound  int
		notify bool // each follower's inotify watcher takes a place too
	}{
		{"polling", 1, 5, false},
		{"polling, another seed", 2, 5, false},
		{"polling, a bound of one", 3, 1, false},
		{"inotify", 4, 6, true},
		{"inotify, another seed", 5, 6, true},
		{"no file waits", 6, 1000, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			rnd := rand.New(rand.NewPCG(c.seed, 0))
			clock := testclock.New(time.Unix(1_700_000_000, 0))
			s := NewFiles(c.bound)
			seen := map[string]int{}
			h := func(_ string, line []byte) { seen[string(line)]++ }
			const followers = 3
			dirs := make([]string, followers)
			opts := make([]Options, followers)
			fs := make([]*Follower, followers)
			// vanishing is a directory whose next file looked at is deleted between its stat
			// and its open, which fails.
			vanishing := ""
			look := func(path string, follow bool) (os.FileInfo, error) {
				fi, err := look(path, follow)
				if err == nil && fi.Mode().IsRegular() && filepath.Dir(path) == vanishing {
					vanishing = ""
					if err := os.Remove(path); err != nil {
						t.Fatal(err)
					}
				}
				return fi, err
			}
			// claims is which follower claimed each file (Options.Claim): one whose file waits
			// keeps no claim on it.
			claims := map[fileID]int{}
			start := func(i int, o Options) {
				o.Claim = func(dev, ino uint64) bool {
					owner, ok := claims[fileID{dev, ino}]
					if !ok {
						claims[fileID{dev, ino}] = i
					}
					return !ok || owner == i
				}
				o.Release = func(dev, ino uint64) {
					if claims[fileID{dev, ino}] == i {
						delete(claims, fileID{dev, ino})
					}
				}
				f, err := newFollower(o, h)
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(f.Stop)
				f.discover(true)
				f.resumeRotated()
				fs[i] = f
			}
			for i := range followers {
				dirs[i] = t.TempDir()
				opts[i] = Options{Path: filepath.Join(dirs[i], "*.log"), FromBeginning: true, Files: s, noNotify: !c.notify,
					now: clock.Now, look: look, RotationGrace: time.Minute, Logger: testLogger(t)}
				start(i, opts[i])
			}
			written := 0
			write := func(path string) {
				file, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
				if err != nil {
					t.Fatal(err)
				}
				written++
				if _, err := fmt.Fprintf(file, "line %d\n", written); err != nil {
					t.Fatal(err)
				}
				_ = file.Close()
			}
			// some is a random file of dir named by pattern, or "" when it has none.
			some := func(dir, pattern string) string {
				paths, _ := filepath.Glob(filepath.Join(dir, pattern))
				if len(paths) == 0 {
					return ""
				}
				return paths[rnd.IntN(len(paths))]
			}
			held := func() (n int) {
				for _, f := range fs {
					f.mu.Lock()
					n += len(f.files)
					f.mu.Unlock()
					if f.w != nil {
						n++
					}
				}
				return n
			}
			turn := func() {
				for _, f := range fs {
					f.discover(false)
				}
				for _, f := range fs {
					f.readAll()
				}
			}
			for step := range 400 {
				i := rnd.IntN(followers)
				dir := dirs[i]
				switch op := rnd.IntN(9); op {
				case 0, 1: // a line to a file, new or not
					write(filepath.Join(dir, fmt.Sprintf("%d.log", rnd.IntN(8))))
				case 2: // deleted
					if p := some(dir, "*.log"); p != "" {
						_ = os.Remove(p)
					}
				case 3: // rotated away from the glob, and made anew
					if p := some(dir, "*.log"); p != "" {
						_ = os.Rename(p, p+fmt.Sprintf(".%d", step))
						write(p)
					}
				case 4: // a rotated file deleted
					if p := some(dir, "*.log.*"); p != "" {
						_ = os.Remove(p)
					}
				case 5: // truncated, and written again
					if p := some(dir, "*.log"); p != "" {
						_ = os.Truncate(p, 0)
						write(p)
					}
				case 6: // the next file of dir looked at is deleted before its open
					vanishing = dir
				case 7: // stopped, and another started from its positions (a reload)
					f := fs[i]
					f.Stop()
					o := opts[i]
					o.FromBeginning, o.Resume, o.Left, o.Truncated, o.HandOver = false, f.Positions(), f.Left(), f.Truncated(), true
					start(i, o)
				case 8:
					clock.Add(time.Duration(rnd.IntN(90)) * time.Second)
				}
				turn()
				if s.taken() != held() {
					t.Fatalf("step %d: %d places taken, %d files and watchers held", step, s.taken(), held())
				}
			}
			clock.Add(2 * time.Minute)
			for range 4 {
				turn()
			}
			if s.taken() < s.Max() {
				for i, f := range fs {
					if len(f.waiting) > 0 {
						t.Errorf("follower %d: %d files wait while %d of %d places are taken", i, len(f.waiting), s.taken(), s.Max())
					}
				}
			}
			for line, n := range seen {
				if n > 1 {
					t.Errorf("%q handed on %d times", line, n)
				}
			}
			for _, f := range fs {
				f.Stop()
			}
			if s.taken() != 0 || len(claims) != 0 {
				t.Errorf("%d places taken and %d files claimed after every follower stopped, want none", s.taken(), len(claims))
			}
		})
	}
}

// taken is how many places of s are taken: the tests' look at what the followers hold.
func (s *Files) taken() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.open
}
