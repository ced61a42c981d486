package pipeline

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/logwindow/logwindow_exporter/config"
	"github.com/logwindow/logwindow_exporter/internal/testutil/testclock"
)

// TestOneShotJudgesAsLive is a differential check: the files a one-shot names of no
// format are those the running exporter counts under parser.NoFormat once each file has
// been quiet for heldQuiet, for a glob of one log format and one of candidates, of plain
// lines and of CRI lines, over
// files of the kinds the judgment tells apart (a few lines of another format, many, an
// nginx image's start-up lines alone or followed by another kind, a stray line, a tail of
// another format).
func TestOneShotJudgesAsLive(t *testing.T) {
	const (
		combined = `10.0.0.1 - - [29/Nov/2026:12:00:00 +0000] "GET / HTTP/1.1" 200 5 "-" "curl/8.5.0"` + "\n"
		object   = `{"level":"info","msg":"served /"}` + "\n"
	)
	cri, err := os.ReadFile(filepath.Join("testdata", "startup", "nginx.txt"))
	if err != nil {
		t.Fatal(err)
	}
	var startup strings.Builder // the messages of its CRI lines
	for line := range strings.Lines(string(cri)) {
		_, msg, _ := strings.Cut(line, " stdout F ")
		startup.WriteString(msg)
	}
	var templates strings.Builder
	for i := range 20 {
		fmt.Fprintf(&templates, "20-envsubst-on-templates.sh: Running envsubst on /etc/nginx/templates/s%d.conf.template to /etc/nginx/conf.d/s%d.conf\n", i, i)
	}
	pods := map[string]string{
		"web":             strings.Repeat(combined, 3),
		"few-objects":     strings.Repeat(object, 5),
		"many-objects":    strings.Repeat(object, 20),
		"startup":         startup.String(),
		"templates":       templates.String(),
		"templates-other": templates.String() + object,
		"startup-other":   startup.String() + "40-warm-cache.sh: warming /var/cache/nginx\n",
		"startup-request": startup.String() + combined,
		"late-fit":        strings.Repeat(object, 20) + strings.Repeat(combined, 2),
		"stray":           strings.Repeat(combined, 20) + object,
		"tail":            strings.Repeat(combined, 3) + strings.Repeat(object, 20),
		"blank":           "\n\n\n",
	}
	names := slices.Sorted(func(yield func(string) bool) {
		for pod := range pods {
			if !yield(pod) {
				return
			}
		}
	})
	lines := 0
	for _, text := range pods {
		lines += strings.Count(text, "\n")
	}
	for _, keys := range []string{"log_format: combined", "log_format: [combined, upstreaminfo]", "log_format: combined, wrapper: cri", "log_format: [combined, upstreaminfo], wrapper: cri"} {
		t.Run(keys, func(t *testing.T) {
			dir := t.TempDir()
			file := func(pod string) string { return filepath.Join(dir, pod, "0.log") }
			for _, pod := range names {
				if err := os.MkdirAll(filepath.Dir(file(pod)), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(file(pod), nil, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			glob := filepath.Join(dir, "*", "0.log")
			cfg, err := config.Parse(fmt.Appendf(nil, "inputs: [{name: pods, path: '%s', %s}]\nrules: [{name: requests, labels: {status: '${status}'}}]\n", glob, keys), "rules.yaml")
			if err != nil {
				t.Fatal(err)
			}

			clock := testclock.New(time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC))
			p, _ := startLogged(t, cfg, clock.Now)
			waitReady(t, p)
			cri := strings.Contains(keys, "cri")
			wrap := func(text string) string {
				if !cri {
					return text
				}
				var b strings.Builder
				for line := range strings.Lines(text) {
					b.WriteString("2026-11-29T12:00:00.1Z stdout F " + line)
				}
				return b.String()
			}
			for _, pod := range names {
				appendTo(t, file(pod), wrap(pods[pod]))
			}
			waitRead(t, p, uint64(lines))
			clock.Add(heldQuiet)
			// A line read after another read after the clock moved: the reader caught up
			// (and settled the quiet files) in between.
			for i := range 2 {
				appendTo(t, file("web"), wrap(combined))
				waitRead(t, p, uint64(lines+i+1))
			}
			var live []string
			p.mu.Lock()
			for _, in := range p.inputs {
				if in.judged != nil {
					live = append(live, in.judged.noFormatFiles()...)
				}
				if in.files != nil {
					live = append(live, in.files.NoFormatFiles()...)
				}
			}
			p.mu.Unlock()
			slices.Sort(live)

			opts := Options{Now: clock.Now}
			opts.setDefaults()
			gen, err := newGeneration(cfg, nil, opts)
			if err != nil {
				t.Fatal(err)
			}
			fs := newFits(gen)
			if _, err := replayFiles("sample", gen.parser, inputsOf(cfg, []string{glob}, opts.Logger), opts, &newestTime{}, fs); err != nil {
				t.Fatal(err)
			}
			var oneShot []string
			for _, f := range fs.all {
				oneShot = append(oneShot, f.NoFormat...)
			}
			slices.Sort(oneShot)
			if !slices.Equal(live, oneShot) {
				t.Errorf("files of no format:\nlive     %q\none-shot %q", live, oneShot)
			}
			t.Logf("of no format: %q", live)
		})
	}
}
