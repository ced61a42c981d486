package config

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"

	"github.com/logwindow/logwindow_exporter/config/logformat"
	"go.yaml.in/yaml/v3"
)

// Derived is a capture a rule reads that its log format computes from another: a
// request's method, target, path and protocol, a status's class.
type Derived struct {
	Name string
	Kind logformat.DeriveKind
	// From is the capture it is computed from.
	From int
}

// logFormat decodes an input's log_format:, log_format_escape: and apache_log_format:.
func (d *decoder) logFormat(entries []entry, subject string, in *Input) {
	nginx, hasNginx := find(entries, "log_format")
	apache, hasApache := find(entries, "apache_log_format")
	esc := logformat.EscapeDefault
	e, declared := find(entries, "log_format_escape")
	if declared {
		text, ok := d.scalar(e, subject, "log_format_escape")
		known := false
		if esc, known = logformat.ParseEscape(text); !known && ok {
			d.add(e.key.Line, subject, "log_format_escape: %q is not one of %s (nginx's escape= values)%s",
				text, strings.Join(logformat.EscapeNames, ", "), suggest(text, logformat.EscapeNames))
			declared = false
		}
		if !hasNginx {
			d.add(e.key.Line, subject, "log_format_escape: is nginx's escape= parameter of a log_format:, which this input does not have")
		}
	}
	switch {
	case hasNginx && hasApache:
		d.add(apache.key.Line, subject, "log_format and apache_log_format: an input's lines have one format; keep the one its server writes")
	case hasNginx && d.logFormatCandidates(nginx, subject, in):
		if e, ok := find(entries, "log_format_escape"); ok {
			d.add(e.key.Line, subject, "log_format_escape: applies to one format string; in a list of candidates give a format written with escape= as its directive (log_format NAME escape=json '...';), whose escape= says it")
		}
	case hasNginx:
		presets := sortedKeys(logformat.NginxPresets)
		if text, ok := d.formatText(nginx, subject, "log_format", presets); ok {
			f, err := logformat.ParseNginxValue(text, esc, declared)
			d.formatError(nginx, subject, "log_format", text, presets, err)
			d.unquoted(nginx, subject, f)
			d.pasted(nginx, subject, text, f)
			in.LogFormat = f
		}
	case hasApache:
		presets := sortedKeys(logformat.ApachePresets)
		if text, ok := d.formatText(apache, subject, "apache_log_format", presets); ok {
			f, err := logformat.ParseApache(text)
			d.formatError(apache, subject, "apache_log_format", text, presets, err)
			if f != nil {
				d.apachePasted(apache, subject, text)
				d.clashes(apache, subject, "apache_log_format", text, f)
			}
			in.LogFormat = f
		}
	}
	if in.LogFormat != nil && in.LogFormat.JSON() {
		in.Format = FormatJSON
	}
}

// unquoted warns of the variables of f, a JSON template, that nginx may write as no JSON
// value: its lines with one are no JSON, and no rule reads them.
func (d *decoder) unquoted(e entry, subject string, f *logformat.Format) {
	if f == nil || len(f.Unquoted) == 0 {
		return
	}
	d.warn(e.key.Line, subject,
		"log_format: the JSON template has %s without quotes, which nginx writes as it is: nothing, \"-\", a list or text where it has no number, "+
			"and a line with one is no JSON, read by no rule (counted as malformed); put it in quotes (\"%[2]s\")",
		strings.Join(f.Unquoted, ", "), f.Unquoted[0])
}

// pasted warns of a format string f, given as text, that is a log_format directive's
// arguments after its keyword (logformat.PastedArguments): the quotes of its strings, the
// format's name before them, the ';' after them. nginx writes none of it in a line, so no
// line would fit, and --config.check without --sample would say OK. nginx could write such
// text, so it is a warning; a directive given whole is parsed as nginx does and has none
// left.
func (d *decoder) pasted(e entry, subject, text string, f *logformat.Format) {
	if f == nil || f.Directive != "" {
		return
	}
	p, ok := logformat.PastedArguments(strings.TrimSpace(text))
	if !ok {
		return
	}
	signs := fmt.Sprintf("in nginx.conf's quotes (%c...%[1]c)", p.Quote)
	if p.Name != "" {
		signs += fmt.Sprintf(" after the format's name (%s)", p.Name)
	}
	if p.Escaped {
		signs += ` with its own quotes escaped (\")`
	}
	if p.Semicolon {
		signs += " and ends with the directive's ';'"
	}
	unescape := ""
	if p.Escaped {
		unescape = `, each \" made "`
	}
	d.warn(e.key.Line, subject,
		"log_format: the format is %s, as a log_format directive's arguments: pasted from there, it fits no line nginx writes; "+
			"give the directive whole (log_format NAME %c...%[2]c;), or only the text between its quotes%s", signs, p.Quote, unescape)
}

// apachePasted warns of an Apache format string given as LogFormat's argument, in
// httpd.conf's quotes (logformat.ApachePasted): as pasted, its quotes and nickname are
// text no line has, and --config.check without --sample would say OK.
func (d *decoder) apachePasted(e entry, subject, text string) {
	nick, ok := logformat.ApachePasted(strings.TrimSpace(text))
	if !ok {
		return
	}
	signs := `in httpd.conf's quotes ("...")`
	if nick != "" {
		signs += fmt.Sprintf(" with the format's nickname after them (%s)", nick)
	}
	d.warn(e.key.Line, subject,
		"apache_log_format: the format is %s, as LogFormat's format: pasted from there, it fits no line Apache writes; give only the text between its quotes", signs)
}

// clashes warns of each variable of f, given as text, that is read but not captured
// because an earlier variable that writes another value has its capture's name
// (logformat.Format.Clashes): a rule could never read it, and without a warning would
// read the other thinking it is this one.
func (d *decoder) clashes(e entry, subject, key, text string, f *logformat.Format) {
	for _, c := range f.Clashes {
		d.warn(blockLine(e, text, c.At), subject,
			"%s: %s at byte %d names the capture %s, as %s before it does, though it writes another value: it is read but not captured, and a rule reading %[4]s reads %[5]s; in %[6]s",
			key, c.Var, c.At, c.Name, c.Of, pointAt(f.Text, c.At))
	}
}

// formatText reads the text of a log format key. A key that gives none is refused (refuse),
// as a format that does not compile is.
func (d *decoder) formatText(e entry, subject, key string, presets []string) (string, bool) {
	if v := resolve(e.val); v.Kind == yaml.MappingNode && v.Style&yaml.FlowStyle != 0 {
		// A JSON template written as it is, which YAML reads as a mapping of its own.
		d.add(e.key.Line, subject, "%s: must be a single value, not a mapping; a JSON template is text: put it in quotes ('{...}')", key)
		d.refuse()
		return "", false
	}
	text, ok := d.scalar(e, subject, key)
	if ok && strings.TrimSpace(text) == "" {
		d.add(e.key.Line, subject, "%s: is empty; give a preset (%s) or the format string as the server's configuration has it", key, strings.Join(presets, ", "))
		ok = false
	}
	if !ok {
		d.refuse()
		return "", false
	}
	return text, true
}

// formatError reports a format that does not compile, showing where.
func (d *decoder) formatError(e entry, subject, key, text string, presets []string, err error) {
	if err == nil {
		return
	}
	d.refuse()
	var fe *logformat.Error
	if !errors.As(err, &fe) {
		d.add(e.key.Line, subject, "%s: %s", key, err)
		return
	}
	if !strings.ContainsAny(text, "$%") && !logformat.IsDirective(strings.TrimSpace(text)) && !logformat.IsAccessLog(text) {
		text = strings.TrimSpace(text)
		d.add(e.key.Line, subject, "%s: %q is not a preset (%s)%s, nor a format string (which has variables)%s", key, text, strings.Join(presets, ", "), suggest(text, presets), presetHint(key, text))
		return
	}
	d.add(blockLine(e, text, fe.Offset), subject, "%s: %s, in %s", key, fe.Msg, pointAt(text, fe.Offset))
}

// presetHint says where text, taken for a preset of key where it is none, is one: the
// names a list of candidates has (auto itself, json, Apache's presets with their prefix)
// are not those of one format, and auto is written in lower case; "" when it is none
// anywhere.
func presetHint(key, text string) string {
	apache, prefixed := strings.CutPrefix(text, "apache_")
	_, isApache := logformat.ApachePresets[apache]
	switch {
	case key == "log_format" && text == LogFormatAuto:
		return "; auto is a list of candidates itself: give log_format: auto, not in a list"
	case key == "log_format" && strings.EqualFold(text, LogFormatAuto):
		// Not among the presets a suggestion is made from: auto is none.
		return "; write auto in lower case, as log_format: auto alone (the candidates told apart by their lines)"
	case key == "log_format" && text == logformat.JSONObject:
		return "; json is a candidate: give it in a list (log_format: [json]), or read the JSON lines by fields: (format: json)"
	case key == "log_format" && prefixed && isApache:
		return fmt.Sprintf("; %s is a candidate: give it in a list (log_format: [%[1]s]), or as the one format apache_log_format: %s", text, apache)
	case key == "apache_log_format" && prefixed && isApache:
		return "; write " + apache
	}
	return ""
}

// refuse notes that a log format of the input being decoded is refused: a rule that reads
// it is not told what that format lacks. The input is known by its label once its path or
// address is decoded too (inputs).
func (d *decoder) refuse() { d.refusing = true }

// blockLine is the line of the file holding byte off of a key's value when the value is
// a literal block (|), whose lines are the file's; the key's line otherwise.
func blockLine(e entry, text string, off int) int {
	if v := resolve(e.val); v.Style&yaml.LiteralStyle != 0 {
		return v.Line + 1 + strings.Count(text[:min(max(off, 0), len(text))], "\n")
	}
	return e.key.Line
}

// pointAt quotes text with a marker at byte off, shortened around it when long.
func pointAt(text string, off int) string {
	off = min(max(off, 0), len(text))
	const context = 40
	before, after := text[:off], text[off:]
	if len(before) > context {
		before = "…" + before[len(before)-context:]
	}
	if len(after) > context {
		after = after[:context] + "…"
	}
	return fmt.Sprintf("%q", before+"⟨here⟩"+after)
}

// fromFormat makes a rule with neither match: nor fields: read the captures of its
// inputs' log format: its named inputs, or every input. They must all have the same one,
// unless one has candidates (fromCandidates).
func (rd *ruleDecoder) fromFormat(line int, r *Rule, all []Input) {
	var f *logformat.Format
	var first string
	var without []string
	var reads []Input
	refused := false
	for _, in := range all {
		if !r.Reads(in) {
			continue
		}
		reads = append(reads, in)
	}
	if slices.ContainsFunc(reads, func(in Input) bool { return in.LogFormats != nil }) {
		rd.fromCandidates(line, r, reads)
		return
	}
	for _, in := range reads {
		switch {
		case rd.formatRefused[in.Label()]:
			refused = true
		case in.LogFormat == nil:
			without = append(without, fmt.Sprintf("%q", in.Label()))
		case f == nil:
			f, first = in.LogFormat, in.Label()
		case !f.Equal(in.LogFormat):
			// The rule that names its inputs already did what "name them" would ask.
			fix := "name those of one format with inputs: [...]"
			if r.Inputs != nil {
				fix = "its inputs: names both; keep those of one format, or give the rule a match: regex"
			}
			rd.add(line, rd.subject, "match: is missing, and inputs %q and %q have different log formats: a rule without match: reads inputs of one format (%s)", first, in.Label(), fix)
			return
		}
	}
	switch {
	case refused && f == nil:
		return
	case f == nil:
		rd.add(line, rd.subject, "match: is missing; give the regex lines must match, or a log_format: to the rule's inputs (then every $variable is a capture)")
		return
	case len(without) > 0:
		rd.add(line, rd.subject, "match: is missing, and input %s has no log format to read its lines by (the rule reads %s); give it one, or name only inputs with one (inputs: [...])", listing(without), pluralInputs(r))
		return
	}
	if names, ok := rd.compileFormat(line, r, f); ok {
		rd.caps = &captures{names: names, format: f}
	}
}

// compileFormat makes r read the captures of log format f (its regex, or its JSON
// fields, and what it derives) and returns their names by index; false when its regex
// does not compile, a problem added at line.
func (rd *ruleDecoder) compileFormat(line int, r *Rule, f *logformat.Format) ([]string, bool) {
	r.LogFormat = f
	names := []string{""}
	if f.JSON() {
		for _, fl := range f.Fields {
			r.Fields = append(r.Fields, Field{Capture: fl.Name, Path: strings.Join(fl.Path, "."), Segments: fl.Path})
		}
		sort.Slice(r.Fields, func(i, j int) bool { return r.Fields[i].Capture < r.Fields[j].Capture })
		for _, fl := range r.Fields {
			names = append(names, fl.Capture)
		}
		r.Format = FormatJSON
	} else {
		re, ok := rd.formatRegexps[f]
		if !ok {
			// The format compiler checks its regexes; an error here is a compiler bug, still
			// a problem of this config rather than a crash of the process.
			var err error
			if re, err = regexp.Compile(f.Regex); err != nil {
				rd.add(line, rd.subject, "the %s %q does not compile: %v", f.Key(), f.Describe(), err)
				return nil, false
			}
			rd.formatRegexps[f] = re
		}
		r.Regexp, r.Expanded = re, f.Regex
		names = re.SubexpNames()
	}
	for _, dv := range f.Derived {
		r.Derived = append(r.Derived, Derived{Name: dv.Name, Kind: dv.Kind, From: slices.Index(names, dv.From)})
	}
	for _, dv := range r.Derived {
		names = append(names, dv.Name)
	}
	return names, true
}

func pluralInputs(r *Rule) string {
	if r.Inputs == nil {
		return "every input"
	}
	return "inputs " + listing(quoteAll(r.Inputs))
}

// formatTime fills in the layout of a timestamp read from a log format's time variable.
// A rule reading candidates leaves it to each candidate (variants) when one has it as a
// time: those without it are then refused (variants).
func (rd *ruleDecoder) formatTime(ts *Timestamp) bool {
	if rd.caps != nil && rd.caps.candidates {
		return true
	}
	if rd.caps == nil || rd.caps.format == nil {
		return false
	}
	layout, unix, ok := rd.caps.format.Time(ts.CaptureName)
	if ok {
		ts.Layout, ts.Unix = layout, unix
	}
	return ok
}
