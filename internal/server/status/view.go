package status

import (
	"html/template"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/model"

	"github.com/logwindow/logwindow_exporter/config"
	"github.com/logwindow/logwindow_exporter/internal/selfmetric"
)

// view is what the template renders.
type view struct {
	Name, MetricsPath string
	Rendered          string
	GatherError       string
	ConfigFile        string
	Reload            string
	ReloadOK          bool
	Inputs            []inputRow
	InputNames        []string
	Rules             []ruleRow
	Build             []pair

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
	Behind                                       string
}

type ruleRow struct {
	Name, Match, Expanded, Windows, Inputs, Kind string
	Matched, Series, Limit, Overflow             string
	Dropped                                      []pair
}

// metrics indexes gathered families by name, then by their labels' values.
type metrics map[string][]*dto.Metric

func (m metrics) get(name string, labels ...string) (float64, bool) {
	for _, s := range m[name] {
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

// inputLabel is the input label of an input's self-metrics: its name, or its source.
func inputLabel(in config.Input) string {
	if in.Name != "" {
		return in.Name
	}
	return in.Source()
}

// view gathers the registry and lays out the page.
func (o *Options) view() *view {
	cfg := o.Source.Config()
	v := &view{Name: o.Name, MetricsPath: o.MetricsPath, ConfigFile: cfg.File, Build: buildInfo(),
		Rendered:   time.Now().UTC().Format(time.RFC3339),
		LineTester: o.LineTester, MaxLines: MaxExplainLines, MaxBody: size(MaxExplainBody), MaxReply: size(MaxExplainReply)}
	m := metrics{}
	families, err := o.Gatherer.Gather()
	if err != nil {
		// What could be gathered is still shown; the rest reads as missing.
		v.GatherError = err.Error()
	}
	for _, f := range families {
		m[f.GetName()] = f.GetMetric()
	}
	ok, okFound := m.get(selfmetric.ConfigLastReloadSuccessful.Name)
	at, atFound := m.get(selfmetric.ConfigLastReloadSuccessTimestamp.Name)
	switch {
	case !okFound:
		v.Reload = "unknown"
	case ok == 1:
		v.ReloadOK = true
		v.Reload = "loaded"
	default:
		v.Reload = "the last reload was refused; the previous config keeps running"
	}
	if atFound && at > 0 {
		v.Reload += ", last success " + time.Unix(int64(at), 0).UTC().Format(time.RFC3339)
	}
	for _, in := range cfg.Inputs {
		v.Inputs = append(v.Inputs, newInputRow(m, in))
		if in.Name != "" {
			v.InputNames = append(v.InputNames, in.Name)
		}
	}
	for _, r := range cfg.Rules {
		v.Rules = append(v.Rules, newRuleRow(m, r))
	}
	return v
}

func newInputRow(m metrics, in config.Input) inputRow {
	l := inputLabel(in)
	row := inputRow{Name: in.Name, Source: in.Source(),
		Lines:     m.text(selfmetric.InputLines.Name, "input", l),
		Unmatched: m.text(selfmetric.InputUnmatchedLines.Name, "input", l),
		Malformed: m.text(selfmetric.InputMalformedLines.Name, "input", l),
		TooLong:   m.text(selfmetric.InputTooLongLines.Name, "input", l),
		Errors:    m.text(selfmetric.InputErrors.Name, "input", l),
	}
	if row.Malformed == "–" {
		row.Malformed = m.text(selfmetric.InputMalformedDatagrams.Name, "input", l)
	}
	var behind float64
	for _, s := range m[selfmetric.InputBehindBytes.Name] {
		if label(s, "input") == l {
			row.Files = append(row.Files, pair{label(s, "path"), number(sampleValue(s))})
			behind += sampleValue(s)
		}
	}
	slices.SortFunc(row.Files, func(a, b pair) int { return strings.Compare(a.Name, b.Name) })
	row.FilesFollowed = m.text(selfmetric.InputFiles.Name, "input", l)
	if row.FilesFollowed == "–" && in.Syslog == "" {
		row.FilesFollowed = strconv.Itoa(len(row.Files))
	}
	row.Behind = number(behind)
	return row
}

func newRuleRow(m metrics, r *config.Rule) ruleRow {
	match := r.Match
	if f := r.LogFormat; f != nil {
		match = f.Key() + ": " + f.Describe()
	}
	row := ruleRow{Name: r.Name, Match: match, Expanded: r.Expanded,
		Matched:  m.text(selfmetric.RuleMatchedLines.Name, "rule", r.Name),
		Series:   m.text(selfmetric.RuleSeries.Name, "rule", r.Name),
		Limit:    m.text(selfmetric.RuleSeriesLimit.Name, "rule", r.Name),
		Overflow: m.text(selfmetric.SeriesOverflow.Name, "rule", r.Name),
		Kind:     "counts lines",
	}
	if r.IsValueRule() {
		row.Kind = "sums " + r.ValueName
	}
	if r.Timestamp != nil {
		row.Kind += ", by the line's " + r.Timestamp.CaptureName
	}
	var ws []string
	for _, w := range r.Windows {
		ws = append(ws, model.Duration(w).String())
	}
	row.Windows = strings.Join(ws, " ")
	row.Inputs = "all"
	if r.Inputs != nil {
		row.Inputs = strings.Join(r.Inputs, ", ")
	}
	for _, s := range m[selfmetric.RuleDroppedLines.Name] {
		if label(s, "rule") == r.Name && sampleValue(s) > 0 {
			row.Dropped = append(row.Dropped, pair{label(s, "reason"), number(sampleValue(s))})
		}
	}
	return row
}
