package e2e

import (
	"bytes"
	"cmp"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/model"

	"github.com/logwindow/logwindow_exporter/internal/testutil/reference"
	"github.com/logwindow/logwindow_exporter/internal/testutil/testexec"
)

// topReplayRules rank paths per host, with small capacities so that the summaries prune:
// 50, where the separated host's top 5 stand further apart than the bound, and 10, whose
// summaries prune so often that their errors come near it.
const topReplayRules = `
rules:
  - name: app_hot_paths
    match: '^(?P<ts>[^ ]+) (?P<host>[^ ]+) (?P<path>[^ ]+)$'
    labels: {host: '${host}', path: '${path}'}
    timestamp: {capture: ts, layout: '2006-01-02T15:04:05Z07:00'}
    windows: [1m, 5m, 1h]
    top: {label: path, k: 5, capacity: 50}
  - name: app_hot_paths_tight
    match: '^(?P<ts>[^ ]+) (?P<host>[^ ]+) (?P<path>[^ ]+)$'
    labels: {host: '${host}', path: '${path}'}
    timestamp: {capture: ts, layout: '2006-01-02T15:04:05Z07:00'}
    windows: [1m, 5m, 1h]
    top: {label: path, k: 5, capacity: 10}
`

const topReplayK = 5

// topReplayCapacities are the capacity of each rule of topReplayRules, and whether the
// separated host's exact top k stand further apart than its bound in every window.
var topReplayCapacities = []struct {
	rule      string
	capacity  int
	separated bool
}{{"app_hot_paths", 50, true}, {"app_hot_paths_tight", 10, false}}

// TestReplayTopReference writes an event-time log in which each host carries one stream
// (Zipf over 100k paths with s = 1.1 and 1.5, a heavy path changing every minute, 500
// paths tied, a path hot only in the old edge slot of each window, well-separated heavy
// paths over uniform noise; lines a few seconds out of order), replays it through the built
// exporter and checks every window of every host against the exact sums per path over the
// lines from the start of the window's edge slot to the newest line, for each rule: at most
// k paths; each reported sum at most total/(capacity+1) below the exact one and never
// above; no path left out whose exact sum beats the k-th reported by more than that; and
// where the exact top k+1 are further apart than that, exactly the top k.
func TestReplayTopReference(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the exporter")
	}
	bin := testexec.BuildExporter(t, false)
	for seed := range uint64(2) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) { replayTop(t, bin, seed) })
	}
}

func replayTop(t *testing.T, bin string, seed uint64) {
	r := rand.New(rand.NewPCG(seed, 13))
	var lines []topLine
	end := int64(1_700_000_000 + r.IntN(86400))
	start := end - 2*3600
	zipf := []struct {
		host string
		z    *rand.Zipf
	}{
		{"zipf11", rand.NewZipf(r, 1.1, 1, 99_999)},
		{"zipf15", rand.NewZipf(r, 1.5, 1, 99_999)},
	}
	var edgeBursts []int64
	for _, w := range []time.Duration{time.Minute, 5 * time.Minute, time.Hour} {
		// The start of the edge slot, and the window's oldest second.
		edgeBursts = append(edgeBursts, reference.SummaryEdge(end, w), end-int64(w/time.Second)+1)
	}
	tied := 0
	for now := start; now <= end; now++ {
		add := func(host, path string, n int) {
			for range n {
				at := now
				if now < end {
					at -= r.Int64N(min(4, end-now+1))
				}
				lines = append(lines, topLine{at, host, path})
			}
		}
		for _, z := range zipf {
			for range r.IntN(8) {
				add(z.host, fmt.Sprintf("/p/%d", z.z.Uint64()), 1)
			}
		}
		add("shift", fmt.Sprintf("/hot/%d", now/60), 3+r.IntN(5))
		for range r.IntN(3) {
			add("shift", fmt.Sprintf("/p/%d", r.IntN(100_000)), 1)
		}
		for range 4 {
			add("tied", fmt.Sprintf("/t/%d", tied%500), 1)
			tied++
		}
		add("edge", fmt.Sprintf("/p/%d", r.IntN(100_000)), r.IntN(4))
		for _, b := range edgeBursts {
			if now >= b && now < b+3 {
				add("edge", "/edge", 30)
			}
		}
		for i, n := range []int{9, 7, 5, 4, 3, 1} {
			add("separated", fmt.Sprintf("/s/%d", i), n)
		}
		add("separated", fmt.Sprintf("/p/%d", r.IntN(100_000)), r.IntN(4))
	}
	lines = append(lines, topLine{end, "tied", "/t/0"})
	var log bytes.Buffer
	for _, l := range lines {
		fmt.Fprintf(&log, "%s %s %s\n", time.Unix(l.at, 0).UTC().Format(time.RFC3339), l.host, l.path)
	}
	mfs := replayFamilies(t, bin, topReplayRules, log.Bytes())
	for _, rc := range topReplayCapacities {
		checkTopReplay(t, mfs[rc.rule+"_window_top"], lines, end, rc.capacity, rc.separated)
	}
}

// topLine is a line of the top replay log.
type topLine struct {
	at         int64
	host, path string
}

// checkTopReplay checks the top family of a rule of the given capacity against the exact
// sums of the lines, as TestReplayTopReference says; wantSeparated: the separated host's
// top k must have been checked exactly in each of its windows.
func checkTopReplay(t *testing.T, family *dto.MetricFamily, lines []topLine, end int64, capacity int, wantSeparated bool) {
	t.Helper()
	// reported[host][window] are the exported paths and sums.
	reported := map[string]map[string]map[string]float64{}
	for _, m := range family.GetMetric() {
		l := map[string]string{}
		for _, p := range m.GetLabel() {
			l[p.GetName()] = p.GetValue()
		}
		if reported[l["host"]] == nil {
			reported[l["host"]] = map[string]map[string]float64{}
		}
		if reported[l["host"]][l["window"]] == nil {
			reported[l["host"]][l["window"]] = map[string]float64{}
		}
		reported[l["host"]][l["window"]][l["path"]] = m.GetGauge().GetValue()
	}
	hosts := []string{"zipf11", "zipf15", "shift", "tied", "edge", "separated"}
	separated := 0
	for _, w := range []string{"1m", "5m", "1h"} {
		d, err := model.ParseDuration(w)
		if err != nil {
			t.Fatal(err)
		}
		edge := reference.SummaryEdge(end, time.Duration(d))
		for _, host := range hosts {
			exact := map[string]float64{}
			total := 0.0
			for _, l := range lines {
				// Replay reads at the newest line's second, so lines older than the
				// longest window (1h) are late: in no window, although the 1h window's
				// edge slot reaches back before them.
				if l.host == host && l.at >= edge && l.at <= end && l.at > end-3600 {
					exact[l.path]++
					total++
				}
			}
			got := reported[host][w]
			where := fmt.Sprintf("capacity %d, host %s, window %s (total %v)", capacity, host, w, total)
			if sep, err := checkTopReport(got, exact, total, capacity); err != nil {
				t.Errorf("%s: %v", where, err)
			} else if sep {
				separated++
			}
			if host == "edge" && got["/edge"] == 0 {
				t.Errorf("%s: /edge, hot in the edge slot, not reported: %v", where, got)
			}
		}
	}
	t.Logf("capacity %d: %d lines; exact top %d checked in %d of 18 windows", capacity, len(lines), topReplayK, separated)
	// The separated host is, in every window; the Zipf hosts may be.
	if wantSeparated && separated < 3 {
		t.Errorf("the exact top %d was checked in %d windows, want at least the separated host's 3", topReplayK, separated)
	}
}

// checkTopReport compares the reported paths and sums of one window with the exact sums,
// by the bound README states: total/(capacity+1). separated says whether the exact top k+1
// are further apart than that, so that the top k were checked exactly.
func checkTopReport(got, exact map[string]float64, total float64, capacity int) (separated bool, err error) {
	eps := total / float64(capacity+1)
	if len(got) > topReplayK {
		return false, fmt.Errorf("%d paths reported, k is %d", len(got), topReplayK)
	}
	kth := 0.0
	for path, v := range got {
		c := exact[path]
		if v > c || c-v > eps {
			return false, fmt.Errorf("%s reported %v, exact %v, bound %v", path, v, c, eps)
		}
		if kth == 0 || v < kth {
			kth = v
		}
	}
	if len(got) < topReplayK {
		kth = 0
	}
	type pathSum struct {
		path string
		c    float64
	}
	var all []pathSum
	for path, c := range exact {
		if _, ok := got[path]; !ok && c > kth+eps {
			return false, fmt.Errorf("%s left out with exact %v, above the k-th reported %v + %v", path, c, kth, eps)
		}
		all = append(all, pathSum{path, c})
	}
	slices.SortFunc(all, func(a, b pathSum) int { return cmp.Or(cmp.Compare(b.c, a.c), strings.Compare(a.path, b.path)) })
	all = append(all, pathSum{"", 0})
	if len(all) <= topReplayK {
		return false, nil
	}
	for i := range topReplayK {
		if all[i].c-all[i+1].c <= eps {
			return false, nil
		}
	}
	order := make([]pathSum, 0, len(got))
	for path, v := range got {
		order = append(order, pathSum{path, v})
	}
	slices.SortFunc(order, func(a, b pathSum) int { return cmp.Compare(b.c, a.c) })
	for i, p := range all[:topReplayK] {
		if i >= len(order) || order[i].path != p.path {
			return false, fmt.Errorf("separated by more than %v: reported %v, exact top %v in this order", eps, order, all[:topReplayK])
		}
	}
	return true, nil
}
