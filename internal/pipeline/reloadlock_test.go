package pipeline

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/logwindow/logwindow_exporter/config"
)

// TestReloadLoadsWithoutTheLock: a reload reads and checks the rule file before it takes
// the lock that every scrape (the reload and input self-metrics), /-/ready and the status
// page wait on: a file of thousands of rules takes seconds to load, and those waited for
// all of it, a scrape past its timeout, though the file was then refused and nothing
// changed. Reloads still apply one at a time, in the order they read the file.
func TestReloadLoadsWithoutTheLock(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "rules.yaml")
	good := "rules:\n  - {name: r, match: x}\n"
	if err := os.WriteFile(path, []byte(good), 0o644); err != nil {
		t.Fatal(err)
	}
	p := startRuleFile(t, path)

	// Thousands of rules, and one mistake at the end: loaded whole, then refused.
	big := manyRules("r") + "  - {name: bad, match: '('}\n"
	if err := os.WriteFile(path, []byte(big), 0o644); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if _, err := config.Load(path); err == nil {
		t.Fatal("the big file loaded")
	}
	load := time.Since(start)

	var longest atomic.Int64
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := p.ReloadFile(); err == nil {
			t.Error("the reload of the big file applied")
		}
	}()
	for waiting := true; waiting; {
		select {
		case <-done:
			waiting = false
		default:
			begin := time.Now()
			_ = p.ReloadError()
			_ = p.Ready()
			longest.Store(max(longest.Load(), int64(time.Since(begin))))
			time.Sleep(time.Millisecond)
		}
	}
	if got := time.Duration(longest.Load()); got > load/2 {
		t.Errorf("a look at the pipeline waited %v during a reload; loading the file takes %v", got, load)
	}
	if p.Config().Rules[0].Name != "r" || len(p.Config().Rules) != 1 {
		t.Errorf("the refused reload changed the rules: %d", len(p.Config().Rules))
	}
}

// TestReloadsApplyInOrder: two reloads at once (SIGHUP and the watch of the file) apply
// the file in the order they read it, the later one last: a reload still loading an
// older content, read before the file was saved again, must not put it in force after
// the reload that read the new one. The first reload loads a file of thousands of rules,
// which takes a while; the file is saved again meanwhile and a second reload made. Had
// the first read the file after the save, both read the new one: no wrong order, and no
// false failure either.
func TestReloadsApplyInOrder(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "rules.yaml")
	save := func(text string) {
		t.Helper()
		tmp := filepath.Join(dir, "rules.yaml.tmp")
		if err := os.WriteFile(tmp, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, path); err != nil {
			t.Fatal(err)
		}
	}
	save("rules:\n  - {name: start, match: x}\n")
	p := startRuleFile(t, path)

	save(manyRules("old"))
	first := make(chan error, 1)
	go func() { first <- p.ReloadFile() }()
	time.Sleep(50 * time.Millisecond) // the first has read the file, and is loading it
	save("rules:\n  - {name: new, match: x}\n")
	if err := p.ReloadFile(); err != nil {
		t.Fatal(err)
	}
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	if rules := p.Config().Rules; len(rules) != 1 || rules[0].Name != "new" {
		t.Errorf("in force after both reloads: %d rules, the first %q; want the file saved last, rule new", len(rules), rules[0].Name)
	}
}

// startRuleFile starts a pipeline of the rule file at path, stopped at the test's end.
func startRuleFile(t *testing.T, path string) *Pipeline {
	t.Helper()
	cfg, err := config.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	p, err := Start(cfg, Options{Now: time.Now, PollInterval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Stop)
	return p
}

// manyRules is a rule file of thousands of rules named name and a number, each with a
// regular expression, labels and windows: seconds to load.
func manyRules(name string) string {
	var b strings.Builder
	b.WriteString("rules:\n")
	for i := range 3000 {
		fmt.Fprintf(&b, "  - {name: %s%d, match: '(?P<s>\\d+) (?P<m>[A-Z]+)', labels: {s: '${s}', m: '${m}'}, windows: [1m, 5m, 1h]}\n", name, i)
	}
	return b.String()
}
