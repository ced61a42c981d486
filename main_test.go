package main

import (
	"bytes"
	"errors"
	"flag"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"runtime/debug"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/logwindow/logwindow_exporter/config"
	"github.com/logwindow/logwindow_exporter/internal/dashboard"
	"github.com/logwindow/logwindow_exporter/internal/testutil/testexec"
)

// TestMain removes the exporters testexec.BuildExporter built for the tests.
func TestMain(m *testing.M) {
	os.Exit(testexec.Main(m))
}

func TestTelemetryPathRefused(t *testing.T) {
	for _, path := range []string{"metrics", "/", "/-/healthy", "/-/ready", "/-/reload", "/{x...}", "/a b", "/metrics/{"} {
		t.Run(path, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := run([]string{"--config.file=examples/quickstart.yaml", "--web.telemetry-path=" + path}, &stdout, &stderr)
			if code != 2 || !strings.Contains(stderr.String(), "--web.telemetry-path") {
				t.Errorf("exit %d, stderr %q; want exit 2 naming the flag", code, stderr.String())
			}
		})
	}
}

// TestSnapshotIntervalRefused: a snapshot interval that is not positive is refused before
// anything starts.
func TestSnapshotIntervalRefused(t *testing.T) {
	for _, d := range []string{"0s", "-1s"} {
		t.Run(d, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := run([]string{"--config.file=examples/quickstart.yaml", "--storage.snapshot-interval=" + d}, &stdout, &stderr)
			if code != 2 || !strings.Contains(stderr.String(), "--storage.snapshot-interval") {
				t.Errorf("exit %d, stderr %q; want exit 2 naming the flag", code, stderr.String())
			}
		})
	}
}

// TestSnapshotIntervalWithoutPathWarns: a snapshot interval given without a storage path,
// which keeps nothing across restarts, is said in a warning; one with its path is not.
func TestSnapshotIntervalWithoutPathWarns(t *testing.T) {
	for _, c := range []struct {
		args  []string
		warns bool
	}{
		{[]string{"--storage.snapshot-interval=5s"}, true},
		{[]string{"--storage.snapshot-interval=5s", "--storage.path=" + t.TempDir()}, false},
		{nil, false},
	} {
		// --config.check warns as the start does.
		for _, mode := range []string{"--replay=examples/access.log", "--config.check"} {
			t.Run(mode+" "+strings.Join(c.args, " "), func(t *testing.T) {
				var stdout, stderr bytes.Buffer
				args := append([]string{"--config.file=example-rules.yaml", mode}, c.args...)
				code := run(args, &stdout, &stderr)
				warned := strings.Contains(stderr.String(), "--storage.snapshot-interval does nothing without --storage.path")
				if code != 0 || warned != c.warns {
					t.Errorf("exit %d, warned %v, stderr %q; want exit 0 and a warning %v", code, warned, stderr.String(), c.warns)
				}
			})
		}
	}
}

// TestScrapeBytesWithoutLimiterWarns: --web.max-scrape-bytes given with
// --web.max-requests=0, which turns off the limiter that keeps it, is said in a warning,
// by --config.check as by the start; either alone is not.
func TestScrapeBytesWithoutLimiterWarns(t *testing.T) {
	for _, c := range []struct {
		args  []string
		warns bool
	}{
		{[]string{"--web.max-requests=0", "--web.max-scrape-bytes=64MiB"}, true},
		{[]string{"--web.max-requests=0"}, false},
		{[]string{"--web.max-scrape-bytes=64MiB"}, false},
		{[]string{"--web.max-requests=0", "--web.max-scrape-bytes=0"}, false},
	} {
		t.Run(strings.Join(c.args, " "), func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := run(append([]string{"--config.file=example-rules.yaml", "--config.check"}, c.args...), &stdout, &stderr)
			warned := strings.Contains(stderr.String(), "--web.max-scrape-bytes does nothing with --web.max-requests=0")
			if code != 0 || warned != c.warns {
				t.Errorf("exit %d, warned %v, stderr %q; want exit 0 and a warning %v", code, warned, stderr.String(), c.warns)
			}
		})
	}
}

// TestConnectionsWithinRequestsWarns: --web.max-connections at or below what the
// handlers of bounded requests can hold (four times --web.max-requests: the scrapes and
// status pages in flight and waiting for a place; the line tester's 2, on by default; 16
// POST /-/reload with --web.enable-lifecycle) lets them hold every connection, none of
// which the connection limit takes from a running handler: a scraper's connection was
// closed at once, the scrapes of clients that read nothing held until
// --web.write-timeout, and nothing said so. It is said in a warning naming both flags,
// by --config.check as by the start. The reloads and the line tester were left out:
// --web.max-connections=41 --web.enable-lifecycle warned of nothing.
func TestConnectionsWithinRequestsWarns(t *testing.T) {
	for _, c := range []struct {
		args  []string
		warns bool
	}{
		{[]string{"--web.max-connections=10"}, true},
		{[]string{"--web.max-connections=20"}, true},
		{[]string{"--web.max-connections=40"}, true},
		{[]string{"--web.max-connections=4", "--web.max-requests=8"}, true},
		{[]string{"--web.max-connections=42"}, true},
		{[]string{"--web.max-connections=43"}, false},
		{[]string{"--web.max-connections=41", "--no-web.enable-line-tester"}, false},
		{[]string{"--web.max-connections=41", "--web.max-requests=10", "--web.enable-lifecycle"}, true},
		{[]string{"--web.max-connections=58", "--web.enable-lifecycle"}, true},
		{[]string{"--web.max-connections=59", "--web.enable-lifecycle"}, false},
		{[]string{"--web.max-connections=512", "--web.max-requests=200"}, true},
		{[]string{"--web.max-connections=4", "--web.max-requests=0"}, false},
		{nil, false},
	} {
		t.Run(strings.Join(c.args, " "), func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := run(append([]string{"--config.file=example-rules.yaml", "--config.check"}, c.args...), &stdout, &stderr)
			warned := strings.Contains(stderr.String(), "--web.max-connections") && strings.Contains(stderr.String(), "--web.max-requests")
			if code != 0 || warned != c.warns {
				t.Errorf("exit %d, warned %v, stderr %q; want exit 0 and a warning %v", code, warned, stderr.String(), c.warns)
			}
		})
	}
}

var update = flag.Bool("update", false, "rewrite the golden files under testdata/ from the current output")

// TestReplayGolden replays bundled logs through the command line's one-shot mode and
// compares the exposition text with a golden file. After an intended change of output, run
// `go test -run TestReplayGolden -update .` and review the diff of testdata/.
func TestReplayGolden(t *testing.T) {
	cases := []struct {
		name   string
		config string
		logs   []string
	}{
		{"example-rules", "example-rules.yaml", []string{"examples/access.log"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			args := []string{"--config.file=" + c.config}
			for _, l := range c.logs {
				args = append(args, "--replay="+l)
			}
			var stdout, stderr bytes.Buffer
			if code := run(args, &stdout, &stderr); code != 0 {
				t.Fatalf("exit %d: %s", code, stderr.String())
			}
			golden := filepath.Join("testdata", c.name+".prom")
			if *update {
				if err := os.WriteFile(golden, stdout.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run with -update to create it)", err)
			}
			if !bytes.Equal(stdout.Bytes(), want) {
				t.Errorf("replay output differs from %s; rerun with -update and review the diff.\n%s", golden, firstDiff(stdout.Bytes(), want))
			}
			// Replaying twice gives the same output: nothing depends on the wall clock.
			var again bytes.Buffer
			if code := run(args, &again, &stderr); code != 0 || !bytes.Equal(again.Bytes(), stdout.Bytes()) {
				t.Errorf("second replay differs from the first (exit %d)", code)
			}
		})
	}
}

// firstDiff shows the first line where got and want part.
func firstDiff(got, want []byte) string {
	g, w := bytes.Split(got, []byte("\n")), bytes.Split(want, []byte("\n"))
	for i := 0; i < len(g) && i < len(w); i++ {
		if !bytes.Equal(g[i], w[i]) {
			return "got:  " + string(g[i]) + "\nwant: " + string(w[i])
		}
	}
	return "one output is a prefix of the other"
}

// TestDashboardFlag: --dashboard prints the generator's dashboard for the loaded rules and
// exits 0, and a rule file that does not load is an error, not a dashboard.
func TestDashboardFlag(t *testing.T) {
	cfg, err := config.Load("example-rules.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var want bytes.Buffer
	if err := dashboard.Write(&want, cfg, dashboard.Options{}); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	if code := run([]string{"--dashboard", "--config.file=example-rules.yaml"}, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	if !bytes.Equal(stdout.Bytes(), want.Bytes()) {
		t.Errorf("--dashboard printed %d bytes, not the dashboard of example-rules.yaml", stdout.Len())
	}

	// A dashboard cut short is an error: exit 0 would leave a truncated file as if whole.
	stderr.Reset()
	full := failingWriter{}
	if code := run([]string{"--dashboard", "--config.file=example-rules.yaml"}, full, &stderr); code != 1 || !strings.Contains(stderr.String(), "writing the dashboard: no space left on device") {
		t.Errorf("a stdout that fails: exit %d, stderr %q; want 1 and the error", code, stderr.String())
	}

	stdout.Reset()
	stderr.Reset()
	if code := run([]string{"--dashboard", "--config.file=testdata/missing.yaml"}, &stdout, &stderr); code != 1 || stdout.Len() > 0 || !strings.Contains(stderr.String(), "missing.yaml") {
		t.Errorf("missing rule file: exit %d, stdout %d bytes, stderr %q; want 1, nothing, the error", code, stdout.Len(), stderr.String())
	}
}

// failingWriter fails every write, as a full disk does.
type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, errors.New("no space left on device") }

func TestFillStamp(t *testing.T) {
	vcs := func(kv ...string) []debug.BuildSetting {
		var s []debug.BuildSetting
		for i := 0; i < len(kv); i += 2 {
			s = append(s, debug.BuildSetting{Key: kv[i], Value: kv[i+1]})
		}
		return s
	}
	clone := vcs("vcs", "git", "vcs.revision", "0123abcd", "vcs.time", "2026-03-01T12:34:56Z", "vcs.modified", "false")
	cases := []struct {
		name string
		in   stamp
		bi   *debug.BuildInfo
		want stamp
	}{
		{
			name: "release build: ldflags win",
			in:   stamp{"1.2.3", "feedface", "20260401-00:00:00"},
			bi:   &debug.BuildInfo{Main: debug.Module{Version: "v0.0.0-20260301123456-0123abcd0000"}, Settings: clone},
			want: stamp{"1.2.3", "feedface", "20260401-00:00:00"},
		},
		{
			name: "go build in a clone",
			bi:   &debug.BuildInfo{Main: debug.Module{Version: "v0.1.1-0.20260301123456-0123abcd0000"}, Settings: clone},
			want: stamp{"0.1.1-0.20260301123456-0123abcd0000", "0123abcd", "20260301-12:34:56"},
		},
		{
			name: "uncommitted changes",
			bi: &debug.BuildInfo{Main: debug.Module{Version: "v0.1.1-0.20260301123456-0123abcd0000+dirty"},
				Settings: vcs("vcs.revision", "0123abcd", "vcs.modified", "true", "vcs.time", "2026-03-01T13:34:56+01:00")},
			want: stamp{"0.1.1-0.20260301123456-0123abcd0000+dirty", "0123abcd-modified", "20260301-12:34:56"},
		},
		{
			name: "go install at a tag",
			bi:   &debug.BuildInfo{Main: debug.Module{Version: "v0.2.0"}},
			want: stamp{Version: "0.2.0"},
		},
		{
			name: "go run, or -buildvcs=false",
			bi:   &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}},
			want: stamp{Version: "0.1.0-devel"},
		},
		{
			name: "docker build of a tree without .git, some args given",
			in:   stamp{Version: "", Revision: "feedface"},
			bi:   &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}},
			want: stamp{Version: "0.1.0-devel", Revision: "feedface"},
		},
		{
			name: "no build info",
			want: stamp{Version: "0.1.0-devel"},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := fillStamp(c.in, c.bi, "0.1.0\n"); got != c.want {
				t.Errorf("got %+v, want %+v", got, c.want)
			}
		})
	}
}

// The VERSION file names release images (the kustomize base's tag) and -devel builds.
func TestReleaseVersion(t *testing.T) {
	if !regexp.MustCompile(`^\d+\.\d+\.\d+\n$`).MatchString(releaseVersion) {
		t.Errorf("VERSION is %q, want one line MAJOR.MINOR.PATCH", releaseVersion)
	}
}

func TestWebLimitsRefused(t *testing.T) {
	for _, flag := range []string{"--web.read-timeout=-1s", "--web.write-timeout=-1s", "--web.idle-timeout=-1s", "--web.max-connections=0", "--web.max-requests=-1"} {
		t.Run(flag, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			name, _, _ := strings.Cut(strings.TrimPrefix(flag, "--"), "=")
			code := run([]string{"--config.file=examples/quickstart.yaml", flag}, &stdout, &stderr)
			if code != 2 || !strings.Contains(stderr.String(), name) {
				t.Errorf("exit %d, stderr %q; want exit 2 naming the flag", code, stderr.String())
			}
		})
	}
}

// TestInputLimitsRefused: the inputs' flags the followers refuse are refused before the
// start, naming the flag, and so by --config.check: it said OK, and the start then exited
// 1 with the follower's error ("input sample: follow: max line bytes -1 out of range"),
// which names no flag; a cap of 0 was taken for 64 KiB where it reads as none, and so a
// rotation grace or poll interval of 0 for 5s and 250ms. The largest cap is taken, and a
// web timeout of 0, none.
func TestInputLimitsRefused(t *testing.T) {
	for _, tc := range []struct {
		flag string
		code int
	}{
		{"--input.max-line-bytes=-1", 2},
		{"--input.max-line-bytes=0", 2},
		{"--input.max-line-bytes=67108865", 2},
		{"--input.max-line-bytes=67108864", 0},
		{"--input.max-line-bytes=1", 0},
		{"--input.rotation-grace=-1s", 2},
		{"--input.rotation-grace=0s", 2},
		{"--input.rotation-grace=1ms", 0},
		{"--input.poll-interval=-1s", 2},
		{"--input.poll-interval=0s", 2},
		{"--input.poll-interval=1ms", 0},
		{"--web.read-timeout=0s", 0},
	} {
		t.Run(tc.flag, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			name, _, _ := strings.Cut(strings.TrimPrefix(tc.flag, "--"), "=")
			code := run([]string{"--config.file=examples/quickstart.yaml", "--config.check", tc.flag}, &stdout, &stderr)
			if code != tc.code || tc.code != 0 && !strings.Contains(stderr.String(), "--"+name) {
				t.Errorf("--config.check %s: exit %d, stderr %q; want exit %d (naming the flag when refused)", tc.flag, code, stderr.String(), tc.code)
			}
		})
	}
}

// TestFlagValueRefusedNamed: a flag's value of the wrong type is refused naming the flag
// and the value, whatever the flag's type (kingpin's parsers name neither), and once.
func TestFlagValueRefusedNamed(t *testing.T) {
	for _, flag := range []string{
		"--web.max-requests=abc",         // an int
		"--input.max-line-bytes=2MiB",    // an int a size is mistaken for
		"--web.read-timeout=5",           // a duration without its unit
		"--log.level=loud",               // promslog's
		"--series.max-bytes=12XB",        // ours, which names itself
		"--input.rotation-grace=forever", // a duration
	} {
		t.Run(flag, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			name, value, _ := strings.Cut(flag, "=")
			code := run([]string{"--config.file=examples/quickstart.yaml", "--config.check", flag}, &stdout, &stderr)
			if code != 2 || strings.Count(stderr.String(), name) != 1 || !strings.Contains(stderr.String(), value) {
				t.Errorf("exit %d, stderr %q; want exit 2 naming %s and %q once", code, stderr.String(), name, value)
			}
		})
	}
}

// Without --config.file the exporter reads logwindow.yml, else logwindow.yaml (the
// extension of every example), and says which; with both it reads the first and warns.
func TestDefaultConfigFile(t *testing.T) {
	oneRule := "inputs: [{syslog: 'udp://127.0.0.1:5140'}]\nrules:\n  - {name: a, match: 'x'}\n"
	twoRules := oneRule + "  - {name: b, match: 'y'}\n"
	cases := []struct {
		name   string
		files  map[string]string
		links  map[string]string // name: target
		args   []string
		code   int
		stdout string // what --config.check printed
		level  string // the level and source of the log line, if any
		stderr string // a part of the log or the error
	}{
		{"yml", map[string]string{"logwindow.yml": oneRule}, nil, nil, 0, "logwindow.yml: 1 rule,", `level=INFO source=main.go`, `msg="no --config.file given: reading the default rule file" file=logwindow.yml`},
		{"yaml", map[string]string{"logwindow.yaml": twoRules}, nil, nil, 0, "logwindow.yaml: 2 rules", `level=INFO source=main.go`, `msg="no --config.file given: reading the default rule file" file=logwindow.yaml`},
		{"both", map[string]string{"logwindow.yml": oneRule, "logwindow.yaml": twoRules}, nil, nil, 0, "logwindow.yml: 1 rule,", `level=WARN source=main.go`, `msg="no --config.file given and several default rule files exist: reading the first, pass --config.file to choose" file=logwindow.yml ignored=logwindow.yaml`},
		{"neither", nil, nil, nil, 1, "", "", "no --config.file given, and none of logwindow.yml, logwindow.yaml is in the working directory"},
		// A link to nothing is the file ls lists: its load says where it leads, where
		// "none is in the working directory" was said of it.
		{"link to nothing", nil, map[string]string{"logwindow.yml": "rules/logwindow.yml"}, nil, 1, "", "", "open logwindow.yml: no such file or directory: it is a symbolic link to rules/logwindow.yml, which leads to no file"},
		{"given", map[string]string{"logwindow.yml": oneRule, "rules.yaml": twoRules}, nil, []string{"--config.file=rules.yaml"}, 0, "rules.yaml: 2 rules", "", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Chdir(t.TempDir())
			for name, data := range c.files {
				if err := os.WriteFile(name, []byte(data), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			for name, target := range c.links {
				if err := os.Symlink(target, name); err != nil {
					t.Fatal(err)
				}
			}
			var stdout, stderr bytes.Buffer
			code := run(append([]string{"--config.check"}, c.args...), &stdout, &stderr)
			if code != c.code || !strings.HasPrefix(stdout.String(), c.stdout) || !strings.Contains(stderr.String(), c.stderr) || !strings.Contains(stderr.String(), c.level) {
				t.Errorf("exit %d, stdout %q, stderr %q; want exit %d, stdout from %q, stderr with %q", code, stdout.String(), stderr.String(), c.code, c.stdout, c.stderr)
			}
			if c.stderr == "" && stderr.Len() > 0 {
				t.Errorf("stderr %q; want nothing when --config.file is given", stderr.String())
			}
		})
	}
}

// --config.check passes a config with a rewrite that matches empty text, and warns of it on
// stderr, naming the file, the line and the rule.
func TestConfigCheckWarns(t *testing.T) {
	path := filepath.Join(t.TempDir(), "rules.yaml")
	rules := "rules:\n  - name: r\n    match: '(?P<v>.*)'\n    labels: {route: '${v}'}\n    rewrite:\n      - {label: route, regex: 'z*', replacement: '-'}\ninputs: [{syslog: 'udp://127.0.0.1:5140'}]\n"
	if err := os.WriteFile(path, []byte(rules), 0o644); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	code := run([]string{"--config.check", "--config.file=" + path}, &stdout, &stderr)
	want := path + `:6: warning: rule "r": rewrite of label "route": regex 'z*' can match empty text`
	if code != 0 || !strings.HasSuffix(stdout.String(), "OK\n") || !strings.HasPrefix(stderr.String(), want) {
		t.Errorf("exit %d, stdout %q, stderr %q; want exit 0, OK, and a warning starting %q", code, stdout.String(), stderr.String(), want)
	}
}

// TestByteSizeFlag: a size flag takes a plain number of bytes as well as a number with a
// unit, and refuses a negative or unreadable one naming the flag.
func TestByteSizeFlag(t *testing.T) {
	for _, c := range []struct {
		in   string
		want int64
		ok   bool
	}{
		{"134217728", 134217728, true},
		{"0", 0, true},
		{"128MiB", 128 << 20, true},
		{"1GB", 1 << 30, true},
		{"-1", 0, false},
		{"-1MiB", 0, false},
		{"12XB", 0, false},
		{"", 0, false},
	} {
		t.Run(c.in, func(t *testing.T) {
			b := byteSize{flag: "size"}
			err := b.Set(c.in)
			if (err == nil) != c.ok || c.ok && b.n != c.want {
				t.Errorf("Set(%q) = %d, %v; want %d, ok %v", c.in, b.n, err, c.want, c.ok)
			}
		})
	}
	for _, flag := range []string{"--series.max-bytes", "--input.backfill-bytes", "--web.max-scrape-bytes"} {
		t.Run(flag, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			if code := run([]string{"--config.file=examples/quickstart.yaml", "--config.check", flag + "=134217728"}, &stdout, &stderr); code != 0 {
				t.Errorf("%s=134217728: exit %d, stderr %q; want 0", flag, code, stderr.String())
			}
			stderr.Reset()
			if code := run([]string{"--config.file=examples/quickstart.yaml", "--config.check", flag + "=12XB"}, &stdout, &stderr); code != 2 || !strings.Contains(stderr.String(), strings.TrimPrefix(flag, "--")) {
				t.Errorf("%s=12XB: exit %d, stderr %q; want exit 2 naming the flag", flag, code, stderr.String())
			}
		})
	}
}

// TestScrapeBudget: --web.max-scrape-bytes is what was given, even 0 (none), else half
// of the series' bound, none when they have none.
func TestScrapeBudget(t *testing.T) {
	for _, tc := range []struct {
		name        string
		flag        int64
		set         bool
		seriesBytes int64
		want        int64
	}{
		{name: "default", seriesBytes: 128 << 20, want: 64 << 20},
		{name: "given", flag: 256 << 20, set: true, seriesBytes: 128 << 20, want: 256 << 20},
		{name: "given none", flag: 0, set: true, seriesBytes: 128 << 20, want: 0},
		{name: "series without a bound", seriesBytes: 0, want: 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := scrapeBudget(tc.flag, tc.set, tc.seriesBytes); got != tc.want {
				t.Errorf("scrapeBudget(%d, %v, %d) = %d, want %d", tc.flag, tc.set, tc.seriesBytes, got, tc.want)
			}
		})
	}
}

// TestSmallSizeWarns: a size under 1 MiB, most likely a unit left out (512 for 512MiB),
// is said in a warning naming the flag; a size with its unit is not.
func TestSmallSizeWarns(t *testing.T) {
	for _, c := range []struct {
		flag  string
		warns bool
	}{
		{"--series.max-bytes=512", true},
		{"--input.backfill-bytes=1000", true},
		{"--series.max-bytes=512MiB", false},
		{"--input.backfill-bytes=0", false},
	} {
		// --config.check warns as the start does.
		for _, mode := range []string{"--replay=examples/access.log", "--config.check"} {
			t.Run(mode+" "+c.flag, func(t *testing.T) {
				var stdout, stderr bytes.Buffer
				code := run([]string{"--config.file=example-rules.yaml", mode, c.flag}, &stdout, &stderr)
				name, _, _ := strings.Cut(c.flag, "=")
				warned := strings.Contains(stderr.String(), "a size under 1 MiB") && strings.Contains(stderr.String(), name)
				if code != 0 || warned != c.warns {
					t.Errorf("exit %d, warned %v, stderr %q; want exit 0 and a warning %v", code, warned, stderr.String(), c.warns)
				}
			})
		}
	}
}

// TestUserMemoryLimit: a GOMEMLIMIT the user set is left in force, and one under the
// series' bound, which would have the garbage collector run without pause once the series
// fill it, is said in a warning naming it; the start's log gives the soft limit in force.
// The runtime reads GOMEMLIMIT when the process starts, so the test sets its limit as
// that start would have.
func TestUserMemoryLimit(t *testing.T) {
	before := debug.SetMemoryLimit(-1)
	t.Cleanup(func() { debug.SetMemoryLimit(before) })
	// No cgroup: the machine's own limit would add its warnings.
	fakeRoot(t, fstest.MapFS{})
	for _, c := range []struct {
		env   string
		limit int64 // what the runtime took from env
		warns bool
		want  int64 // the limit in force after run
	}{
		{"64MiB", 64 << 20, true, 64 << 20},
		{"1GiB", 1 << 30, false, 1 << 30},
		{"off", math.MaxInt64, false, math.MaxInt64},
		{"", math.MaxInt64, false, 384 << 20},
	} {
		t.Run("GOMEMLIMIT="+c.env, func(t *testing.T) {
			t.Setenv("GOMEMLIMIT", c.env)
			debug.SetMemoryLimit(c.limit)
			var stdout, stderr bytes.Buffer
			code := run([]string{"--config.file=example-rules.yaml", "--replay=examples/access.log", "--series.max-bytes=256MiB"}, &stdout, &stderr)
			warned := false
			for line := range strings.Lines(stderr.String()) {
				warned = warned || strings.Contains(line, "level=WARN") && strings.Contains(line, "GOMEMLIMIT")
			}
			if code != 0 || warned != c.warns {
				t.Errorf("exit %d, warned %v, stderr %q; want exit 0 and a warning %v", code, warned, stderr.String(), c.warns)
			}
			if got := debug.SetMemoryLimit(-1); got != c.want {
				t.Errorf("soft limit in force %d, want %d", got, c.want)
			}
		})
	}
}

// fakeRoot has run read the container's memory limit from fsys for the rest of the test.
func fakeRoot(t *testing.T, fsys fs.FS) {
	old := rootFS
	rootFS = fsys
	t.Cleanup(func() { rootFS = old })
}

// TestFlagOverContainerLimit: with --series.max-bytes given, the container's limit is still
// read, and a flag at or above it (the kernel kills the process before the bound folds a
// label set) or a GOMEMLIMIT above it (before the runtime collects) is warned of, naming
// the flag or GOMEMLIMIT and the limit.
func TestFlagOverContainerLimit(t *testing.T) {
	before := debug.SetMemoryLimit(-1)
	t.Cleanup(func() { debug.SetMemoryLimit(before) })
	fakeRoot(t, fstest.MapFS{
		"proc/self/cgroup":         {Data: []byte("0::/\n")},
		"sys/fs/cgroup/memory.max": {Data: []byte("268435456\n")},
	})
	for _, c := range []struct {
		flag, env string
		limit     int64  // what the runtime took from env
		warns     string // what the warning names besides the limit; "" for none
	}{
		{"64MiB", "", math.MaxInt64, ""},
		{"256MiB", "", math.MaxInt64, "--series.max-bytes=268435456"},
		{"1GiB", "", math.MaxInt64, "--series.max-bytes=1073741824"},
		{"64MiB", "200MiB", 200 << 20, ""},
		{"64MiB", "1GiB", 1 << 30, "GOMEMLIMIT=1073741824"},
		// Under the limit, but the runtime's soft limit, 1.5 times the flag, above it.
		{"200MiB", "", math.MaxInt64, "--series.max-bytes=209715200"},
		// The user's GOMEMLIMIT, under the limit, is the soft limit instead.
		{"200MiB", "200MiB", 200 << 20, ""},
	} {
		t.Run("--series.max-bytes="+c.flag+",GOMEMLIMIT="+c.env, func(t *testing.T) {
			t.Setenv("GOMEMLIMIT", c.env)
			debug.SetMemoryLimit(c.limit)
			var stdout, stderr bytes.Buffer
			code := run([]string{"--config.file=example-rules.yaml", "--replay=examples/access.log", "--series.max-bytes=" + c.flag}, &stdout, &stderr)
			// The replay's own warnings (no input of the rules reads the file) are not these.
			var warnings []string
			for line := range strings.Lines(stderr.String()) {
				if strings.Contains(line, "level=WARN") && strings.Contains(line, "memory limit") {
					warnings = append(warnings, line)
				}
			}
			if code != 0 {
				t.Fatalf("exit %d, stderr %q", code, stderr.String())
			}
			if c.warns == "" {
				if len(warnings) > 0 {
					t.Errorf("warnings of the memory limit %q, want none", warnings)
				}
				return
			}
			if len(warnings) != 1 || !strings.Contains(warnings[0], c.warns) || !strings.Contains(warnings[0], "268435456") {
				t.Errorf("warnings of the memory limit %q, want one naming %s and the limit 268435456", warnings, c.warns)
			}
		})
	}
}

// A one-shot's path with ".", ".." or an empty element after a wildcard, which no
// directory listing gives, or with a range that holds no character, is refused as an
// input's path is, naming the element or the range: "no file matches" would read as a
// mistyped name, the file being there.
func TestOneShotUnlistedGlobRefused(t *testing.T) {
	for _, c := range []struct{ path, want string }{
		{"examples/*/../access.log", `has ".." after a wildcard, which no directory listing gives: the glob matches no file; give the cleaned path examples/access.log`},
		{"examples/*//access.log", "has an empty element (//) after a wildcard"},
		{"examples/[z-a]ccess.log", "has the range [z-a], which holds no character as z comes after a: write it [a-z]"},
	} {
		for _, mode := range [][]string{{"--replay=" + c.path}, {"--explain=" + c.path}, {"--config.check", "--sample=" + c.path}} {
			t.Run(strings.Join(mode, " "), func(t *testing.T) {
				var stdout, stderr bytes.Buffer
				code := run(append([]string{"--config.file=example-rules.yaml"}, mode...), &stdout, &stderr)
				if code != 1 || !strings.Contains(stderr.String(), c.want) {
					t.Errorf("exit %d, stderr %q; want exit 1 and an error with %q", code, stderr.String(), c.want)
				}
			})
		}
	}
}

// A file given to a one-shot that no input of the rule file reads and that holds no line
// (example-rules.yaml's one input reads /var/log/nginx/access.log) exits 1 naming it,
// where --replay, --explain and --config.check --sample exited 0 having read nothing.
func TestOneShotEmptyFileRefused(t *testing.T) {
	empty := filepath.Join(t.TempDir(), "empty.log")
	if err := os.WriteFile(empty, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, mode := range [][]string{{"--replay=" + empty}, {"--explain=" + empty}, {"--config.check", "--sample=" + empty}} {
		t.Run(strings.Join(mode, " "), func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := run(append([]string{"--config.file=example-rules.yaml"}, mode...), &stdout, &stderr)
			if want := empty + ": it is empty, and no input reads this file"; code != 1 || !strings.Contains(stderr.String(), want) {
				t.Errorf("exit %d, stderr %q; want exit 1 and an error with %q", code, stderr.String(), want)
			}
		})
	}
}

// TestOneShotFlagCombinations runs every combination of the one-shots and the flags that
// apply to one: each that does not go together is a flag error (exit 2, nothing printed)
// naming the flags, the first of these that applies: two one-shots or more, --sample
// without --config.check, --explain.lines without --explain; every other combination
// runs (the bare server exits 1 on an address it cannot bind).
func TestOneShotFlagCombinations(t *testing.T) {
	const log = "examples/access.log"
	flags := []struct {
		arg     string
		oneShot string // the one-shot's name in the error, "" for a flag of one
	}{
		{"--config.check", "--config.check"},
		{"--dashboard", "--dashboard"},
		{"--replay=" + log, "--replay"},
		{"--explain=" + log, "--explain"},
		{"--explain.lines=5", ""},
		{"--sample=" + log, ""},
	}
	const check, explain, explainLines, sample = 0, 3, 4, 5
	for set := 0; set < 1<<len(flags); set++ {
		given := func(i int) bool { return set&(1<<i) != 0 }
		var args, oneShots []string
		for i, f := range flags {
			if given(i) {
				args = append(args, f.arg)
				if f.oneShot != "" {
					oneShots = append(oneShots, f.oneShot)
				}
			}
		}
		want := ""
		switch {
		case len(oneShots) > 1:
			want = strings.Join(oneShots, ", ") + " are one-shots of their own: give one of them"
		case given(sample) && !given(check):
			want = "--sample applies to --config.check"
		case given(explainLines) && !given(explain):
			want = "--explain.lines and --explain.format apply to --explain"
		}
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := run(append([]string{"--config.file=examples/quickstart.yaml", "--web.listen-address=:99999"}, args...), &stdout, &stderr)
			switch {
			case want != "" && (code != 2 || !strings.Contains(stderr.String(), want) || stdout.Len() > 0):
				t.Errorf("exit %d, %d bytes of stdout, stderr %q; want exit 2 saying %q", code, stdout.Len(), stderr.String(), want)
			case want == "" && code == 2:
				t.Errorf("exit 2, stderr %q; want the flags taken", stderr.String())
			}
		})
	}
}

// TestOneShotFlagsRefused: one-shot flags that do not go together are a flag error naming
// them, before anything runs: two one-shots ran one and left the other unheeded with exit
// 0, and an --explain.lines without --explain, or an empty --explain, started the server.
func TestOneShotFlagsRefused(t *testing.T) {
	const log = "--replay=examples/access.log"
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--explain=examples/access.log", log}, "--replay, --explain are one-shots of their own"},
		{[]string{"--config.check", "--dashboard"}, "--config.check, --dashboard are one-shots of their own"},
		{[]string{"--config.check", log}, "--config.check, --replay are one-shots of their own"},
		{[]string{"--dashboard", "--explain=examples/access.log"}, "--dashboard, --explain are one-shots of their own"},
		{[]string{"--explain.lines=5", log}, "--explain.lines and --explain.format apply to --explain"},
		{[]string{"--explain.format=json"}, "--explain.lines and --explain.format apply to --explain"},
		{[]string{"--sample=examples/access.log"}, "--sample applies to --config.check"},
		{[]string{"--explain="}, "take a file name, not an empty one"},
		{[]string{"--replay="}, "take a file name, not an empty one"},
		{[]string{"--config.check", "--sample="}, "take a file name, not an empty one"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			// An address the server refuses, so that a run that would serve ends.
			code := run(append([]string{"--config.file=examples/quickstart.yaml", "--web.listen-address=:99999"}, tc.args...), &stdout, &stderr)
			if code != 2 || !strings.Contains(stderr.String(), tc.want) || stdout.Len() > 0 {
				t.Errorf("exit %d, %d bytes of stdout, stderr %q; want exit 2 saying %q", code, stdout.Len(), stderr.String(), tc.want)
			}
		})
	}
}

// --help and --version end the run where kingpin exited the process: exit 0, without
// starting anything, and the first of them asked for alone printed, to stdout, as
// before they printed to stderr. kingpin, no longer exiting, goes on parsing: a --help
// after --version printed the help after the version.
func TestHelpAndVersionEndTheRun(t *testing.T) {
	for _, tc := range []struct {
		args  []string
		want  string // what stdout starts with
		alone bool   // the version, and nothing after it
	}{
		{[]string{"--help"}, "usage: " + exporterName, false},
		{[]string{"--version"}, exporterName + ", version ", true},
		{[]string{"--version", "--help"}, exporterName + ", version ", true},
		{[]string{"--help", "--version"}, exporterName + ", version ", true},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := run(append([]string{"--config.file=" + filepath.Join(t.TempDir(), "missing.yaml")}, tc.args...), &stdout, &stderr)
			out := stdout.String()
			if code != 0 || stderr.Len() != 0 || !strings.HasPrefix(out, tc.want) {
				t.Fatalf("exit %d, stdout %.80q, stderr %q; want exit 0, stdout %q...", code, out, stderr.String(), tc.want)
			}
			if tc.alone && strings.Contains(out, "usage:") {
				t.Errorf("the help printed after the version:\n%.300s", out)
			}
		})
	}
}

// kingpin's hidden flags print what they ask for as --help and --version do: to the
// stdout run is given, where they printed to os.Stdout, so that a write of it that fails
// (a full disk, a closed pipe) exits 1 saying so instead of 0; and the first of the flags
// that print ends the run, where kingpin printed a --help-long after --version too.
// --completion-bash's words are kingpin's own, through a pipe in place of os.Stdout, given
// back after the run: a word it refuses before "--" (--check, no flag of this
// application) leaves it completing flags.
func TestPrintingFlagsOutput(t *testing.T) {
	for _, tc := range []struct {
		args  []string
		want  string // what stdout starts with
		alone bool   // nothing of a help after it
	}{
		{[]string{"--help"}, "usage: " + exporterName, false},
		{[]string{"--version"}, exporterName + ", version ", true},
		{[]string{"--help-long"}, "usage: " + exporterName, false},
		{[]string{"--help-man"}, ".TH " + exporterName + " 1 ", false},
		{[]string{"--completion-script-bash"}, "\n_" + exporterName + "_bash_autocomplete() {", true},
		{[]string{"--completion-script-zsh"}, "#compdef " + exporterName, true},
		{[]string{"--completion-bash", "--log.level"}, "debug\ninfo\nwarn\nerror", true},
		{[]string{"--completion-bash", "--help-long", "--log.level"}, "debug\ninfo\nwarn\nerror", true},
		{[]string{"--completion-bash", "--"}, "--help\n--config.file\n", true},
		{[]string{"--completion-bash", "--check", "--", "--"}, "--help\n--config.file\n", true},
		{[]string{"--version", "--help-long"}, exporterName + ", version ", true},
		{[]string{"--help-man", "--help"}, ".TH " + exporterName + " 1 ", true},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			osStdout := os.Stdout
			var stdout, stderr bytes.Buffer
			code := run(tc.args, &stdout, &stderr)
			if os.Stdout != osStdout {
				os.Stdout = osStdout
				t.Fatal("os.Stdout is not given back after the run")
			}
			out := stdout.String()
			if code != 0 || stderr.Len() != 0 || !strings.HasPrefix(out, tc.want) {
				t.Fatalf("exit %d, stdout %.80q, stderr %q; want exit 0, stdout %q...", code, out, stderr.String(), tc.want)
			}
			if tc.alone && strings.Contains(out, "usage:") {
				t.Errorf("a help printed after what was asked for:\n%.300s", out)
			}
			stderr.Reset()
			if code := run(tc.args, failingWriter{}, &stderr); code != 1 || !strings.Contains(stderr.String(), "writing the output: no space left on device") {
				t.Errorf("a stdout that fails: exit %d, stderr %q; want 1 and the error", code, stderr.String())
			}
		})
	}
}
