// Package storetest builds the rules, configs and events that the tests of the store and
// of the exposition both write, so that the two packages test with one set of fixtures,
// and writes again the snapshots that the tests of the store and of the pipeline spoil.
// It does not import the store, whose own tests use it.
package storetest

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/logwindow/logwindow_exporter/config"
	"github.com/logwindow/logwindow_exporter/config/quantity"
	"github.com/logwindow/logwindow_exporter/internal/storage"
	"github.com/logwindow/logwindow_exporter/parser"
	"github.com/logwindow/logwindow_exporter/parser/event"
	"github.com/logwindow/logwindow_exporter/windows"
)

// Start is the exporter's start second in every test.
const Start = 1000

// Window lists the tests use often.
var (
	OneMin  = []time.Duration{time.Minute}
	TenSec  = []time.Duration{10 * time.Second, time.Minute}
	MinFive = []time.Duration{time.Minute, 5 * time.Minute}
	// DefaultWindows are a rule's default windows.
	DefaultWindows = []time.Duration{time.Minute, 5 * time.Minute, 15 * time.Minute, time.Hour, 24 * time.Hour}
)

// CountRule is a counting rule with the default aggregations; its fingerprint is its name,
// so a test changes the definition by changing Fingerprint.
func CountRule(name string, ws []time.Duration, labels ...string) *config.Rule {
	r := &config.Rule{
		Name:         name,
		ValueCapture: -1,
		Windows:      ws,
		Spec: quantity.Spec{
			Help:         "Requests.",
			Aggregations: quantity.Aggregations{Window: true, PerSecond: true},
		},
		Fingerprint: name,
	}
	for _, l := range labels {
		r.Labels = append(r.Labels, config.Label{Name: l})
	}
	return r
}

// EventRule is a counting rule that windows its lines by their own time.
func EventRule(name string, ws []time.Duration, labels ...string) *config.Rule {
	r := CountRule(name, ws, labels...)
	r.Timestamp = &config.Timestamp{CaptureName: "time", Layout: time.RFC3339}
	return r
}

// ValueRule sums request_time and exports every aggregation.
func ValueRule(name string, ws []time.Duration, labels ...string) *config.Rule {
	r := CountRule(name, ws, labels...)
	r.Help = "Request time."
	r.ValueCapture = 1
	r.ValueName = "request_time"
	r.Aggregations = quantity.Aggregations{Window: true, PerSecond: true, Events: true, Max: true, Min: true, Mean: true}
	return r
}

// MustLayout is windows.NewLayout for windows a test knows to be valid.
func MustLayout(ws []time.Duration, opts windows.Options) *windows.Layout {
	l, err := windows.NewLayout(ws, opts)
	if err != nil {
		panic(err)
	}
	return l
}

// Config is a config of rules, each holding at most budget series.
func Config(budget int, rules ...*config.Rule) *config.Config {
	return &config.Config{Global: config.Global{MaxSeriesPerRule: budget}, Rules: rules}
}

// TTLConfig is Config with a counter TTL.
func TTLConfig(budget int, ttl time.Duration, rules ...*config.Rule) *config.Config {
	c := Config(budget, rules...)
	c.Global.CounterTTL = ttl
	return c
}

// Event is a parser event of rule with the label values labels: at its own second when at
// is not 0, and of value v (0 means 1).
func Event(rule int, at int64, v float64, labels ...string) *event.Event {
	e := &event.Event{Rule: rule, Value: v, Time: at, HasTime: at != 0}
	if e.Value == 0 {
		e.Value = 1
	}
	for _, l := range labels {
		e.Labels = append(e.Labels, []byte(l))
	}
	e.Key = []byte(strings.Join(labels, event.KeySep))
	return e
}

// Must returns v, or panics on err: for what a test builds from fixtures known to be valid.
func Must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// ParseRules loads a rules file and returns its config and parser, for tests that feed
// lines through the parser.
func ParseRules(t testing.TB, rules string) (*config.Config, *parser.Parser) {
	t.Helper()
	cfg, err := config.Parse([]byte(rules), "rules.yaml")
	if err != nil {
		t.Fatal(err)
	}
	p, err := parser.New(cfg.Rules)
	if err != nil {
		t.Fatal(err)
	}
	p.SetInputs(cfg.Inputs)
	return cfg, p
}

// ShardRules has a rule of every kind a series' parts are merged for: counts, sums with
// events and extrema, quantiles and a histogram, distinct items, top values. ShardLines
// writes lines for them.
const ShardRules = `
global: {windows: [1m, 5m], max_series_per_rule: 100, counter_ttl: 20m}
rules:
  - name: requests
    match: '^(?P<status>[0-9]+) (?P<time>[^ ]+) (?P<client>[^ ]+) (?P<path>[^ ]+)$'
    labels: {status: '${status}'}
  - name: request_seconds
    match: '^(?P<status>[0-9]+) (?P<time>[^ ]+) (?P<client>[^ ]+) (?P<path>[^ ]+)$'
    value: time
    labels: {status: '${status}'}
    aggregations: [window, per_second, events, max, min, mean, quantiles]
    quantiles: [0.5, 0.99]
    buckets: [0.5, 1]
  - name: clients
    match: '^(?P<status>[0-9]+) (?P<time>[^ ]+) (?P<client>[^ ]+) (?P<path>[^ ]+)$'
    labels: {status: '${status}'}
    distinct: '${client}'
    aggregations: [window]
  - name: paths
    match: '^(?P<status>[0-9]+) (?P<time>[^ ]+) (?P<client>[^ ]+) (?P<path>[^ ]+)$'
    labels: {path: '${path}'}
    top: {label: path, k: 3}
`

// ShardLines gives 400 seconds of random lines of ShardRules from Start, each to one of
// sinks writers, seeded by sinks. Values are multiples of 1/8, some negative (which the
// value rule drops), and there are fewer items than any summary's capacity, so that parts
// merged at read are exact. Status 503 only
// ever goes to the last writer, so that some series have one part that is not the first
// writer's.
func ShardLines(sinks int, yield func(sec int64, sink int, line []byte)) {
	rng := rand.New(rand.NewPCG(uint64(sinks), 7))
	statuses := []string{"200", "404", "500", "503"}
	for sec := int64(Start); sec < Start+400; sec++ {
		for range rng.IntN(6) {
			line := fmt.Sprintf("%s %g 10.0.0.%d /p%d", statuses[rng.IntN(len(statuses))],
				float64(rng.IntN(26)-2)/8, rng.IntN(40), rng.IntN(6))
			k := rng.IntN(sinks)
			if strings.HasPrefix(line, "503") {
				k = sinks - 1
			}
			yield(sec, k, []byte(line))
		}
	}
}

// CopySection writes sec, its name and its records, to w: a snapshot written again with
// records or sections a test spoils it by.
func CopySection(w *storage.Writer, sec storage.Section) error {
	if err := w.Section(sec.Name); err != nil {
		return err
	}
	for rec := range sec.Records() {
		if err := w.Record(rec); err != nil {
			return err
		}
	}
	return nil
}
