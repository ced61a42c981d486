package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"time"
)

// scrapeBench reads one log through a rule with one series per URL path, up to o.series
// series, then times o.scrapes scrapes of /metrics the way Prometheus makes them (HTTP,
// gzip) and reports them with the exporter's peak RSS.
func (o options) scrapeBench(dir, path string, file *tally, out io.Writer) error {
	rules := filepath.Join(dir, "rules-by-path.yaml")
	if err := (benchConfig{inputs: []string{path}, pathRule: true, maxSeries: o.series}).write(o.config, rules); err != nil {
		return err
	}
	want := file.pathTotals(o.series)
	series := file.pathSeries(o.series)

	l, err := startLive(o.bin, rules, o.procs)
	if err != nil {
		return err
	}
	defer l.kill()
	ctx, cancel := context.WithTimeout(context.Background(), o.timeout)
	defer cancel()
	wall, err := l.waitLines(ctx, file.lines, o.poll)
	if err != nil {
		return err
	}
	_, err = l.settle(func(s scrape) error {
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

	times := make([]time.Duration, o.scrapes)
	var body []byte
	for i := range times {
		start := time.Now()
		if body, err = l.get(); err != nil {
			return err
		}
		times[i] = time.Since(start)
	}
	u, err := l.stop(wall)
	if err != nil {
		return err
	}
	slices.Sort(times)
	samples := 0
	for line := range bytes.Lines(body) {
		if len(line) > 0 && line[0] != '#' {
			samples++
		}
	}
	fmt.Fprintf(out, "scrape: %d series of %s (budget %d) × 5 windows, %d lines in %.2fs; every path's _total checked\n",
		series, pathRuleName, o.series, file.lines, wall.Seconds())
	fmt.Fprintf(out, "scrape: %d samples, %d KiB of text; over %d scrapes (HTTP, gzip): median %.1f ms, min %.1f ms, max %.1f ms\n",
		samples, len(body)>>10, len(times), ms(times[len(times)/2]), ms(times[0]), ms(times[len(times)-1]))
	fmt.Fprintf(out, "scrape: exporter peak RSS %.1f MB, CPU %.2fs in all\n", float64(u.rss)/(1<<20), u.cpu.Seconds())
	return nil
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
