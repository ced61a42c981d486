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

// records is a log handler that keeps the messages of the warnings logged, with their
// inputs attribute.
type records struct {
	mu   sync.Mutex
	recs []warning
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
