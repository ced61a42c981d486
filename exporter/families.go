package exporter

import (
	"cmp"
	"errors"
	"slices"
	"strings"
	"time"

	"github.com/prometheus/common/model"

	"github.com/logwindow/logwindow_exporter/config"
	"github.com/logwindow/logwindow_exporter/config/quantity"
	"github.com/logwindow/logwindow_exporter/internal/store"
)

// windowLabel names the label that carries the window of the `_window*` families.
const windowLabel = "window"

// families is how one rule's metrics are written, built once per Set rather than per
// scrape: the `_total` counter and the windowed families of config's aggregation table,
// with the label order the text format sorts samples by.
type families struct {
	total    family
	windowed []family
	// summaries: some family reads the series' summaries, so a scrape reads them.
	summaries bool
	// names are the rule's label names, in the order of a series' values; order lists
	// their indexes sorted by name, the order exported label pairs have.
	names []string
	order []int
	// windowAt is how many label names sort before the window label: where its pair goes.
	windowAt int
	// windowPairs are the window label pairs as text (window="5m"), in the order
	// windows.Series.Read returns stats; windowOrder lists the windows by label text
	// ("15m" < "1d" < "1h" < "1m"), the order of a series' samples in a family.
	windowPairs []string
	windowOrder []int
	// buckets are the histogram's upper bounds as le label pairs, the +Inf one last, as
	// the text format writes them; omBuckets as OpenMetrics does; bounds are the finite
	// ones as numbers. negativeBound: one of them is below 0.
	buckets, omBuckets []string
	bounds             []float64
	negativeBound      bool
	// pbWindowPairs are the window label pairs as protobuf LabelPair fields.
	pbWindowPairs [][]byte
	// windowTexts are the window label values; topOrder, for a rule with `top:`, lists
	// the pairs of a top values' sample in name order: a label's index, topWindow or
	// topLabel.
	windowTexts []string
	topOrder    []int
	topName     string
}

// The pairs of a top values' sample besides the rule's labels.
const (
	topWindow = -1
	topLabel  = -2
)

// family is one metric family of a rule.
type family struct {
	name, help string
	quantity.Family
	// hist names the samples of a window distribution (Histogram), made once here rather
	// than for each line a scrape writes.
	hist histNames
}

// histNames are the names of a classic histogram's samples: _bucket, _sum and _count, and
// OpenMetrics' _gsum and _gcount of a gauge histogram.
type histNames struct{ bucket, sum, count, gsum, gcount string }

func newHistNames(name string) histNames {
	return histNames{name + "_bucket", name + "_sum", name + "_count", name + "_gsum", name + "_gcount"}
}

func newFamilies(r *config.Rule, ws []time.Duration) (families, error) {
	labels := make([]string, len(r.Labels))
	for i, l := range r.Labels {
		labels[i] = l.Name
	}
	f := families{
		total: family{name: r.Name + "_total", help: r.TotalHelp()},
		names: labels,
		order: make([]int, len(labels)),
	}
	if slices.Contains(labels, windowLabel) || len(slices.Compact(slices.Sorted(slices.Values(labels)))) != len(labels) {
		return f, errors.New("duplicate label names (the window label is the exporter's)")
	}
	for _, wf := range r.WindowFamilies() {
		fam := family{name: r.Name + wf.Suffix, help: wf.Help, Family: wf}
		if wf.Histogram {
			fam.hist = newHistNames(fam.name)
		}
		f.windowed = append(f.windowed, fam)
		if wf.Stat == nil {
			f.summaries = true
		}
		if wf.Histogram {
			for _, b := range r.Buckets {
				f.buckets = append(f.buckets, `le="`+string(appendFloat(nil, b))+`"`)
				f.omBuckets = append(f.omBuckets, `le="`+string(appendOMFloat(nil, b))+`"`)
				f.negativeBound = f.negativeBound || b < 0
			}
			f.buckets = append(f.buckets, `le="+Inf"`)
			f.omBuckets = append(f.omBuckets, `le="+Inf"`)
			f.bounds = r.Buckets
		}
	}
	for i := range f.order {
		f.order[i] = i
	}
	slices.SortFunc(f.order, func(a, b int) int { return strings.Compare(labels[a], labels[b]) })
	for _, i := range f.order {
		if labels[i] < windowLabel {
			f.windowAt++
		}
	}
	texts := make([]string, len(ws))
	for i, w := range ws {
		// The label is the window as the user wrote it; the fingerprint makes the windows
		// of an inherited store the rule's, so the names line up with ws.
		texts[i] = model.Duration(w).String()
		if len(r.WindowNames) == len(ws) {
			texts[i] = r.WindowNames[i]
		}
		f.windowPairs = append(f.windowPairs, windowLabel+`="`+string(appendEscaped(nil, texts[i], true))+`"`)
		f.pbWindowPairs = append(f.pbWindowPairs, appendLabelPair(nil, windowLabel, texts[i]))
		f.windowOrder = append(f.windowOrder, i)
	}
	slices.SortFunc(f.windowOrder, func(a, b int) int { return strings.Compare(texts[a], texts[b]) })
	f.windowTexts = texts
	if r.Top != nil {
		name := func(i int) string {
			switch i {
			case topWindow:
				return windowLabel
			case topLabel:
				return r.Top.Label
			}
			return labels[i]
		}
		f.topName = r.Top.Label
		f.topOrder = append(slices.Clone(f.order), topWindow, topLabel)
		slices.SortFunc(f.topOrder, func(a, b int) int { return strings.Compare(name(a), name(b)) })
	}
	return f, nil
}

// compare orders series as the text format orders their samples: by label values taken in
// label name order. Series whose values do not fit the labels (they are not exported) sort
// by their number of values, so the order stays total.
func (f *families) compare(a, b *store.Series) int {
	al, bl := a.Labels(), b.Labels()
	if len(al) != len(f.names) || len(bl) != len(f.names) {
		return cmp.Compare(len(al), len(bl))
	}
	for _, i := range f.order {
		if c := strings.Compare(al[i], bl[i]); c != 0 {
			return c
		}
	}
	return 0
}
