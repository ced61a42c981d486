// Package explain says, for a log line, which rules counted it and with what, and why the
// others did not: the parser's own decisions (parser.Explain) together with what the
// series store makes of each event (late, future, folded into the overflow series). It
// serves the --explain one-shot and the status page's line tester, in plain text, JSON or
// the page's HTML, all from one Line value.
package explain

import (
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/logwindow/logwindow_exporter/config"
	"github.com/logwindow/logwindow_exporter/internal/store"
	"github.com/logwindow/logwindow_exporter/parser"
	"github.com/logwindow/logwindow_exporter/windows"
)

// Line is the explanation of one line.
type Line struct {
	// Number is the line's position in its file (1-based); 0 for a pasted line.
	Number int `json:"line,omitempty"`
	// File is the file of the line when a glob was explained, which may match several;
	// empty for a file given by its path, or a pasted line. It is shown as Text is
	// (FileEscaped as Escaped): whoever can write in the glob's directories names its
	// files. SetFile sets both.
	File        string `json:"file,omitempty"`
	FileEscaped bool   `json:"file_escaped,omitempty"`
	Input       string `json:"input"`
	// Text is the line for display: as it is when it is valid UTF-8 of graphic characters
	// alone, else Go-quoted (Escaped set), so nothing unprintable reaches a terminal or a
	// page.
	Text    string `json:"text"`
	Escaped bool   `json:"escaped,omitempty"`
	// Counted: some rule counted the line. Unmatched: no rule reading the input matched
	// it (no regex matched, no fields were read).
	Counted   bool `json:"counted"`
	Unmatched bool `json:"unmatched"`
	// TooLong: the line is longer than its input takes (--input.max-line-bytes), which
	// skips it unread: no rule reads it, and Rules is empty.
	TooLong bool   `json:"too_long,omitempty"`
	Rules   []Rule `json:"rules"`
}

// Rule is what one rule made of the line. Exactly one of the detail groups is set, by
// Outcome.
type Rule struct {
	Name string `json:"rule"`
	// Outcome is counted, or why not: other_input, no_match, malformed (not the format of
	// a fields rule), other_format (the line's candidate format lacks a capture the rule
	// reads), where, where_not, no_value, bad_number, bad_timestamp, negative.
	Outcome string `json:"outcome"`
	// Captures are the regex's named groups when it matched.
	Captures []Capture `json:"captures,omitempty"`

	// counted
	Labels []Label `json:"labels,omitempty"`
	// Top is the ranked label and its value (a rule with top:), which is not one of
	// Labels: the line counts in the series of Labels and ranks under Top.
	Top *Label `json:"top,omitempty"`
	// Distinct is the text a distinct: rule counts once per window, all its bytes (the
	// text output quotes it; JSON shows invalid UTF-8 as U+FFFD).
	Distinct *string  `json:"distinct,omitempty"`
	Value    *float64 `json:"value,omitempty"`
	Time     string   `json:"time,omitempty"` // the line's own time (event-time rules), RFC 3339
	// Repeated is the other instant Time's wall-clock reading is, in the hour the rule's
	// zone (Zone) repeats when its clocks go back (RFC 3339; empty elsewhere): the line is
	// explained as a replay reads it, by the line before it, and the running exporter
	// may read it at the other, by its clock.
	Repeated string    `json:"repeated_hour_other,omitempty"`
	Zone     string    `json:"repeated_hour_zone,omitempty"`
	Fate     *Fate     `json:"placement,omitempty"`
	Miss     *NoMatch  `json:"no_match,omitempty"`
	Filter   *Filter   `json:"where,omitempty"`
	Drop     *DropInfo `json:"drop,omitempty"`
	// Format is the structured format the line is not in (malformed), or the candidate log
	// format it is read by (other_format), which lacks the captures Lacks.
	Format string   `json:"format,omitempty"`
	Lacks  []string `json:"lacks,omitempty"`
}

// Capture is one named group and its text (Escaped as Line.Text).
type Capture struct {
	Name    string `json:"name"`
	Value   string `json:"value"`
	Escaped bool   `json:"escaped,omitempty"`
	// Unset: the group took no part in the match (it reads as empty).
	Unset bool `json:"unset,omitempty"`
}

// Label is one label of the series the line counts in.
type Label struct {
	Name  string `json:"name"`
	Value string `json:"value"`
	// Raw is the value before the rule's rewrites, when they changed it.
	Raw *string `json:"raw,omitempty"`
}

// Fate is where the store puts a counted line.
type Fate struct {
	// Placement is placed, late (older than the rule's longest window: counted in _total
	// only) or future (ahead of the clock: placed at now).
	Placement string `json:"placement"`
	// At is the second the line is placed at, Now the clock it was judged by (RFC 3339).
	At  string `json:"at"`
	Now string `json:"now"`
	// Folded: the label set is new and the rule has max_series_per_rule series, or the
	// series of all rules take --series.max-bytes, so the line counts in the __overflow__
	// series; Memory says it is the latter.
	Folded bool `json:"folded_into_overflow"`
	Memory bool `json:"folded_by_max_bytes,omitempty"`
}

// NoMatch is how far the rule's regex got (see parser.Prefix).
type NoMatch struct {
	// Regex is the rule's regex after %{PATTERN} expansion.
	Regex string `json:"regex"`
	// Start and End delimit (in bytes) the longest stretch of the line the regex could
	// read; Read is that text.
	Start int    `json:"start"`
	End   int    `json:"end"`
	Read  string `json:"read"`
	// Found is what the line has at End (empty at its end); Expected what the regex could
	// have taken there.
	Found    string   `json:"found"`
	Expected []string `json:"expected"`
	Inside   string   `json:"inside_capture,omitempty"`
	// LogFormat is the format of a rule reading one (its preset or string, as written),
	// instead of a regex of its own; the line stopped fitting it In a variable, or After
	// one, in the text that follows it ($status, %>s as the format writes them); both
	// when the value could have ended there.
	LogFormat string    `json:"log_format,omitempty"`
	In        string    `json:"in_variable,omitempty"`
	After     string    `json:"after_variable,omitempty"`
	Captures  []Capture `json:"captures_read,omitempty"`
	Truncated bool      `json:"truncated,omitempty"`
	// Words is the log format's value that may hold spaces ($remote_user, $uri, %u, %U)
	// when the line would fit with it ending past the 16 ends tried (a client's crafted
	// user name or path), which the exporter does not read it with; Start to Found are
	// then how far the line fits with that value of one word.
	Words string `json:"words_past_tries,omitempty"`
	// SameAs names an earlier rule of the line with the same regex, hence the same
	// explanation: text and HTML show it once.
	SameAs string `json:"same_as,omitempty"`
	// Candidates are the candidate formats of a rule reading them when the line fits none;
	// LogFormat is then the one it fits the farthest (none when all are JSON).
	Candidates []string `json:"candidates,omitempty"`
}

// Filter is the where filter that failed.
type Filter struct {
	Capture string `json:"capture"`
	Regex   string `json:"regex"`
	Value   string `json:"value"`
}

// DropInfo says which capture did not give a value or a time, and for a time the layout
// it was read with (config.Timestamp.ReadLayout), and the zone abbreviation (Zone) it was
// read with that the rule's location (Location) has no offset for (parser.ZoneError).
type DropInfo struct {
	Capture  string `json:"capture"`
	Value    string `json:"value"`
	Layout   string `json:"layout,omitempty"`
	Zone     string `json:"zone,omitempty"`
	Location string `json:"location,omitempty"`
}

// Explainer explains lines against one config's rules, parser and series store. It is not
// safe for concurrent use (its sink is one writer's).
type Explainer struct {
	rules  []*config.Rule
	parser Reader
	sink   *store.Sink
}

// Reader reads a line for an explanation: a *parser.Parser, by the formats of the input's
// name, or a *parser.Session told the formats of one input, by its own, as its parse read
// the line (asked from that parse's LineDone).
type Reader interface {
	ExplainWrapped(input string, line, wrapperTime []byte) *parser.Explanation
}

// New returns an Explainer for rules (the config p and set were built from). sink judges
// each event at the clocks of its last SetNow.
func New(rules []*config.Rule, p Reader, sink *store.Sink) *Explainer {
	return &Explainer{rules: rules, parser: p, sink: sink}
}

// Explain explains one line of input. With feed, the line then goes into the store as it
// would when read (so later lines see the series and budget it leaves behind); without,
// nothing changes.
func (x *Explainer) Explain(input string, line []byte, feed bool) Line {
	return x.ExplainWrapped(input, line, nil, feed)
}

// ExplainWrapped is Explain for the message of a wrapped line (a CRI container log line),
// whose wrapper's time is wrapperTime: rules timed by cri_time read it.
func (x *Explainer) ExplainWrapped(input string, line, wrapperTime []byte, feed bool) Line {
	ex := x.parser.ExplainWrapped(input, line, wrapperTime)
	out := Line{Input: input, Unmatched: true}
	out.Text, out.Escaped = display(line)
	firstMiss := map[string]string{} // regex -> the first rule it did not match
	for i := range ex.Rules {
		res := &ex.Rules[i]
		cr := x.rules[res.Rule]
		r := Rule{Name: cr.Name, Outcome: res.Outcome.String(), Captures: captures(res.Captures)}
		if res.Outcome != parser.NoMatch && res.Outcome != parser.OtherInput && res.Outcome != parser.Malformed && res.Outcome != parser.OtherFormat {
			out.Unmatched = false
		}
		switch res.Outcome {
		case parser.Counted:
			out.Counted = true
			x.counted(&r, cr, res)
			if feed {
				x.sink.Event(&res.Event)
			}
		case parser.NoMatch:
			r.Miss = noMatch(cr, res, line)
			if first, ok := firstMiss[r.Miss.Regex]; ok {
				r.Miss.SameAs = first
			} else {
				firstMiss[r.Miss.Regex] = cr.Name
			}
		case parser.WhereFailed, parser.WhereNotMatched:
			w, what := cr.Where, "where"
			if res.Outcome == parser.WhereNotMatched {
				w, what = cr.WhereNot, "where_not"
			}
			f := w[res.Where]
			r.Outcome = what
			r.Filter = &Filter{Capture: f.CaptureName, Regex: f.Regexp.String(), Value: captureText(res.Captures, f.CaptureName)}
		case parser.Malformed:
			r.Format = cr.Format.String()
			if res.Format != nil {
				// A rule reading candidate formats is read by the JSON of its file's.
				r.Format = res.Format.Describe()
			}
		case parser.OtherFormat:
			r.Format, r.Lacks = res.Format.Describe(), res.Lacks
		case parser.Dropped:
			r.Outcome = res.Drop.String()
			r.Drop = dropInfo(cr, res, wrapperTime)
			if feed {
				x.sink.Drop(res.Rule, res.Drop)
			}
		}
		out.Rules = append(out.Rules, r)
	}
	return out
}

func (x *Explainer) counted(r *Rule, cr *config.Rule, res *parser.RuleResult) {
	e := &res.Event
	for i, l := range cr.Labels {
		r.Labels = append(r.Labels, Label{Name: l.Name, Value: string(e.Labels[i]), Raw: raw(res.Raw, i)})
	}
	if t := cr.Top; t != nil {
		r.Top = &Label{Name: t.Label, Value: string(e.Items[t.Item-1]), Raw: raw(res.RawItems, t.Item-1)}
	}
	if cr.DistinctItem > 0 {
		d := string(e.Items[cr.DistinctItem-1])
		r.Distinct = &d
	}
	if cr.IsValueRule() {
		v := e.Value
		r.Value = &v
	}
	if e.HasTime {
		r.Time = rfc3339(e.Time)
		if ts := cr.Timestamp; ts != nil && ts.Folds() {
			if other, ok := parser.OtherReading(time.Unix(e.Time, 0).In(ts.In())); ok {
				r.Repeated, r.Zone = rfc3339(other.Unix()), ts.In().String()
			}
		}
	}
	f := x.sink.Judge(e)
	at := f.Now
	if e.HasTime && f.Placement == windows.Placed {
		at = e.Time
	}
	r.Fate = &Fate{Placement: f.Placement.String(), At: rfc3339(at), Now: rfc3339(f.Now), Folded: f.Folded, Memory: f.Memory}
}

// raw is value i of the values before rewrites (parser.RuleResult.Raw), nil for one no
// rewrite changed.
func raw(values [][]byte, i int) *string {
	if i >= len(values) || values[i] == nil {
		return nil
	}
	s := string(values[i])
	return &s
}

func noMatch(cr *config.Rule, res *parser.RuleResult, line []byte) *NoMatch {
	m := &NoMatch{Regex: cr.Expanded}
	f, p := cr.LogFormat, res.Prefix
	if cr.Candidates != nil {
		// The line fits none of its input's: it is told by the one it fits the farthest.
		for _, c := range res.Candidates {
			m.Candidates = append(m.Candidates, c.Describe())
		}
		if f = res.Format; f != nil {
			m.Regex = f.Regex
		}
	}
	if p == nil {
		return m
	}
	m.Start, m.End, m.Expected, m.Inside, m.Truncated = p.Start, p.End, p.Expected, p.Open, p.Truncated
	m.Read, _ = display(line[p.Start:p.End])
	if p.End < len(line) {
		_, w := utf8.DecodeRune(line[p.End:])
		m.Found = strconv.Quote(string(line[p.End : p.End+w]))
	}
	m.Captures = captures(p.Captures)
	if f != nil {
		m.LogFormat = f.Describe()
		if p.Words != "" {
			m.Words = f.Var(p.Words)
		}
		switch {
		case m.Inside != "":
			m.In = f.Var(m.Inside)
			// A value may also end where the line stopped: the text after it was as
			// much expected.
			if next := f.Next(m.Inside); next != "" {
				r, _ := utf8.DecodeRuneInString(next)
				if slices.Contains(m.Expected, strconv.QuoteRune(r)) {
					m.After = m.In
				}
			}
		case len(p.Captures) > 0:
			m.After = f.Var(p.Captures[len(p.Captures)-1].Name)
		}
	}
	return m
}

// dropInfo is what a rule's drop read: its value's capture, or its timestamp's, which
// for a rule timed by its wrapper (cri_time) is the line's wrapperTime.
func dropInfo(cr *config.Rule, res *parser.RuleResult, wrapperTime []byte) *DropInfo {
	if res.Drop != parser.BadTimestamp {
		return &DropInfo{Capture: cr.ValueName, Value: captureText(res.Captures, cr.ValueName)}
	}
	ts := cr.Timestamp
	// A rule reading candidate formats reads a line's time as its variant for the line's
	// format does, whose layout is that format's.
	if k := slices.Index(cr.Candidates, res.Format); k >= 0 && res.Format != nil && cr.Variants[k] != nil {
		ts = cr.Variants[k].Timestamp
	}
	d := &DropInfo{Capture: ts.CaptureName}
	if ts.Layout != "" {
		// The layout the time was read with, which reads more than the one written.
		d.Layout = ts.ReadLayout()
	}
	raw := wrapperTime
	if ts.Capture != config.WrapperTime {
		raw = captureBytes(res.Captures, ts.CaptureName)
	}
	d.Value, _ = display(raw)
	if ze := parser.UnknownZone(ts, raw); ze != nil {
		d.Zone, d.Location = ze.Abbreviation, ze.Location.String()
	}
	return d
}

func captures(cs []parser.Capture) []Capture {
	var out []Capture
	for _, c := range cs {
		v, esc := display(c.Value)
		out = append(out, Capture{Name: c.Name, Value: v, Escaped: esc, Unset: !c.Matched})
	}
	return out
}

func captureText(cs []parser.Capture, name string) string {
	v, _ := display(captureBytes(cs, name))
	return v
}

func captureBytes(cs []parser.Capture, name string) []byte {
	for _, c := range cs {
		if c.Name == name {
			return c.Value
		}
	}
	return nil
}

// TooLongLine is the explanation of a line of input longer than the input takes, which
// it skips before any rule reads it.
func TooLongLine(input string, line []byte) Line {
	out := Line{Input: input, TooLong: true}
	out.Text, out.Escaped = display(line)
	return out
}

// SetFile sets the line's File (and FileEscaped) to path, as a name is shown (Display).
func (l *Line) SetFile(path string) { l.File, l.FileEscaped = displayName(path) }

// Display is the file name s as an explanation, the one-shots' summaries and their errors
// show it: as DisplayText shows a text, and Go-quoted also when it holds ": ", which ends a
// name wherever one is shown (`line 3 of NAME: text`, `replay NAME: error`), and would
// read as a shorter name and a text of the exporter's after it, or is "...", which reads
// as the mark of names left out of a list. Whoever can write in a glob's directory names
// its files. A name shown among others is Go-quoted also when it holds one of seps, the
// texts that part them where it is shown (", " between names): as it is, it would read
// as two.
func Display(s string, seps ...string) string {
	d, _ := displayName(s, seps...)
	return d
}

// displayName is Display, and whether the name is Go-quoted.
func displayName(s string, seps ...string) (string, bool) {
	if strings.Contains(s, ": ") || s == "..." || slices.ContainsFunc(seps, func(sep string) bool { return sep != "" && strings.Contains(s, sep) }) {
		return strconv.Quote(s), true
	}
	return displayText(s)
}

// DisplayText is s, a text that names files (an error's), as display shows a text, and
// Go-quoted also when it opens with a double quote, so that what is shown unquoted is
// the text as it is: whoever can write in a glob's directory could otherwise name a file
// as the quoted name of another shows.
func DisplayText(s string) string {
	d, _ := displayText(s)
	return d
}

// displayText is DisplayText, and whether the text is Go-quoted.
func displayText(s string) (string, bool) {
	if strings.HasPrefix(s, `"`) {
		return strconv.Quote(s), true
	}
	return display([]byte(s))
}

// display returns b as it is when it is valid UTF-8 of graphic characters alone, else
// Go-quoted (escaped true): invalid bytes as \xNN, control characters as \n, \x1b,
// formatting ones as \ufeff, line separators as \u2028, ... So what a terminal (stderr's
// escaping) or a page shows of a text as it is, is the text.
func display(b []byte) (string, bool) {
	if utf8.Valid(b) {
		clean := true
		for _, r := range string(b) {
			// A formatting character shows as nothing (U+FEFF) or moves what follows
			// (U+202E), a separator (U+2028) breaks the line or shows escaped:
			// each would hide or forge what the explanation is about.
			if !unicode.IsGraphic(r) || r == utf8.RuneError {
				clean = false
				break
			}
		}
		if clean {
			return string(b), false
		}
	}
	return strconv.Quote(string(b)), true
}

func rfc3339(sec int64) string {
	return time.Unix(sec, 0).UTC().Format(time.RFC3339)
}
