package pipeline

import (
	"fmt"
	"testing"
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
	for _, tc := range []writeCase{
		{"shards=1", "{path: LOG}", []string{"x matched\n"}, 400},
		{"shards=2", "{path: LOG, shards: 2}", []string{"x matched\n"}, 400},
		{"cri", "{path: LOG, wrapper: cri}", []string{cri + "x matched\n"}, 400},
		{"syslog", "{syslog: 'unixgram://SOCK'}", []string{"<13>Nov 24 05:28:09 vm app: x matched"}, 200},
	} {
		t.Run(tc.name, func(t *testing.T) {
			scrapeWhileWriting(t, tc, "hits", perWrite, func(p *Pipeline, scrapes int) (string, bool) {
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
				return fmt.Sprintf("%v of %d lines read (%v datagrams dropped), %v matched, %v in hits_total", read, tc.writes*perWrite, dropped, matched, total),
					read+dropped == float64(tc.writes*perWrite) && matched == read && total == read
			})
		})
	}
}
