package follow

import (
	"os"
	"path/filepath"
	"sync"
	"testing"
)

// The followers of a glob release every file they claimed once stopped: one read on in
// another follower's directory, that one rotated away there (read to its end, still
// claimed while the grace lasts) and the new file that replaced it.
func TestGlobSharedClaimsReleasedOnStop(t *testing.T) {
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			root := t.TempDir()
			dirA, dirB := filepath.Join(root, "a"), filepath.Join(root, "b")
			for _, d := range []string{dirA, dirB} {
				if err := os.Mkdir(d, 0o755); err != nil {
					t.Fatal(err)
				}
			}
			x := create(t, filepath.Join(dirA, "x.log"))
			writeLines(t, x, 1, 10)
			claims := newClaims()
			c := newCollector()
			followers := map[string]*Follower{}
			for _, dir := range []string{dirA, dirB} {
				o := m.options(filepath.Join(root, "*", "*.log"))
				o.FromBeginning = true
				o.RotationGrace = 1 << 40
				o.Select = func(path string) bool { return filepath.Dir(path) == dir }
				claims.share(&o, dir)
				followers[dir] = start(t, o, c.handle)
			}
			waitFor(t, "x.log read", func() bool { return c.has(1, 10) })
			rename(t, filepath.Join(dirA, "x.log"), filepath.Join(dirB, "x.log"))
			writeLines(t, x, 11, 20)
			waitFor(t, "x.log read on under b", func() bool { return c.has(11, 20) })
			rename(t, filepath.Join(dirB, "x.log"), filepath.Join(dirB, "x.log.1"))
			writeLines(t, x, 21, 30)
			y := create(t, filepath.Join(dirB, "x.log"))
			writeLines(t, y, 31, 40)
			waitFor(t, "x.log.1 read to its end, the new x.log read", func() bool { return c.has(21, 40) })
			c.expectExactly(t, span{1, 40})
			if n := claims.count(); n != 2 {
				t.Errorf("%d claims, want x's by a and the new x.log's by b", n)
			}
			for _, f := range followers {
				f.Stop()
			}
			if n := claims.count(); n != 0 {
				t.Errorf("%d claims left once the followers stopped", n)
			}
		})
	}
}

// claims is the one set the followers sharing a glob claim their files from, as the
// pipeline's dealer is.
type claims struct {
	mu sync.Mutex
	by map[fileID]string
}

func newClaims() *claims { return &claims{by: map[fileID]string{}} }

// share has the follower of o, who, claim from c.
func (c *claims) share(o *Options, who string) {
	o.Claim = func(dev, ino uint64) bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		if by, ok := c.by[fileID{dev, ino}]; ok {
			return by == who
		}
		c.by[fileID{dev, ino}] = who
		return true
	}
	o.Release = func(dev, ino uint64) {
		c.mu.Lock()
		defer c.mu.Unlock()
		if c.by[fileID{dev, ino}] == who {
			delete(c.by, fileID{dev, ino})
		}
	}
}

// count is how many files are claimed.
func (c *claims) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.by)
}
