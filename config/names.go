package config

import (
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/prometheus/client_golang/prometheus/testutil/promlint"
	dto "github.com/prometheus/client_model/go"

	"github.com/logwindow/logwindow_exporter/internal/quantity"
)

// nameRE is the classic Prometheus metric and label name. Colons are left out: Prometheus
// reserves them for recording rules.
var nameRE = regexp.MustCompile(`^[a-zA-Z_][a-zA-Z0-9_]*$`)

// reservedPrefixes belong to metrics the exporter registers itself (its own, and the Go,
// process and promhttp collectors'); a rule there could duplicate a family and fail scrapes.
var reservedPrefixes = []string{"logwindow_", "go_", "process_", "promhttp_"}

func checkMetricName(name string) error {
	if !nameRE.MatchString(name) {
		return fmt.Errorf("%q is not a valid metric name (letters, digits and _, not starting with a digit)", name)
	}
	for _, p := range reservedPrefixes {
		if strings.HasPrefix(name, p) {
			return fmt.Errorf("names starting with %s are reserved for the exporter's own metrics", p)
		}
	}
	if strings.HasSuffix(name, "_total") {
		return fmt.Errorf("drop the _total suffix: the exporter adds it to the counter (%s_total)", name)
	}
	return nil
}

func checkLabelName(name string) error {
	switch {
	case !nameRE.MatchString(name):
		return errors.New("not a valid label name (letters, digits and _, not starting with a digit)")
	case strings.HasPrefix(name, "__"):
		return errors.New("label names starting with __ are reserved by Prometheus")
	case name == "window":
		return errors.New(`"window" is the label the exporter puts the window in; pick another name`)
	}
	return nil
}

// collisions reports rules whose names or families clash: a name used twice, or one rule's
// name equal to another's family (rule a_window next to rule a's a_window gauge).
func (d *decoder) collisions(rules []*Rule) {
	owner := map[string]*Rule{}
	for _, r := range rules {
		if r.Name == "" {
			continue
		}
		subject := fmt.Sprintf("rule %q", r.Name)
		if first, dup := owner[r.Name]; dup && first.Name == r.Name {
			d.add(r.Line, subject, "name: another rule has this name (line %d)", first.Line)
			continue
		}
		names := append([]string{r.Name}, r.FamilyNames(r.Name)...)
		for _, n := range names {
			if first, clash := owner[n]; clash {
				d.add(r.Line, subject, "name: clashes with rule %q (line %d) over the metric name %s", first.Name, first.Line, n)
				break
			}
		}
		for _, n := range names {
			if _, taken := owner[n]; !taken {
				owner[n] = r
			}
		}
	}
}

// lint runs the linter of `promtool check metrics` on the families a rule exports, with
// its label names: the exposition is promised lint-clean, and a name only the user chose (an
// abbreviated unit, camelCase, a "le" label) is better refused at load than flagged later.
// Each distinct finding is returned once, with the first family showing it.
func lint(r *Rule) []string {
	labels := make([]*dto.LabelPair, 0, len(r.Labels)+1)
	for _, l := range r.Labels {
		labels = append(labels, &dto.LabelPair{Name: &l.Name})
	}
	window := "window"
	windowed := append(labels[:len(labels):len(labels)], &dto.LabelPair{Name: &window})
	var mfs []*dto.MetricFamily
	histogram := r.Name + quantity.HistogramSuffix
	for i, name := range r.FamilyNames(r.Name) {
		mf := &dto.MetricFamily{Name: &name, Help: &r.Help, Type: dto.MetricType_GAUGE.Enum(),
			Metric: []*dto.Metric{{Label: windowed, Gauge: &dto.Gauge{}}}}
		switch {
		case i == 0: // _total
			mf.Type = dto.MetricType_COUNTER.Enum()
			mf.Metric = []*dto.Metric{{Label: labels, Counter: &dto.Counter{}}}
		case name == histogram:
			mf.Type = dto.MetricType_HISTOGRAM.Enum()
			mf.Metric = []*dto.Metric{{Label: windowed, Histogram: &dto.Histogram{}}}
		case strings.HasPrefix(name, histogram):
			continue // the histogram's own series, linted with it
		}
		mfs = append(mfs, mf)
	}
	problems, err := promlint.NewWithMetricFamilies(mfs).Lint()
	if err != nil {
		return []string{err.Error()}
	}
	var out []string
	seen := map[string]bool{}
	for _, p := range problems {
		if !seen[p.Text] {
			seen[p.Text] = true
			out = append(out, fmt.Sprintf("promtool check metrics would flag %s: %s", p.Metric, p.Text))
		}
	}
	return out
}
