// Package metrictest reads scrapes for the tests: a sample by family and labels, a
// family's sum, the values of one label, and checks of expected samples. In-process tests
// (a registry's Gather) and process tests (a parsed /metrics body) read the same
// map of families, so they share these.
package metrictest

import (
	"errors"
	"fmt"
	"math"
	"sort"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"
)

// Families is a scrape keyed by family name, as expfmt's parser and a Gather give it.
type Families = map[string]*dto.MetricFamily

// Value returns the sample of family name whose labels include want, or -1 when absent.
func Value(families Families, name string, want map[string]string) float64 {
	mf := families[name]
	if mf == nil {
		return -1
	}
next:
	for _, m := range mf.GetMetric() {
		have := map[string]string{}
		for _, lp := range m.GetLabel() {
			have[lp.GetName()] = lp.GetValue()
		}
		for k, v := range want {
			if have[k] != v {
				continue next
			}
		}
		switch {
		case m.Counter != nil:
			return m.GetCounter().GetValue()
		case m.Gauge != nil:
			return m.GetGauge().GetValue()
		case m.Untyped != nil:
			return m.GetUntyped().GetValue()
		}
	}
	return -1
}

// Sum adds up every sample of family name, 0 when it is absent.
func Sum(families Families, name string) float64 {
	total := 0.0
	for _, m := range families[name].GetMetric() {
		total += m.GetCounter().GetValue() + m.GetGauge().GetValue() + m.GetUntyped().GetValue()
	}
	return total
}

// LabelValues returns, sorted, the value of label in every sample of family name that has it.
func LabelValues(families Families, name, label string) []string {
	var out []string
	for _, m := range families[name].GetMetric() {
		for _, lp := range m.GetLabel() {
			if lp.GetName() == label {
				out = append(out, lp.GetValue())
			}
		}
	}
	sort.Strings(out)
	return out
}

// Sample is one expected sample of a scrape.
type Sample struct {
	Family string
	Labels map[string]string
	Want   float64
}

// Check reports every sample of wants that m does not hold with its value.
func Check(t testing.TB, m Families, wants []Sample) {
	t.Helper()
	for _, d := range mismatches(m, wants) {
		t.Error(d)
	}
}

// Match is nil when m holds every sample of wants with its value, else an error naming
// each one it does not: a condition to wait for.
func Match(m Families, wants []Sample) error {
	if d := mismatches(m, wants); len(d) > 0 {
		return errors.New(strings.Join(d, "; "))
	}
	return nil
}

// mismatches describes every sample of wants that m does not hold with its value.
func mismatches(m Families, wants []Sample) []string {
	var out []string
	for _, w := range wants {
		if got := Value(m, w.Family, w.Labels); math.Abs(got-w.Want) > 1e-9 {
			out = append(out, fmt.Sprintf("%s%v = %v, want %v", w.Family, w.Labels, got, w.Want))
		}
	}
	return out
}

// WithLabel returns labels plus name="value".
func WithLabel(labels map[string]string, name, value string) map[string]string {
	out := map[string]string{name: value}
	for k, v := range labels {
		out[k] = v
	}
	return out
}
