package config

import (
	"math/rand/v2"
	"regexp"
	"slices"
	"testing"
)

// nameReference is the shape isName checks, as a regex: the reference it is tested against.
var nameReference = regexp.MustCompile(`^[a-zA-Z_][a-zA-Z0-9_]*$`)

// TestIsName checks isName against the regex of a name on the edge cases of its classes
// and on random strings over an alphabet of every class and of bytes just outside them.
func TestIsName(t *testing.T) {
	cases := []string{
		"", "_", "a", "Z", "0", "a0", "_9", "9a", "__name__", "rule_total", "a:b", "a-b", "a b",
		"a\n", "\na", "é", "aé", "a\x00", "\xff", "a\xff", "@", "[", "`", "{", "/", ":", "a.b",
	}
	alphabet := []byte("azAZ09_@[`{/:-. \x00\x7f\x80\xc3\xa9\xff")
	r := rand.New(rand.NewPCG(1, 2))
	for range 2000 {
		b := make([]byte, r.IntN(6))
		for i := range b {
			b[i] = alphabet[r.IntN(len(alphabet))]
		}
		cases = append(cases, string(b))
	}
	for _, s := range cases {
		t.Run(s, func(t *testing.T) {
			if got, want := isName(s), nameReference.MatchString(s); got != want {
				t.Errorf("isName(%q) = %v, the regex says %v", s, got, want)
			}
		})
	}
}

// FuzzIsName checks isName against the regex of a name on fuzzed strings.
func FuzzIsName(f *testing.F) {
	for _, s := range []string{"", "a", "_a9", "9a", "a:b", "aé", "a\n"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := isName(s), nameReference.MatchString(s); got != want {
			t.Errorf("isName(%q) = %v, the regex says %v", s, got, want)
		}
	})
}

// TestTargetLabelsWarn: a label named job or instance loads, with a warning naming the
// file, the line and the rule: Prometheus puts the scrape target's job and instance on
// every series and renames the rule's exported_job or exported_instance, so queries by
// it (the dashboard's `sum by (instance)`) quietly group by the target's instead. A label
// PromQL reads as a keyword or number there (without, inf, nan) is warned of as well.
func TestTargetLabelsWarn(t *testing.T) {
	for _, c := range []struct {
		labels string
		want   []string
	}{
		{"{instance: '${v}'}", []string{`rules.yaml:4: warning: rule "r": labels: instance: Prometheus puts the scrape target's instance label on every series and renames this one exported_instance (unless its scrape has honor_labels: true, and then this one replaces the target's); name it otherwise, e.g. upstream_instance`}},
		{"{job: '${v}', status: '${v}'}", []string{`rules.yaml:4: warning: rule "r": labels: job: Prometheus puts the scrape target's job label on every series and renames this one exported_job (unless its scrape has honor_labels: true, and then this one replaces the target's); name it otherwise, e.g. upstream_job`}},
		{"{jobs: '${v}', instance_id: '${v}'}", nil},
		// PromQL reads these, in any case, as a keyword or a number in sum by (...).
		{"{without: '${v}'}", []string{`rules.yaml:4: warning: rule "r": labels: without: PromQL reads without as a keyword or a number where a query groups by a label, so sum by (without) does not parse: the query must quote it, by ("without"), which Prometheus 2 does not read (the dashboard quotes it); name it otherwise, e.g. without_value`}},
		{"{Inf: '${v}', NAN: '${v}'}", []string{
			`rules.yaml:4: warning: rule "r": labels: Inf: PromQL reads Inf as a keyword or a number where a query groups by a label, so sum by (Inf) does not parse: the query must quote it, by ("Inf"), which Prometheus 2 does not read (the dashboard quotes it); name it otherwise, e.g. inf_value`,
			`rules.yaml:4: warning: rule "r": labels: NAN: PromQL reads NAN as a keyword or a number where a query groups by a label, so sum by (NAN) does not parse: the query must quote it, by ("NAN"), which Prometheus 2 does not read (the dashboard quotes it); name it otherwise, e.g. nan_value`}},
		{"{by: '${v}', infinity: '${v}', offset: '${v}'}", nil},
	} {
		t.Run(c.labels, func(t *testing.T) {
			cfg, err := Parse([]byte("rules:\n  - name: r\n    match: '(?P<v>.*)'\n    labels: "+c.labels+"\n"), "rules.yaml")
			if err != nil {
				t.Fatal(err)
			}
			if got := Warnings(cfg); !slices.Equal(got, c.want) {
				t.Errorf("warnings:\n%q\nwant:\n%q", got, c.want)
			}
		})
	}
}
