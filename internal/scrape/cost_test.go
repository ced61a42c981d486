package scrape

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/expfmt"

	"github.com/logwindow/logwindow_exporter/exporter"
	"github.com/logwindow/logwindow_exporter/internal/store"
	"github.com/logwindow/logwindow_exporter/internal/testutil/storetest"
	"github.com/logwindow/logwindow_exporter/windows"
	"github.com/logwindow/logwindow_exporter/windows/sketch"
)

// TestScrapeCost: a scrape's cost is unknown until its rules have been read in its format
// (text and OpenMetrics share their reads, protobuf holds native histograms besides), and
// always in the protobuf text formats, held whole; once known it is at least the top
// values' items the read copied, each window's; a filter that leaves a rule out leaves
// its read out, one that keeps any of its families counts the whole read.
func TestScrapeCost(t *testing.T) {
	const paths, pad = 2000, 200
	p, set := parserSet(t, strings.Replace(topRules, "k: 2, min: 3", "k: 5000", 1))
	k := set.NewSink()
	k.SetNow(start, start)
	for i := range paths {
		p.Parse("web", []byte("h1 eu /"+strings.Repeat("x", pad)+strconv.Itoa(i)), k)
	}
	now := int64(start)
	c := collectorAt(fixed(set), &now)
	text, om := expfmt.NewFormat(expfmt.TypeTextPlain), expfmt.NewFormat(expfmt.TypeOpenMetrics)
	proto, protoText := expfmt.NewFormat(expfmt.TypeProtoDelim), expfmt.NewFormat(expfmt.TypeProtoText)
	if _, known := c.ScrapeCost(nil, text); known {
		t.Error("the cost of a scrape of rules never read is known")
	}
	if err := c.Encode(io.Discard, nil, text); err != nil {
		t.Fatal(err)
	}
	// Both windows hold every path, each copied with its value.
	items := int64(2 * paths * (pad + 1))
	onlyTotal := func(name string) bool { return name == "hot_paths_total" }
	for _, tc := range []struct {
		name    string
		keep    func(string) bool
		format  expfmt.Format
		known   bool
		atLeast int64
		atMost  int64
	}{
		{name: "text, read", format: text, known: true, atLeast: items + scrapeOverhead, atMost: 4*items + scrapeOverhead},
		{name: "OpenMetrics, read as text", format: om, known: true, atLeast: items + scrapeOverhead, atMost: 4*items + scrapeOverhead},
		{name: "protobuf, not read yet", format: proto},
		{name: "protobuf text, held whole", format: protoText},
		{name: "a filter of no rule's family", keep: func(name string) bool { return name == "logwindow_input_lines_total" }, format: text, known: true, atLeast: scrapeOverhead, atMost: scrapeOverhead + 4<<10}, // and the view of a few series
		{name: "a filter of the rule's _total", keep: onlyTotal, format: text, known: true, atLeast: items + scrapeOverhead, atMost: 4*items + scrapeOverhead},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cost, known := c.ScrapeCost(tc.keep, tc.format)
			if known != tc.known || known && (cost < tc.atLeast || cost > tc.atMost) {
				t.Errorf("cost %d (known %v), want within [%d, %d] (known %v)", cost, known, tc.atLeast, tc.atMost, tc.known)
			}
		})
	}
	if err := c.Encode(io.Discard, nil, proto); err != nil {
		t.Fatal(err)
	}
	if cost, known := c.ScrapeCost(nil, proto); !known || cost < items {
		t.Errorf("after a protobuf scrape: cost %d (known %v), want at least the items' %d", cost, known, items)
	}
}

// TestScrapeCostCountsLabels: the cost a scrape leaves for the next counts the label pairs
// its writer encoded, which it does at a rule's first family, after the rule is read: a
// rule of many series with long label values costs at least their bytes.
func TestScrapeCostCountsLabels(t *testing.T) {
	const hosts, pad = 90, 900       // under the 1,024 bytes a label value may have
	p, set := parserSet(t, topRules) // max_series_per_rule 100: every host its series
	k := set.NewSink()
	k.SetNow(start, start)
	for i := range hosts {
		p.Parse("web", []byte(strings.Repeat("h", pad)+strconv.Itoa(i)+" eu /"), k)
	}
	now := int64(start)
	c := collectorAt(fixed(set), &now)
	text := expfmt.NewFormat(expfmt.TypeTextPlain)
	if err := c.Encode(io.Discard, nil, text); err != nil {
		t.Fatal(err)
	}
	labels := int64(hosts * pad)
	if cost, known := c.ScrapeCost(nil, text); !known || cost < labels+scrapeOverhead {
		t.Errorf("cost %d (known %v), want at least the host labels' %d bytes and the overhead", cost, known, labels)
	}
}

// TestScrapeCostCountsView: a scrape holds, from its start to its end, the view it takes of
// every rule's series (a pointer a series), whichever families it writes: its cost counts
// it, a filter of no rule's family included. A view of 200,000 series is 1.6 MB, past the
// chunk and compressor's share of the overhead.
func TestScrapeCostCountsView(t *testing.T) {
	const series = 5000
	set := mustSet(t, storetest.Config(series, storetest.CountRule("http_requests", storetest.OneMin, "path")), nil)
	var lines []line
	for i := range series {
		lines = append(lines, line{labels: []string{strconv.Itoa(i)}, now: start})
	}
	feed(set.NewSink(), lines)
	now := int64(start)
	c := collectorAt(fixed(set), &now)
	text := expfmt.NewFormat(expfmt.TypeTextPlain)
	if err := c.Encode(io.Discard, nil, text); err != nil {
		t.Fatal(err)
	}
	view := int64(series * unsafe.Sizeof((*store.Series)(nil)))
	for _, tc := range []struct {
		name string
		keep func(string) bool
	}{
		{"every family", nil},
		{"a filter of no rule's family", func(name string) bool { return name == "logwindow_input_lines_total" }},
	} {
		if cost, known := c.ScrapeCost(tc.keep, text); !known || cost < view+scrapeOverhead {
			t.Errorf("%s: cost %d (known %v), want at least the view's %d bytes and the overhead", tc.name, cost, known, view)
		}
	}
}

// TestReaderBytesCountsKeptSummaries: what a reader holds while it reads a rule (bytes,
// the rule's cost to a scrape) counts the merged summaries it keeps of the rules it read
// before, which it holds for as long as that read.
func TestReaderBytesCountsKeptSummaries(t *testing.T) {
	layout := func() *windows.Layout {
		l, err := windows.NewLayout([]time.Duration{time.Minute}, windows.Options{Summaries: []windows.SummaryKind{sketch.DistinctKind(1)}})
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	read, next := layout(), layout()
	x := new(reader)
	x.useSums(read)
	for i := range 3000 {
		x.sums[0].Add(0, strconv.AppendInt(nil, int64(i), 10))
	}
	kept := summaryBytes(x.sums)
	x.useSums(next)
	if len(x.others) != 1 {
		t.Fatalf("the reader keeps the summaries of %d other rules, want 1", len(x.others))
	}
	if got, want := x.bytes(), int64(kept+summaryBytes(x.sums)); got < want {
		t.Errorf("a reader holding %d bytes of summaries, %d of them another rule's, says it holds %d", want, kept, got)
	}
}

// TestScrapeCostOfARuleStalledAmid: a rule that grew since its last read costs what it
// holds now as soon as a scrape has read it, not once a scrape has written it: a client
// that stalls amid the rule's samples (or several, sent at once) must not leave every
// scrape after it charged what the rule held before it grew, while each holds its read.
func TestScrapeCostOfARuleStalledAmid(t *testing.T) {
	const paths, pad = 2000, 200
	p, set := parserSet(t, strings.Replace(topRules, "k: 2, min: 3", "k: 5000", 1))
	k := set.NewSink()
	k.SetNow(start, start)
	parse := func(from, to int) {
		for i := from; i < to; i++ {
			p.Parse("web", []byte("h1 eu /"+strings.Repeat("x", pad)+strconv.Itoa(i)), k)
		}
	}
	parse(0, 10)
	now := int64(start)
	c := collectorAt(fixed(set), &now)
	text := expfmt.NewFormat(expfmt.TypeTextPlain)
	if err := c.Encode(io.Discard, nil, text); err != nil {
		t.Fatal(err)
	}
	before, known := c.ScrapeCost(nil, text)
	if !known {
		t.Fatal("the cost of a rule read and written is unknown")
	}
	parse(10, paths)
	// Both windows hold every path, each copied with its value.
	items := int64(2 * paths * (pad + 1))
	w := &stallWriter{h: http.Header{}, limit: 0, stalled: make(chan struct{}), resume: make(chan struct{})}
	stalled := w.stalled
	done := make(chan error, 1)
	go func() { done <- c.Encode(w, nil, text) }()
	<-stalled
	cost, known := c.ScrapeCost(nil, text)
	close(w.resume)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if !known || cost < items+scrapeOverhead {
		t.Errorf("while a scrape stalls amid the grown rule: cost %d (known %v; %d before it grew), want at least its items' %d and the overhead", cost, known, before, items)
	}
}

// TestFreeListKeepsOneLargeRead: readers are kept from one scrape to the next with the
// buffers of what they read; those of scrapes sent at once that each read a large rule
// (one reader each) must not all be kept, each as large as the rule's read, outside
// what the scrapes are charged: beside the largest, the readers kept hold
// keepReaderBytes at most. Their top values are all used, as a read that needed them leaves
// them, so that none is let go as a spike's (reader.shrink).
func TestFreeListKeepsOneLargeRead(t *testing.T) {
	const tops = 1 << 20 // a reader of tens of MB
	var l freeList
	var one int64
	for range 4 {
		x := new(reader)
		x.tops = make([]sketch.TopValue, tops)
		one = x.bytes()
		l.put(x)
	}
	small := new(reader)
	l.put(small)
	var kept int64
	for _, x := range l.rs {
		kept += x.bytes()
	}
	if kept > one+keepReaderBytes || !slices.Contains(l.rs, small) {
		t.Errorf("4 readers of %d bytes and a small one put: %d readers of %d bytes kept (the small one: %v), want at most one of them, and the small one",
			one, len(l.rs), kept, slices.Contains(l.rs, small))
	}
}

// TestFreeListKeepsTheLargest: a reader larger than those kept, put when they hold
// keepReaderBytes beside it no more, is kept, the smaller ones let go instead: the
// largest is kept whatever its size, so that the next scrape of a rule that grew reuses
// its buffers rather than growing a smaller reader's again.
func TestFreeListKeepsTheLargest(t *testing.T) {
	sized := func(tops int) *reader {
		x := new(reader)
		x.tops = make([]sketch.TopValue, tops)
		return x
	}
	var l freeList
	first := sized(1 << 20)
	l.put(first)
	grown := sized(1 << 21)
	l.put(grown)
	var kept int64
	for _, x := range l.rs {
		kept += x.bytes()
	}
	if !slices.Contains(l.rs, grown) || kept > grown.bytes()+keepReaderBytes {
		t.Errorf("a reader of %d bytes kept, one of %d put: %d readers of %d bytes kept (the larger: %v), want the larger, and at most %d beside it",
			first.bytes(), grown.bytes(), len(l.rs), kept, slices.Contains(l.rs, grown), keepReaderBytes)
	}
}

// rulesCollector is a Collector, read at start, over n rules of one window and no series,
// each written by the format rule from its number.
func rulesCollector(t *testing.T, n int, rule string) *Collector {
	t.Helper()
	var rules strings.Builder
	rules.WriteString("global: {windows: [1m]}\nrules:\n")
	for i := range n {
		fmt.Fprintf(&rules, rule, i)
	}
	_, set := parserSet(t, rules.String())
	now := int64(start)
	return collectorAt(fixed(set), &now)
}

// TestScrapeCostCountsGathered: a scrape holds, from its start to its end, the families
// the registry gathered for it (the self-metrics: a dozen samples a rule), which the cost
// a scrape leaves for the next counts, about as the heap holds them: the self-metrics of
// a few thousand rules, held by each of many stalled scrapes, were tens of MB outside
// --web.max-scrape-bytes.
func TestScrapeCostCountsGathered(t *testing.T) {
	c := rulesCollector(t, 300, "  - name: r%03d\n    match: '^(?P<v>.*)$'\n")
	reg := prometheus.NewRegistry()
	reg.MustRegister(c)
	exporter.Handler(c, reg, nil).ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, "/metrics", nil))
	cost, known := c.ScrapeCost(nil, expfmt.NewFormat(expfmt.TypeTextPlain))
	heap := func() int64 {
		var m runtime.MemStats
		runtime.GC()
		runtime.GC() // the pools' victims too
		runtime.ReadMemStats(&m)
		return int64(m.HeapAlloc)
	}
	heap() // what the scrape left, finalizers run
	before := heap()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	gathered := heap() - before
	runtime.KeepAlive(mfs)
	runtime.KeepAlive(reg) // and with it the collector and the Set
	if !known || cost < scrapeOverhead+gathered*3/4 || cost > scrapeOverhead+2*gathered+64<<10 {
		t.Errorf("a scrape of 300 rules of no series, its registry gathering %d bytes of families, costs %d (known %v): want the overhead %d and about those",
			gathered, cost, known, scrapeOverhead)
	}
	t.Logf("gathered %d bytes; the scrape costs %d beside the overhead", gathered, cost-scrapeOverhead)
}

// TestScrapeCostOfANewSetBuildsNothing: the cost of a scrape of a Set no scrape has read
// (the first after a start or a reload) is unknown, and telling so builds nothing: a
// limiter prices scrapes under its lock, and the families of 10,000 rules took half a
// second to plan there, every scrape and release waiting. The first scrape plans them.
func TestScrapeCostOfANewSetBuildsNothing(t *testing.T) {
	c := rulesCollector(t, 300, "  - name: r%03d\n    match: '^(?P<v>.*)$'\n    labels: {v: '${v}'}\n")
	text := expfmt.NewFormat(expfmt.TypeTextPlain)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, known := c.ScrapeCost(nil, text)
	runtime.ReadMemStats(&after)
	if allocs := after.Mallocs - before.Mallocs; known || allocs > 50 {
		t.Errorf("the cost of a scrape of 300 rules no scrape read: known %v, %d allocations; want unknown and none to speak of", known, allocs)
	}
	if err := c.Encode(io.Discard, nil, text); err != nil {
		t.Fatal(err)
	}
	if _, known := c.ScrapeCost(nil, text); !known {
		t.Error("the cost of a scrape of rules a scrape read is unknown")
	}
}
