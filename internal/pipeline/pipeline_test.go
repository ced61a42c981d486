package pipeline

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
	"weak"

	"github.com/logwindow/logwindow_exporter/config"
	"github.com/logwindow/logwindow_exporter/internal/selfmetric"
	"github.com/logwindow/logwindow_exporter/internal/testutil/await"
)

// A reload that arrives during shutdown (a SIGHUP racing SIGTERM) must not start followers
// again after Stop.
func TestReloadAfterStopRefused(t *testing.T) {
	cfg, err := config.Parse([]byte("inputs: [{path: "+filepath.Join(t.TempDir(), "a.log")+"}]\nrules: [{name: lines, match: x}]\n"), "rules.yaml")
	if err != nil {
		t.Fatal(err)
	}
	p, err := Start(cfg, Options{Now: time.Now})
	if err != nil {
		t.Fatal(err)
	}
	p.Stop()
	if err := p.Reload(cfg); !errors.Is(err, errStopped) {
		t.Errorf("Reload after Stop = %v, want errStopped", err)
	}
	if err := p.ReloadFile(); !errors.Is(err, errStopped) {
		t.Errorf("ReloadFile after Stop = %v, want errStopped", err)
	}
	if n := len(p.inputs); n != 0 {
		t.Errorf("%d inputs running after Stop and a reload", n)
	}
}

// startFile starts a pipeline on rules (LOG replaced by a new file's path) and returns it
// with the file's path; the pipeline stops when the test ends.
func startFile(t *testing.T, rules string) (*Pipeline, string) {
	t.Helper()
	log := filepath.Join(t.TempDir(), "a.log")
	if err := os.WriteFile(log, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	p := startRules(t, []byte(strings.ReplaceAll(rules, "LOG", log)), Options{Now: time.Now, PollInterval: 10 * time.Millisecond})
	return p, log
}

func appendTo(t *testing.T, path, text string) {
	t.Helper()
	if err := appendText(path, text); err != nil {
		t.Fatal(err)
	}
}

// appendText is appendTo for a goroutine other than the test's, which may not end it.
func appendText(path, text string) error {
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	_, err = f.WriteString(text)
	return errors.Join(err, f.Close())
}

// waitRead waits until the pipeline's one input has handed on n lines.
func waitRead(t *testing.T, p *Pipeline, n uint64) selfmetric.InputStats {
	t.Helper()
	var s []selfmetric.InputStats
	if !await.Until(t, func() bool { s = p.inputStats(); return len(s) == 1 && s[0].LinesRead == n }) {
		t.Fatalf("input stats %+v, want %d lines read", s, n)
	}
	return s[0]
}

// waitReady waits until every input of p has opened and positioned its files.
func waitReady(t *testing.T, p *Pipeline) {
	t.Helper()
	if !await.Until(t, p.Ready) {
		t.Fatal("the pipeline is not ready")
	}
}

// waitTotal gathers p until the samples whose names start with prefix sum to want, and
// returns that gathering; it fails the test, saying what was awaited, when they pass want
// (a line counted twice) or do not reach it before await.Deadline.
func waitTotal(t *testing.T, p *Pipeline, what, prefix string, want float64) map[string]float64 {
	t.Helper()
	var samples map[string]float64
	var got float64
	await.Until(t, func() bool {
		samples = gatherPipeline(t, p)
		got = sumOf(samples, prefix)
		return got >= want
	})
	if got != want {
		t.Fatalf("%s: %s %v, want %v", what, prefix, got, want)
	}
	return samples
}

// sumOf sums the samples whose names start with prefix.
func sumOf(samples map[string]float64, prefix string) float64 {
	var sum float64
	for k, v := range samples {
		if strings.HasPrefix(k, prefix) {
			sum += v
		}
	}
	return sum
}

// An input that receives no line after a reload must not keep the previous generation
// (its parser and stores) reachable.
func TestReloadReleasesPreviousGeneration(t *testing.T) {
	p, log := startFile(t, "inputs: [{path: LOG}]\nrules: [{name: lines, match: x}]\n")
	appendTo(t, log, "x\n")
	waitRead(t, p, 1)
	old := weak.Make(p.gen.Load())
	next, err := config.Parse([]byte("inputs: [{path: "+log+"}]\nrules: [{name: other, match: y}]\n"), "rules.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Reload(next); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		runtime.GC()
	}
	if old.Value() != nil {
		t.Error("the previous generation is still reachable after a reload with no line since")
	}
}

// Unmatched lines are those no rule matched, filters included, counted per input exactly:
// checked against each rule's regex and where filters applied to every line directly.
func TestUnmatchedLines(t *testing.T) {
	const rules = `
inputs: [{name: web, path: LOG}]
rules:
  - {name: errors, match: 'status=(?P<s>\d+)', where: {s: '^5'}}
  - {name: slow, match: 'took=(?P<t>\S+)', value: t}
`
	p, log := startFile(t, rules)
	cfg := p.gen.Load().cfg
	rng := rand.New(rand.NewPCG(15, 3))
	var text strings.Builder
	want := uint64(0)
	const n = 2000
	for range n {
		var line string
		switch rng.IntN(5) {
		case 0:
			line = fmt.Sprintf("status=%d", 200+rng.IntN(400))
		case 1:
			line = fmt.Sprintf("took=%d", rng.IntN(9))
		case 2:
			line = "took=bad" // matched by slow, dropped as a bad number: not unmatched
		case 3:
			line = fmt.Sprintf("status=%d took=%d", 200+rng.IntN(400), rng.IntN(9))
		default:
			line = "nothing here"
		}
		if !matchedByAny(cfg, line) {
			want++
		}
		text.WriteString(line + "\n")
	}
	appendTo(t, log, text.String())
	if got := waitRead(t, p, n).Unmatched; got != want {
		t.Errorf("unmatched = %d, want %d", got, want)
	}
}

// matchedByAny is the reference for unmatched lines: does a rule's regex match the line
// with every where filter satisfied?
func matchedByAny(cfg *config.Config, line string) bool {
next:
	for _, r := range cfg.Rules {
		m := r.Regexp.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		for _, w := range r.Where {
			if !w.Regexp.MatchString(m[w.Capture]) {
				continue next
			}
		}
		return true
	}
	return false
}

// MissingInputs names each input whose path matches no file, by name or path, and a rule
// file of no input at all: a glob that matches only directories (a pod's, its files'
// level left out) reads nothing either, as does a path that is a directory, or a glob
// whose files are all symbolic links out of its root (/var/log/containers/*.log, whose
// links lead into /var/log/pods), which the follower refuses.
// So does a path that is a named pipe or a device (nginx's access.log linked to
// /dev/stdout), which the follower refuses as not a regular file, retrying for ever:
// --config.check said OK of it, and the start nothing but that it retries.
func TestMissingInputs(t *testing.T) {
	dir := t.TempDir()
	present := filepath.Join(dir, "present.log")
	if err := os.WriteFile(present, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "pods", "web-1"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{"containers", "mixed", "inside/real"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for link, target := range map[string]string{
		"containers/web-1_default_nginx-1.log": present,
		"containers/web-2_default_nginx-2.log": present,
		"mixed/out.log":                        present,
		"inside/in.log":                        filepath.Join(dir, "inside/real/in.log"),
	} {
		if err := os.Symlink(target, filepath.Join(dir, link)); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{"mixed/own.log", "inside/real/in.log"} {
		if err := os.WriteFile(filepath.Join(dir, f), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := syscall.Mkfifo(filepath.Join(dir, "fifo.log"), 0o644); err != nil {
		t.Fatal(err)
	}
	// A glob of a directory and a pipe: the pipe, which a regular file could be meant
	// for, is told of rather than the directory.
	if err := os.MkdirAll(filepath.Join(dir, "special", "a.log"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(dir, "special", "b.log"), 0o644); err != nil {
		t.Fatal(err)
	}
	sock, err := net.Listen("unix", filepath.Join(dir, "sock.log"))
	if err != nil {
		t.Fatal(err)
	}
	defer sock.Close()
	cfg, err := config.Parse([]byte(fmt.Sprintf(`
inputs:
  - {name: ok, path: %[1]s/present.log}
  - {name: glob, path: %[1]s/*.log}
  - {name: typo, path: %[1]s/acess.log}
  - {path: %[1]s/none-*.log}
  - {name: pods, path: %[1]s/pods/*}
  - {name: dir, path: %[1]s/pods}
  - {name: links, path: %[1]s/containers/*.log}
  - {name: mixed, path: %[1]s/mixed/*.log}
  - {name: inside, path: %[1]s/inside/*.log}
  - {name: linked, path: %[1]s/containers/web-1_default_nginx-1.log}
  - {name: fifo, path: %[1]s/fifo.log}
  - {name: fifos, path: %[1]s/fifo.*}
  - {name: device, path: /dev/null}
  - {name: special, path: %[1]s/special/*.log}
  - {name: socket, path: %[1]s/sock.log}
rules: [{name: lines, match: x}]
`, dir)), "rules.yaml")
	if err != nil {
		t.Fatal(err)
	}
	real, err := filepath.EvalSymlinks(present) // a temporary directory may be under a link (darwin's /var)
	if err != nil {
		t.Fatal(err)
	}
	got := MissingInputs(cfg)
	want := []string{
		fmt.Sprintf(`input "typo": path %q matches no file; it is followed once one appears, and logwindow_input_files{input="typo"} is 0 until then`, dir+"/acess.log"),
		fmt.Sprintf(`input %[1]q: path %[1]q matches no file; it is followed once one appears, and logwindow_input_files{input=%[1]q} is 0 until then`, dir+"/none-*.log"),
		fmt.Sprintf(`input "pods": path %q matches only directories, which are not read (a glob names files: DIR/*.log); it is followed once a file matches, and logwindow_input_files{input="pods"} is 0 until then`, dir+"/pods/*"),
		fmt.Sprintf(`input "dir": path %q matches only directories, which are not read (a glob names files: DIR/*.log); it is followed once a file matches, and logwindow_input_files{input="dir"} is 0 until then`, dir+"/pods"),
		fmt.Sprintf(`input "links": path %q matches no file it reads: %[2]s/containers/web-1_default_nginx-1.log resolves to %[3]s, outside %[2]s/containers: a symbolic link out of the glob's root is not followed, and so is the other file it matches; glob the files the links lead to, and logwindow_input_files{input="links"} is 0 until then`, dir+"/containers/*.log", dir, real),
		fmt.Sprintf(`input "fifo": path %[1]q matches no regular file (%[1]s is a named pipe), and only a regular file is read; it is followed once one is there, and logwindow_input_files{input="fifo"} is 0 until then`, dir+"/fifo.log"),
		fmt.Sprintf(`input "fifos": path %q matches no regular file (%s is a named pipe), and only a regular file is read; it is followed once one is there, and logwindow_input_files{input="fifos"} is 0 until then`, dir+"/fifo.*", dir+"/fifo.log"),
		`input "device": path "/dev/null" matches no regular file (/dev/null is a device), and only a regular file is read; it is followed once one is there, and logwindow_input_files{input="device"} is 0 until then`,
		fmt.Sprintf(`input "special": path %q matches no regular file (%s is a named pipe), and only a regular file is read; it is followed once one is there, and logwindow_input_files{input="special"} is 0 until then`, dir+"/special/*.log", dir+"/special/b.log"),
		fmt.Sprintf(`input "socket": path %[1]q matches no regular file (%[1]s is a socket), and only a regular file is read; it is followed once one is there, and logwindow_input_files{input="socket"} is 0 until then`, dir+"/sock.log"),
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("got:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}

	none, err := config.Parse([]byte("rules: [{name: lines, match: x}]\n"), "rules.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := MissingInputs(none), "no inputs: served, the rules read no line"; len(got) != 1 || !strings.HasPrefix(got[0], want) {
		t.Errorf("a rule file of no input: %q, want one warning beginning %q", got, want)
	}
}

// MissingInputs, at every start and reload, stats a glob's matches until the first file
// it reads, not the thousands of a node's pods; all of them only when it warns that it
// reads none.
func TestMissingInputsStats(t *testing.T) {
	dir := t.TempDir()
	const pods = 20
	for _, d := range []string{"pods", "containers"} {
		if err := os.Mkdir(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for i := range pods {
		log := filepath.Join(dir, "pods", fmt.Sprintf("%d.log", i))
		if err := os.WriteFile(log, nil, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(log, filepath.Join(dir, "containers", fmt.Sprintf("%d.log", i))); err != nil {
			t.Fatal(err)
		}
	}
	stats := countStats(t)
	for _, tc := range []struct {
		name, glob string
		warnings   int
		stats      int
	}{
		{"files it reads", "pods/*.log", 0, 1},
		{"links out of its root", "containers/*.log", 1, pods},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := config.Parse(fmt.Appendf(nil, "inputs: [{path: %s}]\nrules: [{name: lines, match: x}]\n", filepath.Join(dir, tc.glob)), "rules.yaml")
			if err != nil {
				t.Fatal(err)
			}
			*stats = 0
			if got := MissingInputs(cfg); len(got) != tc.warnings {
				t.Errorf("warnings %q, want %d", got, tc.warnings)
			}
			if *stats != tc.stats {
				t.Errorf("%d stats, want %d", *stats, tc.stats)
			}
		})
	}
}

// ReadTwice names two inputs whose globs (or a path and a glob, written otherwise than
// the glob, which config warns of) match a file now, when a rule reads both: that rule
// counts the file's lines twice. Rules that keep to one input each count them once.
func TestReadTwice(t *testing.T) {
	dir := t.TempDir()
	for _, f := range []string{"pods/ns_web-1_u1/nginx/0.log", "pods/ns_web-2_u2/nginx/0.log", "pods/ns_app-1_u3/app/0.log"} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, f)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, f), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// A path given as it is is followed wherever its link leads, out of its directory too.
	if err := os.Mkdir(filepath.Join(dir, "links"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(dir, "pods/ns_web-1_u1/nginx/0.log"), filepath.Join(dir, "links/web.log")); err != nil {
		t.Fatal(err)
	}
	// kubelet's /var/log/containers: links into the pods' tree, out of the glob's root.
	if err := os.Mkdir(filepath.Join(dir, "containers"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(dir, "pods/ns_web-1_u1/nginx/0.log"), filepath.Join(dir, "containers/web-1_ns_nginx-0.log")); err != nil {
		t.Fatal(err)
	}
	inputs := fmt.Sprintf(`
inputs:
  - {name: nginx, path: %[1]s/pods/*_*_*/nginx/*.log}
  - {name: all, path: %[1]s/pods/*_*_*/*/*.log}
  - {name: app, path: %[1]s/pods/*_*_*/app/*.log}
  - {name: link, path: %[1]s/links/web.log}`, dir)
	stats := countStats(t)
	for _, tc := range []struct {
		name, inputs, rules string
		// stats are the stats of files it costs: each input of a pair that a rule reads
		// both of is listed, once; the other inputs are not.
		stats int
		want  []string
	}{
		// A file three inputs read is one warning, naming them all: one warning per two
		// of them, each naming two, had narrowing one glob taken for the fix.
		{"a rule of every input", "\n", "rules: [{name: lines, match: x}]", 2 + 3 + 1 + 1, []string{
			fmt.Sprintf(`inputs "nginx", "all", "link" all read %s/pods/ns_web-1_u1/nginx/0.log: rule "lines", which reads 3 of those inputs, counts their lines 3 times; narrow a glob, or name one of the inputs in the rule's inputs:`, dir),
			fmt.Sprintf(`inputs "nginx" and "all" both read %s/pods/ns_web-2_u2/nginx/0.log: rule "lines", which reads both inputs, counts their lines twice; narrow a glob, or name one of the inputs in the rule's inputs:`, dir),
			fmt.Sprintf(`inputs "all" and "app" both read %s/pods/ns_app-1_u3/app/0.log: rule "lines", which reads both inputs, counts their lines twice; narrow a glob, or name one of the inputs in the rule's inputs:`, dir),
		}},
		{"rules of two inputs each", "\n", "rules: [{name: a, match: x, inputs: [nginx, all]}, {name: b, match: x, inputs: [all, link]}]", 2 + 3 + 1, []string{
			fmt.Sprintf(`inputs "nginx", "all", "link" all read %s/pods/ns_web-1_u1/nginx/0.log: rule "a", which reads 2 of those inputs, counts their lines twice; narrow a glob, or name one of the inputs in the rule's inputs:`, dir),
			fmt.Sprintf(`inputs "nginx" and "all" both read %s/pods/ns_web-2_u2/nginx/0.log: rule "a", which reads both inputs, counts their lines twice; narrow a glob, or name one of the inputs in the rule's inputs:`, dir),
		}},
		// The link, which no rule reads with another input, makes no third.
		{"a rule of two inputs", "\n", "rules: [{name: a, match: x, inputs: [nginx, all]}, {name: b, match: x, inputs: [link]}]", 2 + 3, []string{
			fmt.Sprintf(`inputs "nginx" and "all" both read %s/pods/ns_web-1_u1/nginx/0.log and 1 other file: rule "a", which reads both inputs, counts their lines twice; narrow a glob, or name one of the inputs in the rule's inputs:`, dir),
		}},
		{"rules of one input each", "\n", "rules: [{name: a, match: x, inputs: [nginx, app]}, {name: b, match: x, inputs: [all]}, {name: c, match: x, inputs: [link]}]", 2 + 1, nil},
		// The follower refuses a glob's links out of its root: only "all" reads the file.
		{"links out of a glob's root", fmt.Sprintf(`
  - {name: containers, path: %[1]s/containers/*.log}
`, dir), "rules: [{name: a, match: x, inputs: [containers, all]}]", 1 + 3, nil},
		// A container's stdout and stderr, each read by an input of its own: no line is
		// read twice.
		{"streams apart", fmt.Sprintf(`
  - {name: out, path: %[1]s/pods/*/app/*.log, wrapper: cri, streams: [stdout]}
  - {name: err, path: %[1]s/pods/*_app-*_*/app/*.log, wrapper: cri, streams: [stderr]}
  - {name: both, path: %[1]s/pods/ns_*/app/*.log, wrapper: cri}
`, dir), "rules: [{name: a, match: x, inputs: [out, err]}, {name: b, match: x, inputs: [err, both]}]", 1 + 1, []string{
			fmt.Sprintf(`inputs "err" and "both" both read %s/pods/ns_app-1_u3/app/0.log: rule "b", which reads both inputs, counts their lines twice; narrow a glob, or name one of the inputs in the rule's inputs:`, dir),
		}},
		// Read by the three, a line is counted twice all the same: by "both" and by the
		// input of its stream.
		{"streams apart, a rule of the three", fmt.Sprintf(`
  - {name: out, path: %[1]s/pods/*/app/*.log, wrapper: cri, streams: [stdout]}
  - {name: err, path: %[1]s/pods/*_app-*_*/app/*.log, wrapper: cri, streams: [stderr]}
  - {name: both, path: %[1]s/pods/ns_*/app/*.log, wrapper: cri}
`, dir), "rules: [{name: a, match: x, inputs: [out, err, both]}]", 1 + 1 + 1, []string{
			fmt.Sprintf(`inputs "out", "err", "both" all read %s/pods/ns_app-1_u3/app/0.log: rule "a", which reads 3 of those inputs, counts their lines twice; narrow a glob, or name one of the inputs in the rule's inputs:`, dir),
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := config.Parse([]byte(inputs+tc.inputs+tc.rules), "rules.yaml")
			if err != nil {
				t.Fatal(err)
			}
			*stats = 0
			if got := ReadTwice(cfg); !slices.Equal(got, tc.want) {
				t.Errorf("got:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
			}
			if *stats != tc.stats {
				t.Errorf("%d stats, want %d", *stats, tc.stats)
			}
			// What --config.check, the start and a reload warn of.
			start := StartWarnings(cfg, 0)
			for _, w := range tc.want {
				if !slices.Contains(start, w) {
					t.Errorf("start warnings:\n%s\nwant among them:\n%s", strings.Join(start, "\n"), w)
				}
			}
		})
	}
}

// A scrape that sees a line read must see its events, though a sink holds a read's events
// until the read's last line (or a worker's batch's) was parsed: lines count as read once
// they are written. The log grows while the test reads, over and over, the input's lines
// read and then the rule's total, which counts every line; read in that order, the total
// may only be ahead.
func TestLinesReadCountedWithTheirEvents(t *testing.T) {
	const writes, perWrite = 300, 40
	for _, shards := range []int{1, 2} {
		t.Run(fmt.Sprintf("shards=%d", shards), func(t *testing.T) {
			p, log := startFile(t, fmt.Sprintf("inputs: [{path: LOG, shards: %d}]\nrules: [{name: lines, match: x}]\n", shards))
			failed := make(chan error, 1)
			go func() {
				chunk := strings.Repeat("x\n", perWrite)
				for range writes {
					if err := appendText(log, chunk); err != nil {
						failed <- err
						return
					}
				}
			}()
			var text strings.Builder
			for checks := 0; ; checks++ {
				select {
				case err := <-failed:
					t.Fatal(err)
				default:
				}
				s := p.inputStats()
				read := s[0].LinesRead
				text.Reset()
				if err := p.Collector().WriteText(&text, nil); err != nil {
					t.Fatal(err)
				}
				var total uint64
				for l := range strings.Lines(text.String()) {
					if v, ok := strings.CutPrefix(l, "lines_total "); ok {
						if _, err := fmt.Sscan(v, &total); err != nil {
							t.Fatal(err)
						}
					}
				}
				if total < read {
					t.Fatalf("check %d: %d lines read, but the rule counted %d", checks, read, total)
				}
				if read == writes*perWrite {
					t.Logf("%d checks", checks)
					return
				}
				if checks > 1e6 {
					t.Fatalf("%d of %d lines read", read, writes*perWrite)
				}
			}
		})
	}
}

// A reload that changes how an input's lines are read (wrapper: cri added or taken out,
// candidate formats given or taken back) reads the lines after it that way, and reads
// none twice: the input's reader is started anew from where the last one stopped.
func TestReloadChangesHowLinesAreRead(t *testing.T) {
	const combined = `10.0.0.1 - - [01/Mar/2024:12:00:00 +0000] "GET / HTTP/1.1" 503 5 "-" "curl"`
	for _, tc := range []struct {
		name, before, after string
		rule                string
		first, second       string // a line read under before, one under after
	}{
		{name: "cri added", before: "{path: LOG}", after: "{path: LOG, wrapper: cri}", rule: "{name: lines, match: '^x$'}",
			first: "x", second: "2024-03-01T12:00:00Z stdout F x"},
		{name: "cri taken out", before: "{path: LOG, wrapper: cri}", after: "{path: LOG}", rule: "{name: lines, match: '^x$'}",
			first: "2024-03-01T12:00:00Z stdout F x", second: "x"},
		{name: "candidates given", before: "{path: LOG, log_format: combined}", after: "{path: LOG, log_format: auto}",
			rule: "{name: lines, labels: {status: '${status}'}}", first: combined, second: combined},
		{name: "candidates taken back", before: "{path: LOG, log_format: auto}", after: "{path: LOG, log_format: combined}",
			rule: "{name: lines, labels: {status: '${status}'}}", first: combined, second: combined},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rules := func(input string) string { return "inputs: [" + input + "]\nrules: [" + tc.rule + "]\n" }
			p, log := startFile(t, rules(tc.before))
			appendTo(t, log, tc.first+"\n")
			waitTotal(t, p, "before the reload", "lines_total{", 1)
			cfg, err := config.Parse([]byte(strings.ReplaceAll(rules(tc.after), "LOG", log)), "rules.yaml")
			if err != nil {
				t.Fatal(err)
			}
			if err := p.Reload(cfg); err != nil {
				t.Fatal(err)
			}
			// A rule whose format changed starts its series anew.
			before := sumOf(gatherPipeline(t, p), "lines_total{")
			appendTo(t, log, tc.second+"\n")
			waitTotal(t, p, "after the reload", "lines_total{", before+1)
		})
	}
}

// A reload that takes an input's candidate formats away parses the lines it held while
// their file's format was being chosen: the reader started anew reads on past them, so
// that a line held and not parsed then is never counted.
func TestReloadWithoutCandidatesParsesHeldLines(t *testing.T) {
	rules := "rules: [{name: all, match: '.'}]\n"
	p, log := startFile(t, "inputs: [{path: LOG, log_format: auto}]\n"+rules)
	appendTo(t, log, "a line of no format\n")
	waitRead(t, p, 1) // held: no candidate's format was chosen from it
	cfg, err := config.Parse([]byte("inputs: [{path: '"+log+"'}]\n"+rules), "rules.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Reload(cfg); err != nil {
		t.Fatal(err)
	}
	appendTo(t, log, "a line after the reload\n")
	waitTotal(t, p, "the held line and the one after the reload", "all_total{", 2)
}

// startRules starts the rule file text with the options o, stopped at the test's end.
func startRules(t *testing.T, text []byte, o Options) *Pipeline {
	t.Helper()
	cfg, err := config.Parse(text, "rules.yaml")
	if err != nil {
		t.Fatal(err)
	}
	p, err := Start(cfg, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Stop)
	return p
}
