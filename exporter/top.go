package exporter

import (
	"fmt"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/logwindow/logwindow_exporter/config"
	"github.com/logwindow/logwindow_exporter/sketch"
)

// topFamily exports a rule's top values: per window, up to k samples whose label values
// change from scrape to scrape. Its samples cannot share the series' cached label pairs as
// the other families do, so each gets the window's pairs with the ranked label's pair
// inserted where it sorts.
type topFamily struct {
	desc *prometheus.Desc
	k    int
	min  float64
	// label is the ranked label's name; at is where its pair goes among a window's sorted
	// pairs (the rule's other labels and window).
	label string
	at    int
}

// newTopFamily returns the family of r's `top:`, or a zero topFamily for a rule without
// one; help is the rule's HELP text and sliding says what a window is, as in newFamilies.
func newTopFamily(r *config.Rule, withWindow []string, help, sliding string) topFamily {
	t := r.Top
	if t == nil {
		return topFamily{}
	}
	f := topFamily{k: t.K, min: t.Min, label: t.Label}
	for _, n := range withWindow {
		if n < t.Label {
			f.at++
		}
	}
	quantity := "most matched lines"
	if r.IsValueRule() {
		quantity = "largest sum of " + r.ValueName
	}
	text := fmt.Sprintf("%s The %d values of %s with the %s%s", help, t.K, t.Label, quantity, sliding)
	if t.Min > 0 {
		text += fmt.Sprintf(", of those at least %v", t.Min)
	}
	text += fmt.Sprintf("; each at most the window's total/%d below its true sum, never above it.", t.Capacity+1)
	desc := strings.TrimSpace(text)
	f.desc = prometheus.NewDesc(r.Name+config.TopSuffix, desc, append(withWindow[:len(withWindow):len(withWindow)], t.Label), nil)
	return f
}

// append adds the top values of one window, whose label pairs are window, to ms.
func (f *topFamily) append(ms []sample, window []*dto.LabelPair, t *sketch.Top) []sample {
	values := t.Top(f.k, f.min, nil)
	if len(values) == 0 {
		return ms
	}
	n := len(window) + 1
	pairs := make([]*dto.LabelPair, len(values)*n)
	ranked := make([]dto.LabelPair, len(values))
	for i := range values {
		ranked[i] = dto.LabelPair{Name: &f.label, Value: &values[i].Item}
		lp := pairs[i*n : (i+1)*n : (i+1)*n]
		copy(lp, window[:f.at])
		lp[f.at] = &ranked[i]
		copy(lp[f.at+1:], window[f.at:])
		ms = append(ms, sample{desc: f.desc, labels: lp, value: values[i].Sum})
	}
	return ms
}
