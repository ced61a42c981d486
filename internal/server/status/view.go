package status

import (
	"context"
	"errors"
	"html/template"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/model"

	"github.com/logwindow/logwindow_exporter/config"
	"github.com/logwindow/logwindow_exporter/internal/pipeline"
	"github.com/logwindow/logwindow_exporter/internal/scrape"
	"github.com/logwindow/logwindow_exporter/internal/selfmetric"
	"github.com/logwindow/logwindow_exporter/windows"
)

// view is what the template renders.
type view struct {
	Name, MetricsPath string
	// The page's links, relative to its own URL, so that they hold behind a proxy that
	// serves the exporter under a path prefix (an ingress's /logwindow/, kubectl proxy's
	// /api/v1/namespaces/…/proxy/).
	MetricsLink, HealthyLink, ReadyLink, ExplainLink string
	Rendered                                         string
	GatherError                                      string
	ConfigFile                                       string
	Reload                                           string
	ReloadOK                                         bool
	// ReloadErrors say why the last reload was refused, one problem a line, at most
	// maxReloadErrors of them; ReloadErrorsMore are those left out.
	ReloadErrors     []string
	ReloadErrorsMore int
	// InputsNotStarted: the last reload put its config in force but for inputs that could
	// not start, which ReloadErrors are about.
	InputsNotStarted bool
	// NotRunning are the inputs of the config in force that did not start, each with why,
	// and Retry when they are tried again (RFC 3339, UTC; empty when not known).
	NotRunning []string
	Retry      string
	Inputs     []inputRow
	InputNames []string
	// Unnamed: some input has no name; InputNames name it by its path or socket.
	Unnamed     bool
	Rules       []ruleRow
	ShownWindow string // the window of the rules' column "now"
	Build       []pair

	// The line tester, when it is on: its bounds, what was posted and what it gave.
	LineTester        bool
	MaxLines          int
	MaxBody, MaxReply string
	Tested            bool
	Input             string
	Lines             string
	EchoLeftOut       bool // Lines is not repeated in the form
	Clipped           bool // there were more than MaxLines lines
	Explained         []template.HTML
	LeftOut           int // lines not explained, to stay within MaxReply
}

type pair struct{ Name, Value string }

type inputRow struct {
	Name, Source                                 string
	Files                                        []pair // path and bytes behind
	FilesFollowed                                string
	Lines, Unmatched, Malformed, TooLong, Errors string
	// Unread are the lines of another application's JSON log under candidate formats,
	// which no rule was meant to read: apart from Unmatched.
	Unread string
	Behind string
	// MalformedDatagrams are a socket input's datagrams that are not syslog; empty for
	// the other inputs.
	MalformedDatagrams string
}

type ruleRow struct {
	Name, Windows, Inputs, Kind      string
	Matched, Series, Limit, Overflow string
	Dropped                          []pair
	// Regex is the regex the rule runs, its %{PATTERN}s expanded, and Written the regex as
	// written when that differs. A rule reading its input's log format or fields has none:
	// Reads names what it reads instead (the format, or the fields' syntax) and Captures
	// are the captures it uses.
	Regex, Written string
	Reads          string
	Captures       []string
	// Now is what the rule exports over Window as one number over its series (nowOf):
	// What says which. "–" when it cannot be read, or the rule exports no such family.
	Now, What, Window string
}

// maxReloadErrors bounds the problems of a refused reload the page shows (the log has
// them all), and maxErrorBytes each one's length, so a page stays small whatever the file.
const (
	maxReloadErrors = 20
	maxErrorBytes   = 1000
)

// nowOf is what the page shows of rule r in its "now" column, and how it is read from
// its window read over its series (scrape.WindowSums): the first of its families, in the
// order of config/quantity's table, that is one number over its series, `_window`,
// `_window_per_second` or `_window_events` summed, the largest `_window_max` or the
// smallest `_window_min`. A rule that exports none of them (only means, quantiles, a
// histogram, distinct counts) shows none: it was shown its `_window`, which it does not
// export, and which /metrics does not show.
func nowOf(r *config.Rule) (what string, read func(*windows.Stats) float64) {
	a := r.Aggregations
	switch {
	case a.Window:
		return r.WindowQuantity(), func(t *windows.Stats) float64 { return t.Sum }
	case a.PerSecond:
		return "per-second rate of " + r.WindowQuantity(), func(t *windows.Stats) float64 { return t.PerSecond }
	case a.Events:
		return "matched lines", func(t *windows.Stats) float64 { return t.Events }
	case a.Max:
		return "largest " + r.ValueName, func(t *windows.Stats) float64 { return t.Max }
	case a.Min:
		return "smallest " + r.ValueName, func(t *windows.Stats) float64 { return t.Min }
	}
	return "nothing it exports sums over series", nil
}

// shownWindow is the window whose value the page shows beside each rule: 5m, the window
// people look at first; a rule without it shows its shortest longer window, else its
// longest.
const shownWindow = 5 * time.Minute

// pickWindow returns the index of the window shown among ws (ascending, never empty).
func pickWindow(ws []time.Duration) int {
	for i, w := range ws {
		if w >= shownWindow {
			return i
		}
	}
	return len(ws) - 1
}

// metrics indexes gathered families by name (all), and their samples by name and the
// value of a label a row is looked up by (byLabel), so that a row reads its own samples:
// a search of the family's for each of thousands of rules took minutes of a core a page.
type metrics struct {
	all     map[string][]*dto.Metric
	byLabel map[sampleKey][]*dto.Metric
}

// sampleKey is a family's name and a label's name and value.
type sampleKey struct{ family, label, value string }

// indexedLabels are the labels rows are looked up by.
var indexedLabels = []string{"rule", "input"}

func newMetrics(families []*dto.MetricFamily) metrics {
	m := metrics{all: map[string][]*dto.Metric{}, byLabel: map[sampleKey][]*dto.Metric{}}
	for _, f := range families {
		name := f.GetName()
		m.all[name] = f.GetMetric()
		for _, s := range f.GetMetric() {
			for _, l := range s.GetLabel() {
				if slices.Contains(indexedLabels, l.GetName()) {
					k := sampleKey{name, l.GetName(), l.GetValue()}
					m.byLabel[k] = append(m.byLabel[k], s)
				}
			}
		}
	}
	return m
}

// samples are those of family name that have the first of labels (name, value pairs), if
// it is indexed, else all of the family's.
func (m metrics) samples(name string, labels ...string) []*dto.Metric {
	if len(labels) >= 2 && slices.Contains(indexedLabels, labels[0]) {
		return m.byLabel[sampleKey{name, labels[0], labels[1]}]
	}
	return m.all[name]
}

func (m metrics) get(name string, labels ...string) (float64, bool) {
	for _, s := range m.samples(name, labels...) {
		if matchLabels(s, labels) {
			return sampleValue(s), true
		}
	}
	return 0, false
}

// text is a sample's value for the page; "–" when the exporter does not have the metric
// (yet: an input that has not started, or a build without it).
func (m metrics) text(name string, labels ...string) string {
	v, ok := m.get(name, labels...)
	if !ok {
		return "–"
	}
	return number(v)
}

func matchLabels(s *dto.Metric, labels []string) bool {
	for i := 0; i+1 < len(labels); i += 2 {
		found := false
		for _, lp := range s.GetLabel() {
			if lp.GetName() == labels[i] && lp.GetValue() == labels[i+1] {
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	return true
}

func label(s *dto.Metric, name string) string {
	for _, lp := range s.GetLabel() {
		if lp.GetName() == name {
			return lp.GetValue()
		}
	}
	return ""
}

func sampleValue(s *dto.Metric) float64 {
	switch {
	case s.Counter != nil:
		return s.GetCounter().GetValue()
	case s.Gauge != nil:
		return s.GetGauge().GetValue()
	case s.Untyped != nil:
		return s.GetUntyped().GetValue()
	}
	return math.NaN()
}

func number(v float64) string {
	if v == math.Trunc(v) && math.Abs(v) < 1e15 {
		return strconv.FormatInt(int64(v), 10)
	}
	return strconv.FormatFloat(v, 'g', 6, 64)
}

// view gathers the registry, reads the rules' windows and lays out the page served at
// pagePath (where its links are relative to), one request
// at a time: what a page holds beyond its view (the gathered families, a series per
// followed file, and the windows) is then held by one request at most, however many ask
// at once. It returns nil when ctx ends while it waits.
func (o *Options) view(ctx context.Context, pagePath string) *view {
	select {
	case o.reading <- struct{}{}:
		defer func() { <-o.reading }()
	case <-ctx.Done():
		return nil
	}
	cfg := o.Source.Config()
	v := &view{Name: o.Name, MetricsPath: o.MetricsPath, ConfigFile: cfg.File, Build: buildInfo(),
		Rendered: time.Now().UTC().Format(time.RFC3339), ShownWindow: model.Duration(shownWindow).String(),
		LineTester: o.LineTester, MaxLines: MaxExplainLines, MaxBody: size(MaxExplainBody), MaxReply: size(MaxExplainReply)}
	v.MetricsLink, v.HealthyLink = relativeLink(pagePath, o.MetricsPath), relativeLink(pagePath, "/-/healthy")
	v.ReadyLink, v.ExplainLink = relativeLink(pagePath, "/-/ready"), relativeLink(pagePath, ExplainPath)
	families, err := o.Gatherer.Gather()
	if err != nil {
		// What could be gathered is still shown; the rest reads as missing.
		v.GatherError = err.Error()
	}
	m := newMetrics(families)
	ok, okFound := m.get(selfmetric.ConfigLastReloadSuccessful.Name)
	at, atFound := m.get(selfmetric.ConfigLastReloadSuccessTimestamp.Name)
	switch {
	case !okFound:
		v.Reload = "unknown"
	case ok == 1:
		v.ReloadOK = true
		v.Reload = "loaded"
	case errors.As(o.Source.ReloadError(), new(*pipeline.InputsNotStarted)):
		v.Reload, v.InputsNotStarted = "the last reload put the new config in force, but inputs did not start", true
	default:
		v.Reload = "the last reload was refused; the previous config keeps running"
	}
	if atFound && at > 0 {
		v.Reload += ", last success " + time.Unix(int64(at), 0).UTC().Format(time.RFC3339)
	}
	if err := o.Source.ReloadError(); err != nil {
		for i, line := range strings.Split(err.Error(), "\n") {
			if i >= maxReloadErrors {
				v.ReloadErrorsMore++
				continue
			}
			v.ReloadErrors = append(v.ReloadErrors, clip(line))
		}
	}
	for _, in := range o.Source.InputsNotRunning() {
		v.NotRunning = append(v.NotRunning, clip(in.Input+": "+in.Err.Error()))
		if !in.Retry.IsZero() {
			v.Retry = in.Retry.UTC().Format(time.RFC3339)
		}
	}
	sums := o.windowSums()
	for _, in := range cfg.Inputs {
		v.Inputs = append(v.Inputs, newInputRow(m, in))
	}
	v.InputNames = inputNames(cfg)
	v.Unnamed = slices.ContainsFunc(cfg.Inputs, func(in config.Input) bool { return in.Name == "" })
	for _, r := range cfg.Rules {
		v.Rules = append(v.Rules, newRuleRow(m, r, sums[r.Name]))
	}
	return v
}

// clip is line within maxErrorBytes, marked when cut.
func clip(line string) string {
	if len(line) > maxErrorBytes {
		return strings.ToValidUTF8(line[:maxErrorBytes], "") + " …"
	}
	return line
}

// relativeLink is the link from the page at pagePath to path, both absolute, that
// resolves to path under whatever prefix both are served: "./" or as many "../" as
// pagePath has directories, then path. "./" keeps a path whose first segment holds a colon
// from reading as a scheme.
func relativeLink(pagePath, path string) string {
	root := "./"
	if up := strings.Count(pagePath, "/") - 1; up > 0 {
		root = strings.Repeat("../", up)
	}
	return root + strings.TrimPrefix(path, "/")
}

// windowSums reads the rules' windows by rule name; nil when the page has no
// WindowReader.
func (o *Options) windowSums() map[string]scrape.WindowSums {
	if o.Windows == nil {
		return nil
	}
	out := map[string]scrape.WindowSums{}
	for _, ws := range o.Windows.WindowSums() {
		out[ws.Rule] = ws
	}
	return out
}

func newInputRow(m metrics, in config.Input) inputRow {
	l := in.Label()
	row := inputRow{Name: in.Name, Source: in.Source(),
		Lines:     m.text(selfmetric.InputLines.Name, "input", l),
		Unmatched: m.text(selfmetric.InputUnmatchedLines.Name, "input", l),
		Unread:    m.text(selfmetric.InputUnreadLines.Name, "input", l),
		Malformed: m.text(selfmetric.InputMalformedLines.Name, "input", l),
		TooLong:   m.text(selfmetric.InputTooLongLines.Name, "input", l),
		Errors:    m.text(selfmetric.InputErrors.Name, "input", l),
	}
	if _, ok := m.get(selfmetric.InputMalformedDatagrams.Name, "input", l); ok {
		// A socket's datagrams that are not syslog, read whole: another count than the
		// lines its fields rules could not read, which every input has.
		row.MalformedDatagrams = m.text(selfmetric.InputMalformedDatagrams.Name, "input", l)
	}
	var behind float64
	for _, s := range m.samples(selfmetric.InputBehindBytes.Name, "input", l) {
		row.Files = append(row.Files, pair{label(s, "path"), number(sampleValue(s))})
		behind += sampleValue(s)
	}
	slices.SortFunc(row.Files, func(a, b pair) int { return strings.Compare(a.Name, b.Name) })
	row.FilesFollowed = m.text(selfmetric.InputFiles.Name, "input", l)
	if row.FilesFollowed == "–" && in.File != nil {
		row.FilesFollowed = strconv.Itoa(len(row.Files))
	}
	row.Behind = number(behind)
	return row
}

func newRuleRow(m metrics, r *config.Rule, sums scrape.WindowSums) ruleRow {
	row := ruleRow{Name: r.Name,
		Matched:  m.text(selfmetric.RuleMatchedLines.Name, "rule", r.Name),
		Series:   m.text(selfmetric.RuleSeries.Name, "rule", r.Name),
		Limit:    m.text(selfmetric.RuleSeriesLimit.Name, "rule", r.Name),
		Overflow: m.text(selfmetric.SeriesOverflow.Name, "rule", r.Name),
		Kind:     r.Describe(),
		Now:      "–",
	}
	if r.Timestamp != nil {
		row.Kind += "; by the line's " + r.Timestamp.CaptureName
	}
	switch {
	case r.LogFormat != nil:
		row.Reads = r.LogFormat.Key() + ": " + r.LogFormat.Describe()
		row.Captures = capturesUsed(r)
	case r.Regexp == nil:
		row.Reads = r.Format.String() + " fields"
		row.Captures = capturesUsed(r)
	default:
		row.Regex = r.Expanded
		if r.Match != r.Expanded {
			row.Written = r.Match
		}
	}
	// Windows are named as their label names them, the window as written ("300s"), so
	// that the page's names are those /metrics has.
	i := pickWindow(r.Windows)
	row.Window = r.WindowName(i)
	// The sums are read from the store in use, which a reload may have changed since the
	// config was: they are shown only for the same window.
	var total *windows.Stats
	for j, w := range sums.Windows {
		if w == r.Windows[i] && j < len(sums.Totals) {
			total = &sums.Totals[j]
		}
	}
	var now func(*windows.Stats) float64
	row.What, now = nowOf(r)
	if now != nil && total != nil {
		if v := now(total); !math.IsNaN(v) {
			row.Now = number(v)
		}
	}
	var ws []string
	for j := range r.Windows {
		ws = append(ws, r.WindowName(j))
	}
	row.Windows = strings.Join(ws, " ")
	row.Inputs = "all"
	if r.Inputs != nil {
		row.Inputs = strings.Join(r.Inputs, ", ")
	}
	for _, s := range m.samples(selfmetric.RuleDroppedLines.Name, "rule", r.Name) {
		if sampleValue(s) > 0 {
			row.Dropped = append(row.Dropped, pair{label(s, "reason"), number(sampleValue(s))})
		}
	}
	return row
}

// capturesUsed names the captures a rule reads, in the order of their indexes: those its
// labels, value, timestamp, filters and summaries' texts refer to.
func capturesUsed(r *config.Rule) []string {
	var used []int
	templates := make([]config.Template, 0, len(r.Labels)+len(r.Items))
	for _, l := range r.Labels {
		templates = append(templates, l.Template)
	}
	for _, it := range r.Items {
		templates = append(templates, it.Template)
	}
	for _, t := range templates {
		for _, p := range t {
			used = append(used, p.Capture)
		}
	}
	used = append(used, r.ValueCapture)
	if r.Timestamp != nil {
		used = append(used, r.Timestamp.Capture)
	}
	for _, w := range slices.Concat(r.Where, r.WhereNot) {
		used = append(used, w.Capture)
	}
	slices.Sort(used)
	var names []string
	for _, i := range slices.Compact(used) {
		if name := r.CaptureName(i); name != "" {
			names = append(names, name)
		}
	}
	return names
}
