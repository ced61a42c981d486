package pipeline

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/logwindow/logwindow_exporter/config"
	"github.com/logwindow/logwindow_exporter/internal/input/cri/critest"
	"github.com/logwindow/logwindow_exporter/internal/testutil/testclock"
)

// podDirs makes n pod directories under root, kubelet-style, and returns their nginx
// logs' paths.
func podDirs(t *testing.T, root string, from, n int) []string {
	t.Helper()
	var paths []string
	for i := from; i < from+n; i++ {
		dir := filepath.Join(root, fmt.Sprintf("web_nginx-%d_%08x", i, i*0x9e3779b1), "nginx")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, filepath.Join(dir, "0.log"))
	}
	return paths
}

// owners asks every shard of d about each path, as each follower does of its listing, and
// returns how many paths each shard owns; a path owned by none or by two fails the test.
func owners(t *testing.T, d *dealer, shards int, paths []string) []int {
	t.Helper()
	held := make([]int, shards)
	for _, p := range paths {
		n := 0
		for s := range shards {
			if d.owns(p, s) {
				held[s]++
				n++
			}
		}
		if n != 1 {
			t.Fatalf("%s is owned by %d shards", p, n)
		}
	}
	return held
}

// The followers of a glob are dealt its directories evenly, whatever their names, a
// directory stays with its follower (a rotation renames a file within it), and the
// directories of deleted pods no longer count, so new pods fill the follower they left.
func TestDealerBalances(t *testing.T) {
	for _, c := range []struct {
		shards, pods int
		want         []int
	}{
		{2, 8, []int{4, 4}},
		{2, 7, []int{4, 3}},
		{3, 8, []int{3, 3, 2}},
		{4, 2, []int{1, 1, 0, 0}},
	} {
		t.Run(fmt.Sprintf("%d pods on %d shards", c.pods, c.shards), func(t *testing.T) {
			// Several trees: the names must not matter, as they did for a hash.
			for tree := range 5 {
				root := filepath.Join(t.TempDir(), fmt.Sprint("node", tree))
				d := newDealer(c.shards, time.Now)
				paths := podDirs(t, root, 0, c.pods)
				// Balance is what matters, not which follower holds the extra one.
				got := owners(t, d, c.shards, paths)
				slices.Sort(got)
				slices.Reverse(got)
				if fmt.Sprint(got) != fmt.Sprint(c.want) {
					t.Fatalf("tree %d: shards own %v directories, want %v", tree, got, c.want)
				}
			}
		})
	}
}

func TestDealerKeepsAndForgets(t *testing.T) {
	root := t.TempDir()
	clock := testclock.New(time.Date(2024, 3, 1, 12, 0, 0, 0, time.UTC))
	d := newDealer(2, clock.Now)
	paths := podDirs(t, root, 0, 4) // dealt 0, 1, 0, 1
	owners(t, d, 2, paths)
	shardOf := func(p string) int {
		if d.owns(p, 0) {
			return 0
		}
		return 1
	}
	t.Run("a rotated file stays with its follower", func(t *testing.T) {
		for _, p := range paths {
			for _, rotated := range []string{p + ".20240301-120000", p + ".20240301-120000.gz", filepath.Join(filepath.Dir(p), "1.log")} {
				if shardOf(rotated) != shardOf(p) {
					t.Errorf("%s went to shard %d, its directory's file to %d", rotated, shardOf(rotated), shardOf(p))
				}
			}
		}
	})
	t.Run("deleted pods make room", func(t *testing.T) {
		// Both of shard 0's pods deleted: the next two new pods go to it.
		for _, p := range paths {
			if shardOf(p) == 0 {
				if err := os.RemoveAll(filepath.Dir(filepath.Dir(p))); err != nil {
					t.Fatal(err)
				}
			}
		}
		// Within a second of the last look nothing is forgotten; a second later it is.
		clock.Add(forgetEvery)
		fresh := podDirs(t, root, 10, 2)
		if got := owners(t, d, 2, fresh); fmt.Sprint(got) != "[2 0]" {
			t.Fatalf("new pods dealt %v, want [2 0]", got)
		}
		if len(d.owner) != 4 {
			t.Errorf("the dealer holds %d directories, want 4: the deleted pods' forgotten", len(d.owner))
		}
	})
}

// Followers ask at the same time: each path still has exactly one owner (run with -race).
func TestDealerConcurrentFollowers(t *testing.T) {
	const shards = 4
	d := newDealer(shards, time.Now)
	paths := podDirs(t, t.TempDir(), 0, 64)
	owned := make([][]bool, shards)
	var wg sync.WaitGroup
	for s := range shards {
		owned[s] = make([]bool, len(paths))
		wg.Go(func() {
			for i, p := range paths {
				owned[s][i] = d.owns(p, s)
			}
		})
	}
	wg.Wait()
	held := make([]int, shards)
	for i, p := range paths {
		n := 0
		for s := range shards {
			if owned[s][i] {
				n++
				held[s]++
			}
		}
		if n != 1 {
			t.Fatalf("%s is owned by %d shards", p, n)
		}
	}
	if fmt.Sprint(held) != "[16 16 16 16]" {
		t.Errorf("shards own %v, want 16 each", held)
	}
}

// A first listing of many directories looks for gone ones once, not once per directory
// (which made 2,000 directories two million stats), and a later new one stats them once.
func TestDealerStatsSpaced(t *testing.T) {
	clock := testclock.New(time.Date(2024, 3, 1, 12, 0, 0, 0, time.UTC))
	d := newDealer(2, clock.Now)
	stats := 0
	d.exists = func(string) bool { stats++; return true }
	var paths []string
	for i := range 2000 {
		paths = append(paths, fmt.Sprintf("/pods/web_nginx-%d_uid/nginx/0.log", i))
	}
	owners(t, d, 2, paths)
	if stats != 0 {
		t.Fatalf("a first listing of %d directories made %d stats, want 0", len(paths), stats)
	}
	clock.Add(forgetEvery)
	owners(t, d, 2, []string{"/pods/web_late_uid/nginx/0.log"})
	if stats != len(paths) {
		t.Fatalf("a new directory a second later made %d stats, want %d", stats, len(paths))
	}
}

// A CRI message whose parts straddle reloads that change a glob's shards is counted once,
// whole: the followers started anew take over what the joiners of those they replace were
// in the middle of. Each step writes a part of a message to every file (its first holds
// the capture of the label), and a message of the other stream that shows it was read.
func TestReloadShardsKeepsMessagesInParts(t *testing.T) {
	root := t.TempDir()
	logs := podDirs(t, root, 0, 4)
	for _, l := range logs {
		if err := os.WriteFile(l, nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	p, rules := startSharded(t, func(shards int) string {
		return fmt.Sprintf(`
inputs: [{path: %s/*/nginx/*.log, wrapper: cri, shards: %d}]
rules:
  - {name: all, match: '.'}
  - {name: users, match: '^user=(?P<user>\w+) took=5 done$', labels: {user: '${user}'}}
`, root, shards)
	})
	messages := 0.0
	step := func(tag, part string) {
		t.Helper()
		waitReady(t, p)
		for _, l := range logs {
			appendTo(t, l, critest.Line("t", "stdout", tag, part)+"\n"+critest.Line("t", "stderr", "F", "tick")+"\n")
		}
		messages += float64(len(logs)) // the ticks
		if tag == "F" {
			messages += float64(len(logs)) // and the messages they end
		}
		waitTotal(t, p, fmt.Sprintf("%s %q", tag, part), "all_total{", messages)
	}
	step("P", "user=alice ")
	for i, shards := range []int{2, 3, 1} {
		if err := p.Reload(rules(shards)); err != nil {
			t.Fatal(err)
		}
		switch i {
		case 0:
			step("P", "took=5 ")
		case 1:
			step("P", "")
		}
	}
	step("F", "done")
	if got := waitTotal(t, p, "the messages in parts", "users_total{", float64(len(logs))); got[`users_total{user="alice"}`] != float64(len(logs)) {
		t.Errorf("users_total %v of alice, want %d", got[`users_total{user="alice"}`], len(logs))
	}
}

// A reload that changes a glob's shards starts its followers anew; they read on from where
// the followers they replace stopped, not from start_at: a line is counted once whatever
// the number of shards, before and after. Each step appends one line to every file and
// waits for the total it must reach.
func TestReloadShardsReadsOnWhereTheyStopped(t *testing.T) {
	for _, startAt := range []string{"beginning", "end"} {
		t.Run(startAt, func(t *testing.T) {
			root := t.TempDir()
			logs := podDirs(t, root, 0, 4)
			for _, l := range logs {
				if err := os.WriteFile(l, []byte("x\nx\nx\n"), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			p, rules := startSharded(t, func(shards int) string {
				return fmt.Sprintf("inputs: [{path: %s/*/nginx/*.log, start_at: %s, shards: %d}]\nrules: [{name: lines, match: x}]\n",
					root, startAt, shards)
			})
			want := 0.0
			if startAt == "beginning" {
				want = 3 * float64(len(logs))
			}
			step := func(what string) {
				t.Helper()
				waitReady(t, p)
				for _, l := range logs {
					appendTo(t, l, "x\n")
				}
				want += float64(len(logs))
				waitTotal(t, p, what, "lines_total{", want)
			}
			step("one follower")
			for _, shards := range []int{2, 3, 1} {
				if err := p.Reload(rules(shards)); err != nil {
					t.Fatal(err)
				}
				step(fmt.Sprintf("reloaded to %d shards", shards))
			}
		})
	}
}

// startSharded starts a pipeline on the rule file text gives for one shard, and returns
// it with the parse of text for any number of shards, for the reloads that change it.
func startSharded(t *testing.T, text func(shards int) string) (*Pipeline, func(shards int) *config.Config) {
	t.Helper()
	rules := func(shards int) *config.Config {
		t.Helper()
		cfg, err := config.Parse([]byte(text(shards)), "rules.yaml")
		if err != nil {
			t.Fatal(err)
		}
		return cfg
	}
	p, err := Start(rules(1), Options{Now: time.Now, PollInterval: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Stop)
	return p, rules
}

// twoDirs makes the directories a and b of a new root, a/x.log of three lines "x" and
// b/y.log of one.
func twoDirs(t *testing.T) (root, a, b string) {
	t.Helper()
	root = t.TempDir()
	a, b = filepath.Join(root, "a"), filepath.Join(root, "b")
	for _, dir := range []string{a, b} {
		if err := os.Mkdir(dir, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(a, "x.log"), []byte("x\nx\nx\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(b, "y.log"), []byte("x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return root, a, b
}

// A file renamed from a directory of one follower of a glob into a directory of another
// is read on by the follower that read it, from where it was, and not again from its
// start by the other: the followers share which files they read.
func TestShardsFileRenamedAcrossDirectories(t *testing.T) {
	root, a, b := twoDirs(t)
	p, _ := startSharded(t, func(int) string {
		return fmt.Sprintf("inputs: [{path: %s/*/*.log, start_at: beginning, shards: 2}]\nrules: [{name: lines, match: x}]\n", root)
	})
	waitReady(t, p)
	waitTotal(t, p, "at start", "lines_total{", 4)
	var d *dealer
	for _, in := range p.inputs {
		d = in.deal
	}
	d.mu.Lock()
	oa, okA := d.owner[a]
	ob, okB := d.owner[b]
	d.mu.Unlock()
	if !okA || !okB || oa == ob {
		t.Fatalf("directories a and b not dealt to two followers: %v %v, %v %v", oa, okA, ob, okB)
	}
	if err := os.Rename(filepath.Join(a, "x.log"), filepath.Join(b, "x.log")); err != nil {
		t.Fatal(err)
	}
	appendTo(t, filepath.Join(b, "x.log"), "x\nx\n")
	waitTotal(t, p, "renamed and written to", "lines_total{", 6)
	// Files made after the rename are read once both followers listed the directories
	// since: by then a second read of x.log would have begun.
	for _, dir := range []string{a, b} {
		if err := os.WriteFile(filepath.Join(dir, "z.log"), []byte("x\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	waitTotal(t, p, "new files", "lines_total{", 8)
	appendTo(t, filepath.Join(b, "x.log"), "x\n")
	waitTotal(t, p, "written to again", "lines_total{", 9)
}

// A file is read by the shard that claimed it first until that one releases it; another
// shard's release of it changes nothing.
func TestDealerClaims(t *testing.T) {
	d := newDealer(2, time.Now)
	steps := []struct {
		op    string
		shard int
		want  bool
	}{
		{"claim", 0, true},
		{"claim", 0, true},
		{"claim", 1, false},
		{"release", 1, false},
		{"claim", 1, false},
		{"release", 0, false},
		{"claim", 1, true},
		{"claim", 0, false},
	}
	for i, s := range steps {
		switch s.op {
		case "claim":
			if got := d.claim(8, 42, s.shard); got != s.want {
				t.Errorf("step %d: shard %d claims: %v, want %v", i, s.shard, got, s.want)
			}
		case "release":
			d.release(8, 42, s.shard)
		}
	}
	if !d.claim(8, 43, 0) {
		t.Error("another file is not claimed by the first shard to ask")
	}
}

// A file two inputs' globs reach is read by each, its followers claiming it from their own
// input's dealer: renamed into another directory, it is read on by both, once each.
func TestShardsFileOfTwoInputs(t *testing.T) {
	root, a, b := twoDirs(t)
	p, _ := startSharded(t, func(int) string {
		return fmt.Sprintf(`inputs:
  - {name: all, path: %[1]s/*/*.log, start_at: beginning, shards: 2}
  - {name: xs, path: %[1]s/*/x*.log, start_at: beginning, shards: 2}
rules: [{name: lines, match: x}]
`, root)
	})
	waitReady(t, p)
	waitTotal(t, p, "at start", "lines_total{", 4+3)
	if err := os.Rename(filepath.Join(a, "x.log"), filepath.Join(b, "x.log")); err != nil {
		t.Fatal(err)
	}
	appendTo(t, filepath.Join(b, "x.log"), "x\nx\n")
	waitTotal(t, p, "renamed and written to", "lines_total{", 4+3+2*2)
	// Files made after the rename are read once every follower listed the directories
	// since: by then a second read of x.log would have begun.
	for _, dir := range []string{a, b} {
		if err := os.WriteFile(filepath.Join(dir, "z.log"), []byte("x\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "xz.log"), []byte("x\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	waitTotal(t, p, "new files", "lines_total{", 4+3+2*2+4+2)
	appendTo(t, filepath.Join(b, "x.log"), "x\n")
	waitTotal(t, p, "written to again", "lines_total{", 4+3+2*2+4+2+2)
}
