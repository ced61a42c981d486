package config

import (
	"errors"
	"math"
	"slices"
	"strconv"

	"github.com/logwindow/logwindow_exporter/config/quantity"
)

// maxTopCapacity bounds top.capacity and k: a summary holds up to twice its capacity per
// slot. A default capacity (100·k) above it is cut to it.
const maxTopCapacity = 1_000_000

// topKeys are the keys of `top:`.
var topKeys = []string{"label", "k", "min", "capacity"}

// top decodes `top:`, which needs the rule's labels decoded: it takes its label out of
// r.Labels and into r.Items.
func (rd *ruleDecoder) top(e entry, r *Rule) {
	entries, ok := rd.mapping(e.val, rd.subject, "top")
	if !ok {
		return
	}
	rd.known(entries, rd.subject, "top", topKeys...)
	t := &quantity.Top{}
	valid := true
	names := make([]string, len(r.Labels))
	for i, l := range r.Labels {
		names[i] = l.Name
	}
	at := -1
	switch le, ok := find(entries, "label"); {
	case !ok:
		rd.add(e.key.Line, rd.subject, "top: label: is missing; name the label whose values are ranked (one of the rule's labels: %s)", listing(names))
		valid = false
	default:
		name, _ := rd.scalar(le, rd.subject, "top: label")
		if at = slices.Index(names, name); at < 0 {
			rd.add(le.key.Line, rd.subject, "top: label: %q is not a label of the rule%s (labels: %s)", name, rd.suggest(name, names), listing(names))
			valid = false
		} else if t := r.Labels[at].Template; t.constant() {
			rd.add(le.key.Line, rd.subject, "top: label: the template of %s, '%s', refers to no capture: every line gives it the same value, so it would rank 1 value; rank a label taken from the line",
				name, rd.templateText(t))
			valid = false
		}
		t.Label = name
	}
	if ke, ok := find(entries, "k"); !ok {
		rd.add(e.key.Line, rd.subject, "top: k: is missing; give how many values to export per window (e.g. k: 10)")
		valid = false
	} else if t.K, ok = rd.wholeNumber(ke, "top: k", 1, maxTopCapacity); !ok {
		valid = false
	}
	t.Capacity = min(100*t.K, maxTopCapacity) // k is at most maxTopCapacity
	if ce, ok := find(entries, "capacity"); ok {
		c, ok := rd.wholeNumber(ce, "top: capacity", 1, maxTopCapacity)
		switch {
		case !ok:
			valid = false
		case c < t.K:
			rd.add(ce.key.Line, rd.subject, "top: capacity: %d is less than k (%d); the summary must hold at least the values it exports", c, t.K)
			valid = false
		}
		t.Capacity = c
	}
	if me, ok := find(entries, "min"); ok {
		s, _ := rd.scalar(me, rd.subject, "top: min")
		m, err := strconv.ParseFloat(s, 64)
		if errors.Is(err, strconv.ErrRange) && m > 0 {
			rd.add(me.key.Line, rd.subject, "top: min: %s is %s", s, tooLargeNumber)
			valid = false
		} else if err != nil || !(m >= 0) || math.IsInf(m, 1) {
			rd.add(me.key.Line, rd.subject, "top: min: %q is not a number of at least 0 (the smallest window sum exported)", s)
			valid = false
		}
		t.Min = m
	}
	if !valid {
		return
	}
	r.Items = append(r.Items, Item{Template: r.Labels[at].Template, Label: true})
	t.Item = len(r.Items)
	r.Labels = slices.Delete(r.Labels, at, at+1)
	r.Top = t
}

// wholeNumber reads an integer in [least, most].
func (rd *ruleDecoder) wholeNumber(e entry, what string, least, most int) (int, bool) {
	s, ok := rd.scalar(e, rd.subject, what)
	if !ok {
		return 0, false
	}
	n, err := strconv.Atoi(s)
	switch {
	case errors.Is(err, strconv.ErrRange):
		// A whole number past what an int holds: out of the range as any other.
		rd.add(e.key.Line, rd.subject, "%s: must be from %d to %d, not %s", what, least, most, s)
		return 0, false
	case err != nil:
		rd.add(e.key.Line, rd.subject, "%s: %q is not a whole number", what, s)
		return 0, false
	case n < least || n > most:
		rd.add(e.key.Line, rd.subject, "%s: must be from %d to %d, not %d", what, least, most, n)
		return 0, false
	}
	return n, true
}
