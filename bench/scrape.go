package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"time"
)

// scrapeBench reads one log through a rule with one series per URL path, up to o.series
// series, then times o.scrapes scrapes of /metrics the way Prometheus makes them (HTTP,
// gzip) in the text format, OpenMetrics and protobuf, and as many in text uncompressed,
// and reports them with the exporter's peak RSS.
func (o options) scrapeBench(dir, path string, file *tally, out io.Writer) error {
	rules := filepath.Join(dir, "rules-by-path.yaml")
	if err := (benchConfig{inputs: []string{path}, pathRule: true, maxSeries: o.series}).write(o.configs[0], rules); err != nil {
		return err
	}
	want := file.pathTotals(o.series)
	series := file.pathSeries(o.series)

	l, err := startLive(o.bins[0], rules, o.procs, "")
	if err != nil {
		return err
	}
	defer l.kill()
	ctx, cancel := context.WithTimeout(context.Background(), o.timeout)
	defer cancel()
	size, err := totalSize([]string{path})
	if err != nil {
		return err
	}
	_, first, err := l.waitLines(ctx, file.lines, size, o.poll)
	if err != nil {
		return err
	}
	err = l.settle(first, func(s scrape) error {
		if err := want.check(s.values); err != nil {
			return err
		}
		if got, _ := s.values.get("logwindow_rule_series", "rule", pathRuleName); got != float64(series) {
			return fmt.Errorf("logwindow_rule_series = %v, want %d", got, series)
		}
		return s.checkWindows()
	}, o.poll)
	if err != nil {
		return err
	}
	l.readRSS()
	loaded := l.rss.Load()

	fmt.Fprintf(out, "scrape: %d series of %s (budget %d), %d lines read; every path's _total checked\n",
		series, pathRuleName, o.series, file.lines)
	var times []scrapeTimes
	var body []byte // the text, uncompressed: the yardstick's input
	encodings := []struct{ name, header, accept string }{
		{"text, gzip", "", ""},
		{"OpenMetrics, gzip (as Prometheus 2 asks)", "", "application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1"},
		{"protobuf, gzip (as Prometheus 3 asks for native histograms)", "", "application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=delimited;q=0.6,application/openmetrics-text;version=1.0.0;q=0.5,text/plain;version=0.0.4;q=0.3,*/*;q=0.1"},
		{"text, uncompressed", "identity", ""},
	}
	for _, enc := range encodings {
		t, b, err := l.timeScrapes(enc.header, enc.accept, o.scrapes)
		if err != nil {
			return err
		}
		times = append(times, t)
		what := fmt.Sprintf("%d samples, %d KiB", countSamples(b), len(b)>>10)
		if enc.accept == "" {
			body = b
		} else {
			what = fmt.Sprintf("%d KiB", len(b)>>10)
		}
		fmt.Fprintf(out, "scrape: %s, %s: median %.1f ms wall (min %.1f, max %.1f), %.1f ms exporter CPU per scrape\n",
			enc.name, what, ms(t.median), ms(t.min), ms(t.max), ms(t.cpu))
	}
	z, err := zlibTime(body, o.scrapes)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "scrape: zlib level 1 (python3's zlib) compresses the text in %.1f ms wall, %.1f ms CPU (medians of %d)\n",
		ms(z.median), ms(z.cpu), o.scrapes)
	for i, enc := range encodings {
		fmt.Fprintf(out, "scrape: %s / zlib level 1: %.2f× the wall time, %.2f× the CPU time\n",
			enc.name, float64(times[i].median)/float64(z.median), float64(times[i].cpu)/float64(z.cpu))
	}
	u, err := l.stop(0)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "scrape: exporter peak RSS %.1f MB once the lines were read (before any scrape), %.1f MB after the first scrapes, %.1f MB after the timed ones\n",
		float64(l.unscraped)/(1<<20), float64(loaded)/(1<<20), float64(u.rss)/(1<<20))
	return nil
}

// scrapeTimes is what n scrapes took: wall time per scrape, and the exporter's CPU time per
// scrape (from /proc, with its 10 ms ticks spread over the n scrapes).
type scrapeTimes struct {
	min, median, max, cpu time.Duration
}

func (l *live) timeScrapes(encoding, accept string, n int) (scrapeTimes, []byte, error) {
	walls := make([]time.Duration, n)
	var body []byte
	cpu0, err := l.cpuTime()
	if err != nil {
		return scrapeTimes{}, nil, err
	}
	for i := range walls {
		start := time.Now()
		if body, err = l.getEncoded(encoding, accept); err != nil {
			return scrapeTimes{}, nil, err
		}
		walls[i] = time.Since(start)
	}
	cpu1, err := l.cpuTime()
	if err != nil {
		return scrapeTimes{}, nil, err
	}
	l.readRSS()
	slices.Sort(walls)
	return scrapeTimes{min: walls[0], median: walls[n/2], max: walls[n-1], cpu: (cpu1 - cpu0) / time.Duration(n)}, body, nil
}

// zlibScript compresses standard input n times with zlib at level 1 and prints the median
// wall and CPU seconds of one compression.
const zlibScript = `import sys, time, zlib
data, n = sys.stdin.buffer.read(), int(sys.argv[1])
wall, cpu = [], []
for _ in range(n):
    w, c = time.perf_counter(), time.process_time()
    zlib.compress(data, 1)
    wall.append(time.perf_counter() - w)
    cpu.append(time.process_time() - c)
print(sorted(wall)[n // 2], sorted(cpu)[n // 2])
`

// zlibTime is what zlib's fastest level takes on body: the yardstick of a scrape's cost
// (the bound is at most 3× it), measured in the same run as the scrapes.
func zlibTime(body []byte, n int) (scrapeTimes, error) {
	cmd := exec.Command("python3", "-c", zlibScript, strconv.Itoa(n))
	cmd.Stdin = bytes.NewReader(body)
	outb, err := cmd.Output()
	if err != nil {
		return scrapeTimes{}, fmt.Errorf("timing zlib: %w", err)
	}
	var wall, cpu float64
	if _, err := fmt.Sscan(string(outb), &wall, &cpu); err != nil {
		return scrapeTimes{}, fmt.Errorf("timing zlib: %q: %w", outb, err)
	}
	return scrapeTimes{median: time.Duration(wall * 1e9), cpu: time.Duration(cpu * 1e9)}, nil
}

func countSamples(body []byte) int {
	n := 0
	for line := range bytes.Lines(body) {
		if len(line) > 0 && line[0] != '#' {
			n++
		}
	}
	return n
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
