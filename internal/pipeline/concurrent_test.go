package pipeline

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/logwindow/logwindow_exporter/config"
	"github.com/logwindow/logwindow_exporter/exporter"
	"github.com/logwindow/logwindow_exporter/internal/testutil/metrictest"
)

// TestTwoInputsOneSeries: two inputs write the same series (each its own part of them) at
// once while scrapes and expiry run and the rules are reloaded (the counting rule kept,
// another one changed back and forth);
// once every line is read, each line is counted exactly once: in the kept rule's _total
// per status and its 1h window, in its matched lines, and in the inputs' lines read.
func TestTwoInputsOneSeries(t *testing.T) {
	dir := t.TempDir()
	logs := []string{filepath.Join(dir, "a.log"), filepath.Join(dir, "b.log")}
	for _, l := range logs {
		if err := os.WriteFile(l, nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	rules := func(extra string) *config.Config {
		text := fmt.Sprintf(`global: {windows: [1m, 1h]}
inputs: [{path: %s}, {path: %s}]
rules:
  - name: requests
    match: '^(?P<status>[0-9]+) '
    labels: {status: '${status}'}
  - name: other
    match: '^%s'
`, logs[0], logs[1], extra)
		cfg, err := config.Parse([]byte(text), "rules.yaml")
		if err != nil {
			t.Fatal(err)
		}
		return cfg
	}
	p, err := Start(rules("x"), Options{Now: time.Now, PollInterval: 5 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Stop()
	coll := p.Collector()
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(coll)
	scrape := metrictest.Scraped(exporter.Handler(coll, reg, nil))

	const rounds, perRound = 20, 500
	want := map[string]int{}
	var writers, side sync.WaitGroup
	for i, l := range logs {
		writers.Go(func() {
			for r := range rounds {
				var b strings.Builder
				for j := range perRound {
					fmt.Fprintf(&b, "%d request %d %d %d\n", 200+(j%3), i, r, j)
				}
				appendTo(t, l, b.String())
			}
		})
	}
	for j := range perRound {
		want[fmt.Sprint(200+j%3)] += 2 * rounds
	}
	done := make(chan struct{})
	side.Go(func() { // scrapes and expiry
		for {
			select {
			case <-done:
				return
			default:
			}
			p.Expire()
			if _, err := scrape.Gather(); err != nil {
				t.Error(err)
				return
			}
		}
	})
	side.Go(func() { // reloads: the counting rule's definition stays, the other one flips
		for i := 0; ; i++ {
			select {
			case <-done:
				return
			case <-time.After(10 * time.Millisecond):
			}
			if err := p.Reload(rules(fmt.Sprintf("x%d", i%2))); err != nil {
				t.Error(err)
				return
			}
		}
	})
	writers.Wait()
	total := uint64(2 * rounds * perRound)
	waitLinesRead(t, p, total)
	close(done)
	side.Wait()
	// The rule's matched lines are counted just after the lines read.
	got := waitTotal(t, p, "matched lines", `logwindow_rule_matched_lines_total{rule="requests"}`, float64(total))
	for status, n := range want {
		if v := got[fmt.Sprintf(`requests_total{status=%q}`, status)]; v != float64(n) {
			t.Errorf("requests_total{status=%s} = %v, want %d", status, v, n)
		}
		if v := got[fmt.Sprintf(`requests_window{status=%q,window="1h"}`, status)]; v != float64(n) {
			t.Errorf("requests_window{status=%s,window=1h} = %v, want %d", status, v, n)
		}
	}
}
