package pipeline

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/logwindow/logwindow_exporter/internal/selfmetric"
	"github.com/logwindow/logwindow_exporter/internal/testutil/await"
)

// A scrape that lands while lines are being read never shows more lines counted by what
// became of them (unmatched, malformed, unread; a socket's malformed datagrams) than the
// input's lines read: those are counted once the read's or batch's events are written,
// and the outcomes no earlier; nor, of a socket, more lines read (and datagrams dropped
// at its queue) than datagrams received, which are loaded after the lines. The lines are
// written or sent while the test scrapes over and over, for each way an input's lines
// are parsed: a read's lines at once (one shard), by a worker (two), one by one (a CRI
// wrapper, whose lines that are not CRI lines are malformed), and a socket's datagrams
// (those without a priority malformed). Every line
// is unmatched or malformed, and every datagram malformed, so that an outcome counted
// ahead of its line shows at any look, not only before the first read is counted; once
// every line is read, the outcomes come to as many: none is lost.
func TestOutcomesNeverAheadOfLinesRead(t *testing.T) {
	const perWrite = 50
	const cri = "2026-11-24T05:28:09.000000000Z stdout F "
	for _, tc := range []writeCase{
		{"shards=1", "{path: LOG}", []string{"y unmatched\n"}, 1000},
		{"shards=2", "{path: LOG, shards: 2}", []string{"y unmatched\n"}, 1000},
		{"cri", "{path: LOG, wrapper: cri}", []string{cri + "y unmatched\n", "not a CRI line\n"}, 1000},
		{"syslog", "{syslog: 'unixgram://SOCK'}", []string{"no priority", "<13 not one either"}, 300},
	} {
		t.Run(tc.name, func(t *testing.T) {
			scrapeWhileWriting(t, tc, "{name: lines, match: '^x'}", perWrite, func(p *Pipeline, checks int) (string, bool) {
				// The counters as a scrape reads them (Collector: inputStats), without the
				// rest of a scrape's work, so that many looks land within reads.
				s := p.inputStats()[0]
				read := s.LinesRead
				outcomes := s.Unmatched + s.MalformedLines + s.Unread
				if outcomes > read {
					t.Fatalf("look %d: %d lines read, but %d unmatched, malformed or unread (%+v)", checks, read, outcomes, s)
				}
				// A datagram the listener's queue had no room for is no line (counted); a file
				// input's lines are checked against themselves as datagrams received.
				var dropped, queued uint64
				received := read
				malformedDatagrams := read // what a file input's lines are checked against
				for _, c := range s.Counters {
					if c.Name == selfmetric.InputMalformedDatagrams.Name {
						if malformedDatagrams = c.Value; c.Value > read {
							t.Fatalf("look %d: %d lines read, but %d malformed datagrams", checks, read, c.Value)
						}
					}
					if c.Name == selfmetric.InputDroppedDatagrams.Name {
						dropped += c.Value
						if c.LabelValue == "queue" {
							queued = c.Value
						}
					}
					if c.Name == selfmetric.InputDatagrams.Name {
						received = c.Value
					}
				}
				if received < read+queued {
					t.Fatalf("look %d: %d lines read and %d datagrams dropped at the queue, but %d received", checks, read, queued, received)
				}
				return fmt.Sprintf("%d of %d lines read (%d datagrams dropped), %d of them unmatched, malformed or unread and %d malformed datagrams", read, tc.writes*perWrite, dropped, outcomes, malformedDatagrams),
					read+dropped == uint64(tc.writes*perWrite) && outcomes == read && malformedDatagrams == read
			})
		})
	}
}

// writeCase is an input that scrapeWhileWriting writes to while it looks at the counts.
type writeCase struct {
	// input is the input's config: LOG and SOCK in it stand for a file and a socket of
	// the test's own.
	name, input string
	// chunk is what one write appends, or the datagrams one send sends.
	chunk []string
	// writes is how many: a datagram is one write, a few microseconds.
	writes int
}

// scrapeWhileWriting starts a pipeline on tc's input with one rule (its YAML), and appends or sends perWrite lines or datagrams (taken from tc.chunk in turn)
// tc.writes times while it calls look over and over, as a scrape lands at any point of
// a read. look fails the test where an invariant does not hold, and says how far the
// counts are and whether every line is counted; a wait for that which reaches
// await.Deadline fails the test.
func scrapeWhileWriting(t *testing.T, tc writeCase, rule string, perWrite int, look func(p *Pipeline, n int) (progress string, done bool)) {
	t.Helper()
	dir := t.TempDir()
	log, sock := filepath.Join(dir, "a.log"), filepath.Join(dir, "s.sock")
	if err := os.WriteFile(log, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	rules := strings.NewReplacer("LOG", log, "SOCK", sock).Replace(fmt.Sprintf("inputs: [%s]\nrules: [%s]\n", tc.input, rule))
	p := startRules(t, []byte(rules), Options{Now: time.Now, PollInterval: 10 * time.Millisecond})
	var text strings.Builder
	for i := range perWrite {
		text.WriteString(tc.chunk[i%len(tc.chunk)])
	}
	failed := make(chan error, 1)
	go func() { failed <- write(log, sock, tc.input, tc.chunk, text.String(), tc.writes, perWrite) }()
	deadline := await.Deadline(t)
	for n := 0; ; n++ {
		select {
		case err := <-failed:
			if err != nil {
				t.Fatal(err)
			}
		default:
		}
		progress, done := look(p, n)
		if done {
			t.Logf("%d looks: %s", n, progress)
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: want all", progress)
		}
	}
}

// write appends chunk to log writes times, or, for a syslog input, sends the datagrams of
// one chunk (perWrite of them, taken from datagrams in turn) to sock writes times.
func write(log, sock, input string, datagrams []string, chunk string, writes, perWrite int) error {
	if !strings.Contains(input, "syslog") {
		for range writes {
			if err := appendText(log, chunk); err != nil {
				return err
			}
		}
		return nil
	}
	c, err := net.Dial("unixgram", sock)
	if err != nil {
		return err
	}
	defer c.Close()
	for range writes {
		for i := range perWrite {
			if _, err := c.Write([]byte(datagrams[i%len(datagrams)])); err != nil {
				return err
			}
		}
	}
	return nil
}
