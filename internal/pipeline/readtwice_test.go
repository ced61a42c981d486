package pipeline

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/logwindow/logwindow_exporter/internal/testutil/await"
)

// TestReadTwiceFound: a file that two inputs' globs match and that comes after the start
// (a pod started since) is warned of as the followers find it, with the start's words,
// naming the inputs and their globs, once: before, not until the next reload. The log
// next written at its path once it was rotated away is the same log, not warned of again;
// a file that no rule reads through both inputs is not warned of.
func TestReadTwiceFound(t *testing.T) {
	for _, tc := range []struct {
		name, rules string
		warned      bool
	}{
		{"a rule of both inputs", "rules: [{name: lines, match: x}]", true},
		{"rules of one input each", "rules: [{name: a, match: x, inputs: [nginx]}, {name: b, match: x, inputs: [all]}]", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			pod := func(name string) string {
				t.Helper()
				log := filepath.Join(dir, "pods", name, "nginx", "0.log")
				if err := os.MkdirAll(filepath.Dir(log), 0o755); err != nil {
					t.Fatal(err)
				}
				writeRules(t, log, "")
				return log
			}
			pod("ns_web-1_u1")
			logs := &records{}
			nginx, all := filepath.Join(dir, "pods", "*_*_*", "nginx", "*.log"), filepath.Join(dir, "pods", "*_*_*", "*", "*.log")
			p := startRules(t, fmt.Appendf(nil, "inputs:\n  - {name: nginx, path: %s}\n  - {name: all, path: %s}\n%s\n", nginx, all, tc.rules),
				Options{Now: time.Now, PollInterval: 10 * time.Millisecond, Logger: slog.New(logs)})
			started := len(logs.warnings())
			// readBoth waits until both inputs read n lines each.
			readBoth := func(n uint64) {
				t.Helper()
				if !await.Until(t, func() bool {
					s := p.inputStats()
					return len(s) == 2 && s[0].LinesRead == n && s[1].LinesRead == n
				}) {
					t.Fatalf("input stats %+v, want %d lines read by each", p.inputStats(), n)
				}
			}

			log := pod("ns_web-2_u2")
			appendTo(t, log, "x 1\n")
			readBoth(1)
			want := fmt.Sprintf(`inputs "nginx" and "all" both read %s: rule "lines", which reads both inputs, counts their lines twice; narrow a glob, or name one of the inputs in the rule's inputs:`, log)
			wantInputs := fmt.Sprintf("nginx: %s, all: %s", nginx, all)
			if tc.warned {
				// The follower that warns may have handed the line on before it looked at
				// the other's files: its reader reads the file once it tracks it.
				await.Until(t, func() bool { return len(logs.warnings()) > started })
			}
			got := logs.warnings()[started:]
			if !tc.warned {
				if len(got) > 0 {
					t.Fatalf("warned of a file no rule counts twice: %q", got)
				}
				return
			}
			if len(got) != 1 || got[0].msg != want || got[0].inputs != wantInputs {
				t.Fatalf("warned, of the file found after the start:\n%q\nwant once:\n%q, inputs %q", got, want, wantInputs)
			}

			// Rotated: the log's next file, at its path, is not warned of again.
			if err := os.Rename(log, log+".1"); err != nil {
				t.Fatal(err)
			}
			writeRules(t, log, "x 2\n")
			readBoth(2)
			if got := logs.warnings()[started:]; len(got) != 1 {
				t.Errorf("warned again once the log rotated:\n%q", got)
			}
		})
	}
}

// TestReadTwiceFoundOncePerInputs: of the files found after the start that two inputs'
// globs both read, the first is warned of, and no later one until the next reload: a
// container restarted (its next log, 1.log, beside the last) or pods that come and go
// are the same two globs over one tree, and a node whose containers restart for days
// warned at each restart. Nor is anything kept of each file: the record of what was
// warned of holds the one pair of inputs, however many files came and went.
func TestReadTwiceFoundOncePerInputs(t *testing.T) {
	for _, tc := range []struct {
		name string
		// churn makes files of a line under pods with c.pod, waits for both inputs to
		// read them (c.read) and removes some (c.rm).
		churn func(c *churn)
	}{
		{"a container restarted", func(c *churn) {
			for _, next := range []string{"1.log", "2.log"} {
				c.pod("ns_web-1_u1", next)
				c.read(1)
				c.rm(c.last) // the container's last log, as the kubelet keeps one
			}
		}},
		{"pods come and go", func(c *churn) {
			for n := range 30 {
				c.pod(fmt.Sprintf("ns_job-%d_u%d", n, n), "0.log")
			}
			c.read(30)
			for _, log := range c.made[1:] {
				c.rm(log)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			logs := &records{}
			nginx, all := filepath.Join(dir, "pods", "*_*_*", "nginx", "*.log"), filepath.Join(dir, "pods", "*_*_*", "*", "*.log")
			p := startRules(t, fmt.Appendf(nil, "inputs:\n  - {name: nginx, path: %s}\n  - {name: all, path: %s}\nrules: [{name: lines, match: x}]\n", nginx, all),
				Options{Now: time.Now, PollInterval: 10 * time.Millisecond, Logger: slog.New(logs)})
			started := len(logs.warnings()) // of the globs that match no file yet
			c := &churn{t: t, dir: dir, p: p}
			c.pod("ns_web-1_u1", "0.log")
			c.read(1)
			if !await.Until(t, func() bool { return len(logs.warnings()) > started }) {
				t.Fatal("the first file both inputs read was not warned of")
			}

			tc.churn(c)
			// A file both follow, found at a later scan than the others: once each follower
			// logs it, its Found of each earlier file returned (follow.Options.Found is
			// called after that log, in the goroutine that makes the follower's scans),
			// and whatever it warned of them is logged.
			last := c.pod("ns_last_u0", "0.log")
			c.read(1)
			if !await.Until(t, func() bool { return logs.followed(last) == 2 }) {
				t.Fatalf("%s followed %d times; want by both inputs", last, logs.followed(last))
			}
			if got := logs.warnings()[started:]; len(got) != 1 {
				t.Errorf("warned %d times of the files of the same two inputs; want once:\n%q", len(got), got)
			}
			told := 0
			p.gen.Load().readTwiceTold.Range(func(any, any) bool { told++; return true })
			if told != 1 {
				t.Errorf("the record of what was warned of holds %d entries, after %d files found; want 1, the pair of inputs", told, len(c.made))
			}
		})
	}
}

// churn makes and removes the files of TestReadTwiceFoundOncePerInputs.
type churn struct {
	t    *testing.T
	dir  string
	p    *Pipeline
	made []string // the files made, in order
	last string   // the file made before the last
	n    uint64   // the lines each input read
}

// pod makes the file pods/name/nginx/file of a line, and returns its path.
func (c *churn) pod(name, file string) string {
	c.t.Helper()
	log := filepath.Join(c.dir, "pods", name, "nginx", file)
	if err := os.MkdirAll(filepath.Dir(log), 0o755); err != nil {
		c.t.Fatal(err)
	}
	writeRules(c.t, log, "x 1\n")
	if len(c.made) > 0 {
		c.last = c.made[len(c.made)-1]
	}
	c.made = append(c.made, log)
	return log
}

// read waits until both inputs read n lines more.
func (c *churn) read(n uint64) {
	c.t.Helper()
	c.n += n
	if !await.Until(c.t, func() bool {
		s := c.p.inputStats()
		return len(s) == 2 && s[0].LinesRead == c.n && s[1].LinesRead == c.n
	}) {
		c.t.Fatalf("input stats %+v, want %d lines read by each", c.p.inputStats(), c.n)
	}
}

// rm removes the file at log.
func (c *churn) rm(log string) {
	c.t.Helper()
	if err := os.Remove(log); err != nil {
		c.t.Fatal(err)
	}
}

// TestReadTwiceFoundPerSetOfInputs: the record of what was warned of keeps a set of
// inputs from being warned of again, not another set: once the files of nginx's glob and
// all's were warned of, a file of all's and envoy's is still warned of, once too. Each
// file here is read by two inputs exactly: a file three followers find one by one may be
// warned of for the first two, then for the three.
func TestReadTwiceFoundPerSetOfInputs(t *testing.T) {
	dir := t.TempDir()
	logs := &records{}
	nginx, all, envoy := filepath.Join(dir, "pods", "*_*_*", "nginx", "*.log"), filepath.Join(dir, "pods", "*_*_*", "*", "*.log"), filepath.Join(dir, "pods", "*_*_*", "envoy", "*.log")
	p := startRules(t, fmt.Appendf(nil, "inputs:\n  - {name: nginx, path: %s}\n  - {name: all, path: %s}\n  - {name: envoy, path: %s}\nrules: [{name: lines, match: x}]\n", nginx, all, envoy),
		Options{Now: time.Now, PollInterval: 10 * time.Millisecond, Logger: slog.New(logs)})
	started := len(logs.warnings()) // of the globs that match no file yet
	// found makes pods/pod/container/0.log and waits until both inputs that read it follow
	// it; returns its path.
	found := func(pod, container string) string {
		t.Helper()
		log := filepath.Join(dir, "pods", pod, container, "0.log")
		if err := os.MkdirAll(filepath.Dir(log), 0o755); err != nil {
			t.Fatal(err)
		}
		writeRules(t, log, "x 1\n")
		if !await.Until(t, func() bool { return logs.followed(log) == 2 }) {
			t.Fatalf("%s followed %d times; want by the two inputs that read it", log, logs.followed(log))
		}
		return log
	}
	pairs := []struct{ container, inputs string }{
		{"nginx", fmt.Sprintf("nginx: %s, all: %s", nginx, all)},
		{"envoy", fmt.Sprintf("all: %s, envoy: %s", all, envoy)},
	}
	for k, pair := range pairs {
		found(fmt.Sprintf("ns_web-%d_u%d", k, k), pair.container)
		if !await.Until(t, func() bool { return len(logs.warnings()) > started+k }) {
			t.Fatalf("the first file of %s was not warned of, after %q", pair.inputs, logs.warnings()[started:])
		}
	}
	for k, pair := range pairs {
		found(fmt.Sprintf("ns_job-%d_u%d", k, k), pair.container)
	}
	// Each follower's discovery calls Found after it logs a file, and the follower's
	// scans are one goroutine's: once every follower logged a file of a later scan than
	// the others, its Found of each of them returned.
	for k, pair := range pairs {
		found(fmt.Sprintf("ns_last-%d_u%d", k, k), pair.container)
	}

	var warned []string
	for _, w := range logs.warnings()[started:] {
		warned = append(warned, w.inputs)
	}
	slices.Sort(warned)
	want := []string{pairs[1].inputs, pairs[0].inputs} // sorted: "all: …" first
	if !slices.Equal(warned, want) {
		t.Errorf("warned of the files of the inputs:\n%q\nwant once of each pair:\n%q", warned, want)
	}
	told := 0
	p.gen.Load().readTwiceTold.Range(func(any, any) bool { told++; return true })
	if told != len(pairs) {
		t.Errorf("the record of what was warned of holds %d entries; want %d, a pair of inputs each", told, len(pairs))
	}
}

// records is a log handler that keeps the messages of the warnings logged, with their
// inputs attribute, and the paths of the files followers followed as new.
type records struct {
	mu   sync.Mutex
	recs []warning
	news []string
}

// followed is how many times a follower logged that it follows the new file at path.
func (r *records) followed(path string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, p := range r.news {
		if p == path {
			n++
		}
	}
	return n
}

// warning is a warning records kept.
type warning struct{ msg, inputs string }

func (r *records) warnings() []warning {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.recs)
}

func (r *records) Enabled(context.Context, slog.Level) bool { return true }

func (r *records) Handle(_ context.Context, rec slog.Record) error {
	if rec.Message == "following new file" {
		rec.Attrs(func(a slog.Attr) bool {
			if a.Key == "path" {
				r.mu.Lock()
				r.news = append(r.news, a.Value.String())
				r.mu.Unlock()
			}
			return true
		})
	}
	if rec.Level != slog.LevelWarn {
		return nil
	}
	w := warning{msg: rec.Message}
	rec.Attrs(func(a slog.Attr) bool {
		if a.Key == "inputs" {
			w.inputs = a.Value.String()
		}
		return true
	})
	r.mu.Lock()
	defer r.mu.Unlock()
	r.recs = append(r.recs, w)
	return nil
}

func (r *records) WithAttrs([]slog.Attr) slog.Handler { return r }
func (r *records) WithGroup(string) slog.Handler      { return r }
