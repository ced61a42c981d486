package pipeline

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/logwindow/logwindow_exporter/exporter"
	"github.com/logwindow/logwindow_exporter/internal/storage"
	"github.com/logwindow/logwindow_exporter/internal/testutil/syncbuf"
	"github.com/logwindow/logwindow_exporter/internal/testutil/testclock"
)

// TestStorageUpgrade is a differential test of an upgrade: a snapshot an earlier build
// wrote as it stopped (testdata/upgrade/CONFIG/BUILD/snapshot, of CONFIG/rules.yaml),
// restored by this one at the second the earlier build was last scraped, serves every
// sample that build served then (served.txt): each rule's totals and windows, its sketches,
// top values, distinct counts and histograms, its rates, and the rule's counters. This
// build's own samples (a drop reason the earlier build did not know) may come in addition.
//
// The builds are the first that wrote snapshots (f0bf3c7); the last before a value rule
// dropped negative values (cc28006: its windows, sketches and totals hold some, and its
// rule headers keep one drop counter fewer); the last before a snapshot recorded the
// processing second of its cut (358e2ac). The configurations are every kind of rule
// (kinds) and windows that end at the last complete second (last-complete). Each was made
// by that build run on rules.yaml with --storage.path, reading a log of lines stamped
// around its start (some in the future, some past every window, some with negative
// values), scraped within one second (whose number heads served.txt), then sent SIGTERM;
// served.txt is that scrape's samples of the rules and their counters. The log's path,
// which a snapshot records, was then set to goldenLog in its bytes (of the same length,
// the checksums made anew), so that no path of the machine that made it is kept; this
// test reads no log.
func TestStorageUpgrade(t *testing.T) {
	configs, err := filepath.Glob(filepath.Join("testdata", "upgrade", "*", "rules.yaml"))
	if err != nil || len(configs) == 0 {
		t.Fatalf("no configurations: %v", err)
	}
	for _, config := range configs {
		rules, err := os.ReadFile(config)
		if err != nil {
			t.Fatal(err)
		}
		builds, err := filepath.Glob(filepath.Join(filepath.Dir(config), "*", "served.txt"))
		if err != nil || len(builds) == 0 {
			t.Fatalf("%s: no builds: %v", config, err)
		}
		for _, served := range builds {
			build := filepath.Dir(served)
			t.Run(filepath.Base(filepath.Dir(config))+"/"+filepath.Base(build), func(t *testing.T) {
				upgrade(t, string(rules), build)
			})
		}
	}
}

// goldenLog is the log's path the golden snapshots record.
const goldenLog = "/var/log/upgrade/a.log"

// upgrade restores the snapshot of build (a directory of testdata/upgrade) on rules and
// checks that it serves what build served (TestStorageUpgrade).
func upgrade(t *testing.T, rules, build string) {
	t.Helper()
	at, served := readServed(t, filepath.Join(build, "served.txt"))
	snap, err := os.ReadFile(filepath.Join(build, "snapshot"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(snap, []byte(goldenLog)) || bytes.Contains(snap, []byte("/tmp/")) {
		t.Errorf("the snapshot records a log other than %s, or a temporary path", goldenLog)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, storage.FileName), snap, 0o600); err != nil {
		t.Fatal(err)
	}
	var out syncbuf.Buffer
	log := filepath.Join(t.TempDir(), "app.log")
	cfg, o := storedOn(t, strings.ReplaceAll(rules, "LOG", log), dir, &out, Options{})
	o.Now = testclock.New(time.Unix(at, 0)).Now
	p, err := Start(cfg, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Stop)
	if !strings.Contains(out.String(), "restored the snapshot") || strings.Contains(out.String(), "not restored") {
		t.Fatalf("the snapshot was not restored whole:\n%s", out.String())
	}
	got := scrapeText(t, p)
	for _, line := range served {
		name := sampleName(line)
		if g, ok := got[name]; !ok || g != line {
			t.Errorf("served %q, this build %q", line, g)
		}
	}
}

// readServed reads a served.txt: the second it was served at, from its first line, and
// its samples.
func readServed(t *testing.T, path string) (int64, []string) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var at int64
	var lines []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if len(lines) == 0 && at == 0 {
			if _, err := fmt.Sscanf(sc.Text(), "# served at second %d", &at); err != nil {
				t.Fatalf("%s: first line %q: %v", path, sc.Text(), err)
			}
			continue
		}
		lines = append(lines, sc.Text())
	}
	if err := sc.Err(); err != nil || len(lines) == 0 {
		t.Fatalf("%s: %d samples, %v", path, len(lines), err)
	}
	return at, lines
}

// scrapeText scrapes p in the text format and returns each sample's line by its name and
// labels.
func scrapeText(t *testing.T, p *Pipeline) map[string]string {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	coll := p.Collector()
	reg.MustRegister(coll)
	srv := httptest.NewServer(exporter.Handler(coll, reg, nil))
	defer srv.Close()
	req, err := http.NewRequest(http.MethodGet, srv.URL, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Accept", "text/plain; version=0.0.4")
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("scrape: %s, %v", resp.Status, err)
	}
	out := map[string]string{}
	for line := range strings.Lines(string(body)) {
		line = strings.TrimSuffix(line, "\n")
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		out[sampleName(line)] = line
	}
	if len(out) == 0 {
		t.Fatalf("scrape served nothing:\n%s", body)
	}
	return out
}

// sampleName is a text-format sample's name and labels: all of it but its value, after
// the last space (a label value may hold spaces).
func sampleName(line string) string {
	return line[:max(strings.LastIndexByte(line, ' '), 0)]
}
