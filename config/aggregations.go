package config

import (
	"errors"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/logwindow/logwindow_exporter/config/quantity"
)

// aggregations reads `aggregations:` against the table of quantities.
func (rd *ruleDecoder) aggregations(e entry, r *Rule, isValue bool) {
	names, ok := rd.words(e, rd.subject, "aggregations", nil)
	if !ok {
		return
	}
	if len(names) == 0 {
		rd.add(e.key.Line, rd.subject, "aggregations: the list is empty; leave it out for the defaults or list some of: %s",
			strings.Join(quantity.Names(), ", "))
		return
	}
	var a quantity.Aggregations
	for _, name := range names {
		row, found := quantity.Lookup(name)
		switch {
		case found && row.Key() != "":
			rd.add(e.key.Line, rd.subject, "aggregations: %s is not listed here; give the rule its own %s: key", name, row.Key())
		case !found:
			known := quantity.Names()
			rd.add(e.key.Line, rd.subject, "aggregations: unknown aggregation %q%s (known: %s)",
				name, suggest(name, known), strings.Join(known, ", "))
		case *row.In(&a):
			rd.add(e.key.Line, rd.subject, "aggregations: %s is listed twice", name)
		case !isValue && row.NeedsValue():
			rd.add(e.key.Line, rd.subject, "aggregations: %s needs a value: capture (a counting rule's window already is its count of lines)", name)
		default:
			*row.In(&a) = true
		}
	}
	r.Aggregations = a
}

// belowZero warns of the bounds of bs, ascending, that are below 0: a value rule counts no
// negative value (the parser drops it as negative), so their buckets stay empty. They are
// allowed, so that a rule file written before that still loads.
func (rd *ruleDecoder) belowZero(e entry, bs []float64) {
	n := 0
	for n < len(bs) && bs[n] < 0 {
		n++
	}
	if n > 0 {
		rd.warn(e.key.Line, rd.subject,
			"buckets: %v is below 0, and a value rule counts no negative value (a line of one is dropped as negative): the buckets up to %v stay empty; start the bounds at 0 or above",
			bs[0], bs[n-1])
	}
}

// distribution reads `quantiles:` and `buckets:`, which shape a value rule's distribution
// families: the quantiles exported (quantity.DefaultQuantiles unless listed) and the bounds of the
// window histogram.
func (rd *ruleDecoder) distribution(entries []entry, r *Rule, isValue bool) {
	if e, ok := find(entries, "quantiles"); ok {
		qs, ok := rd.numbers(e, "quantiles", maxQuantiles)
		switch {
		case !isValue:
			rd.add(e.key.Line, rd.subject, "quantiles: needs a value: capture (the quantiles are of the values)")
		case !r.Aggregations.Quantiles:
			rd.add(e.key.Line, rd.subject, "quantiles: add quantiles to aggregations to export them")
		default:
			seen := make(map[float64]bool, len(qs))
			for _, q := range qs {
				switch {
				case !(q > 0 && q < 1):
					rd.add(e.key.Line, rd.subject, "quantiles: %v is not between 0 and 1 (exclusive); write e.g. 0.99 for p99", q)
					ok = false
				case seen[q]:
					rd.add(e.key.Line, rd.subject, "quantiles: %v is listed twice", q)
					ok = false
				}
				seen[q] = true
			}
			if ok {
				r.Quantiles = qs
			}
		}
	}
	if r.Aggregations.Quantiles && r.Quantiles == nil {
		r.Quantiles = slices.Clone(quantity.DefaultQuantiles)
	}
	if e, ok := find(entries, "buckets"); ok {
		bs, ok := rd.numbers(e, "buckets", maxBuckets)
		if !isValue {
			rd.add(e.key.Line, rd.subject, "buckets: needs a value: capture (the buckets count the values)")
			return
		}
		for i, b := range bs {
			switch {
			case math.IsInf(b, 0):
				rd.add(e.key.Line, rd.subject, "buckets: %v: every bound must be finite (the +Inf bucket is always there)", b)
				ok = false
			case i > 0 && b == bs[i-1]:
				rd.add(e.key.Line, rd.subject, "buckets: %v is listed twice", b)
				ok = false
			case i > 0 && b < bs[i-1]:
				rd.add(e.key.Line, rd.subject, "buckets: %v comes after %v; list the bounds in ascending order", b, bs[i-1])
				ok = false
			}
		}
		if ok && len(bs) == 0 {
			rd.add(e.key.Line, rd.subject, "buckets: the list is empty; give the upper bounds (e.g. [0.01, 0.1, 1])")
			ok = false
		}
		if ok {
			r.Buckets = bs
			rd.belowZero(e, bs)
		}
	}
}

// tooLargeNumber is what a number written right but past what a float64 holds is: its
// parse error said it was no number.
const tooLargeNumber = "too large a number (the largest is about 1.8e308)"

// numbers reads a list of at most limit numbers.
func (rd *ruleDecoder) numbers(e entry, what string, limit int) ([]float64, bool) {
	if rd.tooMany(e, rd.subject, items(e.val), limit, what, "a rule") {
		return nil, false
	}
	texts, ok := rd.words(e, rd.subject, what, nil)
	out := make([]float64, 0, len(texts))
	for _, t := range texts {
		f, err := strconv.ParseFloat(t, 64)
		if errors.Is(err, strconv.ErrRange) {
			rd.add(e.key.Line, rd.subject, "%s: %s is %s", what, t, tooLargeNumber)
			ok = false
			continue
		}
		if err != nil || math.IsNaN(f) {
			rd.add(e.key.Line, rd.subject, "%s: %q is not a number", what, t)
			ok = false
			continue
		}
		out = append(out, f)
	}
	return out, ok
}
