package scrape

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
)

// windowEndRules are one rule twice, the second with windows that end at the last complete
// second: every family a window feeds (sums, rate, count, extrema, mean, quantiles, distinct
// count, top values), on second slots (10s, 1m) and minute slots (10m).
const windowEndRules = `
global: {windows: [10s, 1m, 10m], max_series_per_rule: 100}
rules:
  - name: now
    match: '^(?P<path>/[a-z]*) (?P<client>[0-9]+) (?P<time>[0-9.]+)$'
    value: time
    labels: {path: '${path}'}
    aggregations: [window, per_second, events, max, min, mean, quantiles]
    quantiles: [0.5, 0.99]
    distinct: '${client}'
    top: {label: path, k: 3}
  - name: done
    match: '^(?P<path>/[a-z]*) (?P<client>[0-9]+) (?P<time>[0-9.]+)$'
    value: time
    labels: {path: '${path}'}
    aggregations: [window, per_second, events, max, min, mean, quantiles]
    quantiles: [0.5, 0.99]
    distinct: '${client}'
    top: {label: path, k: 3}
    window_end: last_complete_second
`

// TestWindowEndLastComplete scrapes, during a second that opens a minute, the rule whose
// windows end at the last complete second: every windowed family is what the other rule
// showed a second earlier, before the lines of the current second came, and `_total`
// counts those lines as well.
func TestWindowEndLastComplete(t *testing.T) {
	p, set := parserSet(t, windowEndRules)
	k := set.NewSink()
	cur := int64((start/60 + 11) * 60)
	line := func(now int64, i int) {
		k.SetNow(now, now)
		path := []string{"/a", "/b", "/c"}[i%3]
		p.Parse("app", fmt.Appendf(nil, "%s %d %g", path, i%17, 0.5+float64(i%7)/8), k)
	}
	for now := cur - 700; now < cur; now += 3 {
		for i := range int(now % 5) {
			line(now, i)
		}
	}
	at := cur - 1
	c := collectorAt(fixed(set), &at)
	first := scrapeText(t, c)
	before := rule(first, "now")
	// The current second: new clients on a new path, values inside the range seen so far,
	// so that the extrema of the minute-slot window, which cannot leave out a second of
	// their newest slot, stay what they were.
	added := 0.0
	for i := range 40 {
		v := 0.5 + float64(i%4)/8
		k.SetNow(cur, cur)
		p.Parse("app", fmt.Appendf(nil, "/d %d %g", 100+i, v), k)
		added += v
	}
	at = cur
	text := scrapeText(t, c)
	if got, want := rule(text, "done"), before; got != want {
		t.Errorf("windows ending at the last complete second, read at %d:\n%s\nwant those read at %d:\n%s", cur, got, cur-1, want)
	}
	if rule(text, "now") == before {
		t.Error("the lines of the current second changed nothing: the test shows nothing")
	}
	for _, name := range []string{"done_total", "now_total"} {
		if got, want := sample(t, text, name), sample(t, first, name)+added; got != want {
			t.Errorf("%s = %v, want %v: the current second's lines counted", name, got, want)
		}
	}
}

// sample returns the value of the label-less sample name in text.
func sample(t *testing.T, text, name string) float64 {
	t.Helper()
	for l := range strings.Lines(text) {
		if v, ok := strings.CutPrefix(l, name+" "); ok {
			f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			if err != nil {
				t.Fatal(err)
			}
			return f
		}
	}
	t.Fatalf("no sample %s in:\n%s", name, text)
	return 0
}

// rule returns the windowed samples of rule name in text, named as if the rule were "now",
// sorted as scraped.
func rule(text, name string) string {
	var b strings.Builder
	for l := range strings.Lines(text) {
		if strings.HasPrefix(l, name+"_window") {
			b.WriteString("now" + strings.TrimPrefix(l, name))
		}
	}
	return b.String()
}
