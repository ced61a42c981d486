package config

import (
	"fmt"
	"maps"
	"regexp"
	"regexp/syntax"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"

	"github.com/logwindow/logwindow_exporter/config/logformat"
	"github.com/logwindow/logwindow_exporter/config/quantity"
)

var ruleKeys = []string{"name", "help", "match", "fields", "labels", "where", "where_not", "value", "timestamp", "windows", "aggregations", "quantiles", "buckets", "distinct", "distinct_registers", "inputs", "initial", "top", "rewrite", "native_histogram", "window_end"}

// patternRef is a %{NAME} reference inside a regex, compiled for the first regex that
// holds a %{.
var patternRef = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`%\{([A-Za-z_][A-Za-z0-9_]*)\}`) })

// expandPatterns resolves every pattern, nested references included, and compiles each on
// its own so a mistake is reported once, at the pattern, rather than at each rule using it.
func (d *decoder) expandPatterns(raw map[string]string) {
	visiting := map[string]bool{}
	var visit func(name string) (exp string, known, valid bool)
	visit = func(name string) (string, bool, bool) {
		text, known := raw[name]
		switch {
		case !known:
			return "", false, false
		case d.badPatterns[name]:
			return "", true, false
		case d.patterns[name] != "":
			return d.patterns[name], true, true
		case visiting[name]:
			d.add(d.patternLines[name], fmt.Sprintf("pattern %q", name), "refers to itself (through %%{...} references)")
			d.badPatterns[name] = true
			return "", true, false
		}
		visiting[name] = true
		defer delete(visiting, name)
		subject := fmt.Sprintf("pattern %q", name)
		e := expandRefs(text, visit)
		for _, u := range e.unknown {
			d.add(d.patternLines[name], subject, "unknown pattern %%{%s}%s", u, d.suggest(u, sortedKeys(raw)))
		}
		if e.tooLong {
			d.add(d.patternLines[name], subject, "expands to more than %d MiB of regex", maxExpanded>>20)
		}
		if len(e.unknown) > 0 || e.invalid || e.tooLong || d.badPatterns[name] {
			d.badPatterns[name] = true
			return "", true, false
		}
		exp := e.text
		if _, ok := d.compile(d.patternLines[name], subject, "", exp); !ok {
			d.badPatterns[name] = true
			return "", true, false
		}
		// Wrapped so that %{P}+ or a|%{P} treat the pattern as one unit, as a reader expects.
		d.patterns[name] = "(?:" + exp + ")"
		return d.patterns[name], true, true
	}
	for _, name := range sortedKeys(raw) {
		visit(name)
	}
}

// maxExpanded bounds a regex after pattern expansion: nested patterns that each repeat the
// next double in size per level, and must fail with a message instead of exhausting memory.
const maxExpanded = 1 << 20

// expansion is a regex with its %{NAME} references replaced.
type expansion struct {
	text    string
	unknown []string // referenced names that are not patterns
	invalid bool     // a reference names a pattern that is itself invalid
	tooLong bool     // the result would pass maxExpanded; text is then empty
}

// expandRefs replaces every %{NAME} in s with get's expansion.
func expandRefs(s string, get func(name string) (exp string, known, valid bool)) expansion {
	var e expansion
	var refs [][]int
	if strings.Contains(s, "%{") {
		refs = patternRef().FindAllStringSubmatchIndex(s, -1)
	}
	parts := make([]string, len(refs))
	size := len(s)
	for i, ref := range refs {
		name := s[ref[2]:ref[3]]
		exp, known, valid := get(name)
		switch {
		case !known:
			e.unknown = append(e.unknown, name)
		case !valid:
			e.invalid = true
		}
		parts[i] = exp
		size += len(exp)
	}
	if size > maxExpanded {
		e.tooLong = true
		return e
	}
	var b strings.Builder
	b.Grow(size)
	last := 0
	for i, ref := range refs {
		b.WriteString(s[last:ref[0]])
		b.WriteString(parts[i])
		last = ref[1]
	}
	b.WriteString(s[last:])
	e.text = b.String()
	return e
}

func sortedKeys[V any](m map[string]V) []string {
	return slices.Sorted(maps.Keys(m))
}

// maxRegexBytes bounds the regex text one file compiles, patterns expanded: a pattern of a
// few hundred kilobytes in every rule of a file of kilobytes compiles the pattern once per
// rule, a second and tens of megabytes each.
const maxRegexBytes = 4 << 20

// compile compiles a regex of the file, or reports why not at line: what it is (`match`,
// `where: status`) is invalid, or the file's regexes pass maxRegexBytes with it (said once:
// the file is refused already when a later one passes too).
func (d *decoder) compile(line int, subject, what, text string) (*regexp.Regexp, bool) {
	if d.regexBytes += len(text); d.regexBytes > maxRegexBytes {
		if !d.regexSpent {
			d.add(line, subject, "%swith this regex the file's regexes, patterns expanded, pass %d MiB; expand big patterns in fewer places", at(what), maxRegexBytes>>20)
		}
		d.regexSpent = true
		return nil, false
	}
	re, err := regexp.Compile(text)
	if se, ok := err.(*syntax.Error); ok {
		// Without Go's "error parsing regexp:" prefix; the expression apart, which a
		// message shows clipped (it may be the whole regex).
		d.add(line, subject, "%sinvalid regex: %s in `%s`", at(what), se.Code, se.Expr)
		return nil, false
	} else if err != nil {
		d.add(line, subject, "%sinvalid regex: %s", at(what), err)
		return nil, false
	}
	return re, true
}

// captures are the named groups of a rule's match regex.
type captures struct {
	names []string // SubexpNames: index 0 and unnamed groups are ""
	// fields: the captures are a fields rule's, not a regex's groups.
	fields bool
	// format is the log format the captures come from, for a rule without match: or fields:.
	format *logformat.Format
	// candidates: the captures are those of an input's candidate formats, by name
	// (fromCandidates), and names from reserved on are taken by others the rule reads (a
	// JSON object's keys); lines are where each name is first read, for messages.
	candidates bool
	reserved   int
	lines      map[string]int
	// at indexes names, built at the first index: a rule reading many captures of a
	// regex of many groups would search names once per reference.
	at map[string]int
}

// index returns the index of the named capture, -1 when there is none.
func (c *captures) index(name string) int {
	if name == "" {
		return -1
	}
	if c.at == nil {
		c.at = make(map[string]int, len(c.names))
		for i, n := range c.names {
			if _, dup := c.at[n]; !dup && n != "" {
				c.at[n] = i
			}
		}
	}
	if i, ok := c.at[name]; ok {
		return i
	}
	return -1
}

func (c captures) named() []string {
	var out []string
	for _, n := range c.names {
		if n != "" {
			out = append(out, n)
		}
	}
	return out
}

// ruleDecoder carries what the checks of one rule share.
type ruleDecoder struct {
	*decoder
	subject string
	// caps is nil when the match regex is missing or invalid: checks of capture names are
	// then skipped, since every one would fail for the same reason.
	caps *captures
	// wrapperTimeLine is the line of a timestamp reading cri_time, checked against the
	// rule's inputs once they are known.
	wrapperTimeLine int
	// paths are the path captures the rule names, in the order of their indexes after
	// those of caps (Rule.PathCaptures).
	paths []string
	// inputsUnknown: the rule names an input the file has not. Its error is the one to
	// fix: a rule without match: would also be told that its inputs have no log format,
	// where the input meant (a typo of its name) may have one.
	inputsUnknown bool
}

// capture returns the index of the named capture, reporting a name the regex lacks.
func (rd *ruleDecoder) capture(line int, what, name string) int {
	if rd.caps == nil {
		return -1
	}
	if i := rd.caps.index(name); i >= 0 {
		rd.caps.readAt(name, line)
		return i
	}
	if i := rd.pathCapture(name); i >= 0 {
		return i
	}
	if i := rd.caps.otherCapture(name); i >= 0 {
		rd.caps.readAt(name, line)
		return i
	}
	if rd.full() {
		rd.dropped++ // not worded: listing the captures of each costs what the report saves
		return -1
	}
	have := append(rd.caps.named(), rd.pathCaptureNames()...)
	list := listing(have)
	if len(have) == 0 {
		list = "none: name groups with (?P<name>...)"
	}
	source := "the match regex"
	switch {
	case rd.caps.format != nil:
		source = "the log format " + fmt.Sprintf("%q", rd.caps.format.Describe())
	case rd.caps.candidates:
		source = "the candidate log formats"
	case rd.caps.fields:
		source = "fields"
	}
	rd.add(line, rd.subject, "%scapture %q is not in %s%s (have: %s)", at(what), name, source, rd.suggest(name, have), list)
	return -1
}

// rule decodes and compiles one rule; it returns nil only when the item is not a mapping.
func (d *decoder) rule(n *yaml.Node, index int, g Global, inputNames map[string]bool) *Rule {
	rd := &ruleDecoder{decoder: d, subject: fmt.Sprintf("rule #%d", index+1)}
	entries, ok := d.mapping(n, rd.subject, "")
	if !ok {
		return nil
	}
	r := &Rule{Line: resolve(n).Line, ValueCapture: -1, Windows: g.Windows, WindowNames: g.WindowNames}
	name, nameOK := "", true
	if e, ok := find(entries, "name"); ok {
		r.Line = e.key.Line
		name, nameOK = d.scalar(e, rd.subject, "name")
	}
	switch {
	case len(name) > maxNameBytes:
		d.add(r.Line, rd.subject, "name: %.40q... is %d bytes, more than the %d a name may have", name, len(name), maxNameBytes)
	case name != "":
		r.Name = name
		rd.subject = fmt.Sprintf("rule %q", name)
		if err := checkMetricName(name); err != nil {
			d.add(r.Line, rd.subject, "name: %s", err)
		}
	case nameOK:
		d.add(r.Line, rd.subject, "name: is missing; give the metric base name (e.g. nginx_http_requests)")
	}
	if n.Kind == yaml.AliasNode {
		// A rule repeated by an alias (- *anchor) is where the alias stands: the lines of its
		// keys are the anchored rule's, which the duplicate's error would name as its own.
		r.Line = n.Line
	}
	d.known(entries, rd.subject, "", ruleKeys...)

	// The inputs come first: a rule with neither match: nor fields: reads their log format.
	if e, ok := find(entries, "inputs"); ok {
		rd.inputs(e, r, inputNames)
	}
	m, hasMatch := find(entries, "match")
	f, hasFields := find(entries, "fields")
	switch {
	case hasMatch && hasFields:
		d.add(f.key.Line, rd.subject, "match and fields: a rule matches a regex over the line or reads fields of structured lines, not both")
	case hasFields:
		rd.fields(f, r)
	case hasMatch:
		rd.match(m, r)
	default:
		if !rd.inputsRefused && !rd.inputsUnknown {
			rd.fromFormat(r.Line, r, d.allInputs)
		}
	}
	if e, ok := find(entries, "help"); ok {
		r.Help, _ = d.scalar(e, rd.subject, "help")
		if len(r.Help) > maxHelpBytes {
			d.add(e.key.Line, rd.subject, "help: %d bytes, more than the %d a help may have", len(r.Help), maxHelpBytes)
		}
	}
	var labels []string
	if e, ok := find(entries, "labels"); ok {
		labels = rd.labels(e, r)
	}
	if e, ok := find(entries, "rewrite"); ok {
		rd.rewrite(e, r, labels)
	}
	if e, ok := find(entries, "where"); ok {
		r.Where = rd.where(e, "where")
	}
	if e, ok := find(entries, "where_not"); ok {
		r.WhereNot = rd.where(e, "where_not", r.Where...)
	}
	if e, ok := find(entries, "value"); ok {
		switch s, ok := d.scalar(e, rd.subject, "value"); {
		case s != "":
			r.ValueName = s
			r.ValueCapture = rd.capture(e.key.Line, "value", s)
			r.ValueList = r.LogFormat != nil && r.LogFormat.List(s)
			rd.apacheUnit(e.key.Line, r, s)
		case ok:
			d.add(e.key.Line, rd.subject, "value: is empty; name the capture to sum, or leave value out to count lines")
		}
	}
	if e, ok := find(entries, "timestamp"); ok {
		r.Timestamp = rd.timestamp(e)
	}
	if e, ok := find(entries, "windows"); ok {
		if ws, names, ok := d.windows(e, rd.subject); ok {
			r.Windows, r.WindowNames = ws, names
		}
	}
	r.WindowEnd = WindowEndCurrent
	if e, ok := find(entries, "window_end"); ok {
		rd.windowEnd(e, r)
	}
	// A value named but missing from the regex still makes this a value rule for the
	// aggregation checks, so one mistake gives one message.
	isValue := r.ValueName != ""
	r.Aggregations = quantity.Aggregations{Window: true, PerSecond: true, Events: isValue}
	if e, ok := find(entries, "aggregations"); ok {
		rd.aggregations(e, r, isValue)
	}
	rd.distribution(entries, r, isValue)
	rd.nativeHistogram(entries, r, isValue)
	if e, ok := find(entries, "top"); ok {
		rd.top(e, r)
	}
	if e, ok := find(entries, "distinct"); ok {
		rd.distinct(e, r)
	}
	rd.distinctRegisters(entries, r)
	if hasFields && !hasMatch {
		rd.fieldsInputs(f, r)
	}
	rd.checkWrapperTime(r)
	rd.checkPathCaptures(r, r.Line)
	if e, ok := find(entries, "initial"); ok {
		rd.initial(e, r, g.MaxSeriesPerRule)
	}
	if r.Help == "" {
		r.Help = defaultHelp(r)
	}
	if checkMetricName(r.Name) == nil {
		for _, msg := range lint(r) {
			d.add(r.Line, rd.subject, "%s", msg)
		}
	}
	rd.variants(r, d.allInputs)
	r.Fingerprint = fingerprint(r)
	return r
}

func defaultHelp(r *Rule) string {
	if r.ValueName != "" {
		// What every family of the rule reads, not what one of them makes of it: its
		// quantiles and maxima are no sums.
		return fmt.Sprintf("The %s of lines matched by rule %s.", r.ValueName, r.Name)
	}
	return fmt.Sprintf("Lines matched by rule %s.", r.Name)
}

func (rd *ruleDecoder) match(e entry, r *Rule) {
	s, ok := rd.scalar(e, rd.subject, "match")
	if !ok {
		return
	}
	if s == "" {
		rd.add(e.key.Line, rd.subject, "match: is empty; give the regex lines must match")
		return
	}
	r.Match = s
	x := expandRefs(s, func(name string) (string, bool, bool) {
		if rd.badPatterns[name] {
			return "", true, false
		}
		exp, ok := rd.patterns[name]
		return exp, ok, ok
	})
	for _, u := range x.unknown {
		if rd.patternsRefused {
			break
		}
		have := sortedKeys(rd.patternLines)
		list := listing(have)
		if len(have) == 0 {
			list = "none: define it under patterns:"
		}
		rd.add(e.key.Line, rd.subject, "match: unknown pattern %%{%s}%s (have: %s)", u, rd.suggest(u, have), list)
	}
	if x.tooLong {
		rd.add(e.key.Line, rd.subject, "match: expands to more than %d MiB of regex", maxExpanded>>20)
	}
	if len(x.unknown) > 0 || x.invalid || x.tooLong {
		return
	}
	re, ok := rd.compile(e.key.Line, rd.subject, "match", x.text)
	if !ok {
		return
	}
	caps := &captures{names: re.SubexpNames()}
	seen := map[string]bool{}
	for _, name := range caps.names {
		if name != "" && seen[name] {
			rd.add(e.key.Line, rd.subject, "match: capture %q is defined twice in the regex (after pattern expansion); rename one", name)
			return
		}
		seen[name] = true
	}
	r.Expanded, r.Regexp, rd.caps = x.text, re, caps
}

// labels decodes `labels:` into r and returns the names it gives, valid or not, sorted:
// what a rewrite may name (merged ones included).
func (rd *ruleDecoder) labels(e entry, r *Rule) []string {
	if rd.tooMany(e, rd.subject, items(e.val), maxLabels, "labels", "a rule") {
		return nil
	}
	entries, ok := rd.mapping(e.val, rd.subject, "labels")
	if !ok || rd.tooMany(e, rd.subject, len(entries), maxLabels, "labels", "a rule") {
		return nil
	}
	names := make([]string, 0, len(entries))
	for _, l := range entries {
		if len(l.key.Value) > maxNameBytes {
			rd.add(l.key.Line, rd.subject, "labels: %.40q... is %d bytes, more than the %d a name may have", l.key.Value, len(l.key.Value), maxNameBytes)
			continue
		}
		names = append(names, l.key.Value)
		what := "labels: " + l.key.Value
		if err := checkLabelName(l.key.Value); err != nil {
			rd.add(l.key.Line, rd.subject, "%s: %s", what, err)
			continue
		}
		if slices.Contains(targetLabels, l.key.Value) {
			rd.warn(l.key.Line, rd.subject,
				"%s: Prometheus puts the scrape target's %s label on every series and renames this one exported_%[2]s (unless its scrape has honor_labels: true, and then this one replaces the target's); name it otherwise, e.g. upstream_%[2]s",
				what, l.key.Value)
		}
		if IsPromQLWord(l.key.Value) {
			rd.warn(l.key.Line, rd.subject,
				"%s: PromQL reads %s as a keyword or a number where a query groups by a label, so sum by (%[2]s) does not parse: the query must quote it, by (%[3]q), which Prometheus 2 does not read (the dashboard quotes it); name it otherwise, e.g. %[4]s_value",
				what, l.key.Value, l.key.Value, strings.ToLower(l.key.Value))
		}
		text, ok := rd.scalar(l, rd.subject, what)
		if !ok {
			continue
		}
		if text == "" {
			rd.add(l.key.Line, rd.subject, "%s: the template is empty; write e.g. '${%s}'", what, l.key.Value)
			continue
		}
		if t, ok := rd.template(text, l.key.Line, what); ok {
			r.Labels = append(r.Labels, Label{Name: l.key.Value, Template: t})
		}
	}
	sort.Slice(r.Labels, func(i, j int) bool { return r.Labels[i].Name < r.Labels[j].Name })
	slices.Sort(names)
	return names
}

// template compiles a label template: ${name} is a capture, $$ a literal $.
func (rd *ruleDecoder) template(text string, line int, what string) (Template, bool) {
	// Each line renders the template: its text and its references bound what a line costs,
	// a reference up to a line's length.
	if len(text) > maxTemplateBytes {
		rd.add(line, rd.subject, "%s: the template is %d bytes, more than the %d a template may have", what, len(text), maxTemplateBytes)
		return nil, false
	}
	var t Template
	refs := 0
	var lit strings.Builder
	flush := func() {
		if lit.Len() > 0 {
			t = append(t, TemplatePart{Literal: lit.String(), Capture: -1})
			lit.Reset()
		}
	}
	ok := true
	for i := 0; i < len(text); {
		rest := text[i:]
		switch {
		case rest[0] != '$':
			lit.WriteByte(rest[0])
			i++
		case strings.HasPrefix(rest, "$$"):
			lit.WriteByte('$')
			i += 2
		case strings.HasPrefix(rest, "${"):
			end := strings.IndexByte(rest, '}')
			if end < 0 {
				rd.add(line, rd.subject, "%s: %q opens ${ without a closing }", what, text)
				return nil, false
			}
			flush()
			if refs++; refs > maxTemplateRefs {
				rd.add(line, rd.subject, "%s: the template has more than %d references to captures, the most a template may have", what, maxTemplateRefs)
				return nil, false
			}
			idx := rd.capture(line, what, rest[2:end])
			ok = ok && idx >= 0
			t = append(t, TemplatePart{Capture: idx})
			i += end + 1
		default:
			rd.add(line, rd.subject, "%s: %q has a $ that is neither ${capture} nor $$ (a literal $)", what, text)
			return nil, false
		}
	}
	flush()
	return t, ok
}

// where decodes `where:` or `where_not:` (key), a mapping of capture to regex. must are
// the rule's where filters, which a where_not filter is checked against.
func (rd *ruleDecoder) where(e entry, key string, must ...Where) []Where {
	entries, ok := rd.mapping(e.val, rd.subject, key)
	if !ok {
		return nil
	}
	var out []Where
	for _, w := range entries {
		what := key + ": " + w.key.Value
		idx := rd.capture(w.key.Line, key, w.key.Value)
		text, ok := rd.scalar(w, rd.subject, what)
		if !ok {
			continue
		}
		if text == "" {
			rd.add(w.key.Line, rd.subject, "%s: the regex is empty (it would match every line)", what)
			continue
		}
		re, ok := rd.compile(w.key.Line, rd.subject, what, text)
		if !ok {
			continue
		}
		if key == "where_not" && matchesEvery(re) {
			// A capture that took no part in the match is empty, and dropped too.
			rd.add(w.key.Line, rd.subject, "%s: '%s' matches every value, an empty one too, so the rule would count no line", what, text)
			continue
		}
		// Warned of, not refused: a rule file that loaded keeps loading after an upgrade,
		// and the warning says why the rule shows no line.
		if key == "where" && matchesNothing(re) {
			rd.warn(w.key.Line, rd.subject, "%s: '%s' matches no text at all, so the rule will count no line", what, text)
		}
		if i := slices.IndexFunc(must, func(m Where) bool { return m.CaptureName == w.key.Value && sameRegex(m.Regexp, re) }); i >= 0 {
			rd.warn(w.key.Line, rd.subject, "%s: '%s' is the regex of where: %s: a value that matches it is both required and dropped, so the rule will count no line", what, text, w.key.Value)
		}
		out = append(out, Where{CaptureName: w.key.Value, Capture: idx, Regexp: re})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].CaptureName < out[j].CaptureName })
	return out
}

// layoutProbe has every field distinct from time.Parse's defaults, so a layout that drops
// one (no year, no seconds) does not read it back.
var layoutProbe = time.Date(2024, time.March, 17, 13, 4, 5, 0, time.UTC)

func (rd *ruleDecoder) timestamp(e entry) *Timestamp {
	entries, ok := rd.mapping(e.val, rd.subject, "timestamp")
	if !ok {
		return nil
	}
	rd.known(entries, rd.subject, "timestamp", "capture", "layout", "location")
	ts := &Timestamp{Capture: -1}
	capOK, layoutOK := true, true
	layoutGiven := false
	if c, ok := find(entries, "capture"); ok {
		ts.CaptureName, capOK = rd.scalar(c, rd.subject, "timestamp: capture")
		switch {
		case rd.isWrapperTime(ts.CaptureName):
			ts.Capture, rd.wrapperTimeLine = WrapperTime, c.key.Line
		case ts.CaptureName != "":
			ts.Capture = rd.capture(c.key.Line, "timestamp", ts.CaptureName)
		}
	}
	if ts.CaptureName == "" && capOK {
		rd.add(e.key.Line, rd.subject, "timestamp: capture: is missing; name the capture holding the line's time")
	}
	if l, ok := find(entries, "layout"); ok {
		ts.Layout, layoutOK = rd.scalar(l, rd.subject, "timestamp: layout")
		layoutGiven = ts.Layout != ""
		if ts.Layout != "" {
			got, err := time.ParseInLocation(ts.Layout, layoutProbe.Format(ts.Layout), time.UTC)
			if err != nil || !got.Equal(layoutProbe) {
				rd.add(l.key.Line, rd.subject, "timestamp: layout: %q does not give a full date and time to the second; "+
					"write it with Go's reference time, e.g. '02/Jan/2006:15:04:05 -0700' for nginx", ts.Layout)
			} else if ts.Capture == WrapperTime {
				rd.checkRuntimeTimes(l.key.Line, ts.Layout)
			}
		}
	}
	if ts.Capture == WrapperTime && ts.Layout == "" && layoutOK {
		ts.Layout = time.RFC3339 // the runtime's; fractions of a second are read too
	}
	if ts.Layout == "" && layoutOK && !rd.formatTime(ts) {
		if v := rd.apacheClock(ts.CaptureName); v != "" {
			rd.add(e.key.Line, rd.subject, "timestamp: %s is no time a layout reads (milliseconds or microseconds since the epoch, or a fraction of a second); log %%{sec}t or %%t for the rule's timestamp", v)
		} else {
			rd.add(e.key.Line, rd.subject, "timestamp: layout: is missing; give a Go time layout (e.g. '02/Jan/2006:15:04:05 -0700'; a log format's time_local, time_iso8601 and msec need none)")
		}
	}
	if l, ok := find(entries, "location"); ok {
		rd.location(l, ts, layoutGiven)
	}
	return ts
}

// apacheClock is the directive of an Apache time the capture is that counts in units
// other than seconds (%{msec}t, %{usec}t, their _frac, after begin: or end:), which no
// layout reads; "" for any other capture.
func (rd *ruleDecoder) apacheClock(capture string) string {
	if rd.caps == nil || rd.caps.format == nil || rd.caps.format.Server != logformat.Apache {
		return ""
	}
	v := rd.caps.format.Var(capture)
	arg, opened := strings.CutPrefix(v, "%{")
	arg, closed := strings.CutSuffix(arg, "}t")
	if !opened || !closed {
		return ""
	}
	arg = strings.TrimPrefix(strings.TrimPrefix(arg, "begin:"), "end:")
	if slices.Contains([]string{"msec", "usec", "msec_frac", "usec_frac"}, arg) {
		return v
	}
	return ""
}

// apacheUnit warns of a value rule whose name says seconds over an Apache duration that
// counts smaller units (%D, %{ms}T, %{us}T, %^FB): its value is summed as it is logged,
// so sums, means, quantiles and buckets would be a thousand or a million times the
// seconds the name promises, and nothing else would tell. Of candidate formats, the first
// whose directive so counts is named.
func (rd *ruleDecoder) apacheUnit(line int, r *Rule, capture string) {
	if rd.caps == nil || !slices.Contains(strings.Split(r.Name, "_"), "seconds") {
		return
	}
	formats := r.Candidates
	if rd.caps.format != nil {
		formats = []*logformat.Format{rd.caps.format}
	}
	for _, f := range formats {
		v := f.Var(capture)
		if unit := logformat.ApacheDurationUnit(v); f.Server == logformat.Apache && unit != "" && unit != "seconds" {
			rd.warnApacheUnit(line, capture, v, unit)
			return
		}
	}
}

// warnApacheUnit is apacheUnit's warning of capture, Apache's directive v, counting unit.
func (rd *ruleDecoder) warnApacheUnit(line int, capture, v, unit string) {
	rd.warn(line, rd.subject, "value: %s is %s, which Apache writes in %s, but the rule's name says seconds: its sums, means, quantiles and buckets are in %[3]s, "+
		"as the exporter sums a value as logged; name the rule for what it sums without the unit, or log %%T (whole seconds)", capture, v, unit)
}

// offsetZone is a zone no layout's default matches, named so that a layout with a zone
// name (MST) but no offset does not read it back: one that does reads a numeric offset.
var offsetZone = time.FixedZone("XST", -(3*3600 + 30*60))

// location reads timestamp: location:, the IANA time zone a layout without a zone reads its
// times in. It is refused where it would change nothing: a layout that reads each line's
// own UTC offset, a log format's time (implied, every one with an offset or in seconds
// since the epoch) or the runtime's cri_time.
func (rd *ruleDecoder) location(l entry, ts *Timestamp, layoutGiven bool) {
	name, ok := rd.scalar(l, rd.subject, "timestamp: location")
	if !ok {
		return
	}
	if name == "" {
		rd.add(l.key.Line, rd.subject, "timestamp: location: is empty; give the IANA time zone the log's times are written in, e.g. 'America/New_York'")
		return
	}
	loc, err := time.LoadLocation(name)
	if err != nil {
		rd.add(l.key.Line, rd.subject, "timestamp: location: %q is not a time zone: give an IANA name, e.g. 'America/New_York', 'Europe/Berlin' or 'UTC' (Local: the exporter's own zone)", name)
		return
	}
	switch {
	case !layoutGiven && (ts.Layout != "" || ts.Unix || rd.caps != nil && rd.caps.candidates):
		rd.add(l.key.Line, rd.subject, "timestamp: location: %s carries its own UTC offset (or is seconds since the epoch); location is for a layout without a zone: leave it out", ts.CaptureName)
		return
	case !layoutGiven:
		return // no layout at all, which is told
	case readsOffset(ts.Layout):
		rd.add(l.key.Line, rd.subject, "timestamp: location: layout %q reads each line's own UTC offset; location is for a layout without a zone, e.g. '2006-01-02 15:04:05': leave it out", ts.Layout)
		return
	case literalZ(ts.Layout):
		// Go reads a literal Z as any other literal character, so location would shift
		// every time of a log that says it writes UTC.
		rd.add(l.key.Line, rd.subject, "timestamp: location: layout %q writes a literal Z, which says its times are UTC; location would read them in another zone: leave it out (or, if the log writes an offset where it is not UTC, write Z07:00 in the layout)", ts.Layout)
		return
	}
	ts.Location = loc
}

// readsOffset reports whether layout reads the UTC offset a time is written with.
func readsOffset(layout string) bool {
	got, err := time.ParseInLocation(layout, layoutProbe.In(offsetZone).Format(layout), time.UTC)
	return err == nil && got.Equal(layoutProbe)
}

// literalZ reports whether layout has a Z of its own, ISO 8601's UTC designator
// ('2006-01-02T15:04:05Z'), rather than one that begins Go's zone element (Z07:00, Z0700,
// Z07, ...) or is a letter of a word.
func literalZ(layout string) bool {
	isLetter := func(i int) bool {
		if i < 0 || i >= len(layout) {
			return false
		}
		c := layout[i] | 0x20
		return 'a' <= c && c <= 'z'
	}
	for i := range len(layout) {
		if layout[i] == 'Z' && !strings.HasPrefix(layout[i:], "Z07") && !isLetter(i-1) && !isLetter(i+1) {
			return true
		}
	}
	return false
}

// runtimeTimes are layoutProbe as container runtimes write a CRI line's time, each with
// the runtime that writes it so: containerd RFC 3339 with its nanoseconds trimmed of
// zeros (none on a whole second) and Z in UTC or the node's offset, CRI-O (conmon) nine
// digits and an offset, +00:00 in UTC.
var runtimeTimes = [][2]string{
	{"2024-03-17T13:04:05.123456789Z", "containerd"},
	{"2024-03-17T13:04:05.1234Z", "containerd"},
	{"2024-03-17T13:04:05Z", "containerd"},
	{"2024-03-17T14:04:05.123456789+01:00", "containerd"},
	{"2024-03-17T13:04:05.120000000+00:00", "CRI-O"},
}

// checkRuntimeTimes refuses a layout of cri_time that, as the parser reads it
// (Timestamp.ReadLayout), does not read a time some runtime writes: it would drop that
// runtime's lines, or a share of them (a tenth of containerd's have a nanosecond count
// ending in zero), as bad_timestamp.
func (rd *ruleDecoder) checkRuntimeTimes(line int, layout string) {
	for _, rt := range runtimeTimes {
		if got, err := time.ParseInLocation(readLayout(layout), rt[0], time.UTC); err != nil || got.Unix() != layoutProbe.Unix() {
			rd.add(line, rd.subject, "timestamp: layout: %q does not read %q, a time %s writes; cri_time is the runtime's RFC 3339 time: "+
				"leave layout out, or give '2006-01-02T15:04:05Z07:00'", layout, rt[0], rt[1])
			return
		}
	}
}

func (rd *ruleDecoder) inputs(e entry, r *Rule, inputNames map[string]bool) {
	names, ok := rd.words(e, rd.subject, "inputs", inputNames)
	if !ok {
		return
	}
	if len(names) == 0 {
		rd.add(e.key.Line, rd.subject, "inputs: the list is empty; leave it out to read every input")
		return
	}
	known := sortedKeys(inputNames)
	listed := make(map[string]bool, len(names))
	for _, name := range names {
		switch {
		case listed[name]:
			rd.add(e.key.Line, rd.subject, "inputs: %q is listed twice", name)
		case !inputNames[name] && !rd.inputsRefused:
			rd.inputsUnknown = true
			list := listing(known)
			if len(known) == 0 {
				list = "none; add name: to an input"
			}
			rd.add(e.key.Line, rd.subject, "inputs: no input is named %q%s (named inputs: %s)", name, rd.suggest(name, known), list)
		}
		listed[name] = true
	}
	r.Inputs = names
}

// maxLabelValueBytes is the parser's cap on a label value (parser.MaxLabelValueLen, which
// config cannot import): a longer initial value could never meet a line's label set.
const maxLabelValueBytes = 1024

// overflowValue is the label value of a rule's overflow series (store.OverflowValue).
const overflowValue = "__overflow__"

// gives reports whether some values of the template's captures render it as v: whether
// its literal text comes in v in its order, at v's start and end where no capture comes
// before or after it. (A capture referred to twice is taken as two.)
func (t Template) gives(v string) bool {
	open := false // a capture came before: the literal next may start anywhere
	for i, p := range t {
		if p.Capture >= 0 {
			open = true
			continue
		}
		switch last := i == len(t)-1; {
		case last && open:
			return strings.HasSuffix(v, p.Literal)
		case last:
			return v == p.Literal
		case open:
			// The leftmost place leaves the most of v to the parts after it.
			at := strings.Index(v, p.Literal)
			if at < 0 {
				return false
			}
			v = v[at+len(p.Literal):]
		case !strings.HasPrefix(v, p.Literal):
			return false
		default:
			v = v[len(p.Literal):]
		}
		open = false
	}
	return open || v == ""
}

// maxInitialRewriteBytes bounds the text the initial label sets of a file are rewritten
// over to find those the rewrites would change: 100,000 sets through 1,000 rewrites would
// otherwise run a regex 10^8 times at load, and a bound per rule let twenty rules sharing
// 1,000 rewrites by an alias, 500 short sets each, take seconds to load where they took
// a fraction of one. Sets past it are not checked.
const maxInitialRewriteBytes = 1 << 20

// rewriteValue is v through rws as the parser rewrites a label value, while budget (the
// bytes the regexes may still read, lowered by what they read) lasts: false when it ran
// out. A result longer than a label value may be is cut short there, as only its
// difference from v is wanted.
func rewriteValue(rws []Rewrite, v string, budget *int) (string, bool) {
	for _, rw := range rws {
		if *budget -= len(v) + 1; *budget < 0 {
			return "", false
		}
		var out []byte
		last := 0
		for _, m := range rw.Regexp.FindAllStringSubmatchIndex(v, -1) {
			out = rw.Regexp.ExpandString(append(out, v[last:m[0]]...), rw.Replacement, v, m)
			if last = m[1]; len(out) > maxLabelValueBytes {
				return string(out), true
			}
		}
		v = string(append(out, v[last:]...))
	}
	return v, true
}

// constant reports whether t refers to no capture: every line renders it alike.
func (t Template) constant() bool {
	return !slices.ContainsFunc(t, func(p TemplatePart) bool { return p.Capture >= 0 })
}

// templateText writes t as a rule file would, for messages. Its captures are named as
// the decoder numbered them: Rule.CaptureName knows a candidate rule's names only once
// its variants are compiled, after the checks that quote a template.
func (rd *ruleDecoder) templateText(t Template) string {
	var b strings.Builder
	for _, p := range t {
		if p.Capture < 0 {
			b.WriteString(strings.ReplaceAll(p.Literal, "$", "$$"))
			continue
		}
		var name string
		if n := len(rd.caps.names); p.Capture < n {
			name = rd.caps.names[p.Capture]
		} else {
			name = rd.paths[p.Capture-n]
		}
		b.WriteString("${" + name + "}")
	}
	return b.String()
}

// initial decodes `initial:`, label sets that exist from the start. Each must give every
// label of the rule, once, and they count against the budget.
func (rd *ruleDecoder) initial(e entry, r *Rule, limit int) {
	v := resolve(e.val)
	if v.Kind != yaml.SequenceNode {
		rd.add(e.key.Line, rd.subject, "initial: must be a list of label sets (- {label: value, ...}), not %s", kindName(v))
		return
	}
	if len(r.Labels) == 0 {
		rd.add(e.key.Line, rd.subject, "initial: the rule has no labels; its one series always exists already")
		return
	}
	if rd.tooMany(e, rd.subject, len(v.Content), maxInitial, "label sets", "a rule") {
		return
	}
	names := make([]string, len(r.Labels))
	rewrites := make([][]Rewrite, len(r.Labels))
	for i, l := range r.Labels {
		names[i], rewrites[i] = l.Name, r.RewritesOf(l.Name)
	}
	seen := map[string]int{}
	for i, item := range v.Content {
		what := fmt.Sprintf("initial #%d", i+1)
		entries, ok := rd.mapping(item, rd.subject, what)
		if !ok {
			continue
		}
		line := resolve(item).Line
		values := make([]string, len(names))
		given := make([]bool, len(names))
		lines := make([]int, len(names))
		valid := true
		for _, le := range entries {
			j := slices.Index(names, le.key.Value)
			if r.Top != nil && le.key.Value == r.Top.Label {
				rd.add(le.key.Line, rd.subject, "%s: %s is the top label, whose values are ranked rather than kept as label sets; leave it out", what, le.key.Value)
				valid = false
				continue
			}
			if j < 0 {
				rd.add(le.key.Line, rd.subject, "%s: %q is not a label of the rule%s (labels: %s)", what, le.key.Value, rd.suggest(le.key.Value, names), listing(names))
				valid = false
				continue
			}
			val, ok := rd.scalar(le, rd.subject, what+": "+le.key.Value)
			switch {
			case !ok:
				valid = false
			case len(val) > maxLabelValueBytes:
				rd.add(le.key.Line, rd.subject, "%s: %s: the value is longer than %d bytes, the cap on a label value, so no line could ever count in it", what, le.key.Value, maxLabelValueBytes)
				valid = false
			case len(rewrites[j]) == 0 && len(val) <= maxLabelValueBytes-utf8.UTFMax && !r.Labels[j].Template.gives(val):
				// A value cut at the cap may be any prefix of what the template gives, and a
				// rewritten one anything: only a shorter value of a label kept as it is rendered
				// must have the template's text around its captures.
				rd.add(le.key.Line, rd.subject, "%s: %s: %q is no value the label's template '%s' gives, so no line could ever count in it",
					what, le.key.Value, val, rd.templateText(r.Labels[j].Template))
				valid = false
			}
			values[j], given[j], lines[j] = val, true, le.key.Line
		}
		var missing []string
		for j, ok := range given {
			if !ok {
				missing = append(missing, names[j])
			}
		}
		if len(missing) > 0 {
			rd.add(line, rd.subject, "%s: gives no value for %s; give every label of the rule", what, listing(missing))
			valid = false
		}
		if !valid {
			continue
		}
		if !slices.ContainsFunc(values, func(s string) bool { return s != overflowValue }) {
			rd.add(line, rd.subject, "%s: every value is %s, the label set of the overflow series", what, overflowValue)
			continue
		}
		key := strings.Join(values, "\xff")
		if first, dup := seen[key]; dup {
			rd.add(line, rd.subject, "%s: the same label set as initial #%d", what, first)
			continue
		}
		seen[key] = i + 1
		r.Initial = append(r.Initial, values)
		for j, name := range names {
			rws := rewrites[j]
			if len(rws) == 0 || len(values[j]) > maxLabelValueBytes-utf8.UTFMax {
				continue // a value cut at the cap may be a prefix of anything
			}
			to, ok := rewriteValue(rws, values[j], &rd.initialRewriteBudget)
			if !ok || to == values[j] {
				continue
			}
			// Rewrites that change what they give (a prefix added: '^/(.+)$' to '/api/$1')
			// may give a value they would change: only those that leave their result as it
			// is tell that no line gives this one.
			if again, ok := rewriteValue(rws, to, &rd.initialRewriteBudget); ok && again == to {
				rd.warn(lines[j], rd.subject, "%s: %s: the label's rewrites turn %q into %q; initial label sets are written as the values are after rewriting, so no line counts in this one unless a rewrite gives %[3]q",
					what, name, values[j], to)
			}
		}
	}
	if len(r.Initial) > limit {
		rd.add(e.key.Line, rd.subject, "initial: %d label sets, more than max_series_per_rule (%d), which they count against", len(r.Initial), limit)
	}
}
