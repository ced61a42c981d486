package pipeline

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/logwindow/logwindow_exporter/config"
)

// A compressed log given to a one-shot, by itself or among a glob's matches (a rotated
// log logrotate or the kubelet compressed), is not read as lines of binary that fit no
// rule: the one-shot reads the other files, then fails naming it and how to read it.
func TestOneShotsRefuseCompressedFiles(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "access.log"), []byte("GET / 200\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var gz bytes.Buffer
	w := gzip.NewWriter(&gz)
	for range 50 {
		fmt.Fprintln(w, "GET / 500")
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	compressed := filepath.Join(dir, "access.log.1.gz")
	if err := os.WriteFile(compressed, gz.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ name, input, file string }{
		{"a glob's match an input reads", "access.log*", filepath.Join(dir, "access.log*")},
		{"given by itself", "access.log", compressed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := config.Parse(fmt.Appendf(nil, `
inputs:
  - {name: web, path: '%s'}
rules:
  - {name: web, match: ' (?P<status>\d{3})$', labels: {status: '${status}'}}
`, filepath.Join(dir, tc.input)), "rules.yaml")
			if err != nil {
				t.Fatal(err)
			}
			opts := Options{Now: time.Now, Summary: io.Discard}
			var out strings.Builder
			replayErr := Replay(cfg, []string{tc.file}, opts, &out)
			_, explainErr := explainAll(cfg, tc.file, 10, opts)
			for mode, err := range map[string]error{"replay": replayErr, "explain": explainErr, "sample": Sample(cfg, []string{tc.file}, opts)} {
				if want := compressed + ": gzip-compressed"; err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "zcat") {
					t.Errorf("%s: %v; want an error naming %s as gzip-compressed and how to read it", mode, err, compressed)
				}
			}
			if tc.file != compressed && !strings.Contains(out.String(), `web_total{status="200"} 1`+"\n") {
				t.Errorf("replay did not read the other file:\n%s", out.String())
			}
		})
	}
}
