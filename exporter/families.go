package exporter

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/model"

	"github.com/logwindow/logwindow_exporter/config"
)

// windowLabel names the label that carries the window of the `_window*` families.
const windowLabel = "window"

// families are the descriptors of one rule's metrics, built once per Set rather than per
// scrape. A nil descriptor is a family the rule does not export.
type families struct {
	total, window, perSecond, events, max, min, mean *prometheus.Desc
	// windows are the window label values, in the order windows.Series.Read returns stats.
	windows []string
}

func newFamilies(r *config.Rule, ws []time.Duration) (families, error) {
	labels := make([]string, len(r.Labels))
	for i, l := range r.Labels {
		labels[i] = l.Name
	}
	withWindow := append(labels[:len(labels):len(labels)], windowLabel)
	help := strings.TrimSpace(r.Help)
	if help == "" {
		help = fmt.Sprintf("Lines matched by rule %s.", r.Name)
	} else if !strings.HasSuffix(help, ".") {
		help += "."
	}
	quantity := "Matched lines"
	if r.IsValueRule() {
		quantity = "Sum of " + r.ValueName
	}
	lower := strings.ToLower(quantity[:1]) + quantity[1:]
	const sliding = " over the sliding window in the window label, computed by the exporter at scrape time"
	gauge := func(on bool, suffix, what string) *prometheus.Desc {
		if !on {
			return nil
		}
		return prometheus.NewDesc(r.Name+suffix, help+" "+what+sliding+".", withWindow, nil)
	}
	a := r.Aggregations
	v := r.IsValueRule()
	f := families{
		total:     prometheus.NewDesc(r.Name+"_total", help+" "+quantity+" since the exporter started.", labels, nil),
		window:    gauge(a.Window, "_window", quantity),
		perSecond: gauge(a.PerSecond, "_window_per_second", "Per-second rate of "+lower+" (divided by the seconds observed while fewer than the window)"),
		events:    gauge(v && a.Events, "_window_events", "Matched lines"),
		max:       gauge(v && a.Max, "_window_max", "Largest "+r.ValueName+" (absent while the window holds no line)"),
		min:       gauge(v && a.Min, "_window_min", "Smallest "+r.ValueName+" (absent while the window holds no line)"),
		mean:      gauge(v && a.Mean, "_window_mean", "Mean "+r.ValueName+" (absent while the window holds no line)"),
		windows:   make([]string, len(ws)),
	}
	for i, w := range ws {
		f.windows[i] = model.Duration(w).String()
	}
	var errs []error
	for _, d := range []*prometheus.Desc{f.total, f.window, f.perSecond, f.events, f.max, f.min, f.mean} {
		if d != nil && d.Err() != nil {
			errs = append(errs, d.Err())
		}
	}
	return f, errors.Join(errs...)
}
