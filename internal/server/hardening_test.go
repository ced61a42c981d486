package server

// Hostile logs, configs and clocks against the real pipeline, one test each; the configs
// are internal/testutil/hardening's, with LOGFILE standing for the path of the log the test
// writes. The cases that run the built binary are in e2e/hardening_process_test.go.

import (
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/logwindow/logwindow_exporter/config"
	"github.com/logwindow/logwindow_exporter/exporter"
	rulescrape "github.com/logwindow/logwindow_exporter/internal/scrape"
	"github.com/logwindow/logwindow_exporter/internal/store"
	"github.com/logwindow/logwindow_exporter/internal/testutil/metrictest"
	"github.com/logwindow/logwindow_exporter/internal/testutil/race"
	"github.com/logwindow/logwindow_exporter/parser"

	"github.com/logwindow/logwindow_exporter/internal/testutil/hardening"
)

// loadHardeningConfig loads testdata/hardening/name for a log that is never followed.
func loadHardeningConfig(t *testing.T, name string) *config.Config {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(hardening.Config(t, name)(filepath.Join(t.TempDir(), "access.log"))), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// gather reads reg as a scrape would, keyed by family name.
func gather(t *testing.T, reg prometheus.Gatherer) map[string]*dto.MetricFamily {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := make(map[string]*dto.MetricFamily, len(mfs))
	for _, mf := range mfs {
		out[mf.GetName()] = mf
	}
	return out
}

// checkNoNegative fails on any rule sample that is negative or not a number.
func checkNoNegative(t *testing.T, m map[string]*dto.MetricFamily) {
	t.Helper()
	for name, mf := range m {
		if strings.HasPrefix(name, "go_") || strings.HasPrefix(name, "process_") {
			continue
		}
		for _, s := range mf.GetMetric() {
			if v := s.GetCounter().GetValue() + s.GetGauge().GetValue(); v < 0 || math.IsNaN(v) {
				t.Errorf("%s%v = %v", name, s.GetLabel(), v)
			}
		}
	}
}

// uriLine is an access-log line whose path is unique to n, as a crawler's would be.
const uriLine = `10.0.%d.%d - - [14/Nov/2023:22:13:20 +0000] "GET /item/%d?ref=crawl HTTP/1.1" 200 512 "-" "crawler/1.0" 0.001 0.001`

func appendURILine(dst []byte, n int) []byte {
	return fmt.Appendf(dst, uriLine, n>>8&0xff, n&0xff, n)
}

// heapAfterGC is the live heap: what the program holds, not what it has allocated.
func heapAfterGC() uint64 {
	// Twice: a sync.Pool's items survive one collection in its victim cache, and under
	// -race a pool keeps or drops items at random, which read as 0.6 MB of noise.
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// a million unique URIs as a label. Lines go through the parser into the series
// store directly (a file of a million lines would take minutes under -race); the same
// properties are checked through a real file in TestUniqueURIsThroughFile.
func TestUniqueURIsStayWithinBudget(t *testing.T) {
	cfg := loadHardeningConfig(t, "uris.yaml")
	budget := cfg.Global.MaxSeriesPerRule
	p, err := parser.New(cfg.Rules)
	if err != nil {
		t.Fatal(err)
	}
	set, err := store.NewSetWith(cfg, nil, store.SetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	const now = 1_700_000_000
	sink := set.NewSink()
	sink.SetNow(now, now)
	coll := rulescrape.NewCollector(rulescrape.Options{
		Set:   func() *store.Set { return set },
		Now:   func() int64 { return now },
		Start: now,
	})
	self := prometheus.NewPedanticRegistry()
	self.MustRegister(coll)
	reg := metrictest.Scraped(exporter.Handler(coll, self, nil))

	base := heapAfterGC()
	var line []byte
	fed := 0
	heapAt := map[int]uint64{}
	// Under the race detector a tenth of the lines, some 60 s of a loaded core for the
	// million; .ci/run runs the package without it too.
	short, long := 100_000, 1_000_000
	if race.Enabled {
		short, long = 10_000, 100_000
	}
	for _, lines := range []int{short, long} {
		t.Run(fmt.Sprintf("%d lines", lines), func(t *testing.T) {
			for ; fed < lines; fed++ {
				line = appendURILine(line[:0], fed)
				p.Parse("web", line, sink)
			}
			m := gather(t, reg)
			overflow := map[string]string{"path": store.OverflowValue, "status": store.OverflowValue}
			beyond := float64(lines - budget)
			metrictest.Check(t, m, []metrictest.Sample{
				{Family: "logwindow_rule_series", Labels: nil, Want: float64(budget + 1)}, // the overflow series too
				{Family: "logwindow_series_overflow_total", Labels: nil, Want: beyond},
				{Family: "http_requests_by_path_total", Labels: overflow, Want: beyond},
				{Family: "http_requests_by_path_window", Labels: metrictest.WithLabel(overflow, "window", "1m"), Want: beyond},
				{Family: "logwindow_rule_matched_lines_total", Labels: nil, Want: float64(lines)},
			})
			if got := len(m["http_requests_by_path_total"].GetMetric()); got != budget+1 {
				t.Errorf("exported series = %d, want budget %d + overflow", got, budget)
			}
		})
		// After the scrape, which caches each series' label pairs once.
		heapAt[lines] = heapAfterGC()
	}
	// What the store holds is the budget's series; a tenfold longer log must not add to it.
	grown := int64(heapAt[long]) - int64(heapAt[short])
	held := int64(heapAt[short]) - int64(base)
	t.Logf("heap: %d B before, %d B held after %d lines, %+d B more after %d", base, held, short, grown, long)
	const perSeries = 4 << 10 // 300 second slots of float64, plus key, cached label pairs, map entry
	if limit := int64(budget+1) * perSeries; held > limit {
		t.Errorf("heap held for %d series = %d B, want at most %d B", budget+1, held, limit)
	}
	if grown > 64<<10 {
		t.Errorf("heap grew by %d B between %d and %d unique URIs, want no growth (< 64 KiB noise)", grown, short, long)
	}
}

// Through a real file and the HTTP handler: the same budget properties, and a
// scrape of a rule at its budget passes lint (startExporter's cleanup).
func TestUniqueURIsThroughFile(t *testing.T) {
	const budget, lines = 50, 2000
	rules := hardening.Config(t, "uris.yaml")
	e := startExporterWith(t, func(logPath string) string {
		return strings.Replace(rules(logPath), "max_series_per_rule: 1000", fmt.Sprintf("max_series_per_rule: %d", budget), 1)
	}, false)
	batch := make([]string, lines)
	for i := range batch {
		batch[i] = string(appendURILine(nil, i))
	}
	e.appendLines(batch...)
	m := e.scrape()
	overflow := map[string]string{"path": store.OverflowValue, "status": store.OverflowValue}
	if got := len(m["http_requests_by_path_total"].GetMetric()); got != budget+1 {
		t.Errorf("exported series = %d, want budget %d + overflow", got, budget)
	}
	metrictest.Check(t, m, []metrictest.Sample{
		{Family: "logwindow_rule_series", Labels: nil, Want: budget + 1},
		{Family: "logwindow_series_overflow_total", Labels: nil, Want: lines - budget},
		{Family: "http_requests_by_path_window", Labels: metrictest.WithLabel(overflow, "window", "5m"), Want: lines - budget},
	})
}

// BenchmarkScrapeAtBudget measures one scrape over HTTP (collect, encode, transfer) of a
// rule holding the default budget of 10,000 series with the five default windows,
// filled through a real file.
func BenchmarkScrapeAtBudget(b *testing.B) {
	const budget = 10_000
	rules := hardening.Config(b, "uris.yaml")
	defaults := strings.NewReplacer("windows: [1m, 5m]", "windows: [1m, 5m, 15m, 1h, 24h]",
		"max_series_per_rule: 1000", fmt.Sprintf("max_series_per_rule: %d", budget))
	e := startExporterWith(b, func(logPath string) string { return defaults.Replace(rules(logPath)) }, false)
	batch := make([]string, budget+1000)
	for i := range batch {
		batch[i] = string(appendURILine(nil, i))
	}
	e.appendLines(batch...)
	for b.Loop() {
		if code := e.get("/metrics"); code != 200 {
			b.Fatalf("scrape: HTTP %d", code)
		}
	}
}

// hostileLine is a request whose path and user agent are given as raw bytes.
func hostileLine(path, agent string) string {
	return `10.0.0.1 - - [14/Nov/2023:22:13:20 +0000] "GET ` + path + ` HTTP/1.1" 200 5 "-" "` + agent + `" 0.001 0.001`
}

// invalid UTF-8, NUL bytes and 64 KiB values in label values. Every scrape must
// answer 200 and parse (scrape fails the test otherwise), every label value must be valid
// UTF-8 and capped, values equal after that must share one series (two samples with one
// label set would fail the scrape), and the registry must lint clean (startExporter's
// cleanup).
func TestHostileLabelValues(t *testing.T) {
	const agent = "Mozilla/5.0"
	long := strings.Repeat("a", 60<<10)
	wide := strings.Repeat("é", 30<<10) // two bytes a rune: the cap falls inside one
	series := []struct {
		name        string
		lines       []string // raw path and user agent, alternating
		path, agent string   // the label values they must give
	}{
		{"Latin-1 bytes, and the replacement character itself", []string{"/caf\xe9", agent, "/caf\xe8", agent, "/caf\uFFFD", agent}, "/caf\uFFFD", agent},
		{"a run of invalid bytes, each replaced", []string{"/x", "\xff\xfe\xfd"}, "/x", "\uFFFD\uFFFD\uFFFD"},
		{"NUL bytes", []string{"/nul\x00byte", "\x00"}, "/nul\x00byte", "\x00"},
		{"exposition escapes", []string{`/back\slash`, `quote\x22`}, `/back\slash`, `quote\x22`},
		{"60 KiB values differing past the cap", []string{"/" + long, agent, "/" + long + "b", agent}, ("/" + long)[:parser.MaxLabelValueLen], agent},
		{"60 KiB of two-byte runes", []string{"/" + wide, agent}, ("/" + wide)[:parser.MaxLabelValueLen-1], agent},
		{"the overflow value", []string{store.OverflowValue, store.OverflowValue}, store.OverflowValue, store.OverflowValue},
	}
	e := startExporterWith(t, hardening.Config(t, "hostile.yaml"), false)
	matched := 0
	for _, s := range series {
		for i := 0; i < len(s.lines); i += 2 {
			e.appendLines(hostileLine(s.lines[i], s.lines[i+1]))
			matched++
		}
	}
	// Not matched: a line over the 64 KiB line cap, and a run of NULs such as a crash
	// leaves in a preallocated log; the line after them still counts.
	e.appendLines(hostileLine("/"+long+long, agent), strings.Repeat("\x00", 4096), hostileLine("/after", agent))
	matched++

	m := e.scrape()
	for _, s := range series {
		t.Run(s.name, func(t *testing.T) {
			labels := map[string]string{"path": s.path, "user_agent": s.agent}
			if got, want := metrictest.Value(m, "http_requests_by_client_total", labels), float64(len(s.lines)/2); got != want {
				t.Errorf("series %q total = %v, want %v", labels, got, want)
			}
		})
	}
	for _, mf := range m {
		for _, sample := range mf.GetMetric() {
			for _, lp := range sample.GetLabel() {
				if v := lp.GetValue(); !utf8.ValidString(v) || len(v) > parser.MaxLabelValueLen {
					t.Errorf("%s: label %s has %d bytes, valid UTF-8 %v", mf.GetName(), lp.GetName(), len(v), utf8.ValidString(v))
				}
			}
		}
	}
	metrictest.Check(t, m, []metrictest.Sample{
		{Family: "logwindow_rule_series", Labels: nil, Want: float64(len(series) + 1)}, // and /after
		{Family: "logwindow_rule_matched_lines_total", Labels: nil, Want: float64(matched)},
		{Family: "logwindow_input_too_long_lines_total", Labels: nil, Want: 1},
		{Family: "logwindow_collect_errors_total", Labels: nil, Want: 0},
	})
}

// For file names: a glob input picks up a file whose name is not UTF-8, which the
// self-metrics carry as a path label.
func TestHostileFileName(t *testing.T) {
	config := hardening.Config(t, "hostile.yaml")
	e := startExporterWith(t, func(logPath string) string { return config(filepath.Join(filepath.Dir(logPath), "*.log")) }, false)
	hostile := filepath.Join(e.dir, "caf\xe9.log")
	if err := os.WriteFile(hostile, []byte(hostileLine("/", "x")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	e.waitFor(func(m map[string]*dto.MetricFamily) bool {
		return metrictest.Sum(m, "logwindow_input_lines_total") == 1
	}, "the line of the new file")
	m := e.scrape()
	want := filepath.Join(e.dir, "caf\uFFFD.log")
	if got := metrictest.LabelValues(m, "logwindow_input_behind_bytes", "path"); !slices.Contains(got, want) {
		t.Errorf("behind_bytes paths = %q, want one of them %q", got, want)
	}
	if got := metrictest.Value(m, "logwindow_collect_errors_total", nil); got != 0 {
		t.Errorf("collect errors = %v, want 0", got)
	}
}

// a rule whose families would share a metric name with another rule's, or with the
// exporter's own metrics, would make every scrape fail with duplicate families. Such a
// config is refused at load (--config.check shows the same load) and on reload,
// where the running config keeps counting.
func TestCollidingRulesRefused(t *testing.T) {
	cases := []struct {
		name string
		rule string // appended to e2eRules
		want string // in the error
	}{
		{"same name", "  - name: http_requests\n    match: 'x'\n", `rule "http_requests": name: another rule has this name`},
		{"name of another rule's gauge", "  - name: http_requests_window\n    match: 'x'\n", `clashes with rule "http_requests"`},
		{"name of another rule's unused family", "  - name: http_response_bytes_window_max\n    match: 'x'\n", `clashes with rule "http_response_bytes"`},
		{"a self-metric's name", "  - name: logwindow_rule_series\n    match: 'x'\n", `reserved for the exporter's own metrics`},
		{"a Go collector's name", "  - name: go_goroutines\n    match: 'x'\n", `reserved for the exporter's own metrics`},
	}
	e := startExporter(t, true)
	good := fmt.Sprintf(e2eRules, e.logPath)
	ok := map[string]string{"status": "200", "window": "1m"}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e.writeConfig(good + c.rule)
			if _, err := config.Load(e.cfgPath); err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("load: %v; want an error with %q", err, c.want)
			}
			resp, err := http.Post(e.url+"/-/reload", "text/plain", nil)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(body), c.want) {
				t.Errorf("reload: HTTP %d %q, want 400 and %q", resp.StatusCode, body, c.want)
			}
			e.request(1, "GET", "/a", 200, 1)
			m := e.scrape()
			if got := metrictest.Value(m, "logwindow_config_last_reload_successful", nil); got != 0 {
				t.Errorf("reload successful = %v, want 0", got)
			}
			if got, want := metrictest.Value(m, "http_requests_window", ok), float64(i+1); got != want {
				t.Errorf("old rules' 1m window = %v, want %v: they must keep counting", got, want)
			}
		})
	}
	e.writeConfig(good)
	if code := e.post("/-/reload"); code != http.StatusOK {
		t.Errorf("reload of the good config = %d, want 200", code)
	}
}

// the processing-time clock (pipeline.Options.Now, injected here) steps back an hour,
// forward a year, or jumps while lines wait to be read (a suspend). Processing time moves
// by the clock's forward differences only: a backwards step makes it stand still until the
// clock moves on, and then it moves with it, so no event is dropped and no window goes
// stale; a forward jump expires what is older than the windows.
func TestClockSteps(t *testing.T) {
	ok := map[string]string{"status": "200"}
	win := func(w string) map[string]string { return metrictest.WithLabel(ok, "window", w) }
	late := map[string]string{"rule": "http_requests", "reason": "late"}

	t.Run("back one hour", func(t *testing.T) {
		e := startExporter(t, false)
		e.request(10, "GET", "/a", 200, 1)
		e.clock.Advance(-time.Hour)
		e.request(5, "GET", "/a", 200, 1)
		m := e.scrape()
		checkNoNegative(t, m)
		metrictest.Check(t, m, []metrictest.Sample{
			{Family: "http_requests_total", Labels: ok, Want: 15},
			{Family: "http_requests_window", Labels: win("1m"), Want: 15},
			{Family: "http_requests_window", Labels: win("5m"), Want: 15},
			{Family: "logwindow_rule_dropped_lines_total", Labels: late, Want: 0},
		})
		// The windows move on with the clock from where it stepped back.
		e.clock.Advance(61 * time.Second)
		m = e.scrape()
		checkNoNegative(t, m)
		metrictest.Check(t, m, []metrictest.Sample{
			{Family: "http_requests_window", Labels: win("1m"), Want: 0},
			{Family: "http_requests_window", Labels: win("5m"), Want: 15},
			{Family: "http_requests_window_per_second", Labels: win("5m"), Want: 15.0 / 62},
		})
	})

	t.Run("forward one year", func(t *testing.T) {
		e := startExporter(t, false)
		e.request(10, "GET", "/a", 200, 1)
		e.clock.Advance(365 * 24 * time.Hour)
		m := e.scrape()
		checkNoNegative(t, m)
		if got := metrictest.LabelValues(m, "http_requests_total", "status"); len(got) != 0 {
			t.Errorf("a year later, series %v still exported, want expired", got)
		}
		e.request(5, "GET", "/a", 200, 1)
		m = e.scrape()
		checkNoNegative(t, m)
		metrictest.Check(t, m, []metrictest.Sample{
			{Family: "http_requests_total", Labels: ok, Want: 5},
			{Family: "http_requests_window", Labels: win("1m"), Want: 5},
			{Family: "http_requests_window", Labels: win("5m"), Want: 5},
			{Family: "http_requests_window_per_second", Labels: win("1m"), Want: 5.0 / 60},
			{Family: "logwindow_rule_matched_lines_total", Labels: map[string]string{"rule": "http_requests"}, Want: 15},
		})
	})

	// Event-time rules live on the wall clock, because their lines carry wall-clock times:
	// after the host's clock steps back, a line stamped with the new wall time is current,
	// not two hours late.
	t.Run("event time after the wall clock steps back", func(t *testing.T) {
		e := startExporterWith(t, hardening.Config(t, "event-time.yaml"), false)
		before := e.clock.Now().Unix()
		e.appendLines(hardening.EventLine(before, time.UTC, 200), hardening.EventLine(before, time.UTC, 200), hardening.EventLine(before, time.UTC, 200))
		e.clock.Advance(-2 * time.Hour)
		// The series holds lines two hours ahead of the clock: beyond every window from
		// now, so it starts over rather than freezing at its old second.
		wall := e.clock.Now().Unix()
		e.appendLines(hardening.EventLine(wall, time.UTC, 200), hardening.EventLine(wall, time.UTC, 200))
		m := e.scrape()
		metrictest.Check(t, m, []metrictest.Sample{
			{Family: "http_requests_total", Labels: ok, Want: 5},
			{Family: "http_requests_window", Labels: win("1m"), Want: 2},
			{Family: "http_requests_window", Labels: win("15m"), Want: 2},
			{Family: "logwindow_rule_dropped_lines_total", Labels: late, Want: 0},
		})
	})

	t.Run("suspended while lines wait", func(t *testing.T) {
		e := startExporter(t, false)
		e.request(10, "GET", "/a", 200, 1)
		pause := e.clock.PauseNextReading()
		resume := sync.OnceFunc(func() { close(pause.resume) })
		defer resume()
		e.writeLines(accessLine("GET", "/a", 200, 1))
		select {
		case <-pause.reached:
		case <-hung(t):
			t.Fatal("the input never read the clock")
		}
		// Frozen in the middle of a line; two hours pass and more lines arrive.
		e.clock.Advance(2 * time.Hour)
		e.writeLines(accessLine("GET", "/a", 200, 1), accessLine("GET", "/a", 200, 1))
		resume()
		e.waitFor(func(m map[string]*dto.MetricFamily) bool {
			return metrictest.Sum(m, "logwindow_input_lines_total") == 13
		}, "13 lines read")
		m := e.scrape()
		checkNoNegative(t, m)
		metrictest.Check(t, m, []metrictest.Sample{
			{Family: "http_requests_total", Labels: ok, Want: 13},
			{Family: "http_requests_window", Labels: win("1m"), Want: 3},
			{Family: "http_requests_window", Labels: win("5m"), Want: 3},
			{Family: "logwindow_rule_dropped_lines_total", Labels: late, Want: 0},
		})
	})
}

// event-time lines out of order by up to ±60 s, from the far past and from the far
// future. Each is placed or counted as documented: late lines (older than the longest
// window) only in _total and the late counter, future lines at the current second and in
// the future counter; the windows match a naive count, now and two minutes later.
func TestEventTimeOrder(t *testing.T) {
	const start = 1_700_000_000 // the fake clock's start
	india := time.FixedZone("IST", 5*3600+1800)
	rng := rand.New(rand.NewPCG(21, 5))
	shuffled := make([]int64, 600)
	for i := range shuffled {
		// A steady stream over the last 16 minutes, each line off by up to a minute
		// either way, so some fall past both ends of the 15m window.
		shuffled[i] = start - 16*60 + int64(i)*16*60/int64(len(shuffled)) + rng.Int64N(121) - 60
	}
	year := int64(365 * 24 * 3600)
	cases := []struct {
		name  string
		times []int64
		zone  *time.Location
	}{
		{"shuffled ±60 s", shuffled, time.UTC},
		{"shuffled, in another zone", shuffled, india},
		{"far past", []int64{start - 901, start - 900, start - 899, start - 3600, start - 10*year, 0, -62135596800}, time.UTC},
		{"far future", []int64{start + 1, start + 61, start + 3600, start + year, 253402300799}, time.UTC},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := startExporterWith(t, hardening.Config(t, "event-time.yaml"), false)
			ref := hardening.EventWindows{Longest: 900}
			lines := make([]string, len(c.times))
			for i, at := range c.times {
				lines[i] = hardening.EventLine(at, c.zone, 200)
				ref.Add(start, at)
			}
			e.appendLines(lines...)
			ok := map[string]string{"status": "200"}
			for _, later := range []int64{0, 120} {
				e.clock.Advance(time.Duration(later) * time.Second)
				m := e.scrape()
				checkNoNegative(t, m)
				if ref.Placed() > 0 {
					ref.Check(t, m, "http_requests", ok, start+later, ref.Oldest(start))
				}
				rule := map[string]string{"rule": "http_requests"}
				metrictest.Check(t, m, []metrictest.Sample{
					{Family: "logwindow_rule_matched_lines_total", Labels: rule, Want: float64(len(c.times))},
					{Family: "logwindow_rule_dropped_lines_total", Labels: metrictest.WithLabel(rule, "reason", "late"), Want: float64(ref.Late)},
					{Family: "logwindow_rule_dropped_lines_total", Labels: metrictest.WithLabel(rule, "reason", "future"), Want: float64(ref.Future)},
				})
			}
		})
	}
}

// statusTotals sums nginx_http_requests_total by status.
func statusTotals(m map[string]*dto.MetricFamily) map[string]float64 {
	out := map[string]float64{}
	for _, s := range m["nginx_http_requests_total"].GetMetric() {
		for _, lp := range s.GetLabel() {
			if lp.GetName() == "status" {
				out[lp.GetValue()] += s.GetCounter().GetValue()
			}
		}
	}
	return out
}

// a client puts `" 500 ` in its request to have its line counted as a server error.
// nginx escapes `"` in $request as \x22 by default, and since 1.21.1 answers a request
// line with spaces with 400: such a line must count under 400. With escape=none the quote
// is raw and the line is ambiguous; it may go uncounted, never under the forged status.
// The rules are the shipped example-rules.yaml.
func TestStatusSpoofing(t *testing.T) {
	example, err := os.ReadFile("../../example-rules.yaml")
	if err != nil {
		t.Fatal(err)
	}
	e := startExporterWith(t, func(logPath string) string {
		return strings.Replace(string(example), "path: /var/log/nginx/access.log", "path: "+logPath, 1)
	}, false)
	const prefix = `203.0.113.7 - - [14/Nov/2023:22:13:20 +0000] `
	cases := []struct {
		name string
		line string // after the address, user and time
		want string // the status it must count under; "" for not counted
	}{
		{"plain request", `"GET /search?q=x HTTP/1.1" 200 612 "-" "curl/8.5.0" 0.002 0.002`, "200"},
		{"escaped quotes around a forged status", `"GET /search?q=\x22 500 1 \x22 HTTP/1.1" 400 153 "-" "x" 0.001 0.001`, "400"},
		{"escaped quotes around a forged line tail", `"GET /?\x22 500 1 \x22-\x22 \x22x\x22 0.001 0.001 HTTP/1.1" 400 153 "-" "x" 0.001 0.001`, "400"},
		{"spaces in the request, no quotes", `"GET /a b HTTP/1.1" 400 157 "-" "x" 0.000 -`, "400"},
		{"escape=none, raw quotes in the request", `"GET /search?q=" 500 1 " HTTP/1.1" 400 153 "-" "x" 0.001 0.001`, ""},
		{"escape=none, a forged line in the request", `"GET / HTTP/1.1" 500 1 "-" "x" 0.001 0.001" 400 153 "-" "x" 0.001 0.001`, ""},
		{"escape=none, forged fields in the user agent", `"GET / HTTP/1.1" 200 5 "-" "x" 500 1 "-" "y" 0.001 0.001`, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m := e.scrape()
			before, errorsBefore := statusTotals(m), metrictest.Sum(m, "nginx_http_server_errors_total")
			e.appendLines(prefix + c.line)
			m = e.scrape()
			after := statusTotals(m)
			for status := range after {
				want := before[status]
				if status == c.want {
					want++
				}
				if after[status] != want {
					t.Errorf("status %s counted %v, want %v", status, after[status]-before[status], want-before[status])
				}
			}
			if c.want != "" && after[c.want] != before[c.want]+1 {
				t.Errorf("not counted under %s", c.want)
			}
			if got := metrictest.Sum(m, "nginx_http_server_errors_total"); got != errorsBefore {
				t.Errorf("server errors went from %v to %v", errorsBefore, got)
			}
		})
	}
}
