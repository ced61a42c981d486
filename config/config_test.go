package config

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/logwindow/logwindow_exporter/config/quantity"
	"github.com/logwindow/logwindow_exporter/internal/testutil/race"
)

func mustParseFile(t *testing.T, path string) *Config {
	t.Helper()
	c, err := Load(path)
	if err != nil {
		t.Fatalf("Load(%s): %v", path, err)
	}
	return c
}

// parseWarned parses text as the rule file named file, which must load, and checks its
// warnings: none when want is "", else one, starting with want.
func parseWarned(t *testing.T, file, text, want string) *Config {
	t.Helper()
	cfg, err := Parse([]byte(text), file)
	if err != nil {
		t.Fatal(err)
	}
	if got := Warnings(cfg); want == "" && len(got) != 0 || want != "" && (len(got) != 1 || !strings.HasPrefix(got[0], want)) {
		t.Errorf("warnings %q; want one starting %q (none if empty)", got, want)
	}
	return cfg
}

// checkParseError parses text as file and fails unless its error is want, none if empty.
func checkParseError(t *testing.T, text, file, want string) {
	t.Helper()
	_, err := Parse([]byte(text), file)
	got := ""
	if err != nil {
		got = err.Error()
	}
	if got != want {
		t.Errorf("got:\n%s\nwant:\n%s", got, want)
	}
}

func ruleByName(t *testing.T, c *Config, name string) *Rule {
	t.Helper()
	for _, r := range c.Rules {
		if r.Name == name {
			return r
		}
	}
	t.Fatalf("no rule %q", name)
	return nil
}

func TestDefaults(t *testing.T) {
	c := mustParseFile(t, "testdata/good/minimal.yaml")
	want := []time.Duration{time.Minute, 5 * time.Minute, 15 * time.Minute, time.Hour, 24 * time.Hour}
	if !reflect.DeepEqual(c.Global.Windows, want) {
		t.Errorf("global windows = %v, want %v", c.Global.Windows, want)
	}
	if c.Global.MaxSeriesPerRule != 10000 {
		t.Errorf("max series = %d, want 10000", c.Global.MaxSeriesPerRule)
	}
	r := c.Rules[0]
	if !reflect.DeepEqual(r.Windows, want) {
		t.Errorf("rule windows = %v, want the global ones", r.Windows)
	}
	if got := (quantity.Aggregations{Window: true, PerSecond: true}); r.Aggregations != got {
		t.Errorf("aggregations = %+v, want %+v", r.Aggregations, got)
	}
	if r.Help != "Lines matched by rule app_errors." {
		t.Errorf("help = %q", r.Help)
	}
	if r.IsValueRule() || r.Timestamp != nil || r.Inputs != nil || r.Regexp == nil {
		t.Errorf("rule = %+v, want a compiled counting rule for every input", r)
	}
	// A value rule's default HELP says what its families read, not a sum: it heads its
	// quantile and maximum families too.
	v, err := Parse([]byte(`
inputs: [{path: /var/log/a.log}]
rules:
  - {name: latency_seconds, match: 't=(?P<t>[0-9.]+)', value: t, aggregations: [window, max, quantiles], quantiles: [0.99]}
`), "v.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range v.Rules[0].WindowFamilies() {
		if strings.Contains(f.Help, "Sum of") && !strings.Contains(f.Help, "Sum of t ") {
			t.Errorf("%s: HELP %q", f.Suffix, f.Help)
		}
		if !strings.HasPrefix(f.Help, "The t of lines matched by rule latency_seconds.") {
			t.Errorf("%s: HELP %q", f.Suffix, f.Help)
		}
	}
	if r.Line != 2 || c.File != "testdata/good/minimal.yaml" {
		t.Errorf("rule line %d in %q, want 2 in testdata/good/minimal.yaml", r.Line, c.File)
	}
	// Each config owns its defaults: changing one must not reach the next load.
	c.Global.Windows[0] = time.Hour
	if again := mustParseFile(t, "testdata/good/minimal.yaml"); again.Global.Windows[0] != time.Minute {
		t.Errorf("a second load saw the first one's change: %v", again.Global.Windows)
	}
}

func TestFullSchema(t *testing.T) {
	c := mustParseFile(t, "testdata/good/full.yaml")
	if want := []time.Duration{time.Minute, 5 * time.Minute}; !reflect.DeepEqual(c.Global.Windows, want) {
		t.Errorf("global windows = %v, want sorted %v", c.Global.Windows, want)
	}
	if c.Global.MaxSeriesPerRule != 500 {
		t.Errorf("max series = %d", c.Global.MaxSeriesPerRule)
	}
	wantInputs := []Input{
		{Name: "web", File: &FileInput{Path: "/var/log/nginx/*.log", StartAt: StartAtBeginning}},
		{File: &FileInput{Path: "/var/log/app.log", StartAt: StartAtEnd}},
		{Name: "nginx_socket", Syslog: &SyslogInput{Address: "unixgram:///run/logwindow/nginx.sock", Socket: SocketAddress{"unixgram", "/run/logwindow/nginx.sock"}, SocketMode: 0o660}},
		{Syslog: &SyslogInput{Address: "udp://127.0.0.1:5140", Socket: SocketAddress{"udp", "127.0.0.1:5140"}}},
	}
	if !reflect.DeepEqual(c.Inputs, wantInputs) {
		t.Errorf("inputs = %+v, want %+v", c.Inputs, wantInputs)
	}

	lines := ruleByName(t, c, "app_lines")
	if lines.Help != "Lines by level." || !reflect.DeepEqual(lines.Inputs, []string{"web"}) {
		t.Errorf("app_lines = %+v", lines)
	}
	if want := `^(?:(?P<level>(?:[a-z]+)) (?P<msg>[^ ]*)) took=(?P<took>[0-9.]+) at=(?P<ts>[^ ]+)$`; lines.Expanded != want {
		t.Errorf("expanded = %s\nwant       %s", lines.Expanded, want)
	}

	slow := ruleByName(t, c, "app_slow_seconds")
	level := slow.Regexp.SubexpIndex("level")
	wantLabels := []Label{
		{Name: "level", Template: Template{{Capture: level}}},
		{Name: "tag", Template: Template{{Literal: "lvl-", Capture: -1}, {Capture: level}, {Literal: "-$", Capture: -1}}},
	}
	if !reflect.DeepEqual(slow.Labels, wantLabels) {
		t.Errorf("labels (merged from an anchor, sorted) = %+v, want %+v", slow.Labels, wantLabels)
	}
	if len(slow.Where) != 2 || slow.Where[0].CaptureName != "level" || slow.Where[1].CaptureName != "took" ||
		slow.Where[1].Capture != slow.Regexp.SubexpIndex("took") || !slow.Where[0].Regexp.MatchString("error") {
		t.Errorf("where = %+v, want level then took", slow.Where)
	}
	if slow.ValueName != "took" || slow.ValueCapture != slow.Regexp.SubexpIndex("took") {
		t.Errorf("value = %s (%d)", slow.ValueName, slow.ValueCapture)
	}
	wantTS := &Timestamp{CaptureName: "ts", Capture: slow.Regexp.SubexpIndex("ts"), Layout: "2006-01-02T15:04:05Z07:00"}
	if !reflect.DeepEqual(slow.Timestamp, wantTS) {
		t.Errorf("timestamp = %+v, want %+v", slow.Timestamp, wantTS)
	}
	if want := []time.Duration{30 * time.Second, time.Hour, 24 * time.Hour}; !reflect.DeepEqual(slow.Windows, want) {
		t.Errorf("windows = %v, want %v", slow.Windows, want)
	}
	if want := (quantity.Aggregations{Window: true, Events: true, Max: true, Min: true, Mean: true}); slow.Aggregations != want {
		t.Errorf("aggregations = %+v, want %+v", slow.Aggregations, want)
	}
	if o := slow.Options(); !o.Events || !o.Extrema || len(o.Summaries) != 0 {
		t.Errorf("wheels keep %+v, want event counts and extrema", o)
	}
}

func TestExampleRules(t *testing.T) {
	c := mustParseFile(t, "../example-rules.yaml")
	var names []string
	for _, r := range c.Rules {
		names = append(names, r.Name)
		if r.Timestamp == nil {
			t.Errorf("rule %s: no timestamp; the example places every line by its own time", r.Name)
		}
	}
	want := []string{"nginx_http_requests", "nginx_http_server_errors", "nginx_http_clients", "nginx_http_response_body_bytes",
		"nginx_http_request_duration_seconds", "nginx_http_upstream_response_time_seconds",
		"nginx_http_path_requests", "nginx_http_path_server_errors"}
	if !reflect.DeepEqual(names, want) {
		t.Errorf("rules = %v, want %v", names, want)
	}
}

// TestBadConfigs has one file per class of mistake, each with every problem it must report:
// the whole message is compared, since the message is what a user acts on.
func TestBadConfigs(t *testing.T) {
	tests := map[string][]string{
		"syntax.yaml": {
			`:4: not valid YAML: did not find expected '-' indicator`,
		},
		"tab_indent.yaml": {
			`:3: not valid YAML: found character that cannot start any token; the line is indented with a tab, and YAML indents with spaces only`,
		},
		"unquoted_indicator.yaml": {
			`:4: not valid YAML: found character that cannot start any token; the value starts with %, which YAML keeps for itself: put the value in quotes ('...')`,
		},
		"unquoted_json.yaml": {
			`:4: input "web": log_format: must be a single value, not a mapping; a JSON template is text: put it in quotes ('{...}')`,
		},
		"multi_document.yaml": {
			`:4: the file holds more than one YAML document (a --- separator); put everything in one`,
		},
		"empty.yaml": {
			`: no rules: add a rules: list (see example-rules.yaml)`,
		},
		"unknown_key.yaml": {
			`:2: global: unknown key "window" (did you mean "windows"?) (known keys: windows, max_series_per_rule, counter_ttl)`,
			`:6: rule "a": unknown key "lables" (did you mean "labels"?) (known keys: name, help, match, fields, labels, where, where_not, value, timestamp, windows, aggregations, quantiles, buckets, distinct, distinct_registers, inputs, initial, top, rewrite, native_histogram, window_end)`,
			`:7: rule "a": timestamp: unknown key "layuot" (did you mean "layout"?) (known keys: capture, layout, location)`,
			`:7: rule "a": timestamp: capture "t" is not in the match regex (have: none: name groups with (?P<name>...))`,
			`:7: rule "a": timestamp: layout: is missing; give a Go time layout (e.g. '02/Jan/2006:15:04:05 -0700'; a log format's time_local, time_iso8601 and msec need none)`,
			`:8: unknown key "rulez" (did you mean "rules"?) (known keys: global, inputs, patterns, rules)`,
		},
		"duplicate_key.yaml": {
			`:4: rule #1: key "name" is given twice (first on line 2)`,
		},
		// A mapping only merged is checked too, once whatever merges it, and so is the
		// merge key itself, in a mapping of its own or merged: both were taken silently,
		// the first one winning, where YAML (and yaml.v3 decoding into a map) refuses a
		// key given twice.
		"duplicate_merged_key.yaml": {
			`:4: rule #1: key "windows" is given twice (first on line 4)`,
			`:11: rule #3: key "<<" is given twice (first on line 10); merge several mappings with one: <<: [*a, *b]`,
			`:16: rule #4: key "help" is given twice (first on line 15)`,
			`:21: rule #6: key "<<" is given twice (first on line 21); merge several mappings with one: <<: [*a, *b]`,
		},
		"kinds.yaml": {
			`:1: global: must be a mapping, not a list`,
			`:2: inputs: must be a list of inputs (- path: ...), not a mapping`,
			`:5: rule "a": match: must be a single value, not a list`,
			`:6: rule "a": labels: must be a mapping, not a list`,
			`:7: rule "a": windows: must be a list (e.g. [a, b]), not a single value`,
			`:8: rule #2: must be a mapping, not a single value`,
		},
		"durations.yaml": {
			`:2: global: windows: "5 minutes" is not a duration: it has a space (write e.g. 30s, 5m, 1h, 1d)`,
			`:6: rule "a": windows: 500ms: shorter than 1s`,
			`:9: rule "b": windows: 400d: longer than the longest supported window (366 days)`,
			`:12: rule "c": windows: 1m and 60s are the same window; list it once`,
			`:15: rule "d": windows: the list is empty; give at least one window (e.g. [1m, 5m])`,
			// Past what a duration holds: its error said it was no duration.
			`:18: rule "e": windows: 100000000000h: longer than the longest supported window (366 days)`,
			// More digits than a number holds: it said the window was no duration.
			`:21: rule "f": windows: 1000000000000000000000s: longer than the longest supported window (366 days)`,
		},
		"counter_ttl_range.yaml": {
			`:2: global: counter_ttl: 1000000y is longer than a duration holds (about 292 years); write 0 to keep counters while the process lives`,
		},
		"counter_ttl_digits.yaml": {
			`:2: global: counter_ttl: 1000000000000000000000s is longer than a duration holds (about 292 years); write 0 to keep counters while the process lives`,
		},
		"missing_comma.yaml": {
			`:8: rule "leading": windows: "5m 15m" is written over two lines with no comma between them (from line 7), which YAML reads as one item; put a comma between its parts`,
			`:12: rule "leading": aggregations: "max min" is written over two lines with no comma between them (from line 11), which YAML reads as one item; put a comma between its parts`,
			`:17: rule "trailing": inputs: "api web" is written over two lines with no comma between them (from line 16), which YAML reads as one item; put a comma between its parts`,
			`:20: rule "one_line": windows: "1m 5m" is not a duration: it has a space (write e.g. 30s, 5m, 1h, 1d)`,
		},
		"global.yaml": {
			`:2: global: windows: the list is empty; give at least one window (e.g. [1m, 5m])`,
			`:3: global: max_series_per_rule: "lots" is not a whole number`,
		},
		"regex.yaml": {
			":2: pattern \"BROKEN\": invalid regex: missing closing ] in `[a-`",
			`:4: pattern "LOOP_A": refers to itself (through %{...} references)`,
			`:6: pattern "9BAD": a pattern name is letters, digits and _, not starting with a digit`,
			`:7: pattern "BOMB": expands to more than 1 MiB of regex`,
			":14: rule \"a\": match: invalid regex: missing closing ) in `(unclosed`",
			`:16: rule "b": match: unknown pattern %{NGINX} (have: B1, B2, B3, B4, BOMB, BROKEN, LOOP_A, LOOP_B, USES_BROKEN)`,
			`:20: rule "d": match: capture "x" is defined twice in the regex (after pattern expansion); rename one`,
			`:22: rule "e": match: is empty; give the regex lines must match`,
		},
		"where.yaml": {
			`:4: rule "empty": where_not: s: the regex is empty (it would match every line)`,
			`:7: rule "everything": where_not: s: '.*' matches every value, an empty one too, so the rule would count no line`,
			`:7: rule "everything": where_not: p: '^/health|' matches every value, an empty one too, so the rule would count no line`,
			`:10: rule "ends": where_not: s: '(?m)$' matches every value, an empty one too, so the rule would count no line`,
			`:10: rule "ends": where_not: p: 'x*' matches every value, an empty one too, so the rule would count no line`,
		},
		"captures.yaml": {
			`:4: rule "nginx_5xx": where: capture "stauts" is not in the match regex (did you mean "status"?) (have: method, path, status, took)`,
			`:5: rule "nginx_5xx": value: capture "tok" is not in the match regex (did you mean "took"?) (have: method, path, status, took)`,
			`:7: rule "nginx_5xx": labels: route: capture "pth" is not in the match regex (did you mean "path"?) (have: method, path, status, took)`,
			`:8: rule "nginx_5xx": timestamp: capture "when" is not in the match regex (have: method, path, status, took)`,
			`:11: rule "unnamed": value: capture "x" is not in the match regex (have: none: name groups with (?P<name>...))`,
		},
		"templates.yaml": {
			`:5: rule "a": labels: price: "$5" has a $ that is neither ${capture} nor $$ (a literal $)`,
			`:6: rule "a": labels: open: "${x" opens ${ without a closing }`,
			`:7: rule "a": labels: empty: the template is empty; write e.g. '${empty}'`,
		},
		"names.yaml": {
			`:2: rule "1st_rule": name: "1st_rule" is not a valid metric name (letters, digits and _, not starting with a digit)`,
			`:4: rule "http:requests": name: "http:requests" is not a valid metric name (letters, digits and _, not starting with a digit)`,
			`:6: rule "requests_total": name: drop the _total suffix: the exporter adds it to the counter (requests_total_total)`,
			`:8: rule "logwindow_lines": name: names starting with logwindow_ are reserved for the exporter's own metrics`,
			`:10: rule "go_things": name: names starting with go_ are reserved for the exporter's own metrics`,
			`:12: rule #6: name: is missing; give the metric base name (e.g. nginx_http_requests)`,
		},
		"aliased_rules.yaml": {
			`:9: rule "b": match: invalid regex: missing closing ) in ` + "`x(`",
			`:10: rule "a": name: another rule has this name (line 5)`,
			`:11: rule "b": name: another rule has this name (line 8)`,
		},
		"huge_numbers.yaml": {
			`:1: global: max_series_per_rule: 99999999999999999999 is too large a number`,
			`:6: rule "r": top: k: must be from 1 to 1000000, not 99999999999999999999`,
		},
		"aliased_inputs.yaml": {
			`:4: input "web": is the input on line 3 again (*web): its lines would count twice; repeat its keys with <<: *web and give a name and a path of its own`,
		},
		"tags.yaml": {
			`:4: input #1: path: tag !ENV: a rule file's values are plain YAML, whose tags are !!str, !!int, !!float, !!bool, !!null, !!seq and !!map; ` +
				`no tag includes a file, reads the environment or decodes (!!binary): write the value itself`,
			`:7: rule "a": match: tag !!binary: a rule file's values are plain YAML, whose tags are !!str, !!int, !!float, !!bool, !!null, !!seq and !!map; ` +
				`no tag includes a file, reads the environment or decodes (!!binary): write the value itself`,
			`:8: rule "a": help: tag !include: a rule file's values are plain YAML, whose tags are !!str, !!int, !!float, !!bool, !!null, !!seq and !!map; ` +
				`no tag includes a file, reads the environment or decodes (!!binary): write the value itself`,
			`:9: rule "a": windows: tag !ENV: a rule file's values are plain YAML, whose tags are !!str, !!int, !!float, !!bool, !!null, !!seq and !!map; ` +
				`no tag includes a file, reads the environment or decodes (!!binary): write the value itself`,
		},
		"included.yaml": {
			`:3: global: must be a mapping, not a value tagged !include` +
				`: a rule file's values are plain YAML, whose tags are !!str, !!int, !!float, !!bool, !!null, !!seq and !!map; no tag includes a file, reads the environment or decodes (!!binary): write the value itself`,
			`:4: inputs: must be a list of inputs (- path: ...), not a value tagged !include` +
				`: a rule file's values are plain YAML, whose tags are !!str, !!int, !!float, !!bool, !!null, !!seq and !!map; no tag includes a file, reads the environment or decodes (!!binary): write the value itself`,
			`:8: rule "a": timestamp: must be a mapping, not a value tagged !include` +
				`: a rule file's values are plain YAML, whose tags are !!str, !!int, !!float, !!bool, !!null, !!seq and !!map; no tag includes a file, reads the environment or decodes (!!binary): write the value itself`,
			`:9: rule "a": windows: must be a list (e.g. [a, b]), not a value tagged !ENV` +
				`: a rule file's values are plain YAML, whose tags are !!str, !!int, !!float, !!bool, !!null, !!seq and !!map; no tag includes a file, reads the environment or decodes (!!binary): write the value itself`,
			`:10: rule #2: must be a mapping, not a value tagged !include` +
				`: a rule file's values are plain YAML, whose tags are !!str, !!int, !!float, !!bool, !!null, !!seq and !!map; no tag includes a file, reads the environment or decodes (!!binary): write the value itself`,
		},
		"collection_tags.yaml": {
			`:4: tag !include: a rule file's values are plain YAML, whose tags are !!str, !!int, !!float, !!bool, !!null, !!seq and !!map; ` +
				`no tag includes a file, reads the environment or decodes (!!binary): write the value itself`,
			`:9: tag !ENV: a rule file's values are plain YAML, whose tags are !!str, !!int, !!float, !!bool, !!null, !!seq and !!map; ` +
				`no tag includes a file, reads the environment or decodes (!!binary): write the value itself`,
			`:10: tag !ENV: a rule file's values are plain YAML, whose tags are !!str, !!int, !!float, !!bool, !!null, !!seq and !!map; ` +
				`no tag includes a file, reads the environment or decodes (!!binary): write the value itself`,
		},
		"collisions.yaml": {
			`:4: rule "a_window": name: clashes with rule "a" (line 2) over the metric name a_window`,
			`:6: rule "a": name: another rule has this name (line 2)`,
			`:10: rule "b": name: clashes with rule "b_window_max" (line 8) over the metric name b_window_max`,
			`:18: rule "c_created": name: clashes with rule "c" (line 14) over the metric name c_created`,
			`:20: rule "c_window_distribution_gcount": name: clashes with rule "c" (line 14) over the metric name c_window_distribution_gcount`,
			`:22: rule "c_window_distribution_gsum": name: clashes with rule "c" (line 14) over the metric name c_window_distribution_gsum`,
		},
		"lint.yaml": {
			`:3: rule "latency_ms": promtool check metrics would flag latency_ms_total: "ms" abbreviates a unit; spell the unit out, in base units: seconds`,
			`:4: rule "reqCount": promtool check metrics would flag reqCount_total: metric names are snake_case; name the rule req_count`,
			`:4: rule "reqCount": promtool check metrics would flag reqCount_total: label names are snake_case; write foo_bar instead of fooBar`,
			`:4: rule "reqCount": promtool check metrics would flag reqCount_total: label "le" is reserved for the bucket bounds of histograms; rename it`,
			`:5: rule "size_kilobytes": promtool check metrics would flag size_kilobytes_total: "kilobytes" is not a base unit; write "bytes" instead and convert the values to it`,
			`:6: rule "temp_gauge": promtool check metrics would flag temp_gauge_window: the name says the family's type (gauge), which its TYPE line already gives; drop "gauge" from the rule name`,
			// The ranked label is only on the _window_top samples.
			`:7: rule "hot_paths": promtool check metrics would flag hot_paths_total: label "quantile" is reserved for the quantiles of summaries; rename it`,
			`:7: rule "hot_paths": promtool check metrics would flag hot_paths_window_top: label names are snake_case; write path_name instead of pathName`,
		},
		"labels.yaml": {
			`:5: rule "a": labels: window: "window" is the label the exporter puts the window in; pick another name`,
			`:6: rule "a": labels: __name: label names starting with __ are reserved by Prometheus`,
			`:7: rule "a": labels: bad-name: not a valid label name (letters, digits and _, not starting with a digit)`,
		},
		"aggregations.yaml": {
			`:4: rule "counted": aggregations: events needs a value: capture (a counting rule's window already is its count of lines)`,
			`:4: rule "counted": aggregations: max needs a value: capture (a counting rule's window already is its count of lines)`,
			`:8: rule "summed": aggregations: unknown aggregation "median" (did you mean "mean"?) (known: window, per_second, events, max, min, mean, quantiles)`,
			`:8: rule "summed": aggregations: window is listed twice`,
			`:12: rule "none": aggregations: the list is empty; leave it out for the defaults or list some of: window, per_second, events, max, min, mean, quantiles`,
		},
		"distinct.yaml": {
			`:4: rule "empty": distinct: the template is empty; write what is counted once, e.g. '${remote_addr}'`,
			`:7: rule "typo": distinct: capture "adr" is not in the match regex (did you mean "addr"?) (have: addr)`,
			`:10: rule "listed": aggregations: distinct is not listed here; give the rule its own distinct: key`,
			`:13: rule "not_text": distinct: must be a single value, not a list`,
			`:16: rule "open": distinct: "ip ${addr" opens ${ without a closing }`,
			`:19: rule "constant": distinct: 'clients' refers to no capture: every line gives the same text, so a window counts 1 value; write what is counted, e.g. '${remote_addr}'`,
			`:22: rule "escaped": distinct: '$${addr}' refers to no capture: every line gives the same text, so a window counts 1 value; write what is counted, e.g. '${remote_addr}'`,
		},
		"distinct_registers.yaml": {
			`:5: rule "not_a_power": distinct_registers: 1000 is not a power of two; give one of 16, 32, 64, … 1024, … 16384`,
			`:9: rule "too_few": distinct_registers: must be from 16 to 16384, not 8`,
			`:13: rule "too_many": distinct_registers: must be from 16 to 16384, not 32768`,
			`:17: rule "words": distinct_registers: "many" is not a whole number`,
			`:20: rule "alone": distinct_registers: the rule has no distinct: template whose count's registers it would export`,
			`:25: rule "clash": distinct_registers: the rule has a label named "register", the label of the registers' index; rename it`,
		},
		"distributions.yaml": {
			`:4: rule "counted": aggregations: quantiles needs a value: capture (a counting rule's window already is its count of lines)`,
			`:5: rule "counted": quantiles: needs a value: capture (the quantiles are of the values)`,
			`:6: rule "counted": buckets: needs a value: capture (the buckets count the values)`,
			`:11: rule "out_of_range": quantiles: "p99" is not a number`,
			`:11: rule "out_of_range": quantiles: 0 is not between 0 and 1 (exclusive); write e.g. 0.99 for p99`,
			`:11: rule "out_of_range": quantiles: 1 is not between 0 and 1 (exclusive); write e.g. 0.99 for p99`,
			`:11: rule "out_of_range": quantiles: 1.5 is not between 0 and 1 (exclusive); write e.g. 0.99 for p99`,
			`:11: rule "out_of_range": quantiles: -0.1 is not between 0 and 1 (exclusive); write e.g. 0.99 for p99`,
			`:11: rule "out_of_range": quantiles: 0.5 is listed twice`,
			`:15: rule "not_enabled": quantiles: add quantiles to aggregations to export them`,
			`:19: rule "unsorted": buckets: 0.5 comes after 1; list the bounds in ascending order`,
			`:19: rule "unsorted": buckets: 0.5 is listed twice`,
			`:19: rule "unsorted": buckets: +Inf: every bound must be finite (the +Inf bucket is always there)`,
			`:23: rule "duplicate": buckets: 0.1 is listed twice`,
			`:27: rule "empty": buckets: the list is empty; give the upper bounds (e.g. [0.01, 0.1, 1])`,
			// Past what a float holds: its parse error said it was no number.
			`:31: rule "huge": buckets: 1e400 is too large a number (the largest is about 1.8e308)`,
		},
		"timestamps.yaml": {
			`:4: rule "a": timestamp: layout: "Jan _2 15:04:05" does not give a full date and time to the second; write it with Go's reference time, e.g. '02/Jan/2006:15:04:05 -0700' for nginx`,
			`:7: rule "b": timestamp: layout: is missing; give a Go time layout (e.g. '02/Jan/2006:15:04:05 -0700'; a log format's time_local, time_iso8601 and msec need none)`,
			`:10: rule "c": timestamp: capture: is missing; name the capture holding the line's time`,
			`:10: rule "c": timestamp: layout: "2006-01-02 15:04" does not give a full date and time to the second; write it with Go's reference time, e.g. '02/Jan/2006:15:04:05 -0700' for nginx`,
			`:13: rule "unknown_zone": timestamp: location: "America/New_Yrok" is not a time zone: give an IANA name, e.g. 'America/New_York', 'Europe/Berlin' or 'UTC' (Local: the exporter's own zone)`,
			`:16: rule "offset_in_layout": timestamp: location: layout "2006-01-02T15:04:05Z07:00" reads each line's own UTC offset; location is for a layout without a zone, e.g. '2006-01-02 15:04:05': leave it out`,
			`:19: rule "empty_zone": timestamp: location: is empty; give the IANA time zone the log's times are written in, e.g. 'America/New_York'`,
			`:22: rule "zone_of_the_runtime": timestamp: location: cri_time carries its own UTC offset (or is seconds since the epoch); location is for a layout without a zone: leave it out`,
			`:22: rule "zone_of_the_runtime": timestamp: capture: cri_time needs the rule to name its inputs (inputs: [...]), all with wrapper: cri`,
			`:28: rule "utc_in_layout": timestamp: location: layout "2006-01-02T15:04:05Z" writes a literal Z, which says its times are UTC; location would read them in another zone: leave it out (or, if the log writes an offset where it is not UTC, write Z07:00 in the layout)`,
			`:31: rule "utc_after_fraction": timestamp: location: layout "2006-01-02T15:04:05.000Z" writes a literal Z, which says its times are UTC; location would read them in another zone: leave it out (or, if the log writes an offset where it is not UTC, write Z07:00 in the layout)`,
		},
		"initial.yaml": {
			`:3: global: counter_ttl: "a while" is not a duration: it holds no number (write e.g. 24h, 7d, or 0 to keep counters while the process lives)`,
			`:8: rule "a": initial: 3 label sets, more than max_series_per_rule (2), which they count against`,
			`:10: rule "a": initial #2: "metod" is not a label of the rule (did you mean "method"?) (labels: method, status)`,
			`:10: rule "a": initial #2: gives no value for method; give every label of the rule`,
			`:11: rule "a": initial #3: gives no value for method; give every label of the rule`,
			`:12: rule "a": initial #4: the same label set as initial #1`,
			`:13: rule "a": initial #5: every value is __overflow__, the label set of the overflow series`,
			`:18: rule "b": initial: the rule has no labels; its one series always exists already`,
			`:22: rule "c": initial: must be a list of label sets (- {label: value, ...}), not a mapping`,
			`:27: rule "d": initial #1: class: "5" is no value the label's template '${s}xx' gives, so no line could ever count in it`,
			`:28: rule "d": initial #2: code: "500" is no value the label's template 'http_${s}' gives, so no line could ever count in it`,
			`:30: rule "d": initial #4: both: "<1|1" is no value the label's template '<${s}|${s}>' gives, so no line could ever count in it`,
			`:34: rule "e": initial #1: service: "api" is no value the label's template 'web' gives, so no line could ever count in it`,
		},
		"inputs.yaml": {
			`:4: input "web": name: another input already has this name (line 2)`,
			`:6: input "other": path: is missing; give the file or glob to follow (or syslog: a socket to receive on)`,
			`:7: input "other": start_at: "middle" is neither end nor beginning`,
			`:8: input #4: path: "/var/log/a.log" is already followed by the input on line 3 (its lines would count twice)`,
			// Go's own error said "syntax error in pattern".
			`:9: input #5: path: "/var/log/[a.log" is not a valid glob: it has a [ that no ] closes, at "[a.log"; a [ of the name itself is written \[`,
			`:10: input #6: path: "/var/log/a\x00.log" holds a NUL byte, which no file name has: it matches no file, ever`,
			`:14: rule "a": inputs: no input is named "wbe" (did you mean "web"?) (named inputs: other, web)`,
			`:14: rule "a": inputs: "web" is listed twice`,
			`:17: rule "b": inputs: the list is empty; leave it out to read every input`,
			// Not also that match: is missing: a log format the input named would read it.
			`:19: rule "c": inputs: no input is named "wbe" (did you mean "web"?) (named inputs: other, web)`,
		},
		"structured.yaml": {
			`:5: input "odd": format: "jsno" is not one of text, json, logfmt (did you mean "json"?)`,
			`:6: input "pod": wrapper: "docker" is not known (the one wrapper is cri: Kubernetes container logs)`,
			`:10: rule "both": match and fields: a rule matches a regex over the line or reads fields of structured lines, not both`,
			`:13: rule "no_inputs": fields: a fields rule must name its inputs (inputs: [...]), all json or all logfmt`,
			`:15: rule "on_text": fields: input "web" has no format: (text); fields are read from format: json or logfmt inputs`,
			`:18: rule "mixed": fields: inputs "app" are json and "kv" are logfmt; a fields rule reads inputs of one format`,
			`:21: rule "bad_fields": fields: 1st: a capture name is letters, digits and _, not starting with a digit`,
			`:21: rule "bad_fields": fields: route: "http..route" is not a field: give a key, with dots between nested keys (e.g. http.route)`,
			`:21: rule "bad_fields": fields: ok: "" is not a field: give a key, with dots between nested keys (e.g. http.route)`,
			`:25: rule "typo": labels: route: capture "rotue" is not in fields (did you mean "route"?) (have: route, status)`,
			`:26: rule "typo": where_not: capture "staus" is not in fields (did you mean "status"?) (have: route, status)`,
			":30: rule \"bad_where_not\": where_not: s: invalid regex: missing closing ) in `(`",
			`:33: rule "cri_time_on_text": timestamp: capture: input "web" has no wrapper: cri, so its lines have no cri_time`,
			`:37: rule "cri_time_unnamed": timestamp: capture: cri_time needs the rule to name its inputs (inputs: [...]), all with wrapper: cri`,
		},
		"native_histogram.yaml": {
			`:4: rule "counted": native_histogram: needs a value: capture (the histogram counts the values)`,
			`:8: rule "not_a_bool": native_histogram: must be true or false`,
		},
		"top.yaml": {
			`:5: rule "no_label": top: label: is missing; name the label whose values are ranked (one of the rule's labels: path, status)`,
			`:9: rule "not_a_label": top: unknown key "kk" (known keys: label, k, min, capacity)`,
			`:9: rule "not_a_label": top: label: "paht" is not a label of the rule (did you mean "path"?) (labels: path)`,
			`:13: rule "bad_numbers": top: k: must be from 1 to 1000000, not 0`,
			`:13: rule "bad_numbers": top: capacity: "ten" is not a whole number`,
			`:13: rule "bad_numbers": top: min: "-1" is not a number of at least 0 (the smallest window sum exported)`,
			`:17: rule "small_capacity": top: capacity: 5 is less than k (10); the summary must hold at least the values it exports`,
			`:21: rule "no_k": top: k: is missing; give how many values to export per window (e.g. k: 10)`,
			`:21: rule "no_k": top: capacity: must be from 1 to 1000000, not 1000001`,
			`:21: rule "no_k": top: min: "NaN" is not a number of at least 0 (the smallest window sum exported)`,
			`:26: rule "initial_top": initial #2: path is the top label, whose values are ranked rather than kept as label sets; leave it out`,
			`:30: rule "not_a_mapping": top: must be a mapping, not a single value`,
			`:34: rule "constant": top: label: the template of service, 'web', refers to no capture: every line gives it the same value, so it would rank 1 value; rank a label taken from the line`,
			`:38: rule "huge_min": top: min: 1e400 is too large a number (the largest is about 1.8e308)`,
		},
		// An input's log format refused is the one error: the rules reading the input are
		// not also told that it has none.
		"logformat_refused.yaml": {
			`:2: input "empty": log_format: is empty; give a preset (combined, combined_request_time, combined_upstream_time, main, main_request_time, main_upstream_time, upstreaminfo) or the format string as the server's configuration has it`,
			`:3: input "mapping": log_format: must be a single value, not a mapping; a JSON template is text: put it in quotes ('{...}')`,
			`:4: input "none": log_format: the list of candidates is empty; give one format, a list of them, or auto`,
			`:5: input "nested": log_format: each item must be a single value, not a list`,
		},
		"logformat.yaml": {
			`:5: input "both": log_format and apache_log_format: an input's lines have one format; keep the one its server writes`,
			`:6: input "esc": log_format_escape: "jsno" is not one of default, json, none (nginx's escape= values) (did you mean "json"?)`,
			`:7: input "noformat_esc": log_format_escape: is nginx's escape= parameter of a log_format:, which this input does not have`,
			`:8: input "adjacent": log_format: $body_bytes_sent follows $status with no text between them, so where one ends cannot be told from the line, in "$status⟨here⟩$body_bytes_sent"`,
			`:9: input "typo": log_format: "combind" is not a preset (combined, combined_request_time, combined_upstream_time, main, main_request_time, main_upstream_time, upstreaminfo) (did you mean "combined"?), nor a format string (which has variables)`,
			`:10: input "struct": format: and a log format: the log format says how the lines are read (a JSON template with log_format_escape: json reads JSON); leave format: out`,
			`:11: input "badjson": log_format: expected ':' after the key "a", in "{\"a\" ⟨here⟩\"$status\"}"`,
			`:12: input "apache": apache_log_format: %Z is not a directive of mod_log_config, in "%h %⟨here⟩Z"`,
			`:14: rule "mixed": match: is missing, and inputs "web" and "api" have different log formats: a rule without match: reads inputs of one format (its inputs: names both; keep those of one format, or give the rule a match: regex)`,
			`:16: rule "no_format": match: is missing; give the regex lines must match, or a log_format: to the rule's inputs (then every $variable is a capture)`,
			`:18: rule "some_without": match: is missing, and input "plain" has no log format to read its lines by (the rule reads inputs "web", "plain"); give it one, or name only inputs with one (inputs: [...])`,
			`:22: rule "unknown_capture": labels: method: capture "requst_method" is not in the log format "combined" (did you mean "request_method"?) (have: remote_addr, remote_user, time_local, request, status, body_bytes_sent, http_referer, http_user_agent, request_method, request_uri, uri, server_protocol, status_class)`,
			`:25: rule "no_layout": timestamp: layout: is missing; give a Go time layout (e.g. '02/Jan/2006:15:04:05 -0700'; a log format's time_local, time_iso8601 and msec need none)`,
			`:28: rule "zone_of_time_local": timestamp: location: time_local carries its own UTC offset (or is seconds since the epoch); location is for a layout without a zone: leave it out`,
		},
		"syslog.yaml": {
			`:4: input "both": path and syslog: an input reads a file or a socket, not both; make two inputs`,
			`:5: input "relative": syslog: "unixgram://run/x.sock": a unix socket needs an absolute path, after three slashes: unixgram:///run/x.sock`,
			`:8: input "tcp": syslog: "tcp://127.0.0.1:514": the scheme is unixgram:// or udp://, not "tcp"`,
			`:12: input "twice": syslog: "udp://127.0.0.1:5140" is already received on by the input on line 10`,
			`:13: input "twice": start_at: applies to file inputs (path:), not to a syslog input`,
			`:16: input "udp mode": socket_mode: applies only to a syslog: unixgram:// socket`,
			`:19: input "mode": socket_mode: "0999" is not an octal permission like '0660': its digits are 0 to 7`,
			`:21: input "spelled otherwise": syslog: "unixgram:///run/./x.sock" is already received on by the input on line 18`,
			// A socket on every address takes its port on each: binding it beside one on an
			// address of it, or the other way round, fails.
			`:23: input "every address": syslog: "udp://0.0.0.0:5140" overlaps the input on line 10: a UDP socket on every address takes port 5140 on each, and binding the second would fail`,
			`:27: input "one address of it": syslog: "udp://127.0.0.1:5142" overlaps the input on line 25: a UDP socket on every address takes port 5142 on each, and binding the second would fail`,
			`:29: input "the v6 loopback beside it": syslog: "udp://[::1]:5140" overlaps the input on line 23: a UDP socket on every address takes port 5140 on each, and binding the second would fail`,
			// url.Parse's refusal of a port that is no number said "is not a URL".
			`:33: input "service name": syslog: "udp://127.0.0.1:syslog": the port is a number from 1 to 65535 (nginx's server= takes no service name), not "syslog"`,
			// It said "is not an octal permission" of a mode that is one.
			`:36: input "no write for anyone": socket_mode: "0000" lets no one send: a sender needs write permission on the socket, e.g. '0660'`,
			`:39: input "wrapped": wrapper: cri reads the lines a container runtime writes to a pod's log files (path: /var/log/pods/...); a syslog input receives messages no runtime wrapped: leave wrapper out`,
			// The mode of a socket whose address is refused is read as a unix socket's: it
			// was refused as a UDP socket's, the address's scheme unixgram:// or not.
			`:41: input "both wrong": syslog: "unix:/run/w.sock" is nginx's spelling of a unix socket: unixgram:///run/w.sock`,
			`:42: input "both wrong": socket_mode: "0444" lets no one send: a sender needs write permission on the socket, e.g. '0660'`,
			// A refused address written udp:// is a UDP socket's all the same: its mode was
			// read as a unix socket's, and refused only once the address was mended.
			`:44: input "udp wrong": syslog: "udp://logs.123:514": the host "logs.123" is not an IPv4 address: that is four numbers from 0 to 255 between dots, with no leading zero`,
			`:45: input "udp wrong": socket_mode: applies only to a syslog: unixgram:// socket`,
		},
	}
	files, err := filepath.Glob("testdata/bad/*.yaml")
	if err != nil || len(files) != len(tests) {
		t.Fatalf("%d files in testdata/bad, %d cases (%v): every file needs a case and every case a file", len(files), len(tests), err)
	}
	for _, path := range files {
		wantLines, ok := tests[filepath.Base(path)]
		if !ok {
			t.Errorf("%s has no case", path)
			continue
		}
		t.Run(filepath.Base(path), func(t *testing.T) {
			c, err := Load(path)
			if c != nil {
				t.Errorf("Load returned a config along with the error")
			}
			var cerr *Error
			if !errors.As(err, &cerr) {
				t.Fatalf("error %v is not an *Error", err)
			}
			want := make([]string, len(wantLines))
			for i, w := range wantLines {
				want[i] = path + w
			}
			if got := strings.Split(err.Error(), "\n"); !reflect.DeepEqual(got, want) {
				t.Errorf("got:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
			}
			if len(cerr.Problems) != len(want) {
				t.Errorf("%d problems, want %d", len(cerr.Problems), len(want))
			}
		})
	}
}

func TestLoadMissingFile(t *testing.T) {
	_, err := Load(filepath.Join(t.TempDir(), "absent.yaml"))
	if !errors.Is(err, os.ErrNotExist) {
		t.Errorf("err = %v, want one wrapping os.ErrNotExist", err)
	}
}

// fingerprintBase is a rule using every key, for the fingerprint tests' edits.
const fingerprintBase = `
global: {windows: [1m, 5m]}
inputs: [{name: web, path: /a, path_captures: '^/(?P<node>[a-z]+)'}, {name: api, path: /b, path_captures: '^/(?P<node>[a-z]+)'}]
rules:
  - name: r
    help: Some help.
    match: '(?P<m>[A-Z]+) (?P<s>[0-9]+) (?P<v>[0-9.]+) (?P<t>[^ ]+)'
    labels: {method: '${m}', status: '${s}'}
    where: {s: '^5'}
    value: v
    timestamp: {capture: t, layout: '2006-01-02T15:04:05Z07:00'}
    aggregations: [window, max]
    distinct: '${m}'
    inputs: [web, api]
    initial: [{method: GET}]
    top: {label: status, k: 3, capacity: 300}
`

// fingerprintEdits are edits of fingerprintBase (every occurrence of old), each naming the Rule field it changes
// and whether the rule keeps its window state (same fingerprint) across it.
var fingerprintEdits = []struct {
	name     string
	field    string
	old, new string
	same     bool
}{
	{"help text", "Help", "help: Some help.", "help: Other words.", true},
	{"input order", "Inputs", "inputs: [web, api]", "inputs: [api, web]", true},
	{"series budget", "", "global: {windows: [1m, 5m]}", "global: {windows: [1m, 5m], max_series_per_rule: 7}", true},
	{"counter ttl", "", "global: {windows: [1m, 5m]}", "global: {windows: [1m, 5m], counter_ttl: 1h}", true},
	{"window order as written", "", "global: {windows: [1m, 5m]}", "global: {windows: [5m, 1m]}", true},
	{"window spelling", "WindowNames", "global: {windows: [1m, 5m]}", "global: {windows: [60s, 5m]}", true},
	{"inherited global windows", "Windows", "global: {windows: [1m, 5m]}", "global: {windows: [1m, 15m]}", false},
	{"own windows", "Windows", "value: v", "value: v\n    windows: [1m, 5m, 1h]", false},
	{"name", "Name", "name: r", "name: r2", false},
	{"match", "Expanded", "(?P<v>[0-9.]+)", "(?P<v>[0-9]+)", false},
	{"label template", "Labels", "method: '${m}'", "method: '${s}${m}'", false},
	{"label name", "Labels", "method:", "verb:", false},
	{"where", "Where", "s: '^5'", "s: '^4'", false},
	{"value", "ValueName", "value: v", "value: s", false},
	{"timestamp layout", "Timestamp", "2006-01-02T15:04:05Z07:00", "2006-01-02T15:04:05.000Z07:00", false},
	{"aggregations", "Aggregations", "[window, max]", "[window, min]", false},
	{"quantiles on", "Quantiles", "[window, max]", "[window, max, quantiles]", false},
	{"buckets", "Buckets", "value: v", "value: v\n    buckets: [0.1, 1]", false},
	{"native histogram", "NativeHistogram", "value: v", "value: v\n    native_histogram: true", false},
	{"distinct template", "Items", "distinct: '${m}'", "distinct: '${m}${s}'", false},
	{"distinct off", "Aggregations", "\n    distinct: '${m}'", "", false},
	{"inputs", "Inputs", "inputs: [web, api]", "inputs: [web]", false},
	{"initial label sets", "Initial", "initial: [{method: GET}]", "initial: [{method: PUT}]", false},
	{"where_not", "WhereNot", "where: {s: '^5'}", "where: {s: '^5'}\n    where_not: {m: '^GET$'}", false},
	{"top label's template", "Items", "status: '${s}'", "status: 'x${s}'", false},
	{"top capacity", "Top", "capacity: 300}", "capacity: 50}", false},
	{"window end", "WindowEnd", "value: v", "value: v\n    window_end: last_complete_second", false},
	{"window end as the default", "", "value: v", "value: v\n    window_end: current_second", true},
	{"top k and min", "", "k: 3,", "k: 4, min: 5,", true},
	{"top label kept as series", "Labels", "initial: [{method: GET}]\n    top: {label: status, k: 3, capacity: 300}", "initial: [{method: GET, status: '500'}]", false},
	{"fields for match", "Fields", fingerprintHead, fingerprintFields("json"), false},
	{"structured format", "Format", fingerprintHead, fingerprintFields("logfmt"), false},
	{"path capture", "PathCaptures", "distinct: '${m}'\n    inputs", "distinct: '${m}${node}'\n    inputs", false},
	{"log format for match", "LogFormat", fingerprintHead, fingerprintLogFormat("default"), false},
	{"candidate log formats", "Candidates", fingerprintHead, fingerprintCandidates, false},
	{"rewrite", "Rewrites", "where: {s: '^5'}", "rewrite: [{label: method, regex: 'GET', replacement: get}]\n    where: {s: '^5'}", false},
	{"rewrite of the top label", "Rewrites", "where: {s: '^5'}", "rewrite: [{label: status, regex: '0', replacement: x}]\n    where: {s: '^5'}", false},
}

// fingerprintHead is the part of fingerprintBase that a fields rule changes: its inputs
// get a format, and fields with the regex's capture names replace match.
const fingerprintHead = `inputs: [{name: web, path: /a, path_captures: '^/(?P<node>[a-z]+)'}, {name: api, path: /b, path_captures: '^/(?P<node>[a-z]+)'}]
rules:
  - name: r
    help: Some help.
    match: '(?P<m>[A-Z]+) (?P<s>[0-9]+) (?P<v>[0-9.]+) (?P<t>[^ ]+)'
`

func fingerprintFields(format string) string {
	return `inputs: [{name: web, path: /a, path_captures: '^/(?P<node>[a-z]+)', format: ` + format + `}, {name: api, path: /b, path_captures: '^/(?P<node>[a-z]+)', format: ` + format + `}]
rules:
  - name: r
    help: Some help.
    fields: {m: m, s: s, v: v, t: t}
`
}

// fingerprintLogFormat is fingerprintHead with the captures from a log format of the
// escaping given: a rule without match.
func fingerprintLogFormat(escape string) string {
	in := `, log_format: '$m $s $v $t', log_format_escape: ` + escape + `}`
	return `inputs: [{name: web, path: /a` + in + `, {name: api, path: /b` + in + `]
rules:
  - name: r
    help: Some help.
`
}

// fingerprintCandidates is fingerprintLogFormat with candidates for the one format.
const fingerprintCandidates = `inputs: [{name: web, path: /a, log_format: ['$m $s $v $t', json]}, {name: api, path: /b, log_format: ['$m $s $v $t', json]}]
rules:
  - name: r
    help: Some help.
`

// notState are the Rule fields that do not shape its series or windows, or are derived
// from fields that do, so a change to them alone never needs a change of Fingerprint.
var notState = map[string]string{
	"Help":              "HELP text only",
	"Match":             "as written; Expanded is what runs",
	"Regexp":            "compiled from Expanded",
	"ValueCapture":      "the index of ValueName in Expanded",
	"WindowNames":       "label text of Windows",
	"Fingerprint":       "the fingerprint itself",
	"Line":              "where the rule is written",
	"DistinctItem":      "where the text of distinct, hashed as Items, is among them",
	"Derived":           "what LogFormat computes from its captures",
	"ValueList":         "what LogFormat says of the value capture",
	"Variants":          "compiled from the rule against its Candidates",
	"DistinctRegisters": "read from the distinct count's sketch at scrape time",
}

func fingerprintOf(t *testing.T, text string) string {
	t.Helper()
	c, err := Parse([]byte(text), "fp.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return c.Rules[0].Fingerprint
}

// TestFingerprint checks which edits keep a rule's window state across a reload.
func TestFingerprint(t *testing.T) {
	orig := fingerprintOf(t, fingerprintBase)
	for _, tt := range fingerprintEdits {
		t.Run(tt.name, func(t *testing.T) {
			if !strings.Contains(fingerprintBase, tt.old) {
				t.Fatalf("base has no %q", tt.old)
			}
			got := fingerprintOf(t, strings.ReplaceAll(fingerprintBase, tt.old, tt.new))
			if (got == orig) != tt.same {
				t.Errorf("fingerprint same = %v, want %v", got == orig, tt.same)
			}
		})
	}
}

// TestFingerprintCoversRule makes a new Rule field a decision: it must either have an edit
// in fingerprintEdits that changes the fingerprint, or be listed in notState with why it
// does not shape the rule's state. A field in neither would keep stale windows across a
// reload that changed it.
func TestFingerprintCoversRule(t *testing.T) {
	changes := map[string]bool{}
	for _, e := range fingerprintEdits {
		if !e.same {
			changes[e.field] = true
		}
	}
	rt := reflect.TypeFor[Rule]()
	for _, f := range reflect.VisibleFields(rt) {
		if f.Anonymous {
			continue // quantity.Spec: its fields are promoted and checked one by one
		}
		_, exempt := notState[f.Name]
		switch {
		case changes[f.Name] && exempt:
			t.Errorf("Rule.%s is both in notState and changed by a fingerprint edit", f.Name)
		case !changes[f.Name] && !exempt:
			t.Errorf("Rule.%s: add an edit to fingerprintEdits that changes the fingerprint (and hash it in fingerprint), or list it in notState with the reason it does not shape the rule's state", f.Name)
		}
	}
	for name := range notState {
		if _, ok := rt.FieldByName(name); !ok {
			t.Errorf("notState lists %s, which Rule does not have", name)
		}
	}
}

func TestWindowsInheritance(t *testing.T) {
	c, err := Parse([]byte(`
global: {windows: [10m, 30s]}
rules:
  - {name: inherits, match: x}
  - {name: own, match: x, windows: [2h]}
`), "w.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if want := []time.Duration{30 * time.Second, 10 * time.Minute}; !reflect.DeepEqual(c.Rules[0].Windows, want) {
		t.Errorf("inherited windows = %v, want %v", c.Rules[0].Windows, want)
	}
	if want := []time.Duration{2 * time.Hour}; !reflect.DeepEqual(c.Rules[1].Windows, want) {
		t.Errorf("own windows = %v, want %v", c.Rules[1].Windows, want)
	}
}

func TestSuggest(t *testing.T) {
	tests := []struct {
		word string
		want string
	}{
		{"stauts", ` (did you mean "status"?)`},
		{"lables", ` (did you mean "labels"?)`},
		{"statu", ` (did you mean "status"?)`},
		{"ab", ""},      // too short to guess from
		{"request", ""}, // not close to anything
		{"status", ""},  // not a typo
	}
	candidates := []string{"status", "labels", "method", "path"}
	for _, tt := range tests {
		t.Run(tt.word, func(t *testing.T) {
			if got := suggest(tt.word, candidates); got != tt.want {
				t.Errorf("suggest(%q) = %q, want %q", tt.word, got, tt.want)
			}
		})
	}
}

// BenchmarkSuggestLongWord: an unknown key of a megabyte, against a rule's keys: each
// comparison letter by letter cost the key's length times the known key's, a second or
// more for one such key, where the difference in their lengths already rules it out.
func BenchmarkSuggestLongWord(b *testing.B) {
	word := strings.Repeat("a", 1<<20)
	keys := []string{"name", "help", "match", "fields", "labels", "where", "where_not", "value", "timestamp", "windows", "aggregations"}
	for b.Loop() {
		suggest(word, keys)
	}
}

// TestWindowNames: the window label is the duration as written, sorted with its window,
// whether the rule has its own windows or inherits global's.
func TestWindowNames(t *testing.T) {
	c, err := Parse([]byte(`
global: {windows: [24h, 90s, 1m]}
rules:
  - {name: inherits, match: x}
  - {name: own, match: x, windows: [1d, 60m, 30s]}
`), "w.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		rule  string
		ws    []time.Duration
		names []string
	}{
		{"inherits", []time.Duration{time.Minute, 90 * time.Second, 24 * time.Hour}, []string{"1m", "90s", "24h"}},
		{"own", []time.Duration{30 * time.Second, time.Hour, 24 * time.Hour}, []string{"30s", "60m", "1d"}},
	} {
		t.Run(tt.rule, func(t *testing.T) {
			r := ruleByName(t, c, tt.rule)
			if !reflect.DeepEqual(r.Windows, tt.ws) || !reflect.DeepEqual(r.WindowNames, tt.names) {
				t.Errorf("windows %v named %q, want %v named %q", r.Windows, r.WindowNames, tt.ws, tt.names)
			}
		})
	}
}

// TestInitialAndCounterTTL: initial label sets come out in the rule's label order, and
// counter_ttl defaults to a day, with 0 meaning forever.
func TestInitialAndCounterTTL(t *testing.T) {
	c, err := Parse([]byte(`
rules:
  - name: r
    match: '(?P<s>\d+) (?P<m>\w+)'
    labels: {status: '${s}', method: '${m}'}
    initial: [{status: '500', method: GET}, {method: PUT, status: '502'}]
`), "i.yaml")
	if err != nil {
		t.Fatal(err)
	}
	// Labels are sorted by name: method, status.
	if want := [][]string{{"GET", "500"}, {"PUT", "502"}}; !reflect.DeepEqual(c.Rules[0].Initial, want) {
		t.Errorf("initial = %q, want %q", c.Rules[0].Initial, want)
	}
	if c.Global.CounterTTL != 24*time.Hour {
		t.Errorf("counter_ttl = %v, want 24h", c.Global.CounterTTL)
	}
	c, err = Parse([]byte("global: {counter_ttl: 0}\nrules: [{name: r, match: x}]\n"), "t.yaml")
	if err != nil || c.Global.CounterTTL != 0 {
		t.Errorf("counter_ttl: 0 gives %v, %v; want 0", c, err)
	}
}

func TestFieldsRule(t *testing.T) {
	const text = `
inputs:
  - {name: app, path: /var/log/app.log, format: json}
  - {name: app2, syslog: 'udp://127.0.0.1:5140', format: json}
  - {name: kv, path: /var/log/kv.log, format: logfmt}
rules:
  - name: app_requests
    fields: {status: status, route: http.route, took: duration_ms}
    labels: {route: '${route}'}
    where: {status: '^5'}
    where_not: {route: '^/health'}
    value: took
    inputs: [app, app2]
  - name: kv_lines
    fields: {level: level}
    inputs: [kv]
`
	c, err := Parse([]byte(text), "s.yaml")
	if err != nil {
		t.Fatal(err)
	}
	r := c.Rules[0]
	wantFields := []Field{
		{Capture: "route", Path: "http.route", Segments: []string{"http", "route"}},
		{Capture: "status", Path: "status", Segments: []string{"status"}},
		{Capture: "took", Path: "duration_ms", Segments: []string{"duration_ms"}},
	}
	if !reflect.DeepEqual(r.Fields, wantFields) || r.Regexp != nil || r.Format != FormatJSON || r.Captures() != 3 {
		t.Errorf("fields %+v, regexp %v, format %v, captures %d", r.Fields, r.Regexp, r.Format, r.Captures())
	}
	if r.ValueCapture != 3 || r.Where[0].Capture != 2 || r.WhereNot[0].Capture != 1 || r.Labels[0].Template[0].Capture != 1 {
		t.Errorf("capture indexes: value %d, where %d, where_not %d, label %d", r.ValueCapture, r.Where[0].Capture, r.WhereNot[0].Capture, r.Labels[0].Template[0].Capture)
	}
	if c.Rules[1].Format != FormatLogfmt || c.Inputs[1].Format != FormatJSON {
		t.Errorf("formats: rule %v, input %v", c.Rules[1].Format, c.Inputs[1].Format)
	}
	moved, err := Parse([]byte(strings.Replace(text, "http.route", "http.path", 1)), "s.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if moved.Rules[0].Fingerprint == r.Fingerprint {
		t.Error("a field moved to another path kept the fingerprint")
	}
}

// nginx reads a variable whatever its case ($HTTP_Host is $http_host), and a log format's
// capture has its lowercase name: a rule that names it as the format writes it is pointed
// at that name, however many letters differ.
func TestCaptureNamedInAnotherCase(t *testing.T) {
	_, err := Parse([]byte(`
inputs:
  - {name: web, path: /x.log, log_format: '$remote_addr $HTTP_Host'}
rules:
  - {name: requests, labels: {host: '${HTTP_Host}'}}
`), "c.yaml")
	const want = `capture "HTTP_Host" is not in the log format "$remote_addr $HTTP_Host" (did you mean "http_host"?)`
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("err = %v, want %s", err, want)
	}
}

// TestSyntaxErrorLine: a YAML syntax error is reported at the line where the text goes
// wrong, in a file of thousands of lines too (found by parsing the file cut after each
// line, it took seconds on such a file and was given up past 5,000 lines), and past a
// {...} spanning lines, whose first line alone fails too; in a file of megabytes it is
// not looked for, but on the first line, which yaml.v3 does not name.
func TestSyntaxErrorLine(t *testing.T) {
	race.Skip(t)
	var long strings.Builder
	long.WriteString("rules:\n")
	for i := range 2600 {
		fmt.Fprintf(&long, "  - name: r%d\n    match: 'x (?P<n>\\d+) %s'\n", i, strings.Repeat("a", 60))
	}
	long.WriteString("  - name: bad\n    match: 'x'\n   labels: {}\n")
	huge := strings.Replace(long.String(), "rules:\n", "rules:\n"+strings.Repeat("# "+strings.Repeat("c", 98)+"\n", maxLocateBytes/100), 1)
	tests := []struct {
		name, text string
		want       string
	}{
		{"long file", long.String(), fmt.Sprintf(":%d: not valid YAML: did not find expected '-' indicator", 2600*2+4)},
		// Each parse of a file of megabytes takes a tenth of a second: one past
		// maxLocateBytes gets the line yaml.v3 names, the one before the list's first item.
		{"file past the bound", huge, fmt.Sprintf(":%d: not valid YAML: did not find expected '-' indicator", 1+maxLocateBytes/100)},
		// yaml.v3 names no line for a mistake on the first: one parse of that line finds
		// it, in a file past the bound too.
		{"first line of a file past the bound", "rules: " + strings.Repeat("[", 10001) + "\n" + strings.Repeat("# "+strings.Repeat("c", 98)+"\n", maxLocateBytes/100+1),
			":1: not valid YAML: exceeded max depth of 10000"},
		{"after a mapping spanning lines", `inputs:
  - {name: a, path: /a.log,
     start_at: end}
  - name: b
    path: /b.log
? [
rules:
  - name: a
    match: x
`, ":6: not valid YAML: did not find expected node content"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse([]byte(tt.text), "rules.yaml")
			if want := "rules.yaml" + tt.want; err == nil || err.Error() != want {
				t.Errorf("got %v, want %s", err, want)
			}
		})
	}
}

// TestQuotedValues: a list, a mapping or a boolean written in quotes, as Helm's quote
// renders a value, is text; the error says so, where it said "must be a list, not a
// single value" of what reads as a list, or "must be true or false" of "true".
func TestQuotedValues(t *testing.T) {
	for _, c := range []struct{ name, text, want string }{
		{"a list in quotes", "global: {windows: \"[1m, 5m]\"}\nrules: [{name: r, match: x}]\n",
			`c.yaml:1: global: windows: must be a list (e.g. [a, b]), not text in quotes ("[1m, 5m]"), which without them would be a list`},
		{"a mapping in quotes", "rules: [{name: r, match: '(?P<s>x)', labels: '{s: \"${s}\"}'}]\n",
			`c.yaml:1: rule "r": labels: must be a mapping, not text in quotes ("{s: \"${s}\"}"), which without them would be a mapping`},
		{"a boolean in quotes", "rules: [{name: r, match: '(?P<v>\\d+)', value: v, native_histogram: \"true\"}]\n",
			`c.yaml:1: rule "r": native_histogram: must be true or false, not text in quotes ("true"); write it without them`},
		{"not a boolean", "rules: [{name: r, match: '(?P<v>\\d+)', value: v, native_histogram: yes}]\n",
			`c.yaml:1: rule "r": native_histogram: must be true or false`},
		{"a single value", "global: {windows: 5m}\nrules: [{name: r, match: x}]\n",
			`c.yaml:1: global: windows: must be a list (e.g. [a, b]), not a single value`},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse([]byte(c.text), "c.yaml")
			if err == nil || err.Error() != c.want {
				t.Errorf("error:\n%v\nwant:\n%s", err, c.want)
			}
		})
	}
}

// TestAnchorHolderKey: a key that only holds an anchor for later aliases (x-defaults: &d,
// as docker compose files have them) is unknown, and the error says where an anchor goes.
func TestAnchorHolderKey(t *testing.T) {
	text := "x-defaults: &d {windows: [1m]}\nrules:\n  - {<<: *d, name: r, match: x}\n"
	want := `c.yaml:1: unknown key "x-defaults" (known keys: global, inputs, patterns, rules): it holds only the anchor &d, and the file has no key for anchors alone; put the anchor on the first value that uses it (a rule's key), and alias it after`
	_, err := Parse([]byte(text), "c.yaml")
	if err == nil || err.Error() != want {
		t.Errorf("error:\n%v\nwant:\n%s", err, want)
	}
}

// TestNotUTF8: a file that is not UTF-8 (an é saved as Latin-1) is refused at the line and
// column of its first byte that is not, which yaml.v3 names as the line its reading stood
// at, the next one for a byte at the end of a line (the column counts letters, not bytes);
// a tag's %-escape that is no UTF-8 is not blamed on such a byte further down; a file in
// UTF-16 with its byte order mark, or UTF-8 with one, loads.
func TestNotUTF8(t *testing.T) {
	const rule = "rules:\n  - name: r\n    match: x\n"
	utf16 := []byte{0xff, 0xfe}
	for _, c := range "# café\n" + rule {
		utf16 = append(utf16, byte(c), byte(c>>8))
	}
	for _, c := range []struct{ name, text, want string }{
		{"at the end of a comment", "# caf\xe9\n" + rule,
			"c.yaml:1: not valid YAML: invalid trailing UTF-8 octet: byte 0xe9 at column 6 is not UTF-8 (text saved as Latin-1 or Windows-1252?); a rule file is UTF-8"},
		{"in a value", rule + "    help: caf\xe9 cr\xe8me\n",
			"c.yaml:4: not valid YAML: invalid trailing UTF-8 octet: byte 0xe9 at column 14 is not UTF-8 (text saved as Latin-1 or Windows-1252?); a rule file is UTF-8"},
		{"after other letters", "# é\n" + rule + "    help: '\xff'\n",
			"c.yaml:5: not valid YAML: invalid leading UTF-8 octet: byte 0xff at column 12 is not UTF-8 (text saved as Latin-1 or Windows-1252?); a rule file is UTF-8"},
		{"after an é on its line", rule + "    help: é caf\xe9\n",
			"c.yaml:4: not valid YAML: incomplete UTF-8 octet sequence: byte 0xe9 at column 16 is not UTF-8 (text saved as Latin-1 or Windows-1252?); a rule file is UTF-8"},
		// A tag's escape that is no UTF-8 is the scanner's mistake, at its own line.
		{"a tag's escape before", "x: !a%ff y\n" + rule + "# caf\xe9\n",
			"c.yaml:1: not valid YAML: found an incorrect leading UTF-8 octet"},
		{"UTF-8 with a byte order mark", "\ufeff# café\n" + rule, ""},
		{"UTF-16", string(utf16), ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse([]byte(c.text), "c.yaml")
			if got := fmt.Sprint(err); c.want == "" && err != nil || c.want != "" && got != c.want {
				t.Errorf("got %v\nwant %s", err, c.want)
			}
		})
	}
}

// TestLongValuesShown: a message repeats at most maxShownBytes of a value, a key, a regex or
// a name it quotes, then how long the whole is: a value of megabytes made each message
// naming it as large, and a reload's reply, the log and --config.check print them all.
func TestLongValuesShown(t *testing.T) {
	race.Skip(t)
	long := strings.Repeat("é", 1<<20) // cut on a letter, not within one
	shown := `"` + strings.Repeat("é", maxShownBytes/2) + `"… (2097152 bytes)`
	for _, c := range []struct{ name, text, want string }{
		{"value", "rules:\n  - name: r\n    match: x\n    windows: ['" + long + "']\n",
			`c.yaml:4: rule "r": windows: ` + shown + ` is not a duration`},
		{"key", "rules:\n  - name: r\n    match: x\n    ? " + long + "\n    : 1\n",
			`c.yaml:4: rule "r": unknown key ` + shown + ` (known keys: name, `},
		{"regex", "rules:\n  - name: r\n    match: '(" + long[:1<<19] + "'\n", // within the file's regexes
			"c.yaml:3: rule \"r\": match: invalid regex: missing closing ) in `(" + strings.Repeat("é", maxShownBytes/2-1) + "… (524289 bytes)`"},
		{"name", "rules:\n  - name: " + strings.Repeat("r", 2*maxShownBytes) + "\n    match: x\n", // a precision given is kept
			`c.yaml:2: rule #1: name: "` + strings.Repeat("r", 40) + `"... is 2048 bytes, more than the 256 a name may have`},
		{"pattern name", "patterns:\n  ? " + strings.Repeat("P", 2*maxShownBytes) + "\n  : ''\nrules:\n  - name: r\n    match: x\n",
			`c.yaml:2: pattern "` + strings.Repeat("P", maxShownBytes-len(`pattern "`)) + `… (2058 bytes): the pattern is empty`},
		// An error's reason comes after the value it quotes: its end is shown too.
		{"error", "inputs:\n  - syslog: unixgram:///" + strings.Repeat("s", 2*maxShownBytes) + "\nrules:\n  - name: r\n    match: x\n",
			`c.yaml:2: input #1: syslog: "unixgram:///` + strings.Repeat("s", maxShownBytes/2-len(`"unixgram:///`)) + `…(1127 bytes left out)…` +
				strings.Repeat("s", maxShownBytes/2-len(`": the path is 2049 bytes, and a unix socket's is at most 107 (nginx refuses a longer one)`)) +
				`": the path is 2049 bytes, and a unix socket's is at most 107 (nginx refuses a longer one)`},
		{"warning", "inputs:\n  - path: ~/" + long + "\nrules:\n  - name: r\n    match: x\n",
			`c.yaml:2: warning: input #1: path: "~/` + strings.Repeat("é", maxShownBytes/2-1) + `"… (2097154 bytes) starts with ~`},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg, err := Parse([]byte(c.text), "c.yaml")
			var msgs []string
			if err != nil {
				msgs = strings.Split(err.Error(), "\n")
			} else {
				msgs = Warnings(cfg)
			}
			if len(msgs) != 1 || !strings.HasPrefix(msgs[0], c.want) || len(msgs[0]) > maxShownBytes+1024 {
				t.Errorf("got %d messages, the first %.3000s (%d bytes)\nwant one starting %s", len(msgs), msgs[0], len(msgs[0]), c.want)
			}
		})
	}
}

// TestDurationFaults: a window or counter_ttl that is no duration says what is wrong in
// it, where model.ParseDuration says only that it is not valid.
func TestDurationFaults(t *testing.T) {
	const units = "(ms, s, m, h, d, w or y)"
	for _, c := range []struct{ in, want string }{
		{"5 minutes", "it has a space"},
		{"a while", "it holds no number"},
		{"-1m", "it is negative"},
		{"1.5m", "a unit takes a whole number (90s, not 1.5m)"},
		{"5min", `"min" is no unit ` + units},
		{"5M", `"M" is no unit ` + units},
		{"300", "its last number has no unit " + units},
		{"1h30", "its last number has no unit " + units},
		{"5m1h", "its units go from the largest to the smallest, each once (1h30m)"},
		{"1h1h", "its units go from the largest to the smallest, each once (1h30m)"},
		{"m5", `"m" has no number before it`},
	} {
		t.Run(c.in, func(t *testing.T) {
			_, err := Parse([]byte(fmt.Sprintf("global: {windows: ['%s'], counter_ttl: '%[1]s'}\nrules:\n  - {name: r, match: x}\n", c.in)), "c.yaml")
			want := fmt.Sprintf("c.yaml:1: global: windows: %q is not a duration: %s (write e.g. 30s, 5m, 1h, 1d)\n", c.in, c.want) +
				fmt.Sprintf("c.yaml:1: global: counter_ttl: %q is not a duration: %s (write e.g. 24h, 7d, or 0 to keep counters while the process lives)", c.in, c.want)
			if fmt.Sprint(err) != want {
				t.Errorf("got:\n%v\nwant:\n%s", err, want)
			}
		})
	}
}
