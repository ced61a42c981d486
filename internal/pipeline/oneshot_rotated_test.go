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
	cfg, err := config.Parse(fmt.Appendf(nil, `
inputs:
  - name: pods
    path: '%s/*_*_*/*/*.log'
    wrapper: cri
    path_captures: '/[^_/]+_(?P<pod>[^_]+)_[^/]+/(?P<container>[^/]+)/'
    log_format: combined
rules:
  - {name: requests, labels: {container: '${container}', workload: '${workload}', status: '${status}'}}
`, dir), "rules.yaml")
	if err != nil {
		t.Fatal(err)
	}
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
		{"another log between", []string{rotated, other, live}, "input pods: 4 of 4 lines fit (1 messages unfinished at the end of their file skipped)",
			[]string{`requests_total{container="nginx",status="200",workload="web"} 2`, `requests_total{container="nginx",status="404",workload="web"} 1`, `requests_total{container="sidecar",status="200",workload="web"} 1`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, mode := range []string{"replay", "sample"} {
				var out, summary, logs bytes.Buffer
				opts := Options{Now: time.Now, Summary: &summary, Logger: slog.New(slog.NewTextHandler(&logs, nil))}
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
