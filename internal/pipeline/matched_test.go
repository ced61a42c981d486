package pipeline

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/logwindow/logwindow_exporter/config"
)

// A scrape that lands while lines are being read shows neither more lines matched by a
// rule (logwindow_rule_matched_lines_total) than read by its input
// (logwindow_input_lines_total), nor a line read without its event (the rule's _total):
// the events of a read are written before its lines count as read, and the rule's
// matched lines are counted after them. Every line matches the rule, so that a rule's
// count ahead of its input's shows at any scrape. The lines are written while the test
// scrapes over and over, for each way an input's lines are parsed (see
// TestOutcomesNeverAheadOfLinesRead); once every line is read, the counts agree.
func TestMatchedNeverAheadOfLinesRead(t *testing.T) {
	const perWrite = 50
	const cri = "2026-11-24T05:28:09.000000000Z stdout F "
	for _, tc := range []struct {
		name, input string
		// chunk is what one write appends, or the datagrams one send sends.
		chunk  []string
		writes int
	}{
		{"shards=1", "{path: LOG}", []string{"x matched\n"}, 400},
		{"shards=2", "{path: LOG, shards: 2}", []string{"x matched\n"}, 400},
		{"cri", "{path: LOG, wrapper: cri}", []string{cri + "x matched\n"}, 400},
		{"syslog", "{syslog: 'unixgram://SOCK'}", []string{"<13>Nov 24 05:28:09 vm app: x matched"}, 200},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			log, sock := filepath.Join(dir, "a.log"), filepath.Join(dir, "s.sock")
			if err := os.WriteFile(log, nil, 0o644); err != nil {
				t.Fatal(err)
			}
			rules := strings.NewReplacer("LOG", log, "SOCK", sock).Replace(fmt.Sprintf("inputs: [%s]\nrules: [{name: hits, match: '^x'}]\n", tc.input))
			cfg, err := config.Parse([]byte(rules), "rules.yaml")
			if err != nil {
				t.Fatal(err)
			}
			p, err := Start(cfg, Options{Now: time.Now, PollInterval: 10 * time.Millisecond})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(p.Stop)
			var chunk strings.Builder
			for i := range perWrite {
				chunk.WriteString(tc.chunk[i%len(tc.chunk)])
			}
			failed := make(chan error, 1)
			go func() { failed <- write(log, sock, tc.input, tc.chunk, chunk.String(), tc.writes, perWrite) }()
			deadline := time.Now().Add(time.Minute)
			for scrapes := 0; ; scrapes++ {
				select {
				case err := <-failed:
					if err != nil {
						t.Fatal(err)
					}
				default:
				}
				s := gatherPipeline(t, p)
				read := sumOf(s, "logwindow_input_lines_total")
				matched, total := s[`logwindow_rule_matched_lines_total{rule="hits"}`], s[`hits_total{}`]
				if matched > read {
					t.Fatalf("scrape %d: %v lines read, but %v matched by the rule", scrapes, read, matched)
				}
				if total < read {
					t.Fatalf("scrape %d: %v lines read, but only %v counted in hits_total", scrapes, read, total)
				}
				dropped := sumOf(s, "logwindow_input_dropped_datagrams_total")
				if read+dropped == float64(tc.writes*perWrite) && matched == read && total == read {
					t.Logf("%d scrapes, %v datagrams dropped", scrapes, dropped)
					return
				}
				if time.Now().After(deadline) {
					t.Fatalf("%v of %d lines read (%v datagrams dropped), %v matched, %v in hits_total: want all", read, tc.writes*perWrite, dropped, matched, total)
				}
			}
		})
	}
}
