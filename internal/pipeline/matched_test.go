package pipeline

import (
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/logwindow/logwindow_exporter/parser/event"
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
			scrapeWhileWriting(t, tc, "{name: hits, match: '^x'}", perWrite, func(p *Pipeline, scrapes int) (string, bool) {
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

// A scrape that lands while lines are being read shows neither more lines matched or
// dropped by a rule (logwindow_rule_matched_lines_total and the parser's reasons and
// too_large of logwindow_rule_dropped_lines_total) than read by its input, nor more of
// its matched lines late or future than matched: a rule's drops are counted with its
// matched lines, after the lines count as read, and its late and future lines after the
// matched lines they are of. Every line matches the rule, whose time is ahead of the
// clock (future), long past (late), or not a time (bad_timestamp), so that a count ahead
// of another shows at any scrape.
func TestDroppedNeverAheadOfLinesRead(t *testing.T) {
	const perWrite = 50
	const cri = "2026-11-24T05:28:09.000000000Z stdout F "
	const syslog = "<13>Nov 24 05:28:09 vm app: "
	lines := []string{"x 2099-01-01 00:00:00", "x 2000-01-01 00:00:00", "x not a time"}
	with := func(prefix, suffix string) []string {
		out := make([]string, len(lines))
		for i, l := range lines {
			out[i] = prefix + l + suffix
		}
		return out
	}
	const rule = "{name: hits, match: '^x (?P<t>.*)', timestamp: {capture: t, layout: '2006-01-02 15:04:05'}}"
	for _, tc := range []writeCase{
		{"shards=1", "{path: LOG}", with("", "\n"), 400},
		{"shards=2", "{path: LOG, shards: 2}", with("", "\n"), 400},
		{"cri", "{path: LOG, wrapper: cri}", with(cri, "\n"), 400},
		{"syslog", "{syslog: 'unixgram://SOCK'}", with(syslog, ""), 200},
	} {
		t.Run(tc.name, func(t *testing.T) {
			scrapeWhileWriting(t, tc, rule, perWrite, func(p *Pipeline, scrapes int) (string, bool) {
				s := gatherPipeline(t, p)
				read := sumOf(s, "logwindow_input_lines_total")
				matched := s[`logwindow_rule_matched_lines_total{rule="hits"}`]
				drop := func(reason string) float64 {
					return s[`logwindow_rule_dropped_lines_total{reason="`+reason+`",rule="hits"}`]
				}
				// The reasons of lines that are not matched lines: all but late and future.
				notMatched := sumOf(s, "logwindow_rule_dropped_lines_total") - drop("late") - drop("future")
				if matched+notMatched > read {
					t.Fatalf("scrape %d: %v lines read, but %v matched and %v dropped by the rule", scrapes, read, matched, notMatched)
				}
				if drop("late")+drop("future") > matched {
					t.Fatalf("scrape %d: %v lines matched, but %v late and %v future", scrapes, matched, drop("late"), drop("future"))
				}
				dropped := sumOf(s, "logwindow_input_dropped_datagrams_total")
				return fmt.Sprintf("%v of %d lines read (%v datagrams dropped), %v matched (%v late, %v future), %v dropped", read, tc.writes*perWrite, dropped, matched, drop("late"), drop("future"), notMatched),
					read+dropped == float64(tc.writes*perWrite) && matched+notMatched == read && drop("late")+drop("future") == matched && drop("bad_timestamp") > 0
			})
		})
	}
}

// TestBindingsDeferCounts: every binding an input's lines are parsed with, the reading
// goroutine's and a parse worker's, of a file or of a socket, counts the lines its rules
// matched or dropped only when the input publishes them (stream.publish), once the lines
// count as read, and not when their events are written (Flush), as a plain batching sink
// (store.NewBatchSink) would. TestMatchedNeverAheadOfLinesRead and
// TestDroppedNeverAheadOfLinesRead find such a sink only when a scrape lands between a
// flush and the lines counted as read; this finds it every time.
func TestBindingsDeferCounts(t *testing.T) {
	for _, tc := range []struct{ name, input string }{
		{"file", "{path: LOG}"},
		{"shards", "{path: LOG, shards: 2}"},
		{"cri", "{path: LOG, wrapper: cri}"},
		{"syslog", "{syslog: 'unixgram://SOCK'}"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			// Nothing is written to the file nor sent to the socket: the test's lines
			// are the only ones the bindings see.
			rules := strings.NewReplacer("LOG", filepath.Join(dir, "a.log"), "SOCK", filepath.Join(dir, "s.sock")).Replace(
				"inputs: [" + tc.input + "]\nrules: [{name: hits, match: '^x(?P<v>.*)', value: v}]\n")
			p := startRules(t, []byte(rules), Options{Now: time.Now})
			p.mu.Lock()
			ins := slices.Collect(maps.Values(p.inputs))
			p.mu.Unlock()
			if len(ins) != 1 {
				t.Fatalf("%d inputs running, want 1", len(ins))
			}
			in := ins[0]
			var worker atomic.Pointer[binding]
			for _, slot := range []struct {
				name string
				at   *atomic.Pointer[binding]
			}{{"reading goroutine", &in.bound}, {"worker", &worker}} {
				b := in.bindTo(p, slot.at)
				rule := b.gen.set.Rule(0)
				counts := func() [2]uint64 { return [2]uint64{rule.Matched(), rule.Drops().Parser[event.NoValue]} }
				before := counts()
				for _, line := range []string{"x1", "x"} { // matched, dropped: no value
					b.parse.ParseFile("", b.name, []byte(line), nil, b.sink, b.done)
				}
				b.sink.Flush()
				if got := counts(); got != before {
					t.Errorf("%s: matched and dropped %v once the events are written, want %v until the lines count as read", slot.name, got, before)
				}
				in.publish(b)
				if got, want := counts(), [2]uint64{before[0] + 1, before[1] + 1}; got != want {
					t.Errorf("%s: matched and dropped %v once published, want %v", slot.name, got, want)
				}
			}
		})
	}
}
