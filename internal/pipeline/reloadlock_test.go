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
	cfg, err := config.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	p, err := Start(cfg, Options{Now: time.Now, PollInterval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Stop)

	// Thousands of rules, and one mistake at the end: loaded whole, then refused.
	var big strings.Builder
	big.WriteString("rules:\n")
	for i := range 3000 {
		fmt.Fprintf(&big, "  - {name: r%d, match: '(?P<s>\\d+) (?P<m>[A-Z]+)', labels: {s: '${s}', m: '${m}'}, windows: [1m, 5m, 1h]}\n", i)
	}
	big.WriteString("  - {name: bad, match: '('}\n")
	if err := os.WriteFile(path, []byte(big.String()), 0o644); err != nil {
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
