package pipeline

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/logwindow/logwindow_exporter/config"
	"github.com/logwindow/logwindow_exporter/config/logformat"
	"github.com/logwindow/logwindow_exporter/internal/input"
	"github.com/logwindow/logwindow_exporter/internal/testutil/await"
)

// TestReloadPanicRefused: a reload whose load or build of the rule file, or the wording
// of its warnings, panics (a bug some rule file reaches) is a failed reload, as a refused
// one is: ReloadFile returns a *ReloadPanic saying with what it panicked, the reload
// outcome self-metric and the status page (ReloadError) say it failed, and the previous
// rules keep running. The panic went up through ReloadFile: it ended the process when
// SIGHUP or the rule file's watch asked for the reload, and the reloads sharing it were
// told it succeeded. The content that panicked is the one LastRead tells of, so that the
// watch of the file tries it once: a panic in the load told of no content read, and the
// watch reloaded the same file at each of its polls, each a failure logged and counted.
func TestReloadPanicRefused(t *testing.T) {
	for _, tc := range []struct {
		name  string
		parse func(data []byte, path string) (*config.Config, error)
		// warn, when set, words the reload's warnings, which it does before it takes the
		// lock, out of the swap's reach.
		warn func(*config.Config, int64) []string
	}{
		{"in the load", func([]byte, string) (*config.Config, error) { panic("a bug in the load") }, nil},
		{"in the build", func(data []byte, path string) (*config.Config, error) {
			cfg, err := config.Parse(data, path)
			if err != nil {
				return nil, err
			}
			// A candidate format of nil, as no load leaves it: the parser's build panics.
			cfg.Rules[1].Candidates, cfg.Rules[1].Variants = []*logformat.Format{nil}, []*config.Rule{nil}
			return cfg, nil
		}, nil},
		{"in its warnings", config.Parse, func(*config.Config, int64) []string { panic("a bug in the warnings") }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "rules.yaml")
			writeRules(t, path, "rules:\n  - {name: r, match: x}\n")
			p := startRuleFile(t, path)
			const panicking = "rules:\n  - {name: r, match: x}\n  - {name: other, match: y}\n"
			writeRules(t, path, panicking)
			p.parseAgain = tc.parse
			if tc.warn != nil {
				p.startWarnings = tc.warn
			}

			err := p.ReloadFile()
			var panicked *ReloadPanic
			if !errors.As(err, &panicked) || !strings.Contains(err.Error(), "panicked") || len(panicked.Stack) == 0 {
				t.Fatalf("ReloadFile: %v; want a *ReloadPanic with its stack", err)
			}
			if p.ReloadError() != err {
				t.Errorf("ReloadError: %v; want the panic's", p.ReloadError())
			}
			if p.reloadStats().Successful {
				t.Error("the reload outcome self-metric says the reload succeeded")
			}
			if rules := p.Config().Rules; len(rules) != 1 || rules[0].Name != "r" {
				t.Errorf("the panicked reload changed the rules: %d of them", len(rules))
			}
			if read := p.LastRead(); !read.OK || read.Sum != sha256.Sum256([]byte(panicking)) {
				t.Errorf("LastRead: %+v; want the sum of the content that panicked", read)
			}
			// The locks were let go: the next reload runs, and applies.
			p.parseAgain, p.startWarnings = config.Parse, StartWarnings
			if err := p.ReloadFile(); err != nil {
				t.Fatalf("the next reload: %v", err)
			}
			if rules := p.Config().Rules; len(rules) != 2 || !p.reloadStats().Successful {
				t.Errorf("after the next reload: %d rules, successful %v; want 2, true", len(rules), p.reloadStats().Successful)
			}
		})
	}
}

// TestReloadPanicInForce: a reload that panics once its rules are in force (in the start
// of an input) is recorded as a failed one that put them in force with inputs not
// started, and its panic goes on to the server's reloader; it was recorded as succeeded,
// the status page and the reload outcome self-metric saying so. Its inputs are not tried
// again, which would panic outside any reload: the next reload starts them.
func TestReloadPanicInForce(t *testing.T) {
	start := inputKinds[config.KindFile]
	t.Cleanup(func() { inputKinds[config.KindFile] = start }) // after the pipeline stops
	path := filepath.Join(t.TempDir(), "rules.yaml")
	writeRules(t, path, "rules:\n  - {name: r, match: x}\n")
	p := startRuleFile(t, path)
	logPath := filepath.Join(t.TempDir(), "app.log")
	writeRules(t, logPath, "")
	writeRules(t, path, "inputs: [{name: refused, path: '"+logPath+".2'}, {name: app, path: '"+logPath+"'}]\nrules:\n  - {name: r, match: x}\n  - {name: other, match: y}\n")
	panicking := start
	panicking.start = func(_ *Pipeline, ci config.Input, _ *stream, _ int) (input.Input, error) {
		if ci.Name == "refused" {
			return nil, errors.New("refused") // left to be tried again, before the panic
		}
		panic("a bug in an input's start")
	}
	inputKinds[config.KindFile] = panicking

	func() {
		defer func() {
			if v := recover(); v != "a bug in an input's start" {
				t.Errorf("ReloadFile panicked with %v; want the input's panic", v)
			}
		}()
		_ = p.ReloadFile()
	}()
	var notStarted *InputsNotStarted
	if err := p.ReloadError(); !errors.As(err, &notStarted) || !errors.As(err, new(*ReloadPanic)) {
		t.Errorf("ReloadError: %v; want the panic, as inputs not started", err)
	}
	if p.reloadStats().Successful {
		t.Error("the reload outcome self-metric says the reload succeeded")
	}
	if rules := p.Config().Rules; len(rules) != 2 {
		t.Errorf("%d rules in force; want the reload's 2", len(rules))
	}
	if len(p.InputsNotRunning()) != 0 {
		t.Errorf("inputs to be tried again: %v; want none", p.InputsNotRunning())
	}

	inputKinds[config.KindFile] = start
	if err := p.ReloadFile(); err != nil || !p.reloadStats().Successful || len(p.inputStats()) != 2 {
		t.Errorf("the next reload: %v, successful %v, %d inputs; want none, true, 2", err, p.reloadStats().Successful, len(p.inputStats()))
	}
}

// panicOn is a slog.Handler that panics on a record whose message starts with prefix
// while armed, standing for a bug in what a reload runs between its build and its swap.
type panicOn struct {
	slog.Handler
	prefix string
	armed  *atomic.Bool
}

func (h panicOn) Handle(ctx context.Context, r slog.Record) error {
	if h.armed.Load() && strings.HasPrefix(r.Message, h.prefix) {
		panic("a bug in the look at the lines read")
	}
	return h.Handler.Handle(ctx, r)
}

// TestReloadPanicInItsLook: a reload that panics as it tells what the rules it replaces
// made of the lines read (lookUnreadable) is a failed reload that changed nothing, as one
// whose build panicked. Looked at between the build and the swap, the panic went up
// uncaught: the server answered it 500, but the reload outcome self-metric and the status
// page said the reload succeeded.
func TestReloadPanicInItsLook(t *testing.T) {
	dir := t.TempDir()
	logPath, path := filepath.Join(dir, "app.log"), filepath.Join(dir, "rules.yaml")
	writeRules(t, logPath, strings.Repeat("no rule matches this line\n", unmatchedMinLines))
	rules := "inputs: [{path: '" + logPath + "', start_at: beginning}]\nrules:\n  - {name: r, match: x}\n"
	writeRules(t, path, rules)
	cfg, err := config.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	var armed atomic.Bool
	logger := slog.New(panicOn{Handler: slog.NewTextHandler(io.Discard, nil), prefix: "no rule's match regex matched", armed: &armed})
	p, err := Start(cfg, Options{Now: time.Now, PollInterval: time.Hour, Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Stop)
	waitRead(t, p, unmatchedMinLines)
	writeRules(t, path, rules+"  - {name: other, match: y}\n")

	armed.Store(true)
	err = p.ReloadFile()
	armed.Store(false)
	var panicked *ReloadPanic
	if !errors.As(err, &panicked) || len(panicked.Stack) == 0 {
		t.Fatalf("ReloadFile: %v; want a *ReloadPanic with its stack", err)
	}
	if p.ReloadError() != err || p.reloadStats().Successful {
		t.Errorf("ReloadError %v, successful %v; want the panic, false", p.ReloadError(), p.reloadStats().Successful)
	}
	if rules := p.Config().Rules; len(rules) != 1 {
		t.Errorf("the panicked reload changed the rules: %d of them; want 1", len(rules))
	}
	if err := p.ReloadFile(); err != nil || len(p.Config().Rules) != 2 || !p.reloadStats().Successful {
		t.Errorf("the next reload: %v, %d rules, successful %v; want none, 2, true", err, len(p.Config().Rules), p.reloadStats().Successful)
	}
}

// TestReloadPanicHandsOverPositions: a reload that starts an input's followers anew (its
// glob's shards changed) and panics in their start, its rules in force, leaves the
// positions where the followers it stopped stopped to what starts them next: the next
// reload, or, with --storage.path, the start after a shutdown, whose snapshot has them.
// The lines written meanwhile are read once, none lost (start_at: end) nor read twice
// (start_at: beginning). The shutdown's snapshot lacked them: the restart read the files
// from start_at.
func TestReloadPanicHandsOverPositions(t *testing.T) {
	start := inputKinds[config.KindFile]
	t.Cleanup(func() { inputKinds[config.KindFile] = start }) // after the pipelines stop
	for _, tc := range []struct {
		startAt         string
		shards, reshard int
		restart         bool
	}{
		{"end", 1, 2, false}, {"beginning", 1, 2, false}, {"end", 2, 1, false}, {"beginning", 3, 2, false},
		{"end", 1, 2, true}, {"beginning", 1, 2, true}, {"end", 2, 1, true}, {"beginning", 3, 2, true},
	} {
		t.Run(fmt.Sprintf("%s %d to %d restart %v", tc.startAt, tc.shards, tc.reshard, tc.restart), func(t *testing.T) {
			dir := t.TempDir()
			var logs []string
			for _, d := range []string{"a", "b", "c"} {
				logs = append(logs, filepath.Join(dir, d, "app.log"))
				if err := os.Mkdir(filepath.Dir(logs[len(logs)-1]), 0o755); err != nil {
					t.Fatal(err)
				}
				writeRules(t, logs[len(logs)-1], "x before the start\n")
			}
			rules := func(shards int) string {
				return fmt.Sprintf("inputs: [{path: '%s', start_at: %s, shards: %d}]\nrules:\n  - {name: lines, match: x}\n",
					filepath.Join(dir, "*", "*.log"), tc.startAt, shards)
			}
			path, storage := filepath.Join(dir, "rules.yaml"), filepath.Join(dir, "storage")
			writeRules(t, path, rules(tc.shards))
			startOn := func() *Pipeline {
				t.Helper()
				cfg, err := config.Load(path)
				if err != nil {
					t.Fatal(err)
				}
				p, err := Start(cfg, Options{Now: time.Now, PollInterval: time.Hour, StoragePath: storage})
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(p.Stop)
				waitReady(t, p)
				return p
			}
			p := startOn()
			want := 0.0
			if tc.startAt == "beginning" {
				want = float64(len(logs))
			}
			write := func() {
				for _, log := range logs {
					appendTo(t, log, "x line\n")
				}
				want += float64(len(logs))
			}
			write()
			waitTotal(t, p, "before the reload", "lines_total", want)

			writeRules(t, path, rules(tc.reshard))
			panicking := start
			panicking.start = func(*Pipeline, config.Input, *stream, int) (input.Input, error) {
				panic("a bug in an input's start")
			}
			inputKinds[config.KindFile] = panicking
			func() {
				defer func() {
					if v := recover(); v == nil {
						t.Error("the reload did not panic")
					}
				}()
				_ = p.ReloadFile()
			}()
			inputKinds[config.KindFile] = start
			write() // while no follower reads them
			if tc.restart {
				p.Stop()
				p = startOn()
			} else if err := p.ReloadFile(); err != nil {
				t.Fatal(err)
			}
			if n := len(p.inputStats()); n != tc.reshard {
				t.Fatalf("%d followers after the reload; want %d", n, tc.reshard)
			}
			write()
			waitTotal(t, p, "after the reload", "lines_total", want)
			// A line read twice would be counted once its file is read to its end.
			if !await.Until(t, func() bool {
				files, behind := 0, false
				for _, s := range p.inputStats() {
					for _, f := range s.Files {
						files++
						behind = behind || f.BytesBehind > 0
					}
				}
				return files == len(logs) && !behind
			}) {
				t.Fatalf("input stats %+v: the files not all read to their end", p.inputStats())
			}
			if got := sumOf(gatherPipeline(t, p), "lines_total"); got != want {
				t.Errorf("lines_total %v once every line was read; want %v", got, want)
			}
		})
	}
}
