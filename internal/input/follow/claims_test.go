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
			// The grace outlasts the test: x.log.1 stays open, and claimed, until Stop.
			sh := startShared(t, m, func(o *Options) { o.RotationGrace = 1 << 40 })
			dirA, dirB, x, claims, c, followers := sh.dirA, sh.dirB, sh.x, sh.claims, sh.c, sh.followers
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

// shared is two followers of root/*/*.log, each reading the files of its directory (a or
// b, by Select) and claiming them from one set, as the pipeline's shards do; a/x.log holds
// lines 1 to 10, which the followers read from the beginning.
type shared struct {
	dirA, dirB string
	x          *os.File
	claims     *claims
	c          *collector
	followers  map[string]*Follower // by directory
}

// startShared starts the followers of a shared, their options first changed by edit.
func startShared(t *testing.T, m mode, edit func(*Options)) shared {
	t.Helper()
	root := t.TempDir()
	sh := shared{dirA: filepath.Join(root, "a"), dirB: filepath.Join(root, "b"), claims: newClaims(),
		c: newCollector(), followers: map[string]*Follower{}}
	for _, d := range []string{sh.dirA, sh.dirB} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	sh.x = create(t, filepath.Join(sh.dirA, "x.log"))
	writeLines(t, sh.x, 1, 10)
	for _, dir := range []string{sh.dirA, sh.dirB} {
		o := m.options(filepath.Join(root, "*", "*.log"))
		o.FromBeginning = true
		o.Select = func(path string) bool { return filepath.Dir(path) == dir }
		edit(&o)
		sh.claims.share(&o, dir)
		sh.followers[dir] = start(t, o, sh.c.handle)
	}
	return sh
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
