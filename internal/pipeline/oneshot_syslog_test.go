package pipeline

import (
	"bytes"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/logwindow/logwindow_exporter/config"
	"github.com/logwindow/logwindow_exporter/internal/input/syslog/syslogtest"
)

// The rule file of the chart's syslog and sidecar modes has one input, a socket, whose
// log format the rules read: a sample of nginx's access log given to a one-shot is read
// as that input's datagrams, a line each (a header stripped as the input strips it, its
// hostname and tag captures; a line without one whole), so that the rules can be tested
// against it as a file input's can, not fail as a file no input reads.
func TestOneShotsReadAFileAsTheSyslogInputs(t *testing.T) {
	dir := t.TempDir()
	const access = `10.0.0.1 - - [01/Mar/2024:12:00:00 +0000] "GET / HTTP/1.1" 503 5 "-" "curl/8.5.0"`
	file := filepath.Join(dir, "access.log")
	text := access + "\n" + "<190>Mar  1 12:00:01 web-1 nginx: " + access + "\n"
	if err := os.WriteFile(file, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Parse([]byte(`
inputs:
  - name: nginx
    syslog: udp://127.0.0.1:5140
    log_format: auto
rules:
  - {name: requests, labels: {status: '${status}', host: '${syslog_hostname}'}}
`), "rules.yaml")
	if err != nil {
		t.Fatal(err)
	}
	want := "input nginx: 2 of 2 lines fit\n"
	run := func(t *testing.T, mode string, f func(opts Options) error) string {
		t.Helper()
		var summary, logs bytes.Buffer
		if err := f(Options{Now: time.Now, Summary: &summary, Logger: slog.New(slog.NewTextHandler(&logs, nil))}); err != nil {
			t.Errorf("%s: %v", mode, err)
		}
		if summary.String() != want {
			t.Errorf("%s: summary %q, want %q", mode, summary.String(), want)
		}
		if strings.Contains(logs.String(), "no input reads") {
			t.Errorf("%s: logged %s", mode, logs.String())
		}
		return summary.String()
	}
	var out strings.Builder
	run(t, "replay", func(opts Options) error { return Replay(cfg, []string{file}, opts, &out) })
	for _, line := range []string{`requests_total{host="",status="503"} 1`, `requests_total{host="web-1",status="503"} 1`} {
		if !strings.Contains(out.String(), line+"\n") {
			t.Errorf("replay lacks %s:\n%s", line, out.String())
		}
	}
	run(t, "sample", func(opts Options) error { return Sample(cfg, []string{file}, opts) })
	run(t, "explain", func(opts Options) error {
		lines, err := explainAll(cfg, file, 10, opts)
		if len(lines) != 2 || !lines[0].Counted || !lines[1].Counted || lines[1].Text != access {
			t.Errorf("explain: %+v; want both lines counted, the second by its message", lines)
		}
		return err
	})
}

// A file given with a config of several socket inputs is no one input's: it fails as a
// file no input reads, naming them, and saying when a file is a socket input's.
func TestOneShotFileOfSeveralSyslogInputs(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "access.log")
	if err := os.WriteFile(file, []byte("GET / 200\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Parse(fmt.Appendf(nil, `
inputs:
  - {name: a, syslog: udp://127.0.0.1:5140}
  - {name: b, syslog: 'unixgram://%s/b.sock'}
rules:
  - {name: requests, match: ' (?P<status>\d{3})$', labels: {status: '${status}'}, inputs: [a, b]}
`, dir), "rules.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	err = Replay(cfg, []string{file}, Options{Now: time.Now, Summary: &bytes.Buffer{}}, &out)
	if err == nil || !strings.Contains(err.Error(), "no input reads this file") {
		t.Fatalf("replay: %v; want the file refused as no input's", err)
	}
	for _, want := range []string{"a: udp://127.0.0.1:5140", "b: unixgram://" + dir + "/b.sock", "the configuration's one input"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("replay: %v; want it to say %q", err, want)
		}
	}
}

// A syslog input passes over a blank datagram (no bytes, or only blanks, line ends and
// NULs: a keepalive) and reads no line of it; the one-shots read a file of the input's
// lines as its datagrams, and so pass over a blank line. They counted it as an unmatched
// line: a sample of a socket's traffic with keepalives in it fitted less than it does.
// The same lines are sent to the running input as datagrams and given to the one-shots
// as a file, and read alike.
func TestSyslogOneShotsPassOverBlankLinesAsTheInput(t *testing.T) {
	lines := []string{
		"<190>Nov 24 05:28:09 vm nginx: GET / 200",
		"", " \t", "\x00", "\r",
		"<190>Nov 24 05:28:09 vm nginx: no status here",
	}
	p, _, sock, rules := startSyslog(t, `
inputs: [{name: nginx, syslog: 'unixgram://%s'}]
rules:
  - {name: requests, match: ' (?P<status>\d{3})$', labels: {status: '${status}'}}
`)
	syslogtest.Send(t, "unixgram", sock, lines...)
	live := waitRead(t, p, 2)
	cfg, err := config.Parse(rules, "rules.yaml")
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "sample.log")
	if err := os.WriteFile(file, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("input nginx: %d of %d lines fit (", live.LinesRead-live.Unmatched, live.LinesRead)
	for _, tc := range []struct {
		mode string
		run  func(opts Options) error
	}{
		{"replay", func(opts Options) error { return Replay(cfg, []string{file}, opts, io.Discard) }},
		{"sample", func(opts Options) error { return Sample(cfg, []string{file}, opts) }},
	} {
		t.Run(tc.mode, func(t *testing.T) {
			var summary bytes.Buffer
			if err := tc.run(Options{Now: time.Now, Summary: &summary}); err != nil {
				t.Fatal(err)
			}
			if !strings.HasPrefix(summary.String(), want) {
				t.Errorf("summary %q; want it to begin %q, as the running input read the lines", summary.String(), want)
			}
		})
	}
}
