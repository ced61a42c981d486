package pipeline

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/logwindow/logwindow_exporter/internal/testutil/testclock"
	"github.com/logwindow/logwindow_exporter/parser"
)

// A line of another application's JSON log is told of as unread once: the running
// exporter counts each once and records its file among the unread ones at the MaxHeld-th,
// not before, and a one-shot of the same files counts as many as the running exporter
// did, past MaxHeld and past twice MaxHeld (a second caller of Session.Unread per line
// would double both).
func TestUnreadToldOnce(t *testing.T) {
	const (
		combined  = `10.0.0.1 - - [01/Mar/2024:12:00:00 +0000] "GET / HTTP/1.1" 200 5 "-" "curl/8.5.0"`
		karpenter = `{"level":"INFO","time":"2024-03-01T12:00:00.000Z","logger":"controller","message":"discovered instance types","count":700}`
	)
	clock := testclock.New(time.Date(2024, 3, 1, 12, 0, 0, 0, time.UTC))
	p, _, _, file := startPods(t, "log_format: auto", clock, "web", "karpenter")
	appendTo(t, file("web"), strings.Repeat(combined+"\n", 4))
	unreadFiles := func() []string {
		p.mu.Lock()
		defer p.mu.Unlock()
		var out []string
		for _, in := range p.inputs {
			if in.files != nil {
				out = append(out, in.files.UnreadFiles()...)
			}
		}
		return out
	}
	lines := 4
	for _, step := range []struct {
		add      int
		recorded bool
	}{{parser.MaxHeld / 2, false}, {parser.MaxHeld/2 - 1, false}, {1, true}, {2*parser.MaxHeld + 3, true}} {
		appendTo(t, file("karpenter"), strings.Repeat(karpenter+"\n", step.add))
		lines += step.add
		waitTotal(t, p, "read", "logwindow_input_lines_total", float64(lines))
		unread := lines - 4
		// A line is counted when its parse is done: those held once the format is chosen.
		waitTotal(t, p, "unread", "logwindow_input_unread_lines_total", float64(unread))
		if st := p.inputStats(); st[0].Unread != uint64(unread) || st[0].Unmatched != 0 {
			t.Fatalf("after %d unread lines: input stats %+v, want %d unread, none unmatched", unread, st[0], unread)
		}
		if got := slices.Contains(unreadFiles(), file("karpenter")); got != step.recorded {
			t.Errorf("after %d unread lines: the file recorded as unread: %v, want %v", unread, got, step.recorded)
		}
	}
	var summary bytes.Buffer
	if err := Sample(p.gen.Load().cfg, []string{file("web"), file("karpenter")}, Options{Now: clock.Now, Summary: &summary}); err != nil {
		t.Error(err)
	}
	if want := fmt.Sprintf("input pods: 4 of %d lines fit (%d lines unread: ", lines, lines-4); !strings.HasPrefix(summary.String(), want) {
		t.Errorf("sample: summary %q, want it to start %q", summary.String(), want)
	}
}
