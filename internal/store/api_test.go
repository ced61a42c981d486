package store_test

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/logwindow/logwindow_exporter/config"
	"github.com/logwindow/logwindow_exporter/internal/store"
	"github.com/logwindow/logwindow_exporter/internal/testutil/storetest"
	"github.com/logwindow/logwindow_exporter/parser/event"
	"github.com/logwindow/logwindow_exporter/windows"
)

// The tests of this package's own name test the store through its API alone (NewSetWith, Sink,
// Expire and the read API), as the exposition uses it; those of package store look inside.

// start is the exporter's start second in every test.
const start = storetest.Start

// line is one parser event as a test writes it.
type line struct {
	rule   int
	labels []string
	now    int64   // processing second
	wall   int64   // wall-clock second; 0 means now
	at     int64   // the line's own second (event-time rules); 0 for none
	value  float64 // 0 means 1
}

func (l line) event() *event.Event { return storetest.Event(l.rule, l.at, l.value, l.labels...) }

// write gives k the lines, each at its clocks.
func write(k *store.Sink, lines ...line) {
	for _, l := range lines {
		wall := l.wall
		if wall == 0 {
			wall = l.now
		}
		k.SetNow(l.now, wall)
		k.Event(l.event())
	}
}

func newSet(t testing.TB, cfg *config.Config, prev *store.Set) *store.Set {
	t.Helper()
	set, err := store.NewSetWith(cfg, prev, store.SetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return set
}

// series is what a scrape reads of one label set.
type series struct {
	total float64
	// windows are the sums of the rule's windows, in layout order; nil when the series is
	// a kept counter (not Live), whose `_total` only is exported.
	windows []float64
}

func (s series) String() string {
	if s.windows == nil {
		return fmt.Sprintf("%v (kept)", s.total)
	}
	return fmt.Sprintf("%v %v", s.total, s.windows)
}

// view is what a scrape at one second reads of a rule through the read API.
type view struct {
	// series are the label sets a scrape shows (not Gone), by their values joined with
	// "|" ("" for a label-less rule).
	series map[string]series
	// matched is the rule's matched lines: those of every series held plus those in none.
	matched uint64
	// held counts the series the store holds, those Gone but not yet expired included.
	held  int
	drops store.Drops
}

// processingClock turns readings of the wall clock into processing seconds as the
// pipeline's clock does with an injected time source: it starts at the first reading and
// moves by the forward differences between readings only, so that a step back of the wall
// clock makes it stand still rather than go back.
type processingClock struct {
	last, at int64
	started  bool
}

// set is the processing second once the wall clock was set to second wall (a step: no
// time passed, so the monotonic clock time.Now carries stands still).
func (c *processingClock) set(wall int64) int64 {
	c.last = wall
	return c.at
}

// second is the processing second at wall-clock second wall.
func (c *processingClock) second(wall int64) int64 {
	switch {
	case !c.started:
		c.at, c.started = wall, true
	case wall > c.last:
		c.at += wall - c.last
	}
	c.last = wall
	return c.at
}

// read reads rule i of set at second now, as a scrape does; rates and summaries are left
// to the exposition's tests. The processing clock, which counters' activity goes by, is
// at now too.
func read(set *store.Set, i int, now int64) view { return readAt(set, i, now, now) }

// readAt is read with the processing clock at second active.
func readAt(set *store.Set, i int, now, active int64) view {
	r := set.Rule(i)
	matched, all := r.Matched(), r.Snapshot(nil)
	v := view{series: map[string]series{}, held: len(all), drops: r.Drops()}
	var stats, more []windows.Stats
	for _, s := range all {
		if r.Gone(s, now, active) {
			continue
		}
		got := series{total: r.Total(s)}
		if r.Live(s, now) {
			stats = r.Read(s, now, start, stats, &more)
			got.windows = []float64{}
			for _, st := range stats {
				got.windows = append(got.windows, st.Sum)
			}
		}
		v.series[strings.Join(s.Labels(), "|")] = got
	}
	v.matched = matched
	return v
}

// diff describes how the series of got differ from want, "" if they do not.
func diff(got, want map[string]series) string {
	var b strings.Builder
	for _, k := range slices.Sorted(maps.Keys(want)) {
		g, ok := got[k]
		switch {
		case !ok:
			fmt.Fprintf(&b, "\n  %q: missing, want %v", k, want[k])
		case g.String() != want[k].String():
			fmt.Fprintf(&b, "\n  %q: %v, want %v", k, g, want[k])
		}
	}
	for _, k := range slices.Sorted(maps.Keys(got)) {
		if _, ok := want[k]; !ok {
			fmt.Fprintf(&b, "\n  %q: %v, want none", k, got[k])
		}
	}
	return b.String()
}
