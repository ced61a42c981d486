package pipeline

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/logwindow/logwindow_exporter/config"
	"github.com/logwindow/logwindow_exporter/internal/testutil/syncbuf"
)

// reloadSteps draws n steps of TestReloadsAndRestartsCountEachLineOnce. Once the log
// was rotated, no restart comes while the path is the log's alone: the snapshot keeps no
// position of a file the input's path does not name, so a glob after it would read the
// rotated files again, by start_at. Such a restart is drawn as a reload.
func reloadSteps(rng *rand.Rand, n int) []string {
	ops := []string{"write", "reload", "reload glob", "restart", "restart glob", "rotate", "caught up"}
	steps := make([]string, n)
	rotated, glob := false, false
	for i := range steps {
		step := ops[rng.IntN(len(ops))]
		if rotated && !glob && strings.HasPrefix(step, "restart") {
			step = strings.Replace(step, "restart", "reload", 1)
		}
		rotated = rotated || step == "rotate"
		if strings.HasPrefix(step, "re") {
			glob = strings.HasSuffix(step, "glob")
		}
		steps[i] = step
	}
	return steps
}

// TestReloadsAndRestartsCountEachLineOnce: through runs of lines written, reloads and
// restarts with --storage.path that change the input's path between the log and a glob
// that matches its rotated files too (`access.log`, `access.log*`) or keep it, and
// rotations (rename and create), each line written is counted once: in the totals and
// windows of the rules, which keep their series. Lines are written while the exporter is
// down too, and right after a reload, before the input has caught up; a rotation's are
// counted before the run goes on (see the step).
func TestReloadsAndRestartsCountEachLineOnce(t *testing.T) {
	cases := []struct {
		name  string
		steps []string
	}{
		// The rotated files, read by the glob, are named by neither path of the log's
		// input: the positions of them the log's follower was handed go to the glob's.
		{"rotated, glob, log, glob", []string{"rotate", "rotate", "reload glob", "reload", "reload glob"}},
		{"rotated, restart as a glob", []string{"write", "rotate", "write", "restart glob", "write"}},
	}
	for seed := uint64(1); seed <= 8; seed++ {
		cases = append(cases, struct {
			name  string
			steps []string
		}{fmt.Sprintf("seed %d", seed), reloadSteps(rand.New(rand.NewPCG(seed, 26)), 16)})
	}
	for _, startAt := range []string{"beginning", "end"} {
		for _, c := range cases {
			t.Run(fmt.Sprintf("start_at %s, %s", startAt, c.name), func(t *testing.T) {
				t.Logf("steps: %s", strings.Join(c.steps, ", "))
				logDir, dir := t.TempDir(), t.TempDir()
				log := filepath.Join(logDir, "access.log")
				rules := func(glob bool) string {
					path := log
					if glob {
						path += "*"
					}
					return strings.ReplaceAll(strings.ReplaceAll(persistRules, "LOG", path), "start_at: end", "start_at: "+startAt)
				}
				if err := os.WriteFile(log, nil, 0o644); err != nil {
					t.Fatal(err)
				}
				var out syncbuf.Buffer
				glob := false
				p := startStoredOn(t, rules(glob), dir, &out, Options{})
				written, rotations := 0, 0
				write := func() {
					n := 20
					persistLines(t, log, written+1, written+n)
					written += n
				}
				for _, step := range c.steps {
					switch step {
					case "write":
						write()
					case "reload", "reload glob":
						glob = step == "reload glob"
						cfg, err := config.Parse([]byte(rules(glob)), "rules.yaml")
						if err != nil {
							t.Fatal(err)
						}
						if err := p.Reload(cfg); err != nil {
							t.Fatal(err)
						}
						write()
					case "restart", "restart glob":
						p.Stop()
						write()
						glob = step == "restart glob"
						p = startStoredOn(t, rules(glob), dir, &out, Options{})
					case "rotate":
						rotations++
						if err := os.Rename(log, fmt.Sprintf("%s.%d", log, rotations)); err != nil {
							t.Fatal(err)
						}
						write()
						// Counted: the input saw the rotation. A new file at the log's path
						// that the input of another path it is replaced by never read is
						// read by start_at.
						waitCounted(t, p, float64(written))
					case "caught up":
						waitCaughtUp(t, p)
					}
				}
				waitCaughtUp(t, p)
				t.Cleanup(func() {
					if t.Failed() {
						t.Log(out.String())
					}
				})
				waitCounted(t, p, float64(written))
			})
		}
	}
}
