package config

import (
	"fmt"
	"strings"

	"github.com/logwindow/logwindow_exporter/config/quantity"
)

// The exporter promises a scrape that `promtool check metrics` finds nothing in. Of a
// rule's families only the rule name and its label names are the user's choice, so those
// are checked here, at load, against the Prometheus naming conventions
// (https://prometheus.io/docs/practices/naming/) as promtool applies them to every family
// the rule may export: a name promtool would flag is refused before it reaches a scrape.
//
// The checks reproduce what promtool flags, no more: a differential test against its
// linter holds them to it. Checks promtool makes that no rule can fail are left out: the
// name grammar (checkMetricName already refuses ':'), HELP (config always sets one), one
// sample per label set, and the suffixes reserved for counters, histograms and summaries
// (_total, _bucket, _count, _sum), which the families' own fixed suffixes never end in.

// familyType is the TYPE of an exported family.
type familyType string

const (
	counterFamily   familyType = "counter"
	gaugeFamily     familyType = "gauge"
	histogramFamily familyType = "histogram"
)

// family is one family a rule may export, as promtool sees it in a scrape.
type family struct {
	name   string
	typ    familyType
	labels []string
}

// families lists every family r may export, whether it exports it or not, so that turning
// an aggregation on never makes a loaded file invalid. The histogram's own series
// (_bucket, _sum, _count) are part of the histogram, not families of their own.
func families(r *Rule) []family {
	labels := make([]string, len(r.Labels), len(r.Labels)+1)
	for i, l := range r.Labels {
		labels[i] = l.Name
	}
	windowed := append(labels, "window")
	histogram := r.Name + quantity.HistogramSuffix
	var out []family
	for i, name := range r.FamilyNames(r.Name) {
		switch {
		case i == 0: // _total, the one family without a window
			out = append(out, family{name, counterFamily, labels})
		case name == histogram:
			out = append(out, family{name, histogramFamily, windowed})
		case strings.HasPrefix(name, histogram): // its series, checked with it
		case name == r.Name+quantity.TopSuffix && r.Top != nil:
			// The ranked label left r.Labels; the exposition puts it back on these samples.
			out = append(out, family{name, gaugeFamily, append(windowed[:len(windowed):len(windowed)], r.Top.Label)})
		case name == r.Name+quantity.DistinctRegisterSuffix:
			out = append(out, family{name, gaugeFamily, append(windowed[:len(windowed):len(windowed)], quantity.RegisterLabel)})
		default:
			out = append(out, family{name, gaugeFamily, windowed})
		}
	}
	return out
}

// findingKind is a convention a family breaks.
type findingKind int

const (
	nonBaseUnit findingKind = iota
	abbreviatedUnit
	typeInName
	camelCaseName
	camelCaseLabel
	reservedLabel
)

// finding is one convention a family breaks, with the word of its name or the label that
// breaks it.
type finding struct {
	family string
	kind   findingKind
	word   string
	// base is the unit to write instead, for nonBaseUnit and abbreviatedUnit.
	base string
}

// message says what is wrong in the words of the rule: the user writes the rule name and
// labels, not the family names.
func (f finding) message(rule string) string {
	var what string
	switch f.kind {
	case nonBaseUnit:
		what = fmt.Sprintf("%q is not a base unit; write %q instead and convert the values to it", f.word, f.base)
	case abbreviatedUnit:
		what = fmt.Sprintf("%q abbreviates a unit; spell the unit out, in base units: %s", f.word, f.base)
	case typeInName:
		what = fmt.Sprintf("the name says the family's type (%s), which its TYPE line already gives; drop %q from the rule name", f.word, f.word)
	case camelCaseName:
		what = fmt.Sprintf("metric names are snake_case; name the rule %s", snakeCase(rule))
	case camelCaseLabel:
		what = fmt.Sprintf("label names are snake_case; write %s instead of %s", snakeCase(f.word), f.word)
	case reservedLabel:
		what = fmt.Sprintf("label %q is reserved for %s; rename it", f.word, reservedLabels[f.word])
	}
	return fmt.Sprintf("promtool check metrics would flag %s: %s", f.family, what)
}

// lint returns what promtool would flag in r's families, one message per problem, naming
// the first family that shows it.
func lint(r *Rule) []string {
	type problem struct {
		kind findingKind
		word string
	}
	var out []string
	seen := map[problem]bool{}
	for _, fam := range families(r) {
		for _, f := range fam.check() {
			if p := (problem{f.kind, f.word}); !seen[p] {
				seen[p] = true
				out = append(out, f.message(r.Name))
			}
		}
	}
	return out
}

// check returns the conventions fam breaks, as promtool reads its name: as words between
// underscores.
func (fam family) check() []finding {
	var out []finding
	add := func(kind findingKind, word, base string) {
		out = append(out, finding{family: fam.name, kind: kind, word: word, base: base})
	}
	words := strings.Split(fam.name, "_")
	// promtool takes the first word naming a unit as the family's unit, so only that one
	// must be a base unit. It matches units as written: "Seconds" is no unit to it.
	for _, w := range words {
		if base, ok := unitBase(w); ok {
			if w != base {
				add(nonBaseUnit, w, base)
			}
			break
		}
	}
	// Abbreviations and type names count only after an underscore, in any case: a name
	// may start with "s" or "gauge" but not end with them.
	for _, w := range words[1:] {
		lw := strings.ToLower(w)
		if base, ok := abbreviations[lw]; ok {
			add(abbreviatedUnit, lw, base)
		}
		if lw == string(fam.typ) {
			add(typeInName, lw, "")
		}
	}
	if camelCase(fam.name) {
		add(camelCaseName, "", "")
	}
	for _, l := range fam.labels {
		if camelCase(l) {
			add(camelCaseLabel, l, "")
		}
		// The exporter exports no summary, so "quantile" is reserved on every family.
		if _, ok := reservedLabels[l]; ok && (l != "le" || fam.typ != histogramFamily) {
			add(reservedLabel, l, "")
		}
	}
	return out
}

// reservedLabels are the labels the exposition format gives a meaning in histograms and
// summaries, with what they hold there.
var reservedLabels = map[string]string{
	"le":       "the bucket bounds of histograms",
	"quantile": "the quantiles of summaries",
}

// camelCase reports a lower-case letter followed by an upper-case one, as in requestCount.
func camelCase(s string) bool {
	for i := 1; i < len(s); i++ {
		if isLower(s[i-1]) && isUpper(s[i]) {
			return true
		}
	}
	return false
}

// snakeCase writes a camelCase name in snake_case: requestCount → request_count.
func snakeCase(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if i > 0 && isLower(s[i-1]) && isUpper(c) {
			b.WriteByte('_')
		}
		if isUpper(c) {
			c += 'a' - 'A'
		}
		b.WriteByte(c)
	}
	return b.String()
}

func isLower(c byte) bool { return 'a' <= c && c <= 'z' }
func isUpper(c byte) bool { return 'A' <= c && c <= 'Z' }

// unitQuantities are the quantities whose units promtool recognises in a name: per
// quantity its base unit, which names use (plural, spelled out, unprefixed), and other
// units of it, which a name should give in the base unit instead. Temperature and length
// have two bases each: Celsius is the usual one in practice, Kelvin the SI one, and
// meters may be spelled metres.
var unitQuantities = []struct {
	base  string
	other []string
}{
	{"seconds", []string{"minutes", "hours", "days", "weeks"}},
	{"bytes", []string{"bits"}},
	{"meters", []string{"inches", "yards", "miles"}},
	{"metres", nil},
	{"grams", []string{"pounds", "ounces"}},
	{"celsius", []string{"fahrenheit", "rankine"}},
	{"kelvin", []string{"kelvins"}},
	{"volts", nil},
	{"amperes", nil},
	{"joules", []string{"calories"}},
}

// unitPrefixes are the prefixes promtool recognises on a unit: a prefixed unit, even a
// prefixed base unit, is not a base unit (milliseconds, kibibytes). They are the SI
// prefixes from pico to peta and the binary ones from kibi to pebi, less femto and those
// beyond peta, which promtool does not know.
var unitPrefixes = []string{
	"pico", "nano", "micro", "milli", "centi", "deci",
	"deca", "hecto", "kilo", "mega", "giga", "tera", "peta",
	"kibi", "mebi", "gibi", "tebi", "pebi",
}

// abbreviations are the unit abbreviations promtool refuses, each with the base unit to
// spell out instead. "m" may be meters or minutes.
var abbreviations = map[string]string{
	"s": "seconds", "sec": "seconds", "ms": "seconds", "us": "seconds", "ns": "seconds",
	"h": "seconds", "d": "seconds",
	"b": "bytes", "kb": "bytes", "mb": "bytes", "gb": "bytes", "tb": "bytes", "pb": "bytes",
	"m": "meters, or seconds for minutes",
}

// unitBases maps every unit of unitQuantities to its base unit.
var unitBases = func() map[string]string {
	m := map[string]string{}
	for _, q := range unitQuantities {
		m[q.base] = q.base
		for _, u := range q.other {
			m[u] = q.base
		}
	}
	return m
}()

// unitBase returns the base unit of the unit a word names, with or without a prefix; ok is
// false when the word names no unit.
func unitBase(word string) (base string, ok bool) {
	if base, ok := unitBases[word]; ok {
		return base, true
	}
	for _, p := range unitPrefixes {
		if rest, found := strings.CutPrefix(word, p); found {
			if base, ok := unitBases[rest]; ok {
				return base, true
			}
		}
	}
	return "", false
}
