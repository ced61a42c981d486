package config

import (
	"fmt"
	"strings"
	"testing"

	"github.com/logwindow/logwindow_exporter/internal/testutil/race"
)

// joined joins n items made by item with sep.
func joined(n int, sep string, item func(i int) string) string {
	parts := make([]string, n)
	for i := range parts {
		parts[i] = item(i)
	}
	return strings.Join(parts, sep)
}

// TestLimits: each count whose growth makes a file costly to load (or every line or
// scrape after) loads at its limit, and one past it is refused with an error naming the
// file, the key's line and the rule, without decoding what is past it.
func TestLimits(t *testing.T) {
	race.Skip(t)
	const head = "inputs:\n  - path: /var/log/x.log\n"
	const rule = "rules:\n  - name: r\n    match: '(?P<v>\\d+) (?P<p>\\S+)'\n"
	cases := []struct {
		name  string
		limit int
		file  func(n int) string
		// want is the error past the limit, after the file's name; %d is the count.
		want string
	}{
		{"rules", maxRules, func(n int) string {
			return head + "rules:\n" + joined(n, "", func(i int) string { return fmt.Sprintf("  - {name: r%d, match: x}\n", i) })
		}, `:3: rules: %d rules, more than the 10000 a file may have`},
		{"inputs", maxInputs, func(n int) string {
			return "inputs:\n" + joined(n, "", func(i int) string { return fmt.Sprintf("  - path: /var/log/x%d.log\n", i) }) +
				"rules:\n  - {name: r, match: x}\n"
		}, `:1: inputs: %d inputs, more than the 1000 a file may have`},
		{"patterns", maxPatterns, func(n int) string {
			return head + "patterns:\n" + joined(n, "", func(i int) string { return fmt.Sprintf("  P%d: x\n", i) }) +
				"rules:\n  - {name: r, match: x}\n"
		}, `:3: patterns: %d patterns, more than the 10000 a file may have`},
		{"global windows", maxWindows, func(n int) string {
			return head + "global:\n  windows: [" + joined(n, ",", func(i int) string { return fmt.Sprintf("%ds", i+1) }) + "]\n" + rule
		}, `:4: global: windows: %d windows, more than the 100 the global list may have`},
		{"windows", maxWindows, func(n int) string {
			return head + rule + "    windows: [" + joined(n, ",", func(i int) string { return fmt.Sprintf("%ds", i+1) }) + "]\n"
		}, `:6: rule "r": windows: %d windows, more than the 100 a rule may have`},
		{"labels", maxLabels, func(n int) string {
			return head + rule + "    labels: {" + joined(n, ",", func(i int) string { return fmt.Sprintf("l%d: '${p}'", i) }) + "}\n"
		}, `:6: rule "r": labels: %d labels, more than the 100 a rule may have`},
		{"quantiles", maxQuantiles, func(n int) string {
			return head + rule + "    value: v\n    aggregations: [quantiles]\n    quantiles: [" +
				joined(n, ",", func(i int) string { return fmt.Sprintf("0.%04d", i+1) }) + "]\n"
		}, `:8: rule "r": quantiles: %d quantiles, more than the 100 a rule may have`},
		{"buckets", maxBuckets, func(n int) string {
			return head + rule + "    value: v\n    buckets: [" + joined(n, ",", func(i int) string { return fmt.Sprint(i + 1) }) + "]\n"
		}, `:7: rule "r": buckets: %d buckets, more than the 1000 a rule may have`},
		{"rewrites", maxRewrites, func(n int) string {
			return head + rule + "    labels: {p: '${p}'}\n    rewrite:\n" +
				joined(n, "", func(int) string { return "      - {label: p, regex: a, replacement: b}\n" })
		}, `:7: rule "r": rewrite: %d rewrites, more than the 1000 a rule may have`},
		{"initial", maxInitial, func(n int) string {
			return head + "global: {max_series_per_rule: 1000000}\n" + rule + "    labels: {p: '${p}'}\n    initial: [" +
				joined(n, ",", func(i int) string { return fmt.Sprintf("{p: v%d}", i) }) + "]\n"
		}, `:8: rule "r": initial: %d label sets, more than the 100000 a rule may have`},
		{"fields", maxFields, func(n int) string {
			return "inputs:\n  - {name: app, path: /var/log/x.log, format: json}\nrules:\n  - name: r\n    inputs: [app]\n    fields: {" +
				joined(n, ",", func(i int) string { return fmt.Sprintf("f%d: f%d", i, i) }) + "}\n"
		}, `:6: rule "r": fields: %d fields, more than the 1000 a rule may have`},
		{"template references", maxTemplateRefs, func(n int) string {
			return head + rule + "    labels: {p: '" + strings.Repeat("${p}", n) + "'}\n"
		}, `:6: rule "r": labels: p: the template has more than 100 references to captures, the most a template may have`},
		{"template bytes", maxTemplateBytes, func(n int) string {
			return head + rule + "    distinct: '${p}" + strings.Repeat("x", n-4) + "'\n"
		}, `:6: rule "r": distinct: the template is %d bytes, more than the 4096 a template may have`},
		{"rule name", maxNameBytes, func(n int) string {
			return head + "rules:\n  - name: " + strings.Repeat("r", n) + "\n    match: x\n"
		}, `:4: rule #1: name: "rrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrrr"... is %d bytes, more than the 256 a name may have`},
		{"input name", maxNameBytes, func(n int) string {
			return "inputs:\n  - name: " + strings.Repeat("i", n) + "\n    path: /var/log/x.log\nrules:\n  - {name: r, match: x}\n"
		}, `:2: input #1: name: "iiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiiii"... is %d bytes, more than the 256 a name may have`},
		{"label name", maxNameBytes, func(n int) string {
			return head + rule + "    labels: {" + strings.Repeat("l", n) + ": '${p}'}\n"
		}, `:6: rule "r": labels: "llllllllllllllllllllllllllllllllllllllll"... is %d bytes, more than the 256 a name may have`},
		{"help", maxHelpBytes, func(n int) string {
			return head + rule + "    help: " + strings.Repeat("h", n) + "\n"
		}, `:6: rule "r": help: %d bytes, more than the 4096 a help may have`},
		{"log_format candidates", maxCandidates, func(n int) string {
			return "inputs:\n  - path: /var/log/x.log\n    log_format: [" +
				joined(n, ",", func(i int) string { return fmt.Sprintf("'$remote_addr $status %d'", i) }) + "]\nrules:\n  - {name: r, labels: {s: '${status}'}}\n"
		}, `:3: input #1: log_format: %d candidates, more than the 100 an input may have`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if _, err := Parse([]byte(c.file(c.limit)), "rules.yaml"); err != nil {
				t.Fatalf("at the limit, %d: %v", c.limit, err)
			}
			_, err := Parse([]byte(c.file(c.limit+1)), "rules.yaml")
			want := "rules.yaml" + c.want
			if strings.Contains(want, "%d") {
				want = fmt.Sprintf(want, c.limit+1)
			}
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Fatalf("past the limit: %v; want %q", err, want)
			}
		})
	}
}

// TestRefusedSectionNotBlamedOnRules: when inputs: or patterns: is refused whole (past its
// limit, or not a list or mapping), its error is the one to fix; the rules reading those
// inputs or patterns say nothing of their own that the section's error already causes,
// else the section's error came after a thousand of them, past what the status page lists.
func TestRefusedSectionNotBlamedOnRules(t *testing.T) {
	rules := joined(5, "", func(i int) string {
		return fmt.Sprintf("  - {name: r%d, inputs: [i%d], labels: {s: '${status}'}}\n  - {name: p%d, match: '%%{P%d}'}\n", i, i, i, i)
	})
	cases := []struct {
		name, file, want string
	}{
		{"inputs past the limit", "rules:\n" + rules + "inputs:\n" +
			joined(maxInputs+1, "", func(i int) string {
				return fmt.Sprintf("  - {name: i%d, path: /var/log/x%d.log, log_format: combined}\n", i, i)
			}) +
			"patterns:\n" + joined(5, "", func(i int) string { return fmt.Sprintf("  P%d: x\n", i) }),
			`inputs: 1001 inputs, more than the 1000 a file may have`},
		{"inputs not a list", "rules:\n" + rules + "inputs: {path: /var/log/x.log}\npatterns:\n" +
			joined(5, "", func(i int) string { return fmt.Sprintf("  P%d: x\n", i) }),
			`inputs: must be a list of inputs`},
		{"patterns past the limit", "inputs:\n" +
			joined(5, "", func(i int) string {
				return fmt.Sprintf("  - {name: i%d, path: /var/log/x%d.log, log_format: combined}\n", i, i)
			}) +
			"rules:\n" + rules + "patterns:\n" + joined(maxPatterns+1, "", func(i int) string { return fmt.Sprintf("  P%d: x\n", i) }),
			`patterns: 10001 patterns, more than the 10000 a file may have`},
		{"patterns not a mapping", "inputs:\n" +
			joined(5, "", func(i int) string {
				return fmt.Sprintf("  - {name: i%d, path: /var/log/x%d.log, log_format: combined}\n", i, i)
			}) +
			"rules:\n" + rules + "patterns: [x]\n",
			`patterns: must be`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse([]byte(c.file), "rules.yaml")
			if err == nil {
				t.Fatal("loaded")
			}
			lines := strings.Split(strings.TrimSpace(err.Error()), "\n")
			if len(lines) != 1 || !strings.Contains(lines[0], c.want) {
				t.Fatalf("%d problems:\n%v\nwant only %q", len(lines), err, c.want)
			}
		})
	}
}
