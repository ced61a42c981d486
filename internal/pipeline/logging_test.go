package pipeline

import (
	"bytes"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf16"

	"github.com/logwindow/logwindow_exporter/config"
	"github.com/logwindow/logwindow_exporter/internal/storage"
	"github.com/logwindow/logwindow_exporter/internal/testutil/storetest"
	"github.com/logwindow/logwindow_exporter/internal/testutil/syncbuf"
	"github.com/logwindow/logwindow_exporter/internal/testutil/testclock"
	"github.com/logwindow/logwindow_exporter/parser"
)

// An input's log lines name it as its metrics and rules do: by its name, by its path when
// it has none; the file a line is about is its path.
func TestInputLogLinesNameTheInput(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"access.log", "other.log"} {
		if err := os.WriteFile(filepath.Join(dir, name), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cfg, err := config.Parse(fmt.Appendf(nil, `
inputs:
  - {name: web, path: '%[1]s/access.log'}
  - {path: '%[1]s/other.log'}
rules: [{name: lines, match: x}]
`, dir), "rules.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var log syncbuf.Buffer
	p, err := Start(cfg, Options{Now: time.Now, PollInterval: time.Hour, Logger: slog.New(slog.NewTextHandler(&log, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Stop)
	// Start opens the files there are before it returns.
	for _, want := range []string{
		fmt.Sprintf(`msg="following file" input=web path=%s/access.log offset=0`, dir),
		fmt.Sprintf(`msg="following file" input=%[1]s/other.log path=%[1]s/other.log offset=0`, dir),
	} {
		if !strings.Contains(log.String(), want) {
			t.Errorf("log lacks %s:\n%s", want, log.String())
		}
	}
}

// Every kind of input is named the same way in the log; a named syslog input also says
// its socket.
func TestInputLogger(t *testing.T) {
	cases := []struct {
		name string
		in   config.Input
		want string
	}{
		{"named file", config.Input{Name: "web", File: &config.FileInput{Path: "/var/log/nginx/*.log"}}, "input=web"},
		{"file", config.Input{File: &config.FileInput{Path: "/var/log/nginx/*.log"}}, `input=/var/log/nginx/*.log`},
		{"named syslog", config.Input{Name: "edge", Syslog: &config.SyslogInput{Address: "udp://127.0.0.1:5514"}}, "input=edge socket=udp://127.0.0.1:5514"},
		{"syslog", config.Input{Syslog: &config.SyslogInput{Address: "udp://127.0.0.1:5514"}}, "input=udp://127.0.0.1:5514"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var log bytes.Buffer
			p := &Pipeline{opts: Options{Logger: slog.New(slog.NewTextHandler(&log, nil))}}
			p.inputLogger(c.in, inputKinds[c.in.Kind()].sourceAttr).Info("x")
			if got := log.String(); !strings.HasSuffix(got, `msg=x `+c.want+"\n") {
				t.Errorf("got %q, want it to end with msg=x %s", got, c.want)
			}
		})
	}
}

// A reload that starts a glob's followers anew hands them the positions of those it
// stopped, a rotated file being finished among them: the log says the file was handed
// over at the reload, not that it went while the exporter was down.
func TestHandOverOfRotatedFileLogged(t *testing.T) {
	dir := t.TempDir()
	log := filepath.Join(dir, "access.log")
	if err := os.WriteFile(log, []byte("x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	rules := func(shards int) *config.Config {
		cfg, err := config.Parse(fmt.Appendf(nil, "inputs: [{path: '%s/*.log', start_at: beginning, shards: %d}]\nrules: [{name: lines, match: x}]\n", dir, shards), "rules.yaml")
		if err != nil {
			t.Fatal(err)
		}
		return cfg
	}
	var out syncbuf.Buffer
	// The rotated file stays open (its grace) until the reload stops its follower.
	p, err := Start(rules(1), Options{Now: time.Now, PollInterval: 10 * time.Millisecond, RotationGrace: time.Hour, Logger: slog.New(slog.NewTextHandler(&out, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Stop)
	waitTotal(t, p, "the line", "lines_total{", 1)
	if err := os.Rename(log, log+".1"); err != nil {
		t.Fatal(err)
	}
	waitTotal(t, p, "the rotation", "logwindow_input_rotations_total", 1)
	if err := p.Reload(rules(2)); err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf(`msg="file rotated away, handed over at a reload: reading it to its end from where the stopped follower left off" input=%s/*.log path=%s file=%s.1 offset=2`, dir, log, log)
	if !strings.Contains(out.String(), want) {
		t.Errorf("log lacks %s:\n%s", want, out.String())
	}
}

// A file rotated away and read to its end before a snapshot, gone at the restart (the
// kubelet compresses a container log's rotated file at its next rotation) lost no line
// known of: the log says it is gone at debug, not that lines written to it were lost. A
// snapshot of an earlier version, without the section of the drained files, does not
// tell: the file is said gone at debug, as maybe read to its end, not as lines lost. A
// snapshot that tells the file was not drained (it was at its path) says lines lost.
func TestDrainedFileGoneLogged(t *testing.T) {
	for _, c := range []struct {
		name      string
		earlier   bool // the snapshot lacks the section of the drained files
		atPath    bool // the file is removed from its path, not rotated away first
		wantLevel string
		wantSaid  string
	}{
		{"drained", false, false, "DEBUG", "the file of a saved position is gone, read to its end after it left its path before the snapshot (compressed or removed since)"},
		{"snapshot of an earlier version", true, false, "DEBUG", "the file of a saved position is gone; the snapshot, of an earlier version, does not say whether it was read to its end: lines written to it after the position may be lost"},
		{"not drained", false, true, "INFO", "the file of a saved position is gone: the lines written to it after the position are lost"},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir, store := t.TempDir(), t.TempDir()
			log := filepath.Join(dir, "access.log")
			if err := os.WriteFile(log, []byte("x\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			cfg, err := config.Parse(fmt.Appendf(nil, "inputs: [{path: '%s', start_at: beginning}]\nrules: [{name: lines, match: x}]\n", log), "rules.yaml")
			if err != nil {
				t.Fatal(err)
			}
			start := func(out *syncbuf.Buffer) *Pipeline {
				// The rotated file stays open (its grace) until the stop's snapshot.
				p, err := Start(cfg, Options{Now: time.Now, PollInterval: 10 * time.Millisecond, RotationGrace: time.Hour, StoragePath: store, Logger: slog.New(slog.NewTextHandler(out, &slog.HandlerOptions{Level: slog.LevelDebug}))})
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(p.Stop)
				return p
			}
			var first syncbuf.Buffer
			p := start(&first)
			waitTotal(t, p, "the line", "lines_total{", 1)
			gone := log
			if !c.atPath {
				gone = log + ".1"
				if err := os.Rename(log, gone); err != nil {
					t.Fatal(err)
				}
				waitTotal(t, p, "the rotation", "logwindow_input_rotations_total", 1)
			}
			p.Stop()
			if err := os.Remove(gone); err != nil {
				t.Fatal(err)
			}
			if c.earlier {
				rewriteSnapshot(t, store, func(w *storage.Writer, sec storage.Section) error {
					if sec.Name == sectionDrained {
						return nil
					}
					return storetest.CopySection(w, sec)
				})
			}
			var out syncbuf.Buffer
			start(&out)
			if lost := "the lines written to it after the position are lost"; !c.atPath && strings.Contains(out.String(), lost) {
				t.Errorf("log says %q of a file maybe read to its end:\n%s", lost, out.String())
			}
			if want := fmt.Sprintf(`level=%s msg=%q input=%s path=%s offset=2`, c.wantLevel, c.wantSaid, log, log); !strings.Contains(out.String(), want) {
				t.Errorf("log lacks %s:\n%s", want, out.String())
			}
		})
	}
}

// An input none of whose lines could be read as it says (here not CRI lines on a cri
// input) is logged: when it starts, again at most once an hour while it goes on, and anew
// after lines it could read ended it; a few lines are too few to tell, and lines partly
// readable are not it.
func TestUnreadableLinesLogged(t *testing.T) {
	const (
		good = `2024-03-01T12:00:00Z stdout F 10.0.0.1 - - [01/Mar/2024:12:00:00 +0000] "GET / HTTP/1.1" 200 5 "-" "curl/8.5.0"`
		bad  = `10.0.0.1 - - [01/Mar/2024:12:00:00 +0000] "GET / HTTP/1.1" 200 5 "-" "curl/8.5.0"` // not a CRI line
	)
	log := filepath.Join(t.TempDir(), "0.log")
	if err := os.WriteFile(log, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Parse(fmt.Appendf(nil, "inputs: [{name: pods, path: '%s', wrapper: cri, log_format: combined}]\nrules: [{name: requests, labels: {status: '${status}'}}]\n", log), "rules.yaml")
	if err != nil {
		t.Fatal(err)
	}
	clock := testclock.New(time.Date(2024, 3, 1, 12, 0, 0, 0, time.UTC))
	p, out := startLogged(t, cfg, clock.Now)
	const warning = "none of the lines the input read lately could be read as it says"
	read := 0
	for _, step := range []struct {
		name   string
		lines  []string
		after  time.Duration // the clock moves on by it first
		logged int           // warnings so far
	}{
		{"none of the format", repeat(bad, 20), 0, 1},
		{"nothing read since", nil, 0, 1},
		{"it goes on", repeat(bad, 20), 59 * time.Minute, 1},
		{"an hour later", repeat(bad, 20), time.Hour, 2},
		{"too few to tell", repeat(bad, unreadableMinLines-1), time.Hour, 2},
		{"enough again", repeat(bad, 20), 0, 3},
		{"partly of the format", append(repeat(bad, 15), good), 0, 3},
		{"anew", repeat(bad, 20), 0, 4},
		{"all of the format", repeat(good, 20), time.Hour, 4},
	} {
		clock.Add(step.after)
		if len(step.lines) > 0 {
			appendTo(t, log, strings.Join(step.lines, "\n")+"\n")
			read += len(step.lines)
			waitTotal(t, p, step.name, "logwindow_input_lines_total", float64(read))
		}
		p.warnUnreadable()
		if got := strings.Count(out.String(), warning); got != step.logged {
			t.Fatalf("%s: %d warnings, want %d:\n%s", step.name, got, step.logged, out.String())
		}
	}
	if want := `input=pods source=` + log + ` lines=20`; !strings.Contains(out.String(), want) {
		t.Errorf("the warning lacks %s:\n%s", want, out.String())
	}
}

// What --config.check warns of in a config that loads is logged at start and at every
// reload that has it, for an exporter started or reloaded without the check.
func TestConfigWarningsLogged(t *testing.T) {
	log := filepath.Join(t.TempDir(), "access.log")
	if err := os.WriteFile(log, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	rules := func(regex string) *config.Config {
		t.Helper()
		cfg, err := config.Parse(fmt.Appendf(nil, `inputs: [{path: '%s'}]
rules:
  - name: r
    match: '(?P<route>\S+)'
    labels: {route: '${route}'}
    rewrite: [{label: route, regex: '%s', replacement: '-'}]
`, log, regex), "rules.yaml")
		if err != nil {
			t.Fatal(err)
		}
		return cfg
	}
	const warning = `rules.yaml:6: warning: rule \"r\": rewrite of label \"route\": regex 'z*' can match empty text`
	var out syncbuf.Buffer
	p, err := Start(rules("z*"), Options{Now: time.Now, PollInterval: time.Hour, Logger: slog.New(slog.NewTextHandler(&out, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Stop)
	for _, step := range []struct {
		name   string
		regex  string
		logged int
	}{
		{"start", "", 1},
		{"reload without it", "z+", 1},
		{"reload with it", "z*", 2},
	} {
		if step.regex != "" {
			if err := p.Reload(rules(step.regex)); err != nil {
				t.Fatal(err)
			}
		}
		if got := strings.Count(out.String(), warning); got != step.logged {
			t.Errorf("%s: logged %d times, want %d:\n%s", step.name, got, step.logged, out.String())
		}
	}
}

// A series budget past the memory bound, which only the start knows, is logged at start
// and at every reload that has it, as --config.check prints it.
func TestBudgetPastBoundLogged(t *testing.T) {
	rules := func(budget int) *config.Config {
		t.Helper()
		cfg, err := config.Parse(fmt.Appendf(nil, "global: {max_series_per_rule: %d}\nrules: [{name: r, match: '(?P<a>x)', labels: {a: '${a}'}}]\n", budget), "rules.yaml")
		if err != nil {
			t.Fatal(err)
		}
		return cfg
	}
	const warning = `max_series_per_rule (1000000) series of rule \"r\" hold at least`
	var out syncbuf.Buffer
	p, err := Start(rules(1000000), Options{Now: time.Now, PollInterval: time.Hour, SeriesMaxBytes: 64 << 20, Logger: slog.New(slog.NewTextHandler(&out, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Stop)
	for _, step := range []struct {
		name   string
		budget int
		logged int
	}{
		{"start", 0, 1},
		{"reload within the bound", 1000, 1},
		{"reload past it", 1000000, 2},
	} {
		if step.budget != 0 {
			if err := p.Reload(rules(step.budget)); err != nil {
				t.Fatal(err)
			}
		}
		if got := strings.Count(out.String(), warning); got != step.logged {
			t.Errorf("%s: logged %d times, want %d:\n%s", step.name, got, step.logged, out.String())
		}
	}
}

// What an input's lines are not, for warnUnreadable: lines not of its log format (nor
// matched by another rule's regex), not CRI lines, not the JSON its fields rules read; but
// not lines that no rule counts because their filters leave them out, or because a regex
// rule of an input without a format matches rare lines.
func TestUnreadableInputs(t *testing.T) {
	const (
		combined = `10.0.0.1 - - [01/Mar/2024:12:00:00 +0000] "GET / HTTP/1.1" 200 5 "-" "curl/8.5.0"`
		json     = `{"status":200,"path":"/"}`
	)
	for _, tc := range []struct {
		name, input, rules, line string
		warned                   bool
	}{
		{"not of its log format", "log_format: combined", "[{name: r, labels: {status: '${status}'}}]", json, true},
		{"not CRI lines", "wrapper: cri, log_format: combined", "[{name: r, labels: {status: '${status}'}}]", combined, true},
		{"not JSON", "format: json", "[{name: r, inputs: [web], fields: {status: status}, labels: {status: '${status}'}}]", combined, true},
		{"not of its log format, but a regex rule's", "log_format: combined", "[{name: r, labels: {status: '${status}'}}, {name: any, match: status}]", json, false},
		{"of its format, filtered out", "log_format: combined", "[{name: r, labels: {status: '${status}'}, where: {status: '^5'}}]", combined, false},
		{"no format, a regex of rare lines", "", "[{name: errors, match: ERROR}]", combined, false},
		// CRI lines whose messages a regex of rare lines leaves are read as the input
		// says, though a line among them is not CRI's.
		{"no format, a regex of rare lines, CRI lines and not", "wrapper: cri", "[{name: errors, match: ERROR}]",
			"2024-03-01T12:00:00Z stdout F " + combined + "\n" + combined, false},
		// Lines that are no message (another stream's, a message's parts) are no line
		// that could be read.
		{"not of its log format, among another stream's lines", "wrapper: cri, streams: [stdout], log_format: combined", "[{name: r, labels: {status: '${status}'}}]",
			"2024-03-01T12:00:00Z stdout F " + json + "\n2024-03-01T12:00:00Z stderr F 2024/03/01 12:00:00 [error] 7#7: *1 open() failed", true},
		{"not of its log format, in parts", "wrapper: cri, log_format: combined", "[{name: r, labels: {status: '${status}'}}]",
			"2024-03-01T12:00:00Z stdout P " + json[:5] + "\n2024-03-01T12:00:00Z stdout F " + json[5:], true},
		{"of its log format, among another stream's lines", "wrapper: cri, streams: [stdout], log_format: combined", "[{name: r, labels: {status: '${status}'}}]",
			"2024-03-01T12:00:00Z stdout F " + combined + "\n2024-03-01T12:00:00Z stderr F 2024/03/01 12:00:00 [error] 7#7: *1 open() failed", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			log := filepath.Join(t.TempDir(), "0.log")
			if err := os.WriteFile(log, nil, 0o644); err != nil {
				t.Fatal(err)
			}
			input := fmt.Sprintf("{name: web, path: '%s'}", log)
			if tc.input != "" {
				input = fmt.Sprintf("{name: web, path: '%s', %s}", log, tc.input)
			}
			cfg, err := config.Parse([]byte("inputs: ["+input+"]\nrules: "+tc.rules+"\n"), "rules.yaml")
			if err != nil {
				t.Fatal(err)
			}
			p, out := startLogged(t, cfg, time.Now)
			text := strings.Repeat(tc.line+"\n", 20)
			appendTo(t, log, text)
			waitTotal(t, p, "every line", "logwindow_input_lines_total", float64(strings.Count(text, "\n")))
			p.warnUnreadable()
			if got := strings.Contains(out.String(), "none of the lines the input read lately"); got != tc.warned {
				t.Errorf("warned %v, want %v:\n%s", got, tc.warned, out.String())
			}
		})
	}
}

// An input without a log format none of whose lines since its rules were loaded any rule's
// regex matched is logged, once per load: too few lines are too few to tell, a regex that
// matched one line is one of rare lines, and a reload starts the count anew.
func TestUnmatchedRegexLogged(t *testing.T) {
	const (
		line  = `10.0.0.1 - - [01/Mar/2024:12:00:00 +0000] "GET / HTTP/1.1" 200 5 "-" "curl/8.5.0"`
		wrong = `" (?P<status>\d{3}) \d+ \d+` // one number too many after the status
		right = `" (?P<status>\d{3}) \d+`
	)
	dir := t.TempDir()
	log := filepath.Join(dir, "access.log")
	if err := os.WriteFile(log, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	rules := func(input, regex string) *config.Config {
		t.Helper()
		cfg, err := config.Parse(fmt.Appendf(nil, "inputs: [{name: web, path: '%s'%s}]\nrules: [{name: r, match: '%s', labels: {status: '${status}'}}]\n", log, input, regex), "rules.yaml")
		if err != nil {
			t.Fatal(err)
		}
		return cfg
	}
	clock := testclock.New(time.Date(2024, 3, 1, 12, 0, 0, 0, time.UTC))
	p, out := startLogged(t, rules("", wrong), clock.Now)
	const warning = "no rule's match regex matched any of the lines the input read since the rules were loaded"
	read := 0
	for _, step := range []struct {
		name          string
		input, regex  string // a reload to them first, when regex is set
		lines         []string
		logged        int // warnings so far
		unreadable    int // warnings of lines not of the input's format so far
		after         time.Duration
		checkNumLines bool
	}{
		{name: "too few to tell", lines: repeat(line, unmatchedMinLines-1)},
		{name: "enough", lines: repeat(line, 1), logged: 1, checkNumLines: true},
		{name: "once per load", lines: repeat(line, 3*unmatchedMinLines), logged: 1, after: 2 * time.Hour},
		{name: "a reload, still wrong", regex: wrong, lines: repeat(line, unmatchedMinLines), logged: 2},
		{name: "right", regex: right, lines: repeat(line, unmatchedMinLines), logged: 2},
		{name: "a regex of rare lines", regex: `(?P<status>ERROR)`, lines: append([]string{"ERROR x"}, repeat(line, 3*unmatchedMinLines)...), logged: 2},
		{name: "a log format given", input: ", log_format: upstreaminfo", regex: wrong, lines: repeat(line, unmatchedMinLines), logged: 2, unreadable: 1},
		{name: "and taken away", regex: wrong, lines: repeat(line, unmatchedMinLines-1), logged: 2, unreadable: 1},
		{name: "since the reload", lines: repeat(line, 1), logged: 3, unreadable: 1},
	} {
		clock.Add(step.after)
		if step.regex != "" {
			if err := p.Reload(rules(step.input, step.regex)); err != nil {
				t.Fatal(err)
			}
		}
		appendTo(t, log, strings.Join(step.lines, "\n")+"\n")
		read += len(step.lines)
		waitTotal(t, p, step.name, "logwindow_input_lines_total", float64(read))
		p.warnUnreadable()
		if got := strings.Count(out.String(), warning); got != step.logged {
			t.Fatalf("%s: %d warnings, want %d:\n%s", step.name, got, step.logged, out.String())
		}
		if got := strings.Count(out.String(), "none of the lines the input read lately"); got != step.unreadable {
			t.Fatalf("%s: %d warnings of unreadable lines, want %d:\n%s", step.name, got, step.unreadable, out.String())
		}
		if want := fmt.Sprintf("input=web source=%s lines=%d", log, unmatchedMinLines); step.checkNumLines && !strings.Contains(out.String(), want) {
			t.Errorf("%s: the warning lacks %s:\n%s", step.name, want, out.String())
		}
	}
}

// A file of an input with candidate log formats whose lines fit none of them is logged by
// its path, though the input's other files fit: once, and the files that come to fit none
// later at most once an hour, each named once.
func TestFilesOfNoFormatLogged(t *testing.T) {
	const (
		combined = `10.0.0.1 - - [01/Mar/2024:12:00:00 +0000] "GET / HTTP/1.1" 200 5 "-" "curl/8.5.0"`
		plain    = `12:00:00 INFO served / in 5ms`
	)
	clock := testclock.New(time.Date(2024, 3, 1, 12, 0, 0, 0, time.UTC))
	p, out, dir, file := startPods(t, "log_format: auto", clock, "web", "app", "worker")
	const warning = "files of the input whose lines fit none of its log formats"
	read := 0
	for _, step := range []struct {
		name   string
		pod    string
		line   string
		n      int
		after  time.Duration
		logged []string // the file each warning so far names first
	}{
		{"of a format", "web", combined, 20, 0, nil},
		{"of none, too few to tell", "app", plain, parser.MaxHeld - 1, 0, nil},
		{"of none", "app", plain, 1, 0, []string{"app"}},
		{"goes on", "app", plain, 2 * parser.MaxHeld, 0, []string{"app"}},
		{"another, within the hour", "worker", plain, parser.MaxHeld, 59 * time.Minute, []string{"app"}},
		{"an hour later", "web", combined, 1, time.Hour, []string{"app", "worker"}},
	} {
		clock.Add(step.after)
		appendTo(t, file(step.pod), strings.Repeat(step.line+"\n", step.n))
		read += step.n
		waitTotal(t, p, step.name, "logwindow_input_lines_total", float64(read))
		p.warnUnreadable()
		var logged []string
		for _, l := range strings.Split(out.String(), "\n") {
			if strings.Contains(l, warning) {
				_, e, _ := strings.Cut(l, " example=")
				logged = append(logged, filepath.Base(filepath.Dir(e)))
			}
		}
		if !slices.Equal(logged, step.logged) {
			t.Fatalf("%s: warnings name %q, want %q:\n%s", step.name, logged, step.logged, out.String())
		}
	}
	if st := p.inputStats(); len(st) != 1 || st[0].Formats[parser.NoFormat] != 2 || st[0].Formats["combined"] != 1 {
		t.Errorf("input stats %+v, want two files of no format and one combined", st)
	}
	if want := fmt.Sprintf("input=pods source=%s/*/*.log files=1 example=%s", dir, file("worker")); !strings.Contains(out.String(), want) {
		t.Errorf("the warning lacks %s:\n%s", want, out.String())
	}
}

// A path_captures regex that does not match the path of a file the input reads (written
// for /var/log/pods while the node's logs are mounted elsewhere) leaves its captures
// empty on every line of the file: it is logged at warning once per load, naming the file
// and the regex, not left to series of empty labels.
func TestPathCapturesMissLogged(t *testing.T) {
	const miss = "path_captures does not match the path of a file the input reads"
	for _, tc := range []struct {
		name, re string
		logged   int
	}{
		{"matches", `/(?P<pod>[^/]+)/0\.log$`, 0},
		{"matches none", `^/var/log/pods/(?P<pod>[^/]+)/`, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			for _, pod := range []string{"web", "app"} {
				if err := os.MkdirAll(filepath.Join(dir, pod), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(dir, pod, "0.log"), []byte("GET 200\nGET 404\n"), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			cfg, err := config.Parse(fmt.Appendf(nil, "inputs: [{name: pods, path: '%s/*/*.log', start_at: beginning, path_captures: '%s'}]\nrules: [{name: requests, match: 'GET (?P<status>\\d+)', labels: {pod: '${pod}', status: '${status}'}}]\n", dir, tc.re), "rules.yaml")
			if err != nil {
				t.Fatal(err)
			}
			p, out := startLogged(t, cfg, time.Now)
			waitTotal(t, p, "read", "logwindow_input_lines_total", 4)
			if got := strings.Count(out.String(), miss); got != tc.logged {
				t.Errorf("%d warnings, want %d:\n%s", got, tc.logged, out.String())
			}
			if tc.logged > 0 && !strings.Contains(out.String(), fmt.Sprintf("path_captures=%s", tc.re)) {
				t.Errorf("the warning does not name the regex:\n%s", out.String())
			}
		})
	}
}

// A file of a glob of one log format none of whose first MaxHeld lines fits it (a pod of
// another image, under a glob over all of them) is told of as a file of candidate formats
// that fit none is: counted under "(none)" and logged by its path, though the input's
// other files fit, until a line of it fits. Its lines count as unmatched, as they did.
func TestGlobFileOfNotItsFormatLogged(t *testing.T) {
	const (
		combined = `10.0.0.1 - - [01/Mar/2024:12:00:00 +0000] "GET / HTTP/1.1" 200 5 "-" "curl/8.5.0"`
		plain    = `12:00:00 INFO served / in 5ms`
	)
	clock := testclock.New(time.Date(2024, 3, 1, 12, 0, 0, 0, time.UTC))
	p, out, dir, file := startPods(t, "log_format: combined", clock, "web", "app", "short")
	const warning = "files of the input whose lines fit none of its log formats"
	read := 0
	for _, step := range []struct {
		name string
		pod  string
		line string
		n    int
		none int
	}{
		{"of its format", "web", combined, 20, 0},
		{"a few lines of another", "short", plain, parser.MaxHeld - 1, 0},
		{"another's first lines", "app", plain, parser.MaxHeld, 1},
		{"it goes on", "app", plain, 5, 1},
		{"a misfit after lines that fit", "web", plain, parser.MaxHeld, 1},
		{"a line of its format at last", "app", combined, 1, 0},
	} {
		appendTo(t, file(step.pod), strings.Repeat(step.line+"\n", step.n))
		read += step.n
		waitTotal(t, p, step.name, "logwindow_input_lines_total", float64(read))
		if st := p.inputStats(); len(st) != 1 || st[0].Formats[parser.NoFormat] != step.none {
			t.Errorf("%s: input stats %+v, want %d files of no format", step.name, st, step.none)
		}
		if step.none > 0 {
			p.warnUnreadable()
		}
	}
	if got := strings.Count(out.String(), warning); got != 1 {
		t.Errorf("%d warnings, want 1:\n%s", got, out.String())
	}
	if want := fmt.Sprintf("input=pods source=%s/*/*.log files=1 example=%s", dir, file("app")); !strings.Contains(out.String(), want) {
		t.Errorf("the warning lacks %s:\n%s", want, out.String())
	}
	if st := p.inputStats(); st[0].Unmatched != uint64(parser.MaxHeld-1+parser.MaxHeld+5+parser.MaxHeld) {
		t.Errorf("%d lines unmatched, want every line of another format", st[0].Unmatched)
	}
}

// A file of a glob of one log format that writes fewer than MaxHeld lines, none of them
// of the format (a pod of another image that logged a few JSON lines), then goes quiet is
// told of as one of MaxHeld such lines is, as a short file of candidate formats is: after
// heldQuiet it counts under "(none)" and is logged by its path, until a line of it fits.
// An nginx image's start-up lines alone (a pod that served no request yet) are not so
// settled; with a line of another kind amid them, they are.
func TestShortGlobFileOfNotItsFormatSettles(t *testing.T) {
	const (
		combined = `2026-11-29T12:00:00.1Z stdout F 10.0.0.1 - - [29/Nov/2026:12:00:00 +0000] "GET / HTTP/1.1" 200 5 "-" "curl/8.5.0"`
		object   = `2026-11-29T12:00:00.1Z stdout F {"level":"info","msg":"served /","ms":5}`
		other    = `2026-11-29T12:00:00.2Z stdout F 40-warm-cache.sh: warming /var/cache/nginx`
	)
	startup, err := os.ReadFile(filepath.Join("testdata", "startup", "nginx.txt"))
	if err != nil {
		t.Fatal(err)
	}
	pods := []struct{ pod, text string }{
		{"web", strings.Repeat(combined+"\n", 3)},
		{"app", strings.Repeat(object+"\n", 5)},
		{"nginx", string(startup)},
		{"custom", string(startup) + other + "\n"},
	}
	lines := 0
	for _, pod := range pods {
		lines += strings.Count(pod.text, "\n")
	}
	clock := testclock.New(time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC))
	p, out, dir, file := startPods(t, "wrapper: cri, streams: [stdout], log_format: combined", clock, podNames(pods)...)
	const warning = "files of the input whose lines fit none of its log formats"
	for _, pod := range pods {
		appendTo(t, file(pod.pod), pod.text)
	}
	waitTotal(t, p, "read", "logwindow_input_lines_total", float64(lines))
	clock.Add(heldQuiet - time.Second)
	// The reader polls every 10 ms: a settling due now would be done by the next lines.
	appendTo(t, file("web"), combined+"\n")
	waitTotal(t, p, "before the quiet period", "logwindow_input_lines_total", float64(lines+1))
	p.warnUnreadable()
	if st := p.inputStats(); len(st) != 1 || st[0].Formats[parser.NoFormat] != 0 || strings.Contains(out.String(), warning) {
		t.Fatalf("before the quiet period: input stats %+v, want no file of no format yet:\n%s", st, out.String())
	}
	clock.Add(time.Second)
	waitTotal(t, p, "settled", "logwindow_input_file_format", 2)
	// The reader settles every quiet file at once: by a line after, it is done.
	appendTo(t, file("web"), combined+"\n")
	waitTotal(t, p, "a line after settling", "logwindow_input_lines_total", float64(lines+2))
	p.warnUnreadable()
	if got := judgedNoFormat(p); !slices.Equal(got, []string{file("app"), file("custom")}) {
		t.Errorf("settled: files of no format %q, want the app's and the custom one's", got)
	}
	if want := fmt.Sprintf("input=pods source=%s/*/*.log files=2 example=%s", dir, file("app")); !strings.Contains(out.String(), want) {
		t.Errorf("the warning lacks %s:\n%s", want, out.String())
	}
	appendTo(t, file("app"), combined+"\n")
	waitTotal(t, p, "a line of its format", "logwindow_input_lines_total", float64(lines+3))
	if got := judgedNoFormat(p); !slices.Equal(got, []string{file("custom")}) {
		t.Errorf("a line of its format: files of no format %q, want the custom one's", got)
	}
}

// judgedNoFormat are the files of no format of p's inputs of a glob of one log format.
func judgedNoFormat(p *Pipeline) []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []string
	for _, in := range p.inputs {
		if in.judged != nil {
			out = append(out, in.judged.noFormatFiles()...)
		}
	}
	return out
}

// A file of an input with candidate log formats that writes fewer than MaxHeld lines, none
// of a candidate's format, then goes quiet is told of as one of MaxHeld such lines is:
// counted under "(none)", logged by its path, its lines counted as unmatched; before it
// has been quiet for heldQuiet, its lines wait for one of a format. A line of a format
// later has it chosen.
func TestShortFileOfNoFormatSettles(t *testing.T) {
	const (
		combined = `10.0.0.1 - - [01/Mar/2024:12:00:00 +0000] "GET / HTTP/1.1" 200 5 "-" "curl/8.5.0"`
		plain    = `12:00:00 INFO served / in 5ms`
	)
	clock := testclock.New(time.Date(2024, 3, 1, 12, 0, 0, 0, time.UTC))
	p, out, dir, file := startPods(t, "log_format: auto", clock, "web", "app")
	const warning = "files of the input whose lines fit none of its log formats"
	appendTo(t, file("web"), strings.Repeat(combined+"\n", 3))
	appendTo(t, file("app"), strings.Repeat(plain+"\n", 3))
	waitTotal(t, p, "read", "logwindow_input_lines_total", 6)
	clock.Add(heldQuiet - time.Second)
	// The reader polls every 10 ms: a settling due now would be done by the next lines.
	appendTo(t, file("web"), combined+"\n")
	waitTotal(t, p, "before the quiet period", "logwindow_input_lines_total", 7)
	p.warnUnreadable()
	if st := p.inputStats(); len(st) != 1 || st[0].Unmatched != 0 || st[0].Formats[parser.NoFormat] != 0 || strings.Contains(out.String(), warning) {
		t.Fatalf("before the quiet period: input stats %+v, want the short file's lines held, uncounted:\n%s", st, out.String())
	}
	clock.Add(time.Second)
	waitTotal(t, p, "settled", "logwindow_input_unmatched_lines_total", 3)
	p.warnUnreadable()
	if st := p.inputStats(); len(st) != 1 || st[0].Formats[parser.NoFormat] != 1 || st[0].Formats["combined"] != 1 {
		t.Errorf("settled: input stats %+v, want one file of no format and one combined", st)
	}
	if want := fmt.Sprintf("input=pods source=%s/*/*.log files=1 example=%s", dir, file("app")); !strings.Contains(out.String(), want) {
		t.Errorf("the warning lacks %s:\n%s", want, out.String())
	}
	appendTo(t, file("app"), combined+"\n")
	waitTotal(t, p, "a line of a format", "logwindow_input_lines_total", 8)
	if st := p.inputStats(); st[0].Formats["combined"] != 2 || st[0].Formats[parser.NoFormat] != 0 {
		t.Errorf("a line of a format: input stats %+v, want both files combined", st)
	}
}

// A pod whose first line is a JSON object (a start-up message), then a few requests, then
// quiet, has its format chosen again from its requests once quiet: they are counted, live
// after heldQuiet as by a replay of its file, rather than held, uncounted, until MaxHeld
// of them came (live) or told of as misfits (replay).
func TestQuietFileOfAStrayFirstLineChoosesAgain(t *testing.T) {
	const (
		object  = `2026-11-29T12:00:00.1Z stdout F {"level":"info","msg":"starting"}`
		request = `2026-11-29T12:00:01.1Z stdout F 10.0.0.1 - - [29/Nov/2026:12:00:01 +0000] "GET / HTTP/1.1" 200 5 "-" "curl/8.5.0"`
	)
	clock := testclock.New(time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC))
	p, _, _, file := startPods(t, "wrapper: cri, streams: [stdout], log_format: auto", clock, "web")
	appendTo(t, file("web"), object+"\n"+strings.Repeat(request+"\n", 5))
	waitTotal(t, p, "read", "logwindow_input_lines_total", 6)
	clock.Add(heldQuiet)
	waitTotal(t, p, "settled", `requests_total{status="200"}`, 5)
	// The JSON line was parsed by json, chosen from it, which no rule reads.
	if st := p.inputStats(); len(st) != 1 || st[0].Unread != 1 || st[0].Unmatched != 0 || st[0].Formats["combined"] != 1 {
		t.Errorf("settled: input stats %+v, want the JSON line unread and the file combined", st)
	}
	var out, summary bytes.Buffer
	if err := Replay(p.gen.Load().cfg, []string{file("web")}, Options{Now: clock.Now, Summary: &summary}, &out); err != nil {
		t.Error(err)
	}
	if want := `requests_total{status="200"} 5` + "\n"; !strings.Contains(out.String(), want) {
		t.Errorf("replay lacks %s:\n%s", want, out.String())
	}
	// The JSON line is unread there too, as the running exporter counted it.
	if got, want := summary.String(), "input pods: 5 of 6 lines fit (1 line unread: JSON objects with none of the members its rules read, another application's log)\n"; got != want {
		t.Errorf("replay: summary %q, want %q", got, want)
	}
}

// The pods of a node read with candidate formats (the chart's node mode: wrapper: cri,
// stdout, auto) that start and serve no request for a minute hold their image's start-up
// lines alone (testdata/startup: the official nginx image's entrypoint, today's and
// 1.19.5's, nginx-unprivileged's, ingress-nginx's banner, as the kubelet writes them):
// they are not settled as files of no format, logged and counted under "(none)", but wait
// for the pod's first request, whose format then parses them. A pod that wrote a line of another kind after them is settled.
func TestIdleNginxPodsAreNotOfNoFormat(t *testing.T) {
	const (
		request = `2026-11-29T12:05:00.000000001Z stdout F 10.244.1.1 - - [29/Nov/2026:12:05:00 +0000] "GET / HTTP/1.1" 200 615 "-" "kube-probe/1.31" "-"`
		tick    = `2026-11-29T12:05:00.000000001Z stdout F 10.244.1.1 - - [29/Nov/2026:12:05:00 +0000] "GET / HTTP/1.1" 200 615 "-" "curl/8.5.0"`
		other   = `2026-11-29T12:00:00.2Z stdout F 40-warm-cache.sh: warming /var/cache/nginx`
	)
	startup := func(image string) string {
		b, err := os.ReadFile(filepath.Join("testdata", "startup", image+".txt"))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	pods := []struct{ pod, text string }{
		{"nginx", startup("nginx")},
		{"nginx-1.19.5", startup("nginx-1.19.5")},
		{"unprivileged", startup("nginx-unprivileged")},
		{"ingress", startup("ingress-nginx")},
		{"custom", startup("nginx") + other + "\n"},
		{"tick", ""},
	}
	lines, stdout := 0, map[string]int{}
	for _, p := range pods {
		lines += strings.Count(p.text, "\n")
		stdout[p.pod] = strings.Count(p.text, " stdout F")
	}
	clock := testclock.New(time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC))
	p, out, dir, file := startPods(t, "wrapper: cri, streams: [stdout], log_format: auto", clock, podNames(pods)...)
	const warning = "files of the input whose lines fit none of its log formats"
	for _, pod := range pods {
		appendTo(t, file(pod.pod), pod.text)
	}
	waitTotal(t, p, "start-up", "logwindow_input_lines_total", float64(lines))
	clock.Add(heldQuiet)
	waitTotal(t, p, "settled", "logwindow_input_unmatched_lines_total", float64(stdout["custom"]))
	// The reader settles every quiet file at once: by a line after, it is done.
	appendTo(t, file("tick"), tick+"\n")
	waitTotal(t, p, "a line after settling", "logwindow_input_lines_total", float64(lines+1))
	p.warnUnreadable()
	if st := p.inputStats(); len(st) != 1 || st[0].Formats[parser.NoFormat] != 1 || st[0].Unmatched != uint64(stdout["custom"]) {
		t.Errorf("settled: input stats %+v, want one file of no format, the custom one", st)
	}
	if want := fmt.Sprintf("input=pods source=%s/*/*.log files=1 example=%s", dir, file("custom")); !strings.Contains(out.String(), want) {
		t.Errorf("the warning lacks %s:\n%s", want, out.String())
	}
	if n := strings.Count(out.String(), warning); n != 1 {
		t.Errorf("%d warnings of files of no format, want 1:\n%s", n, out.String())
	}
	appendTo(t, file("nginx"), request+"\n")
	waitTotal(t, p, "a request", "logwindow_input_unmatched_lines_total", float64(stdout["custom"]+stdout["nginx"]))
	if st := p.inputStats(); st[0].Formats["main"] != 1 || st[0].Formats[parser.NoFormat] != 1 {
		t.Errorf("a request: input stats %+v, want the nginx pod's file of main, its start-up lines unmatched", st)
	}
}

// An input no rule reads (the rules are all restricted to other inputs: it is followed
// for its own counters) has no rule that counts nothing and no regex that is wrong: its
// lines are told of neither as unreadable nor as unmatched, while the same lines of an
// input a rule reads are.
func TestUnreadInputOfNoRule(t *testing.T) {
	const (
		combined   = `10.0.0.1 - - [01/Mar/2024:12:00:00 +0000] "GET / HTTP/1.1" 200 5 "-" "curl/8.5.0"`
		unreadable = "none of the lines the input read lately"
		unmatched  = "no rule's match regex matched any of the lines"
	)
	for _, tc := range []struct {
		name, input, rules, warning string
		warned                      bool
	}{
		{"a regex's input", "", "[{name: r, match: ERROR, inputs: [web]}]", unmatched, true},
		{"no rule's input", "", "[{name: r, match: ERROR, inputs: [other]}]", unmatched, false},
		{"a format's input", ", log_format: upstreaminfo", "[{name: r, labels: {status: '${status}'}, inputs: [web]}]", unreadable, true},
		{"no rule's input of a format", ", log_format: upstreaminfo", "[{name: r, labels: {status: '${status}'}, inputs: [other]}]", unreadable, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			log, other := filepath.Join(dir, "web.log"), filepath.Join(dir, "other.log")
			for _, f := range []string{log, other} {
				if err := os.WriteFile(f, nil, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			cfg, err := config.Parse(fmt.Appendf(nil, "inputs: [{name: web, path: '%s'%s}, {name: other, path: '%s', log_format: upstreaminfo}]\nrules: %s\n", log, tc.input, other, tc.rules), "rules.yaml")
			if err != nil {
				t.Fatal(err)
			}
			p, out := startLogged(t, cfg, time.Now)
			appendTo(t, log, strings.Repeat(combined+"\n", unmatchedMinLines))
			waitTotal(t, p, "every line", "logwindow_input_lines_total", unmatchedMinLines)
			p.warnUnreadable()
			if got := strings.Contains(out.String(), tc.warning); got != tc.warned {
				t.Errorf("warned %v, want %v:\n%s", got, tc.warned, out.String())
			}
		})
	}
}

// startLogged starts cfg on the clock now, its log written to the buffer it returns.
func startLogged(t *testing.T, cfg *config.Config, now func() time.Time) (*Pipeline, *syncbuf.Buffer) {
	t.Helper()
	var out syncbuf.Buffer
	p, err := Start(cfg, Options{Now: now, PollInterval: 10 * time.Millisecond, Logger: slog.New(slog.NewTextHandler(&out, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Stop)
	return p, &out
}

// startPods makes an empty 0.log in a directory of its own under dir for each of pods,
// and starts on clock a pipeline of one input over them, of the keys given after its
// path (its log format, its wrapper), and one rule counting requests by status: the
// set-up of the tests of files told of by their format. file is a pod's log.
func startPods(t *testing.T, keys string, clock *testclock.Clock, pods ...string) (p *Pipeline, out *syncbuf.Buffer, dir string, file func(pod string) string) {
	t.Helper()
	dir = t.TempDir()
	file = func(pod string) string { return filepath.Join(dir, pod, "0.log") }
	for _, pod := range pods {
		if err := os.MkdirAll(filepath.Join(dir, pod), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(file(pod), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cfg, err := config.Parse(fmt.Appendf(nil, "inputs: [{name: pods, path: '%s/*/*.log', %s}]\nrules: [{name: requests, labels: {status: '${status}'}}]\n", dir, keys), "rules.yaml")
	if err != nil {
		t.Fatal(err)
	}
	p, out = startLogged(t, cfg, clock.Now)
	return p, out, dir, file
}

// podNames are the names of pods of text, for startPods.
func podNames(pods []struct{ pod, text string }) []string {
	names := make([]string, len(pods))
	for i, p := range pods {
		names[i] = p.pod
	}
	return names
}

// --replay and --explain read a file more than once (the instant of event-time rules,
// the summary's fits), but tell of it once: a file in UTF-16 is warned of once, and a
// path_captures regex that misses its path once, not at each pass.
func TestOneShotWarnsOnceOfAFile(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "web"), 0o755); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "web", "0.log")
	var text []byte
	for _, u := range utf16.Encode([]rune("2026-11-20T00:00:00Z GET 200\n2026-11-20T00:00:01Z GET 404\n")) {
		text = append(text, byte(u), byte(u>>8))
	}
	if err := os.WriteFile(file, append([]byte("\xff\xfe"), text...), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Parse(fmt.Appendf(nil, `
inputs:
  - {name: pods, path: '%s/*/*.log', path_captures: '^/var/log/pods/(?P<pod>[^/]+)/'}
rules:
  - name: requests
    match: '^(?P<time>\S+) \S+ (?P<status>\d{3})$'
    labels: {pod: '${pod}', status: '${status}'}
    timestamp: {capture: time, layout: '2006-01-02T15:04:05Z07:00'}
`, dir), "rules.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		run  func(opts Options)
		want map[string]int
	}{
		{"replay", func(opts Options) { _ = Replay(cfg, []string{file}, opts, io.Discard) }, map[string]int{"file is not UTF-8 but UTF-16LE": 1, pathsMissMessage: 1}},
		{"explain", func(opts Options) { _, _ = explainAll(cfg, file, 10, opts) }, map[string]int{"file is not UTF-8 but UTF-16LE": 1, pathsMissMessage: 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var log bytes.Buffer
			tc.run(Options{Now: time.Now, Logger: slog.New(slog.NewTextHandler(&log, nil))})
			for warning, n := range tc.want {
				if got := strings.Count(log.String(), warning); got != n {
					t.Errorf("%q logged %d times, want %d:\n%s", warning, got, n, log.String())
				}
			}
		})
	}
}

// A file whose format, chosen among the candidates, no rule reads (a Karpenter or
// Knative controller's JSON messages under a glob of ingress-nginx's controller
// containers) has its lines counted apart from the unmatched ones, which would have the
// unmatched-lines alert fire on a default install, and is logged by its path and format
// once MaxHeld of its lines were (a stray first line is no sign of it): a user's own
// nginx writing JSON keys the rules do not name stays loud. A JSON file whose
// objects come to have what a rule reads is read from then on.
func TestFilesOfAFormatNoRuleReads(t *testing.T) {
	const (
		combined  = `10.0.0.1 - - [01/Mar/2024:12:00:00 +0000] "GET / HTTP/1.1" 200 5 "-" "curl/8.5.0"`
		karpenter = `{"level":"INFO","time":"2024-03-01T12:00:00.000Z","logger":"controller","message":"found provisionable pod(s)","commit":"5bdf9c3"}`
		withKey   = `{"level":"INFO","message":"served","status":"200"}`
		warning   = "files of the input of JSON objects with none of the members its rules read"
	)
	clock := testclock.New(time.Date(2024, 3, 1, 12, 0, 0, 0, time.UTC))
	p, out, _, file := startPods(t, "log_format: auto", clock, "ingress", "karpenter")
	read := 0
	for _, step := range []struct {
		name              string
		pod, line         string
		n                 int
		unmatched, unread float64
		logged            int
	}{
		{"nginx", "ingress", combined, 20, 0, 0, 0},
		{"karpenter, too few to tell", "karpenter", karpenter, parser.MaxHeld - 1, 0, parser.MaxHeld - 1, 0},
		{"karpenter", "karpenter", karpenter, 201 - parser.MaxHeld, 0, 200, 1},
		{"karpenter goes on", "karpenter", karpenter, 50, 0, 250, 1},
		{"a rule reads it now", "karpenter", withKey, 1, 0, 250, 1},
	} {
		appendTo(t, file(step.pod), strings.Repeat(step.line+"\n", step.n))
		read += step.n
		samples := waitTotal(t, p, step.name, "logwindow_input_lines_total", float64(read))
		// The unread count can show a gather after the lines' own (seen under -race on a
		// busy machine): both are waited for.
		if step.unread > 0 {
			samples = waitTotal(t, p, step.name, "logwindow_input_unread_lines_total", step.unread)
		}
		p.warnUnreadable()
		for metric, want := range map[string]float64{"logwindow_input_unmatched_lines_total": step.unmatched, "logwindow_input_unread_lines_total": step.unread} {
			if got := sumOf(samples, metric); got != want {
				t.Errorf("%s: %s %v, want %v", step.name, metric, got, want)
			}
		}
		if got := strings.Count(out.String(), warning); got != step.logged {
			t.Fatalf("%s: %d warnings, want %d:\n%s", step.name, got, step.logged, out.String())
		}
	}
	if want := fmt.Sprintf("files=1 example=%s\n", file("karpenter")); !strings.Contains(out.String(), want) {
		t.Errorf("the warning lacks %s:\n%s", want, out.String())
	}
}

// A JSON file whose objects have some of the members the rules read, but not all that
// any rule reads (an nginx JSON template whose other keys are not the variables' names),
// is an access log the rules miss: its lines stay unmatched, as a text format's do, and
// the unmatched-lines alert fires on them. Only objects with none of them, among other
// candidates, are another application's: with json the only one, the input is meant to
// be JSON.
func TestJSONAccessLogNoRuleReadsStaysUnmatched(t *testing.T) {
	for _, tc := range []struct {
		name, line, formats string
		unmatched, unread   float64
	}{
		{"keys of its own", `{"level":"info","logger":"controller","message":"reconciled"}`, "auto", 0, 30},
		{"an access log with other keys", `{"status":"200","method":"GET","path":"/"}`, "auto", 30, 0},
		{"json the only candidate", `{"level":"info","logger":"controller","message":"reconciled"}`, "[json]", 30, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			log := filepath.Join(dir, "access.log")
			if err := os.WriteFile(log, nil, 0o644); err != nil {
				t.Fatal(err)
			}
			cfg, err := config.Parse(fmt.Appendf(nil, "inputs: [{name: pods, path: '%s', log_format: %s}]\nrules: [{name: requests, labels: {status: '${status}', method: '${request_method}'}}]\n", log, tc.formats), "rules.yaml")
			if err != nil {
				t.Fatal(err)
			}
			p, out := startLogged(t, cfg, time.Now)
			appendTo(t, log, strings.Repeat(tc.line+"\n", 30))
			waitTotal(t, p, "read", "logwindow_input_lines_total", 30)
			// What became of the lines is published just after they count as read.
			outcome := "logwindow_input_unmatched_lines_total"
			if tc.unread > 0 {
				outcome = "logwindow_input_unread_lines_total"
			}
			samples := waitTotal(t, p, "counted", outcome, 30)
			for metric, want := range map[string]float64{"logwindow_input_unmatched_lines_total": tc.unmatched, "logwindow_input_unread_lines_total": tc.unread} {
				if got := sumOf(samples, metric); got != want {
					t.Errorf("%s %v, want %v:\n%s", metric, got, want, out.String())
				}
			}
		})
	}
}
