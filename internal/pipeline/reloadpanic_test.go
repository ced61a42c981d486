package pipeline

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/logwindow/logwindow_exporter/config"
	"github.com/logwindow/logwindow_exporter/config/logformat"
)

// TestReloadPanicRefused: a reload whose load or build of the rule file panics (a bug
// some rule file reaches) is a failed reload, as a refused one is: ReloadFile returns a
// *ReloadPanic saying with what it panicked, the reload outcome self-metric and the
// status page (ReloadError) say it failed, and the previous rules keep running. The panic
// went up through ReloadFile: it ended the process when SIGHUP or the rule file's watch
// asked for the reload, and the reloads sharing it were told it succeeded.
func TestReloadPanicRefused(t *testing.T) {
	for _, tc := range []struct {
		name string
		load func(path string) (*config.Config, error)
	}{
		{"in the load", func(string) (*config.Config, error) { panic("a bug in the load") }},
		{"in the build", func(path string) (*config.Config, error) {
			cfg, err := config.LoadAgain(path)
			if err != nil {
				return nil, err
			}
			// A candidate format of nil, as no load leaves it: the parser's build panics.
			cfg.Rules[1].Candidates, cfg.Rules[1].Variants = []*logformat.Format{nil}, []*config.Rule{nil}
			return cfg, nil
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "rules.yaml")
			writeRules(t, path, "rules:\n  - {name: r, match: x}\n")
			p := startRuleFile(t, path)
			writeRules(t, path, "rules:\n  - {name: r, match: x}\n  - {name: other, match: y}\n")
			p.loadAgain = tc.load

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
			// The locks were let go: the next reload runs, and applies.
			p.loadAgain = config.LoadAgain
			if err := p.ReloadFile(); err != nil {
				t.Fatalf("the next reload: %v", err)
			}
			if rules := p.Config().Rules; len(rules) != 2 || !p.reloadStats().Successful {
				t.Errorf("after the next reload: %d rules, successful %v; want 2, true", len(rules), p.reloadStats().Successful)
			}
		})
	}
}
