package pipeline

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/logwindow/logwindow_exporter/config"
	"github.com/logwindow/logwindow_exporter/internal/explain"
)

// --explain hands each line's explanation on as it is made: one is many times its line
// (every rule's captures), and explanations gathered before the first was written held
// gigabytes for a million lines. Nor are the lines kept for the passes over them: read
// again at each, they held 760 MB for a million nginx lines, three times the file. What
// is live when the first is handed on does not grow with the lines.
func TestExplainStreams(t *testing.T) {
	const line = `10.0.0.1 - - [01/Mar/2024:12:00:00 +0000] "GET /index.html HTTP/1.1" 200 512 "https://example.com/" "Mozilla/5.0 (X11; Linux x86_64)"`
	dir := t.TempDir()
	var rules strings.Builder
	for i := range 8 {
		fmt.Fprintf(&rules, "  - {name: r%d, labels: {status: '${status}'}}\n", i)
	}
	// heldAtFirst is the heap live when the first of n lines is handed on.
	heldAtFirst := func(n int) (uint64, int) {
		log := filepath.Join(dir, fmt.Sprintf("%d.log", n))
		if err := os.WriteFile(log, []byte(strings.Repeat(line+"\n", n)), 0o644); err != nil {
			t.Fatal(err)
		}
		cfg, err := config.Parse(fmt.Appendf(nil, "inputs: [{name: web, path: '%s', log_format: combined}]\nrules:\n%s", log, rules.String()), "rules.yaml")
		if err != nil {
			t.Fatal(err)
		}
		var held uint64
		lines := 0
		err = Explain(cfg, log, n, Options{Now: time.Now}, func(explain.Line) error {
			if lines++; lines == 1 {
				runtime.GC()
				var m runtime.MemStats
				runtime.ReadMemStats(&m)
				held = m.HeapAlloc
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		return held, lines
	}
	const few, many = 500, 4000
	heldFew, _ := heldAtFirst(few)
	heldMany, lines := heldAtFirst(many)
	if lines != many {
		t.Fatalf("%d lines explained, want %d", lines, many)
	}
	perLine := (int64(heldMany) - int64(heldFew)) / (many - few)
	t.Logf("%d bytes held per line", perLine)
	// The bound leaves room for the heap's noise between two runs; a line kept is more
	// than the line.
	if limit := int64(len(line) / 4); perLine > limit {
		t.Errorf("%d bytes held per line when the first is handed on, want at most %d (a quarter of the line)", perLine, limit)
	}
}
