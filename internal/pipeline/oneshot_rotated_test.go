package pipeline

import (
	"bytes"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/logwindow/logwindow_exporter/config"
)

// podsConfig is an input of the pod logs under dir, read as the kubelet writes them with
// their pod and container taken from their path, and a rule of their requests by labels.
func podsConfig(t *testing.T, dir, labels string) *config.Config {
	t.Helper()
	cfg, err := config.Parse(fmt.Appendf(nil, `
inputs:
  - name: pods
    path: '%s/*_*_*/*/*.log'
    wrapper: cri
    path_captures: '/[^_/]+_(?P<pod>[^_]+)_[^/]+/(?P<container>[^/]+)/'
    log_format: combined
rules:
  - {name: requests, labels: %s}
`, dir, labels), "rules.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// A log's rotated files given to a one-shot with it, oldest first, are read as the input
// reads the log (its wrapper, the captures of its path), a CRI message the runtime split
// across the rotation joined whole, as the running exporter, which reads a rotated file on
// under its log's path, joins it. A message of one log is never finished by the first
// part of another's.
func TestOneShotRotatedFilesOfALog(t *testing.T) {
	dir := t.TempDir()
	pod := filepath.Join(dir, "default_web-7d4b9c8f6d-x2kqz_0f1e")
	const (
		ok  = `10.0.0.1 - - [01/Mar/2024:12:00:00 +0000] "GET / HTTP/1.1" 200 5 "-" "curl/8.5.0"`
		cut = `10.0.0.2 - - [01/Mar/2024:12:00:01 +0000] "GET /a HTTP/1.1" `
		end = `404 5 "-" "curl/8.5.0"`
	)
	write := func(path string, lines ...string) string {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	rotated := write(filepath.Join(pod, "nginx", "0.log.20240301-120002"),
		"2024-03-01T12:00:00.1Z stdout F "+ok, "2024-03-01T12:00:01.2Z stdout P "+cut)
	// Last written before the log, as a rotated file is.
	if err := os.Chtimes(rotated, time.Now().Add(-time.Hour), time.Now().Add(-time.Hour)); err != nil {
		t.Fatal(err)
	}
	live := write(filepath.Join(pod, "nginx", "0.log"),
		"2024-03-01T12:00:01.3Z stdout F "+end, "2024-03-01T12:00:02Z stdout F "+ok)
	// Another container's log whose message in parts its file does not finish: the next
	// file's first part is not its.
	other := write(filepath.Join(pod, "sidecar", "0.log"), "2024-03-01T12:00:00Z stdout F "+ok, "2024-03-01T12:00:01Z stdout P "+cut)
	cfg := podsConfig(t, dir, `{container: '${container}', workload: '${workload}', status: '${status}'}`)
	for _, tc := range []struct {
		name    string
		files   []string
		summary string
		want    []string
	}{
		{"rotated, then the log", []string{rotated, live}, "input pods: 3 of 3 lines fit",
			[]string{`requests_total{container="nginx",status="200",workload="web"} 2`, `requests_total{container="nginx",status="404",workload="web"} 1`}},
		// As ls lists them, the log before its rotated files: read in the order the log
		// was written all the same.
		{"the log, then rotated", []string{live, rotated}, "input pods: 3 of 3 lines fit",
			[]string{`requests_total{container="nginx",status="200",workload="web"} 2`, `requests_total{container="nginx",status="404",workload="web"} 1`}},
		{"relative", []string{rel(t, rotated), rel(t, live)}, "input pods: 3 of 3 lines fit",
			[]string{`requests_total{container="nginx",status="200",workload="web"} 2`, `requests_total{container="nginx",status="404",workload="web"} 1`}},
		// A glob the exporter expands, quoted so that no shell does: no input's path reads
		// it as written, its files are each read as if given by themselves.
		{"a glob of the log's files", []string{filepath.Join(pod, "nginx", "0.log*")}, "input pods: 3 of 3 lines fit",
			[]string{`requests_total{container="nginx",status="200",workload="web"} 2`, `requests_total{container="nginx",status="404",workload="web"} 1`}},
		{"a relative glob of the log's files", []string{filepath.Join(rel(t, filepath.Join(pod, "nginx")), "0.log*")}, "input pods: 3 of 3 lines fit",
			[]string{`requests_total{container="nginx",status="200",workload="web"} 2`, `requests_total{container="nginx",status="404",workload="web"} 1`}},
		{"a glob of the pod's files", []string{filepath.Join(pod, "*", "0.log*")}, "input pods: 4 of 4 lines fit (1 message unfinished at the end of their file skipped)",
			[]string{`requests_total{container="nginx",status="200",workload="web"} 2`, `requests_total{container="nginx",status="404",workload="web"} 1`, `requests_total{container="sidecar",status="200",workload="web"} 1`}},
		{"another log between", []string{rotated, other, live}, "input pods: 4 of 4 lines fit (1 message unfinished at the end of their file skipped)",
			[]string{`requests_total{container="nginx",status="200",workload="web"} 2`, `requests_total{container="nginx",status="404",workload="web"} 1`, `requests_total{container="sidecar",status="200",workload="web"} 1`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, mode := range []string{"replay", "sample"} {
				var out, summary, logs bytes.Buffer
				opts := Options{Now: time.Now, Summary: &summary, Logger: slog.New(slog.NewTextHandler(&logs, nil))}
				var err error
				if mode == "replay" {
					err = Replay(cfg, tc.files, opts, &out)
				} else {
					err = Sample(cfg, tc.files, opts)
				}
				if err != nil {
					t.Errorf("%s: %v", mode, err)
				}
				if got, want := summary.String(), tc.summary+"\n"; got != want {
					t.Errorf("%s: summary %q, want %q", mode, got, want)
				}
				if strings.Contains(logs.String(), "no input reads") {
					t.Errorf("%s: logged %s", mode, logs.String())
				}
				for _, want := range tc.want {
					if mode == "replay" && !strings.Contains(out.String(), want+"\n") {
						t.Errorf("replay lacks %s:\n%s", want, out.String())
					}
				}
			}
		})
	}
}

// rel is path relative to the working directory.
func rel(t *testing.T, path string) string {
	t.Helper()
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	r, err := filepath.Rel(wd, path)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// A glob of a log's files read each as if given by itself is still read as a glob: a
// symlink among its matches to a file out of its root is not followed, the one-shot
// failing after its output naming the glob and the link, the others read as the input's.
func TestOneShotGlobOfALogsFilesRefusesLinksOut(t *testing.T) {
	dir := t.TempDir()
	nginx := filepath.Join(dir, "default_web-7d4b9c8f6d-x2kqz_0f1e", "nginx")
	if err := os.MkdirAll(nginx, 0o755); err != nil {
		t.Fatal(err)
	}
	const ok = `10.0.0.1 - - [01/Mar/2024:12:00:00 +0000] "GET / HTTP/1.1" 200 5 "-" "curl/8.5.0"`
	for path, line := range map[string]string{
		filepath.Join(nginx, "0.log"):                 "2024-03-01T12:00:00Z stdout F " + ok,
		filepath.Join(nginx, "0.log.20240301-120000"): "2024-03-01T11:00:00Z stdout F " + ok,
		filepath.Join(dir, "secret.log"):              "2024-03-01T11:00:00Z stdout F " + strings.Replace(ok, " 200 ", " 500 ", 1),
	} {
		if err := os.WriteFile(path, []byte(line+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	link := filepath.Join(nginx, "0.log.20240301-110000")
	if err := os.Symlink("../../secret.log", link); err != nil {
		t.Fatal(err)
	}
	// A link to nothing is no file: neither read nor warned of.
	if err := os.Symlink("gone", filepath.Join(nginx, "0.log.bak")); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Parse(fmt.Appendf(nil, `
inputs:
  - {name: pods, path: '%s/*_*_*/*/*.log', wrapper: cri, log_format: combined}
rules:
  - {name: requests, labels: {status: '${status}'}}
`, dir), "rules.yaml")
	if err != nil {
		t.Fatal(err)
	}
	glob := filepath.Join(nginx, "0.log*")
	var out, summary, logs bytes.Buffer
	err = Replay(cfg, []string{glob}, Options{Now: time.Now, Summary: &summary, Logger: slog.New(slog.NewTextHandler(&logs, nil))}, &out)
	if want := "replay " + glob + ": " + link + " resolves to "; err == nil || !strings.Contains(err.Error(), want) || strings.Count(err.Error(), "\n") > 0 {
		t.Errorf("%v; want the link refused (%q...), alone", err, want)
	}
	if strings.Contains(logs.String(), "no input reads") {
		t.Errorf("logged %s", logs.String())
	}
	if !strings.Contains(out.String(), `requests_total{status="200"} 2`+"\n") || strings.Contains(out.String(), `status="500"`) {
		t.Errorf("replay read not the glob's two files alone:\n%s", out.String())
	}
	if got, want := summary.String(), "input pods: 2 of 2 lines fit\n"; got != want {
		t.Errorf("summary %q, want %q", got, want)
	}
}

// A glob given to --explain that no input reads as written, but whose matches an input
// reads (a node's pod logs spelled with a shorter glob, a log's rotated files), is
// explained as --replay reads it: each match as its input reads it, with its wrapper and
// path captures, not as one file no input reads.
func TestExplainGlobOfAnInputsFiles(t *testing.T) {
	dir := t.TempDir()
	const ok = `10.0.0.1 - - [01/Mar/2024:12:00:00 +0000] "GET / HTTP/1.1" 200 5 "-" "curl/8.5.0"`
	for pod, status := range map[string]string{"default_web-7d4b9c8f6d-x2kqz_0f1e": "200", "default_api-0_9a8b": "503"} {
		nginx := filepath.Join(dir, pod, "nginx")
		if err := os.MkdirAll(nginx, 0o755); err != nil {
			t.Fatal(err)
		}
		line := "2024-03-01T12:00:00Z stdout F " + strings.Replace(ok, " 200 ", " "+status+" ", 1)
		if err := os.WriteFile(filepath.Join(nginx, "0.log"), []byte(line+"\n"+line+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cfg := podsConfig(t, dir, `{pod: '${pod}', status: '${status}'}`)
	for _, glob := range []string{
		filepath.Join(dir, "*", "nginx", "*.log"),
		filepath.Join(dir, "default_web-7d4b9c8f6d-x2kqz_0f1e", "nginx", "0.log*"),
	} {
		t.Run(filepath.Base(filepath.Dir(filepath.Dir(glob))), func(t *testing.T) {
			var summary, logs bytes.Buffer
			lines, err := explainAll(cfg, glob, 10, Options{Now: time.Now, Summary: &summary, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
			if err != nil {
				t.Errorf("explain: %v", err)
			}
			if strings.Contains(logs.String(), "no input reads") {
				t.Errorf("logged %s", logs.String())
			}
			if len(lines) == 0 {
				t.Fatal("no line explained")
			}
			for _, l := range lines {
				if !l.Counted || l.Input != "pods" || l.File == "" || len(l.Rules) != 1 || len(l.Rules[0].Labels) != 2 || l.Rules[0].Labels[0].Value == "" {
					t.Errorf("line %d of %s: %+v; want it counted by the input's rule, with its pod from the path", l.Number, l.File, l)
				}
			}
			if want := fmt.Sprintf("input pods: %d of %d lines fit\n", len(lines), len(lines)); summary.String() != want {
				t.Errorf("summary %q, want %q", summary.String(), want)
			}
		})
	}
}
