package pipeline

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/logwindow/logwindow_exporter/config"
	"github.com/logwindow/logwindow_exporter/internal/explain"
	"github.com/logwindow/logwindow_exporter/parser"
)

// A line that ends the holding of a file's lines while its format is chosen again (here
// the sixteenth held, which has the file switch to upstreaminfo) parses the lines held
// before it: their events are not its own, and a one-shot counts it by what its own parse
// made of it. Here it is of no format, and the only misfit.
func TestOneShotFlushingLineFitsByItself(t *testing.T) {
	const combined = `10.0.0.1 - - [01/Mar/2024:12:00:00 +0000] "GET / HTTP/1.1" 200 5 "-" "curl/8.5.0"`
	const upstream = combined + ` 90 0.002 [a] [] 10.1.0.5:80 5 0.001 200 ab`
	lines := []string{combined}
	for range 15 {
		lines = append(lines, upstream)
	}
	lines = append(lines, "not a log line")
	dir := t.TempDir()
	log := filepath.Join(dir, "access.log")
	if err := os.WriteFile(log, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Parse(fmt.Appendf(nil, `
inputs:
  - {name: web, path: '%s', log_format: [combined, upstreaminfo], start_at: beginning}
rules:
  - {name: requests, labels: {status: '${status}'}}
`, log), "rules.yaml")
	if err != nil {
		t.Fatal(err)
	}
	const want = "input web: 16 of 17 lines fit (first misfit at line 17: "
	var summary bytes.Buffer
	if err := Sample(cfg, []string{log}, Options{Now: time.Now, Summary: &summary}); err != nil || !strings.HasPrefix(summary.String(), want) {
		t.Errorf("sample: %v, summary %q; want %q...", err, summary.String(), want)
	}
	summary.Reset()
	var out strings.Builder
	if err := Replay(cfg, []string{log}, Options{Now: time.Now, Summary: &summary}, &out); err != nil || !strings.HasPrefix(summary.String(), want) {
		t.Errorf("replay: %v, summary %q; want %q...", err, summary.String(), want)
	}
	if !strings.Contains(out.String(), `requests_total{status="200"} 16`+"\n") {
		t.Errorf("replay counted not the 16 requests:\n%s", out.String())
	}
}

// Inputs without a name share it, and a line of theirs that fits two of their formats as
// well is read at runtime by its own input's format: --explain and a one-shot's count of
// the lines that fit read it so too, not by the first of the formats of that name.
func TestOneShotUnnamedInputReadByItsOwnFormat(t *testing.T) {
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a.log"), filepath.Join(dir, "b.log")
	// "h1 [x]" fits both formats with two values: by name, the first (a's) would read it.
	if err := os.WriteFile(a, []byte("10.0.0.1 h1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(b, []byte("h1 [x]\nh1 x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Parse(fmt.Appendf(nil, `
inputs:
  - {path: '%[1]s', log_format: '$remote_addr $http_host'}
  - {path: '%[2]s', log_format: '$http_host [$remote_addr]'}
  - {path: '%[3]s/c.log', log_format: ['$remote_addr $http_host', '$http_host [$remote_addr]']}
rules:
  - {name: requests, labels: {host: '${http_host}'}}
`, a, b, dir), "rules.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	var summary bytes.Buffer
	if err := Replay(cfg, []string{b}, Options{Now: time.Now, Summary: &summary}, &out); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), `requests_total{host="h1"} 1`+"\n") {
		t.Fatalf("replay does not read b.log by its own format:\n%s", out.String())
	}
	want := "input " + b + ": 1 of 2 lines fit (first misfit at line 2: "
	if !strings.HasPrefix(summary.String(), want) {
		t.Errorf("replay: summary %q, want %q...", summary.String(), want)
	}
	summary.Reset()
	lines, err := explainAll(cfg, b, 2, Options{Now: time.Now, Summary: &summary})
	if err != nil || len(lines) != 2 {
		t.Fatalf("explain: %d lines, %v", len(lines), err)
	}
	if got := lines[0].Rules[0]; !lines[0].Counted || len(got.Labels) != 1 || got.Labels[0].Value != "h1" {
		t.Errorf("explain of line 1: counted %v, %+v; want host h1 as replay counts it", lines[0].Counted, got)
	}
	if lines[1].Counted {
		t.Errorf("explain of line 2: counted, but replay does not read it")
	}
	if !strings.HasPrefix(summary.String(), want) {
		t.Errorf("explain: summary %q, want %q...", summary.String(), want)
	}
}

// A line of a candidate format that lacks what every rule reading the input reads is read
// by no rule, though the file's format is chosen by it: it does not fit, and a one-shot
// whose lines are all so fails, naming the format.
func TestOneShotCandidateNoRuleAppliesTo(t *testing.T) {
	const combined = `10.0.0.1 - - [01/Mar/2024:12:00:00 +0000] "GET / HTTP/1.1" 200 5 "-" "curl/8.5.0"`
	log := filepath.Join(t.TempDir(), "access.log")
	if err := os.WriteFile(log, []byte(combined+"\n"+combined+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Parse(fmt.Appendf(nil, `
inputs:
  - {name: web, path: '%s', log_format: [combined, upstreaminfo]}
rules:
  - {name: upstreams, labels: {addr: '${upstream_addr}'}}
`, log), "rules.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var summary bytes.Buffer
	err = Sample(cfg, []string{log}, Options{Now: time.Now, Summary: &summary})
	const want = "input web: 0 of 2 lines fit (first misfit at line 1: the line is of the log format combined, to which no rule applies"
	if err == nil || !strings.HasPrefix(summary.String(), want) {
		t.Errorf("sample: %v, summary %q; want an error and %q...", err, summary.String(), want)
	}
}

// A line of another candidate amid a file's lines is read by the format chosen for the
// file, as the runtime reads it: it is a misfit, said so by what that format made of it,
// and --explain does not count it, as replay does not.
func TestOneShotMisfitOfAnotherCandidate(t *testing.T) {
	const combined = `10.0.0.1 - - [01/Mar/2024:12:00:00 +0000] "GET / HTTP/1.1" 200 5 "-" "curl/8.5.0"`
	const object = `{"status":"200"}`
	log := filepath.Join(t.TempDir(), "access.log")
	if err := os.WriteFile(log, []byte(strings.Join([]string{object, object, object, combined, object}, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Parse(fmt.Appendf(nil, `
inputs:
  - {name: web, path: '%s', log_format: [combined, json]}
rules:
  - {name: requests, labels: {status: '${status}'}}
`, log), "rules.yaml")
	if err != nil {
		t.Fatal(err)
	}
	const want = "input web: 4 of 5 lines fit (first misfit at line 4: the line is not json (rule requests))\n"
	var summary bytes.Buffer
	if err := Sample(cfg, []string{log}, Options{Now: time.Now, Summary: &summary}); err != nil || summary.String() != want {
		t.Errorf("sample: %v, summary %q; want %q", err, summary.String(), want)
	}
	summary.Reset()
	lines, err := explainAll(cfg, log, 5, Options{Now: time.Now, Summary: &summary})
	if err != nil || summary.String() != want {
		t.Errorf("explain: %v, summary %q; want %q", err, summary.String(), want)
	}
	var counted []bool
	for _, l := range lines {
		counted = append(counted, l.Counted)
	}
	if want := []bool{true, true, true, false, true}; !slices.Equal(counted, want) {
		t.Errorf("explain counts lines %v, want %v as replay does", counted, want)
	}
}

// --explain.lines cutting a file while its format is chosen again (its lines held, as
// many as MaxHeld in a row) explains the lines before the cut as the choice made after it
// reads them, as replay counts them, not by the format chosen before them, which it would
// say they do not fit.
func TestExplainCutWhileChoosing(t *testing.T) {
	const plain, keyed = "10.0.0.1 200", "status=404 from 10.0.0.2"
	var text []string
	text = append(text, plain, plain)
	for range parser.MaxHeld + 2 {
		text = append(text, keyed)
	}
	log := filepath.Join(t.TempDir(), "access.log")
	if err := os.WriteFile(log, []byte(strings.Join(text, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Parse(fmt.Appendf(nil, `
inputs:
  - {name: web, path: '%s', log_format: ['$remote_addr $status', 'status=$status from $remote_addr']}
rules:
  - {name: requests, labels: {status: '${status}'}}
`, log), "rules.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []int{1, 3, 5, len(text)} {
		lines, err := explainAll(cfg, log, n, Options{Now: time.Now})
		if err != nil || len(lines) != n {
			t.Fatalf("explain %d lines: %d, %v", n, len(lines), err)
		}
		for i, l := range lines {
			want := "status=200"
			if i >= 2 {
				want = "status=404"
			}
			if !l.Counted || l.Number != i+1 || l.Rules[0].Labels[0].Name+"="+l.Rules[0].Labels[0].Value != want {
				t.Errorf("--explain.lines %d, line %d (%d): counted %v %v; want %s", n, i+1, l.Number, l.Counted, l.Rules[0], want)
			}
		}
	}
}

// --explain of a glob explains each file's lines by the format chosen for that file, as
// replay counts them: a file of the second candidate after one of the first is not said
// to fit neither, nor is a file's line done in the place of another file's. Each line
// names its file, as the line numbers are of several.
func TestExplainGlobFilesOfTheirOwnFormats(t *testing.T) {
	dir := t.TempDir()
	for name, data := range map[string]string{
		"a.log": "status=201 from 10.0.0.1\nstatus=202 from 10.0.0.1\n",
		"b.log": "10.0.0.2 404\n10.0.0.2 503\n10.0.0.2 504\n",
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	glob := filepath.Join(dir, "*.log")
	cfg, err := config.Parse(fmt.Appendf(nil, `
inputs:
  - {name: web, path: '%s', log_format: ['status=$status from $remote_addr', '$remote_addr $status']}
rules:
  - {name: requests, labels: {status: '${status}'}}
`, glob), "rules.yaml")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"a.log:1 201", "a.log:2 202", "b.log:1 404", "b.log:2 503", "b.log:3 504"}
	for _, n := range []int{3, len(want)} {
		lines, err := explainAll(cfg, glob, n, Options{Now: time.Now})
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, l := range lines {
			if !l.Counted {
				t.Errorf("--explain.lines %d, line %d %q: not counted", n, l.Number, l.Text)
				continue
			}
			got = append(got, fmt.Sprint(strings.TrimPrefix(l.File, dir+"/"), ":", l.Number, " ", l.Rules[0].Labels[0].Value))
		}
		if strings.Join(got, ", ") != strings.Join(want[:n], ", ") {
			t.Errorf("--explain.lines %d: %s, want %s", n, strings.Join(got, ", "), strings.Join(want[:n], ", "))
		}
	}
}

// TestFitNamesFileShown: the file a one-shot's line names may be one a glob matched, named
// by whoever can write in its directory. A name holding a newline would otherwise forge a
// line of the summary, and a bidi override reorder it: such a name is shown Go-quoted, as
// --explain shows a line that holds them.
func TestFitNamesFileShown(t *testing.T) {
	forged := "/logs/a\ninput web: 9 of 9 lines fit\n.log"
	for _, tc := range []struct {
		name string
		fit  Fit
		want string
	}{
		{"plain", Fit{Input: "web", Lines: 2, Fitting: 1, First: 2, File: "/logs/a.log", Stopped: "why", files: 2},
			"input web: 1 of 2 lines fit (first misfit at line 2 of /logs/a.log: why)"},
		{"newline", Fit{Input: "web", Lines: 2, Fitting: 1, First: 2, File: forged, Stopped: "why", files: 2},
			`input web: 1 of 2 lines fit (first misfit at line 2 of "/logs/a\ninput web: 9 of 9 lines fit\n.log": why)`},
		{"bidi override, no input", Fit{Lines: 1, Fitting: 1, File: "/logs/\u202egol.exe"},
			`file "/logs/\u202egol.exe" (no input reads it): 1 of 1 lines fit`},
		// A name holding ": ", which ends every name a one-shot shows, would read as a
		// shorter name and a text of the one-shot's own after it.
		{"the misfit's file with a colon and a space", Fit{Input: "web", Lines: 2, Fitting: 1, First: 2, File: "/logs/a.log: fits; 0 lines", Stopped: "why", files: 2},
			`input web: 1 of 2 lines fit (first misfit at line 2 of "/logs/a.log: fits; 0 lines": why)`},
		{"no input, a colon and a space", Fit{Lines: 3, Fitting: 0, File: "/logs/a (no input reads it): 3 of 3 lines fit (x"},
			`file "/logs/a (no input reads it): 3 of 3 lines fit (x" (no input reads it): 0 of 3 lines fit`},
		// A name of three dots in the list of files of no format reads as the mark of
		// files left unnamed.
		{"a file named ...", Fit{Input: "web", Lines: 2, Fitting: 2, NoFormat: []string{"...", "a.log"}, files: 3},
			`input web: 2 of 2 lines fit (2 files of no format: "...", a.log)`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.fit.String(); got != tc.want {
				t.Errorf("\n got %s\nwant %s", got, tc.want)
			}
		})
	}
}

// TestExplainJSONNamesFileExactly: --explain's JSON names each line's file so that a tool
// finds it, whatever its name: one that is not UTF-8, or holds a newline or a control
// character, is Go-quoted with file_escaped set, as a line's text is, rather than have
// its invalid bytes replaced and lost.
func TestExplainJSONNamesFileExactly(t *testing.T) {
	dir := t.TempDir()
	names := []string{"a.log", "b\xff.log", "c\n\x1b[2J.log"}
	for _, name := range names {
		if err := os.WriteFile(filepath.Join(dir, name), []byte("GET 200\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	glob := filepath.Join(dir, "*.log")
	cfg, err := config.Parse(fmt.Appendf(nil, `
inputs: [{name: web, path: '%s'}]
rules: [{name: reqs, match: '^(?P<m>[A-Z]+) \d+$', labels: {m: '${m}'}}]
`, glob), "rules.yaml")
	if err != nil {
		t.Fatal(err)
	}
	lines, err := explainAll(cfg, glob, 10, Options{Now: time.Now})
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := explain.Write(&out, "json", lines); err != nil {
		t.Fatal(err)
	}
	var got []string
	for dec := json.NewDecoder(&out); dec.More(); {
		var l struct {
			File        string `json:"file"`
			FileEscaped bool   `json:"file_escaped"`
		}
		if err := dec.Decode(&l); err != nil {
			t.Fatal(err)
		}
		if l.FileEscaped {
			if l.File, err = strconv.Unquote(l.File); err != nil {
				t.Fatal(err)
			}
		}
		got = append(got, strings.TrimPrefix(l.File, dir+"/"))
	}
	if fmt.Sprintf("%q", got) != fmt.Sprintf("%q", names) {
		t.Errorf("files %q, want %q", got, names)
	}
}

// TestOneShotGlobNamesMisfitFile: a glob's matches are several files of one input, as
// several files given are: the summary names the file of the first misfit, so that a
// pod's file of another format under a glob over all pods is found, whether the input
// has one log format or candidates. A glob whose other files fit exits as it did.
func TestOneShotGlobNamesMisfitFile(t *testing.T) {
	const combined = `10.0.0.1 - - [01/Mar/2024:12:00:00 +0000] "GET / HTTP/1.1" 200 5 "-" "curl/8.5.0"` + "\n"
	dir := t.TempDir()
	glob := writeGlobTree(t, dir, map[string]string{
		"a/access.log": strings.Repeat(combined, 20),
		"b/access.log": strings.Repeat(`{"msg":"GET /","status":200}`+"\n", 5),
	})
	want := "input web: 20 of 25 lines fit (first misfit at line 1 of " + filepath.Join(dir, "b", "access.log") + ": "
	eachOneShotSummary(t, glob, func(err error, summary string) bool {
		return err == nil && strings.HasPrefix(summary, want)
	}, "want no error and %q...", want)
}

// TestOneShotNamesFilesOfNoFormat: a glob's files are judged by a one-shot as the running
// exporter judges them, each read to its end as a file gone quiet: a file none of whose
// lines fit (fewer than 16, here, as a pod that wrote a few lines of another format and
// went quiet) is of no format, and the summary names it, though the first misfit is a
// stray line of another file before it. So does a file of no candidate format; a file of
// an nginx image's start-up lines alone is not (it waits for its first request), nor is
// one of a stray line among lines that fit.
func TestOneShotNamesFilesOfNoFormat(t *testing.T) {
	const combined = `10.0.0.1 - - [01/Mar/2024:12:00:00 +0000] "GET / HTTP/1.1" 200 5 "-" "curl/8.5.0"` + "\n"
	dir := t.TempDir()
	glob := writeGlobTree(t, dir, map[string]string{
		"a/access.log": strings.Repeat(combined, 20) + "stray line\n",
		"b/access.log": strings.Repeat(`{"msg":"GET /","status":200}`+"\n", 5),
		"c/access.log": "/docker-entrypoint.sh: Configuration complete; ready for start up\n",
		"d/access.log": strings.Repeat(`{"msg":"x"}`+"\n", 20),
	})
	want := fmt.Sprintf("; 2 files of no format: %s, %s)\n", filepath.Join(dir, "b", "access.log"), filepath.Join(dir, "d", "access.log"))
	eachOneShotSummary(t, glob, func(err error, summary string) bool {
		return err == nil && strings.HasSuffix(summary, want)
	}, "want no error and ...%q", want)
}

// TestOneShotIdleNginxPods: pods of an nginx image that served no request yet hold its
// start-up lines alone, which the running exporter takes for no sign of their format (it
// waits for their first request): a one-shot over them says so and does not fail, as if
// their format were wrong. A line of another kind among an input's misfits still fails it.
func TestOneShotIdleNginxPods(t *testing.T) {
	const startup = "/docker-entrypoint.sh: /docker-entrypoint.d/ is not empty, will attempt to perform configuration\n" +
		"/docker-entrypoint.sh: Looking for shell scripts in /docker-entrypoint.d/\n\n" +
		"/docker-entrypoint.sh: Configuration complete; ready for start up\n"
	glob := writeGlobTree(t, t.TempDir(), map[string]string{"a/access.log": startup, "b/access.log": startup})
	const want = "input web: 0 of 8 lines fit (first misfit at line 1 of "
	eachOneShotSummary(t, glob, func(err error, summary string) bool {
		return err == nil && strings.HasPrefix(summary, want) && strings.HasSuffix(summary, "; its lines are an nginx image's start-up lines alone: no request yet)\n")
	}, "want no error and %q..., its lines start-up lines", want)
	glob = writeGlobTree(t, t.TempDir(), map[string]string{"a/access.log": startup, "b/access.log": `{"msg":"GET /","status":200}` + "\n"})
	cfg, err := config.Parse(fmt.Appendf(nil, "inputs: [{name: web, path: '%s', log_format: combined}]\nrules: [{name: requests, labels: {status: '${status}'}}]\n", glob), "rules.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var summary bytes.Buffer
	opts := Options{Now: time.Now, Summary: &summary}
	for mode, err := range map[string]error{"replay": Replay(cfg, []string{glob}, opts, io.Discard), "sample": Sample(cfg, []string{glob}, opts)} {
		if err == nil || !strings.Contains(err.Error(), "read 5 lines and none is of its format") {
			t.Errorf("%s: %v, want none of the lines of its format", mode, err)
		}
	}
	if strings.Contains(summary.String(), "start-up") {
		t.Errorf("summary %q tells of start-up lines alone", summary.String())
	}
}

// TestOneShotStartupLinesBounded: a file's start-up lines are no sign of its format up to
// parser.MaxStartupLines, as the running exporter bounds them; past it (a loop printing
// one, an image of another kind) they are judged as any others, and the file is of no
// format: the one-shot fails as over any file none of whose lines fit, rather than exit 0
// as over pods that served no request yet. The bound is a file's: two files of that many
// each are still idle pods.
func TestOneShotStartupLinesBounded(t *testing.T) {
	const line = "20-envsubst-on-templates.sh: Running envsubst on /etc/nginx/templates/site.conf.template to /etc/nginx/conf.d/site.conf\n"
	bound := strings.Repeat(line, parser.MaxStartupLines)
	for _, tc := range []struct {
		name  string
		files map[string]string
		lines int
		idle  bool
	}{
		{"MaxStartupLines in a file", map[string]string{"a/access.log": bound}, parser.MaxStartupLines, true},
		{"MaxStartupLines in each of two files", map[string]string{"a/access.log": bound, "b/access.log": bound}, 2 * parser.MaxStartupLines, true},
		{"one more in a file", map[string]string{"a/access.log": bound + line}, parser.MaxStartupLines + 1, false},
		{"300 in a file", map[string]string{"a/access.log": strings.Repeat(line, 300)}, 300, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			glob := writeGlobTree(t, t.TempDir(), tc.files)
			for _, format := range []string{"combined", "[combined, upstreaminfo]"} {
				cfg, err := config.Parse(fmt.Appendf(nil, "inputs: [{name: web, path: '%s', log_format: %s}]\nrules: [{name: requests, labels: {status: '${status}'}}]\n", glob, format), "rules.yaml")
				if err != nil {
					t.Fatal(err)
				}
				for mode, run := range map[string]func(Options) error{
					"replay": func(opts Options) error { return Replay(cfg, []string{glob}, opts, io.Discard) },
					"sample": func(opts Options) error { return Sample(cfg, []string{glob}, opts) },
				} {
					var summary bytes.Buffer
					err := run(Options{Now: time.Now, Summary: &summary})
					idle := strings.Contains(summary.String(), "no request yet")
					if idle != tc.idle {
						t.Errorf("%s %s: summary %q, want it to tell of no request yet: %v", format, mode, summary.String(), tc.idle)
					}
					want := fmt.Sprintf("read %d lines and none is of its format", tc.lines)
					if tc.idle && err != nil || !tc.idle && (err == nil || !strings.Contains(err.Error(), want)) {
						t.Errorf("%s %s: %v, want an error %v (%q)", format, mode, err, !tc.idle, want)
					}
				}
			}
		})
	}
}

// TestFitNamesFilesOfNoFormatApart: the summary's list of files of no format shows a name
// holding its separator (", ") or that of the summary's notes ("; ") Go-quoted, so that
// two names never read as three, nor a name as a note; other names as they are.
func TestFitNamesFilesOfNoFormatApart(t *testing.T) {
	for _, c := range []struct {
		name     string
		noFormat []string
		want     string
	}{
		{"plain names", []string{"/logs/b.log", "/logs/a.log"}, "2 files of no format: /logs/a.log, /logs/b.log)"},
		{"a name with the list's separator", []string{"/logs/a, b.log", "/logs/c.log"}, `2 files of no format: "/logs/a, b.log", /logs/c.log)`},
		{"a name with the notes' separator", []string{"/logs/a; 3 lines of other streams skipped"}, `1 file of no format: "/logs/a; 3 lines of other streams skipped")`},
		{"a comma without a space", []string{"/logs/a,b.log", "/logs/c.log"}, "2 files of no format: /logs/a,b.log, /logs/c.log)"},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := Fit{Input: "web", Lines: 10, NoFormat: c.noFormat, files: 3}
			if got := f.String(); !strings.HasSuffix(got, c.want) {
				t.Errorf("summary %q, want ...%q", got, c.want)
			}
		})
	}
}

// writeGlobTree writes files (a path under dir to its text) and returns the glob of
// dir's files one directory down, as a glob over all pods' logs.
func writeGlobTree(t *testing.T, dir string, files map[string]string) string {
	t.Helper()
	for name, data := range files {
		path := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return filepath.Join(dir, "*", "*.log")
}

// eachOneShotSummary runs --replay, --sample and --explain over glob, read as combined
// and then by candidate formats, and holds each to ok of its error and summary, saying
// wantf of want when it fails.
func eachOneShotSummary(t *testing.T, glob string, ok func(err error, summary string) bool, wantf, want string) {
	t.Helper()
	for _, format := range []string{"combined", "[combined, upstreaminfo]"} {
		cfg, err := config.Parse(fmt.Appendf(nil, `
inputs:
  - {name: web, path: '%s', log_format: %s, start_at: beginning}
rules:
  - {name: requests, labels: {status: '${status}'}}
`, glob, format), "rules.yaml")
		if err != nil {
			t.Fatal(err)
		}
		for _, tc := range []struct {
			name string
			run  func(opts Options) error
		}{
			{"replay", func(opts Options) error { return Replay(cfg, []string{glob}, opts, io.Discard) }},
			{"sample", func(opts Options) error { return Sample(cfg, []string{glob}, opts) }},
			{"explain", func(opts Options) error { _, err := explainAll(cfg, glob, 100, opts); return err }},
		} {
			t.Run(format+"/"+tc.name, func(t *testing.T) {
				var summary bytes.Buffer
				if err := tc.run(Options{Now: time.Now, Summary: &summary}); !ok(err, summary.String()) {
					t.Errorf("%v, summary %q; "+wantf, err, summary.String(), want)
				}
			})
		}
	}
}

// TestOneShotUnreadJSON: a file of another application's JSON log under candidate formats
// (a Karpenter controller's, under a glob over every controller) is counted by the running
// exporter as unread, not unmatched, and logged at warning: a one-shot says the same of
// its lines and does not fail over them beside an access log's, which still fits; nor are
// they its first misfit. Alone, with no line of the input fitting, they fail it: a JSON
// access log whose keys the rules do not name looks the same, and a user's mistake is
// loud. JSON as the only candidate is meant to be read: its lines no rule reads fail the
// one-shot too. --explain, which explains an input's lines, fails over neither.
func TestOneShotUnreadJSON(t *testing.T) {
	const combined = `10.0.0.1 - - [01/Mar/2024:12:00:00 +0000] "GET / HTTP/1.1" 200 5 "-" "curl/8.5.0"` + "\n"
	const karpenter = `{"level":"INFO","time":"2024-03-01T12:00:00.000Z","logger":"controller","message":"discovered instance types","count":700}` + "\n"
	dir := t.TempDir()
	alone := writeGlobTree(t, filepath.Join(dir, "alone"), map[string]string{"karpenter/0.log": strings.Repeat(karpenter, 3)})
	beside := writeGlobTree(t, filepath.Join(dir, "beside"), map[string]string{
		"karpenter/0.log": strings.Repeat(karpenter, 3),
		"nginx/0.log":     strings.Repeat(combined, 4),
	})
	for _, tc := range []struct {
		name, glob, formats string
		fails               bool
		want                string
		// errWant is in the error of a one-shot that fails over them.
		errWant string
	}{
		{"alone", alone, "auto", true, "input pods: 0 of 3 lines fit (3 lines unread: JSON objects with none of the members its rules read, another application's log)\n", "keys the rules do not name"},
		{"beside an access log", beside, "auto", false, fmt.Sprintf("input pods: 4 of 7 lines fit (3 lines unread: JSON objects with none of the members its rules read, another application's log: %s)\n", filepath.Join(dir, "beside", "karpenter", "0.log")), ""},
		{"json alone", alone, "[json]", true, "input pods: 0 of 3 lines fit (first misfit at line 1: ", "none is of its format"},
	} {
		cfg, err := config.Parse(fmt.Appendf(nil, "inputs: [{name: pods, path: '%s', log_format: %s}]\nrules: [{name: requests, labels: {status: '${status}'}}]\n", tc.glob, tc.formats), "rules.yaml")
		if err != nil {
			t.Fatal(err)
		}
		for mode, run := range map[string]func(Options) error{
			"replay":  func(opts Options) error { return Replay(cfg, []string{tc.glob}, opts, io.Discard) },
			"sample":  func(opts Options) error { return Sample(cfg, []string{tc.glob}, opts) },
			"explain": func(opts Options) error { _, err := explainAll(cfg, tc.glob, 100, opts); return err },
		} {
			t.Run(tc.name+"/"+mode, func(t *testing.T) {
				var summary bytes.Buffer
				err := run(Options{Now: time.Now, Summary: &summary})
				// --explain fails over no input's lines: it explains them.
				if fails := tc.fails && mode != "explain"; (err != nil) != fails {
					t.Errorf("error %v, want one: %v", err, fails)
				}
				if err != nil && !strings.Contains(err.Error(), tc.errWant) {
					t.Errorf("error %v, want it to say %q", err, tc.errWant)
				}
				if !strings.HasPrefix(summary.String(), tc.want) {
					t.Errorf("summary %q, want %q", summary.String(), tc.want)
				}
			})
		}
	}
}
