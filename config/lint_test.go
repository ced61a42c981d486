package config

import (
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil/promlint"
	dto "github.com/prometheus/client_model/go"
	"go.yaml.in/yaml/v3"

	"github.com/logwindow/logwindow_exporter/config/quantity"
	"github.com/logwindow/logwindow_exporter/internal/testutil/race"
)

// lintCase is a rule name with its label names and, when top is set, the label it ranks
// (one of labels).
type lintCase struct {
	name   string
	labels []string
	top    string
}

func (c lintCase) String() string {
	s := fmt.Sprintf("name %s labels %v", c.name, c.labels)
	if c.top != "" {
		s += " top " + c.top
	}
	return s
}

// checkable reports whether config checks the case against the conventions at all. Config
// is stricter than promtool on the names it refuses before that (names.go): names outside
// the classic grammar, reserved prefixes (logwindow_, go_, process_, promhttp_), a rule
// name ending in _total (its counter would be _total_total), and the labels "window" and
// __*, which the exporter or Prometheus use.
func (c lintCase) checkable() bool {
	// Names past maxNameBytes are refused by a bound of config's own (limits.go), which
	// promtool's linter does not share.
	if checkMetricName(c.name) != nil || len(c.name) > maxNameBytes {
		return false
	}
	for _, l := range c.labels {
		if checkLabelName(l) != nil || len(l) > maxNameBytes {
			return false
		}
	}
	return true
}

// promtoolView lints the families a rule of case c exports with promtool's own linter. It
// builds them from the family names alone, without config's families, so that the two
// are compared and not one with itself: _total is the counter without the window label,
// the distribution the histogram, its series part of it, every other family a gauge with
// the window label, and the top values' family also carries the ranked label.
func promtoolView(t testing.TB, c lintCase) map[string]bool {
	t.Helper()
	pairs := func(names ...string) []*dto.LabelPair {
		var out []*dto.LabelPair
		for _, n := range names {
			out = append(out, &dto.LabelPair{Name: &n})
		}
		return out
	}
	help := "h"
	histogram := c.name + quantity.HistogramSuffix
	labels := slices.DeleteFunc(slices.Clone(c.labels), func(l string) bool { return l == c.top })
	windowed := append(slices.Clone(labels), "window")
	var mfs []*dto.MetricFamily
	for _, name := range (&quantity.Spec{}).FamilyNames(c.name) {
		mf := &dto.MetricFamily{Name: &name, Help: &help}
		switch {
		case name == c.name+"_total":
			mf.Type = dto.MetricType_COUNTER.Enum()
			mf.Metric = []*dto.Metric{{Label: pairs(labels...), Counter: &dto.Counter{}}}
		case name == histogram:
			mf.Type = dto.MetricType_HISTOGRAM.Enum()
			mf.Metric = []*dto.Metric{{Label: pairs(windowed...), Histogram: &dto.Histogram{}}}
		case strings.HasPrefix(name, histogram):
			continue
		case name == c.name+quantity.TopSuffix && c.top != "":
			mf.Type = dto.MetricType_GAUGE.Enum()
			mf.Metric = []*dto.Metric{{Label: pairs(append(slices.Clone(windowed), c.top)...), Gauge: &dto.Gauge{}}}
		default:
			mf.Type = dto.MetricType_GAUGE.Enum()
			mf.Metric = []*dto.Metric{{Label: pairs(windowed...), Gauge: &dto.Gauge{}}}
		}
		mfs = append(mfs, mf)
	}
	problems, err := promlint.NewWithMetricFamilies(mfs).Lint()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	for _, p := range problems {
		out[p.Metric+": "+promtoolKey(t, p.Text)] = true
	}
	return out
}

var (
	promtoolBaseUnit = regexp.MustCompile(`^use base unit "(.*)" instead of "(.*)"$`)
	promtoolType     = regexp.MustCompile(`^metric name should not include type '(.*)'$`)
)

// promtoolKey names a promtool finding as findingKey does config's, keeping what detail
// promtool gives. A finding it does not know fails the test: a newer promtool checks
// something config does not.
func promtoolKey(t testing.TB, text string) string {
	t.Helper()
	switch text {
	case "metric names should not contain abbreviated units":
		return "abbreviated unit"
	case "metric names should be written in 'snake_case' not 'camelCase'":
		return "camelCase name"
	case "label names should be written in 'snake_case' not 'camelCase'":
		return "camelCase label"
	case `non-histogram metrics should not have "le" label`:
		return "label le"
	case `non-summary metrics should not have "quantile" label`:
		return "label quantile"
	}
	if m := promtoolBaseUnit.FindStringSubmatch(text); m != nil {
		return "unit " + m[2] + " for " + m[1]
	}
	if m := promtoolType.FindStringSubmatch(text); m != nil {
		return "type " + m[1]
	}
	t.Fatalf("promtool flags %q, which config does not check", text)
	return ""
}

// findingKey names a finding of config's with the detail promtool gives of it.
func findingKey(f finding) string {
	switch f.kind {
	case nonBaseUnit:
		return "unit " + f.word + " for " + f.base
	case abbreviatedUnit:
		return "abbreviated unit"
	case typeInName:
		return "type " + f.word
	case camelCaseName:
		return "camelCase name"
	case camelCaseLabel:
		return "camelCase label"
	default:
		return "label " + f.word
	}
}

// configView is what config finds in every family of a rule of case c.
func configView(c lintCase) map[string]bool {
	r := &Rule{Name: c.name}
	for _, l := range c.labels {
		if l != c.top {
			r.Labels = append(r.Labels, Label{Name: l})
		}
	}
	if c.top != "" {
		r.Top = &quantity.Top{Label: c.top}
	}
	out := map[string]bool{}
	for _, fam := range families(r) {
		for _, f := range fam.check() {
			out[f.family+": "+findingKey(f)] = true
		}
	}
	return out
}

// yamlOf is a config file with one rule of case c.
func yamlOf(c lintCase) string {
	var b strings.Builder
	fmt.Fprintf(&b, "rules:\n  - name: '%s'\n    match: '(?P<x>.)'\n", c.name)
	if len(c.labels) > 0 {
		b.WriteString("    labels:\n")
		for _, l := range c.labels {
			fmt.Fprintf(&b, "      '%s': '${x}'\n", l)
		}
	}
	if c.top != "" {
		fmt.Fprintf(&b, "    top: {label: '%s', k: 3}\n", c.top)
	}
	return b.String()
}

// agree checks one case both ways: config refuses a file with the rule exactly when
// promtool flags one of its families, and config finds in each family what promtool does.
func agree(t testing.TB, c lintCase) {
	t.Helper()
	want := promtoolView(t, c)
	_, err := Parse([]byte(yamlOf(c)), "lint.yaml")
	if refused := err != nil; refused != (len(want) > 0) {
		t.Errorf("%v: config refuses: %v; promtool flags: %v", c, err, sortedKeys(want))
		return
	}
	if err != nil {
		for _, line := range strings.Split(err.Error(), "\n") {
			if !strings.Contains(line, ": promtool check metrics would flag ") {
				t.Errorf("%v: refused for another reason than the conventions: %s", c, line)
			}
		}
	}
	if got := configView(c); !mapsEqual(got, want) {
		t.Errorf("%v:\nconfig finds   %v\npromtool finds %v", c, sortedKeys(got), sortedKeys(want))
	}
}

func mapsEqual(a, b map[string]bool) bool {
	if len(a) != len(b) {
		return false
	}
	for k := range a {
		if !b[k] {
			return false
		}
	}
	return true
}

// Word lists of the generator: wider than what either side knows, so that a word config
// flags and promtool does not shows up as well as the reverse.
var (
	plainWords = []string{"http", "requests", "latency", "size", "temp", "errors", "cpu", "disk", "response", "body",
		"upstream", "queue", "depth", "x", "a", "per", "second", "up", "info", "ratio", "percent", "min", "max",
		"window", "top", "p99", "9", "bucketed", "counters", "le", "quantile", "mini", "kilo", "sum_of", "nano"}
	unitWords = []string{"seconds", "second", "minutes", "minute", "hours", "days", "weeks", "years", "bytes", "byte",
		"bits", "meters", "metres", "meter", "inches", "feet", "yards", "miles", "grams", "pounds", "ounces", "tons",
		"celsius", "kelvin", "kelvins", "fahrenheit", "rankine", "volts", "amperes", "amps", "joules", "calories",
		"watts", "hertz", "ohms", "ratio", "percent"}
	prefixWords = []string{"femto", "pico", "nano", "micro", "milli", "centi", "deci", "deca", "deka", "hecto", "kilo",
		"mega", "giga", "tera", "peta", "exa", "zetta", "kibi", "mebi", "gibi", "tebi", "pebi", "exbi", "k", "m"}
	abbreviationWords = []string{"s", "ms", "us", "ns", "sec", "secs", "msec", "b", "kb", "mb", "gb", "tb", "pb", "eb",
		"kib", "mib", "m", "h", "d", "min", "hr", "hrs", "w", "y", "km", "kg", "g", "v", "a", "j", "c"}
	typeWords = []string{"counter", "gauge", "histogram", "summary", "total", "bucket", "count", "sum", "info",
		"stateset", "untyped", "counters", "gauges", "histograms"}
	labelWords = []string{"le", "quantile", "quantiles", "method", "status", "path", "code", "instance", "job",
		"le_bound", "the_le", "window_size", "type", "unit", "seconds", "ms"}
)

// randomWord is a word of a name: plain, a unit with or without a prefix, an
// abbreviation or a type word, sometimes capitalised or in upper case.
func randomWord(rng *rand.Rand) string {
	pick := func(l []string) string { return l[rng.IntN(len(l))] }
	var w string
	switch rng.IntN(5) {
	case 0:
		w = pick(plainWords)
	case 1:
		w = pick(unitWords)
		if rng.IntN(2) == 0 {
			w = pick(prefixWords) + w
		}
	case 2:
		w = pick(abbreviationWords)
	case 3:
		w = pick(typeWords)
	default:
		w = pick(unitWords)
	}
	switch rng.IntN(12) {
	case 0:
		w = strings.ToUpper(w[:1]) + w[1:]
	case 1:
		w = strings.ToUpper(w)
	}
	return w
}

// randomName joins 1 to 4 words, mostly with _, sometimes camelCase, with __ or with a
// leading _.
func randomName(rng *rand.Rand, words func() string) string {
	var b strings.Builder
	if rng.IntN(15) == 0 {
		b.WriteByte('_')
	}
	for i := range 1 + rng.IntN(4) {
		w := words()
		if i > 0 {
			switch rng.IntN(10) {
			case 0: // camelCase
				w = strings.ToUpper(w[:1]) + w[1:]
			case 1:
				b.WriteString("__")
			default:
				b.WriteByte('_')
			}
		}
		b.WriteString(w)
	}
	return b.String()
}

func randomCase(rng *rand.Rand) lintCase {
	c := lintCase{name: randomName(rng, func() string { return randomWord(rng) })}
	for range rng.IntN(4) {
		var l string
		if rng.IntN(2) == 0 {
			l = labelWords[rng.IntN(len(labelWords))]
		} else {
			l = randomName(rng, func() string { return labelWords[rng.IntN(len(labelWords))] })
		}
		if !slices.Contains(c.labels, l) {
			c.labels = append(c.labels, l)
		}
	}
	if len(c.labels) > 0 && rng.IntN(3) == 0 {
		c.top = c.labels[rng.IntN(len(c.labels))]
	}
	return c
}

// seedCases are the cases at the edges of the conventions, with whether promtool flags
// them; the fuzz target starts from them.
var seedCases = []struct {
	c       lintCase
	flagged bool
}{
	{lintCase{name: "http_requests"}, false},
	{lintCase{name: "request_duration_seconds", labels: []string{"method", "status"}}, false},
	{lintCase{name: "latency_ms"}, true},
	{lintCase{name: "latency_MS"}, true},    // abbreviations in any case
	{lintCase{name: "ms_latency"}, false},   // not after an underscore
	{lintCase{name: "_ms"}, true},           // after a leading underscore
	{lintCase{name: "latency__ms"}, true},   // after __
	{lintCase{name: "latency_msec"}, false}, // not an abbreviation promtool knows
	{lintCase{name: "latency_milliseconds"}, true},
	{lintCase{name: "latency_Milliseconds"}, false},          // units only as written
	{lintCase{name: "milliseconds_latency"}, true},           // units anywhere
	{lintCase{name: "duration_seconds_milliseconds"}, false}, // the first unit decides
	{lintCase{name: "duration_milliseconds_seconds"}, true},
	{lintCase{name: "size_kilobytes"}, true},
	{lintCase{name: "size_kibibytes"}, true},
	{lintCase{name: "size_exabytes"}, false}, // a prefix promtool does not know
	{lintCase{name: "size_kilo"}, false},
	{lintCase{name: "distance_metres"}, false},
	{lintCase{name: "distance_kilometres"}, true},
	{lintCase{name: "temp_kelvin"}, false},
	{lintCase{name: "temp_kelvins"}, true},
	{lintCase{name: "temp_fahrenheit"}, true},
	{lintCase{name: "temp_millikelvin"}, true},
	{lintCase{name: "cpu_percent"}, false},
	{lintCase{name: "power_watts"}, false},
	{lintCase{name: "temp_gauge"}, true},
	{lintCase{name: "temp_Gauge_x"}, true},
	{lintCase{name: "gauge_temp"}, false},
	{lintCase{name: "events_counter"}, true},
	{lintCase{name: "sizes_histogram"}, true},
	{lintCase{name: "latency_summary"}, false}, // no family is a summary
	{lintCase{name: "requests_count"}, false},  // the families' suffixes follow
	{lintCase{name: "requests_bucket"}, false},
	{lintCase{name: "requests_sum"}, false},
	{lintCase{name: "reqCount"}, true},
	{lintCase{name: "HTTPRequests"}, false}, // no lower-case letter before an upper-case one
	{lintCase{name: "a", labels: []string{"fooBar"}}, true},
	{lintCase{name: "a", labels: []string{"le"}}, true},
	{lintCase{name: "a", labels: []string{"LE"}}, false},
	{lintCase{name: "a", labels: []string{"quantile"}}, true},
	{lintCase{name: "a", labels: []string{"ms", "seconds_total"}}, false}, // label names have no units
	{lintCase{name: "a", labels: []string{"pathName"}, top: "pathName"}, true},
	{lintCase{name: "a", labels: []string{"le", "path"}, top: "le"}, true},
}

func TestLintSeeds(t *testing.T) {
	for _, s := range seedCases {
		t.Run(s.c.String(), func(t *testing.T) {
			if got := len(promtoolView(t, s.c)) > 0; got != s.flagged {
				t.Errorf("promtool flags it: %v, want %v", got, s.flagged)
			}
			agree(t, s.c)
		})
	}
}

// TestLintAgreesWithPromtool generates rule names and labels from words of units, their
// prefixes and abbreviations, and type words, joined in snake_case and camelCase: config
// must refuse exactly those promtool would flag.
func TestLintAgreesWithPromtool(t *testing.T) {
	race.Skip(t)
	rng := rand.New(rand.NewPCG(23, 5))
	n := 1500
	if testing.Short() {
		n = 300
	}
	checked, flagged := 0, 0
	kinds := map[string]bool{} // what promtool flagged, without details
	for range n {
		c := randomCase(rng)
		if !c.checkable() {
			continue
		}
		checked++
		found := promtoolView(t, c)
		if len(found) > 0 {
			flagged++
		}
		for k := range found {
			_, k, _ = strings.Cut(k, ": ")
			if kind, _, _ := strings.Cut(k, " "); kind == "unit" || kind == "type" {
				k = kind
			}
			kinds[k] = true
		}
		agree(t, c)
		if t.Failed() {
			break
		}
	}
	if t.Failed() {
		return
	}
	t.Logf("%d of %d generated cases checked, %d of them flagged", checked, n, flagged)
	if flagged < checked/4 || flagged > checked*3/4 {
		t.Errorf("%d of %d flagged: the generator should hit both sides often", flagged, checked)
	}
	if len(kinds) != 7 {
		t.Errorf("promtool flagged %v; the generator should reach every kind of finding", sortedKeys(kinds))
	}
}

// repoCases are the rules of every YAML file of the repository, with their labels and the
// ranked label, and each of their label names on a plain rule.
func repoCases(t testing.TB) []lintCase {
	t.Helper()
	var out []lintCase
	err := filepath.WalkDir("..", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && strings.HasPrefix(d.Name(), ".") && path != ".." {
			return filepath.SkipDir
		}
		if d.IsDir() || (filepath.Ext(path) != ".yaml" && filepath.Ext(path) != ".yml") {
			return nil
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		var doc struct {
			Rules []struct {
				Name   string
				Labels map[string]any
				Top    struct{ Label string }
			}
		}
		if yaml.Unmarshal(data, &doc) != nil {
			return nil // a file of bad syntax, or not a config
		}
		for _, r := range doc.Rules {
			c := lintCase{name: r.Name, labels: sortedKeys(r.Labels), top: r.Top.Label}
			if !slices.Contains(c.labels, c.top) {
				c.top = ""
			}
			out = append(out, c)
			for _, l := range c.labels {
				out = append(out, lintCase{name: "plain", labels: []string{l}})
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestLintRepoRules(t *testing.T) {
	cases := repoCases(t)
	if len(cases) < 50 {
		t.Fatalf("found %d rules and labels in the repository's YAML files; the walk misses them", len(cases))
	}
	for _, c := range cases {
		if c.checkable() {
			agree(t, c)
		}
	}
}

// FuzzLintAgreesWithPromtool: name is a rule name, labels its comma-separated label names,
// and top, when one of them, the ranked label.
func FuzzLintAgreesWithPromtool(f *testing.F) {
	for _, s := range seedCases {
		f.Add(s.c.name, strings.Join(s.c.labels, ","), s.c.top)
	}
	for _, c := range repoCases(f) {
		f.Add(c.name, strings.Join(c.labels, ","), c.top)
	}
	f.Fuzz(func(t *testing.T, name, labels, top string) {
		c := lintCase{name: name}
		if labels != "" {
			for _, l := range strings.Split(labels, ",") {
				if !slices.Contains(c.labels, l) {
					c.labels = append(c.labels, l)
				}
			}
		}
		if slices.Contains(c.labels, top) {
			c.top = top
		}
		if c.checkable() {
			agree(t, c)
		}
	})
}
