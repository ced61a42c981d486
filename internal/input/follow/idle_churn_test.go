package follow

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestIdleEventsChurn: with inotify covering a glob and the whole poll kept away (a poll
// interval of an hour), or coming often enough that the skipped polls interleave with
// the events (a few milliseconds), the events alone bring every line written: appends,
// rotations by rename with the file made anew, deletions and files made again under the
// same name, truncations read past and rewritten. Random steps, from fixed seeds.
func TestIdleEventsChurn(t *testing.T) {
	for _, c := range []struct {
		name string
		seed uint64
		poll time.Duration
	}{
		{"events alone", 1, time.Hour},
		{"events alone, another seed", 2, time.Hour},
		{"skipped polls between", 3, 3 * time.Millisecond},
		{"skipped polls between, another seed", 4, 3 * time.Millisecond},
	} {
		t.Run(c.name, func(t *testing.T) {
			rnd := rand.New(rand.NewPCG(c.seed, 0))
			root := t.TempDir()
			dirs := []string{filepath.Join(root, "a"), filepath.Join(root, "b"), filepath.Join(root, "c")}
			for _, d := range dirs {
				mkdirs(t, d)
			}
			col := newCollector()
			f, err := Start(Options{Path: filepath.Join(root, "*", "*.log"), FromBeginning: true, PollInterval: c.poll,
				RotationGrace: time.Hour, Logger: testLogger(t)}, col.handle)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(f.Stop)
			if f.w == nil {
				t.Skip("inotify unavailable")
			}
			waitFor(t, "the first scan", f.ready.Load)
			written := 0
			write := func(path string) {
				file, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
				if err != nil {
					t.Fatal(err)
				}
				for range 1 + rnd.IntN(3) {
					written++
					if _, err := file.Write(numbered(written)); err != nil {
						t.Fatal(err)
					}
				}
				_ = file.Close()
			}
			some := func() string {
				paths, _ := filepath.Glob(filepath.Join(root, "*", "*.log"))
				if len(paths) == 0 {
					return ""
				}
				return paths[rnd.IntN(len(paths))]
			}
			// A file renamed out of the glob or deleted before it was opened takes its lines
			// along: those go first.
			caughtUp := func(what string) {
				waitFor(t, what, func() bool { return col.has(1, written) })
			}
			for step := range 300 {
				switch rnd.IntN(8) {
				case 0, 1, 2, 3:
					write(filepath.Join(dirs[rnd.IntN(len(dirs))], fmt.Sprintf("%d.log", rnd.IntN(3))))
				case 4: // rotated by rename, out of the glob
					if p := some(); p != "" {
						caughtUp("every line before a rename")
						_ = os.Rename(p, fmt.Sprintf("%s.%d", p, step))
					}
				case 5: // deleted
					if p := some(); p != "" {
						caughtUp("every line before a deletion")
						_ = os.Remove(p)
					}
				case 6: // truncated once read, then written again
					if p := some(); p != "" {
						caughtUp("every line before a truncation")
						if err := os.Truncate(p, 0); err != nil {
							t.Fatal(err)
						}
						write(p)
					}
				case 7: // a pause, for the reader to catch up at times
					time.Sleep(time.Millisecond)
				}
			}
			caughtUp("every line")
			col.expectExactly(t, span{1, written})
		})
	}
}
