package config

import (
	"errors"
	"fmt"
	"slices"
	"strings"
)

// isName reports whether s is a classic Prometheus metric or label name, which is also
// the shape of a pattern's and a capture's name: [a-zA-Z_][a-zA-Z0-9_]*. Colons are left
// out: Prometheus reserves them for recording rules. A loop rather than a regex, which
// would be compiled at every start for a few checks of short names.
func isName(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c == '_' || isLower(c) || isUpper(c) || i > 0 && '0' <= c && c <= '9') {
			return false
		}
	}
	return s != ""
}

// reservedPrefixes belong to metrics the exporter registers itself (its own, and the Go,
// process and promhttp collectors'); a rule there could duplicate a family and fail scrapes.
var reservedPrefixes = []string{"logwindow_", "go_", "process_", "promhttp_"}

func checkMetricName(name string) error {
	if !isName(name) {
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

// targetLabels are the labels Prometheus gives every series of a scrape from its target:
// a rule's label of that name is renamed exported_<name> (or, with honor_labels, replaces
// the target's), so it loads with a warning.
var targetLabels = []string{"job", "instance"}

// promQLWords are the label names PromQL's lexer reads as something else where a
// grouping's label belongs, in any case: the keyword without and the numbers inf and nan.
// Every other keyword reads as a label name there.
var promQLWords = []string{"without", "inf", "nan"}

// IsPromQLWord reports whether PromQL reads the label name as one of promQLWords, so that
// a query grouping by it unquoted (sum by (inf)) does not parse: Prometheus 3 reads it
// quoted (by ("inf")), Prometheus 2 neither way.
func IsPromQLWord(name string) bool {
	return slices.ContainsFunc(promQLWords, func(w string) bool { return strings.EqualFold(w, name) })
}

func checkLabelName(name string) error {
	switch {
	case !isName(name):
		return errors.New("not a valid label name (letters, digits and _, not starting with a digit)")
	case strings.HasPrefix(name, "__"):
		return errors.New("label names starting with __ are reserved by Prometheus")
	case name == "window":
		return errors.New(`"window" is the label the exporter puts the window in; pick another name`)
	}
	return nil
}

// collisions reports rules whose names or families clash: a name used twice, or one rule's
// name equal to another's family (rule a_window next to rule a's a_window gauge) or to one
// of its OpenMetrics series (rule a_created next to rule a's counter).
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
		names := slices.Concat([]string{r.Name}, r.FamilyNames(r.Name), r.OpenMetricsSeries(r.Name))
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
