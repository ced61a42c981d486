package explain

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// Formats are the values of --explain.format.
var Formats = []string{"text", "json"}

// Write writes lines to w in format ("text" or "json": one JSON object per line).
func Write(w io.Writer, format string, lines []Line) error {
	switch format {
	case "json":
		enc := json.NewEncoder(w)
		enc.SetEscapeHTML(false)
		for i := range lines {
			if err := enc.Encode(&lines[i]); err != nil {
				return err
			}
		}
		return nil
	case "text":
		var b strings.Builder
		for i := range lines {
			b.Reset()
			writeText(&b, &lines[i])
			if _, err := io.WriteString(w, b.String()); err != nil {
				return err
			}
		}
		return nil
	}
	return fmt.Errorf("unknown format %q (have: %s)", format, strings.Join(Formats, ", "))
}

func writeText(b *strings.Builder, l *Line) {
	if l.Number > 0 {
		fmt.Fprintf(b, "line %d", l.Number)
	} else {
		b.WriteString("line")
	}
	if l.File != "" {
		fmt.Fprintf(b, " of %s", l.File) // as SetFile shows it: a newline would forge a line
	}
	if l.Input != "" {
		fmt.Fprintf(b, " (input %s)", l.Input)
	}
	fmt.Fprintf(b, ": %s\n", l.Text)
	switch {
	case l.TooLong:
		b.WriteString("  SKIPPED: longer than --input.max-line-bytes, its input skips it and no rule reads it\n")
	case l.Unmatched:
		b.WriteString("  UNMATCHED: no rule matches this line\n")
	case !l.Counted:
		b.WriteString("  NOT COUNTED: regexes match, but no rule counts this line\n")
	}
	// Rules sharing a regex share their captures: each set is shown once, under the first.
	shown := map[string]bool{}
	for i := range l.Rules {
		writeRule(b, &l.Rules[i], shown)
	}
	b.WriteByte('\n')
}

func writeRule(b *strings.Builder, r *Rule, shown map[string]bool) {
	switch r.Outcome {
	case "counted":
		fmt.Fprintf(b, "  + %s%s", r.Name, labelText(r.Labels))
		if r.Top != nil {
			fmt.Fprintf(b, " top %s", labelText([]Label{*r.Top}))
		}
		if r.Distinct != nil {
			fmt.Fprintf(b, " distinct %q", *r.Distinct)
		}
		if r.Value != nil {
			fmt.Fprintf(b, " value %s", strconv.FormatFloat(*r.Value, 'g', -1, 64))
		}
		if r.Time != "" {
			fmt.Fprintf(b, " time %s", r.Time)
		}
		if note := r.RepeatedNote(); note != "" {
			fmt.Fprintf(b, " (%s)", note)
		}
		f := r.Fate
		switch f.Placement {
		case "late":
			fmt.Fprintf(b, ": LATE, older than every window at %s; counted in _total only", f.Now)
		case "future":
			fmt.Fprintf(b, ": FUTURE, ahead of the clock (%s); placed at %s", f.Now, f.At)
		default:
			fmt.Fprintf(b, ": placed at %s", f.At)
		}
		switch {
		case f.Memory:
			b.WriteString("; FOLDED into the __overflow__ series (--series.max-bytes reached)")
		case f.Folded:
			b.WriteString("; FOLDED into the __overflow__ series (max_series_per_rule reached)")
		}
		b.WriteByte('\n')
		writeCaptures(b, "captures", r.Captures, shown)
	case "other_input":
		fmt.Fprintf(b, "  - %s: reads other inputs only\n", r.Name)
	case "no_match":
		m := r.Miss
		switch {
		case m.SameAs != "" && m.Candidates != nil:
			fmt.Fprintf(b, "  - %s: the line fits none of the log formats (the same as %s's)\n", r.Name, m.SameAs)
			return
		case m.SameAs != "" && m.LogFormat != "":
			fmt.Fprintf(b, "  - %s: the line does not fit the log format (the same as %s's)\n", r.Name, m.SameAs)
			return
		case m.SameAs != "":
			fmt.Fprintf(b, "  - %s: regex does not match (the same as %s's)\n", r.Name, m.SameAs)
			return
		}
		if m.Candidates != nil {
			fmt.Fprintf(b, "  - %s: the line fits none of the log formats %s\n", r.Name, strings.Join(m.Candidates, ", "))
			if m.LogFormat == "" {
				return
			}
			fmt.Fprintf(b, "      it fits %s the farthest:\n", m.LogFormat)
			writeMisfitAt(b, m)
			writeCaptures(b, "captures read", m.Captures, shown)
			return
		}
		if m.LogFormat != "" {
			writeMisfit(b, r.Name, m)
			writeCaptures(b, "captures read", m.Captures, shown)
			return
		}
		fmt.Fprintf(b, "  - %s: regex does not match\n", r.Name)
		fmt.Fprintf(b, "      regex: %s\n", m.Regex)
		if m.End > m.Start {
			fmt.Fprintf(b, "      it reads bytes %d-%d: %s\n", m.Start, m.End, m.Read)
		} else {
			fmt.Fprintf(b, "      it reads nothing of the line from byte %d\n", m.Start)
		}
		fmt.Fprintf(b, "      then at byte %d expects %s, but the line has %s", m.End, strings.Join(m.Expected, " or "), found(m))
		if m.Inside != "" {
			fmt.Fprintf(b, " (inside capture %s)", m.Inside)
		}
		b.WriteByte('\n')
		if m.Truncated {
			b.WriteString("      (only the line's first 64 KiB were followed)\n")
		}
		writeCaptures(b, "captures read", m.Captures, shown)
	case "where":
		fmt.Fprintf(b, "  - %s: where %s: %s does not match %s\n", r.Name, r.Filter.Capture, strconv.Quote(r.Filter.Value), r.Filter.Regex)
		writeCaptures(b, "captures", r.Captures, shown)
	case "where_not":
		fmt.Fprintf(b, "  - %s: where_not %s: %s matches %s\n", r.Name, r.Filter.Capture, strconv.Quote(r.Filter.Value), r.Filter.Regex)
		writeCaptures(b, "captures", r.Captures, shown)
	case "malformed":
		fmt.Fprintf(b, "  - %s: the line is not %s\n", r.Name, r.Format)
	case "other_format":
		fmt.Fprintf(b, "  - %s: does not apply to the line's log format, %s", r.Name, r.Format)
		if len(r.Lacks) > 0 {
			fmt.Fprintf(b, ", which has no %s", strings.Join(r.Lacks, ", "))
		}
		b.WriteByte('\n')
	default:
		fmt.Fprintf(b, "  - %s: dropped, %s: %s %s", r.Name, strings.ReplaceAll(r.Outcome, "_", " "), r.Drop.Capture, strconv.Quote(r.Drop.Value))
		switch {
		case r.Drop.Zone != "":
			fmt.Fprintf(b, ": its zone %s is none of %s's abbreviations, whose offset is unknown (name the zone that writes it in timestamp: location)", strconv.Quote(r.Drop.Zone), r.Drop.Location)
		case r.Drop.Layout != "":
			fmt.Fprintf(b, " does not parse with layout %s", strconv.Quote(r.Drop.Layout))
		}
		b.WriteByte('\n')
		writeCaptures(b, "captures", r.Captures, shown)
	}
}

// RepeatedNote words Repeated, "" when the line's time is not in an hour its zone
// repeats.
func (r Rule) RepeatedNote() string {
	if r.Repeated == "" {
		return ""
	}
	return fmt.Sprintf("of the hour %s repeats; also %s: read here as a replay reads it, nearer the line before, else the later; the running exporter reads a line with none within 5 minutes before it nearer its clock", r.Zone, r.Repeated)
}

func labelText(ls []Label) string {
	if len(ls) == 0 {
		return ""
	}
	parts := make([]string, len(ls))
	for i, l := range ls {
		parts[i] = l.Name + "=" + strconv.Quote(l.Value)
		if l.Raw != nil {
			parts[i] += " (rewritten from " + strconv.Quote(*l.Raw) + ")"
		}
	}
	return "{" + strings.Join(parts, ", ") + "}"
}

// writeCaptures writes a set of captures unless an earlier rule of the line showed it.
func writeCaptures(b *strings.Builder, what string, cs []Capture, shown map[string]bool) {
	if len(cs) == 0 {
		return
	}
	var line strings.Builder
	fmt.Fprintf(&line, "      %s:", what)
	for _, c := range cs {
		switch {
		case c.Unset:
			fmt.Fprintf(&line, " %s=(unset)", c.Name)
		case c.Escaped:
			fmt.Fprintf(&line, " %s=%s", c.Name, c.Value)
		default:
			fmt.Fprintf(&line, " %s=%s", c.Name, strconv.Quote(c.Value))
		}
	}
	if s := line.String(); !shown[s] {
		shown[s] = true
		b.WriteString(s)
		b.WriteByte('\n')
	}
}

// writeMisfit writes where a line stopped fitting a rule's log format, in the format's
// terms: the variable it was reading, or the one whose following text it was reading.
func writeMisfit(b *strings.Builder, rule string, m *NoMatch) {
	fmt.Fprintf(b, "  - %s: the line does not fit the log format\n", rule)
	fmt.Fprintf(b, "      log format: %s\n", m.LogFormat)
	writeMisfitAt(b, m)
}

// writeMisfitAt writes how far the line fits a log format, and what it expected there.
func writeMisfitAt(b *strings.Builder, m *NoMatch) {
	if m.End > m.Start {
		fmt.Fprintf(b, "      it fits bytes %d-%d: %s\n", m.Start, m.End, m.Read)
	}
	fmt.Fprintf(b, "      then at byte %d, %s, it expects %s, but the line has %s\n", m.End, misfitWhere(m), strings.Join(m.Expected, " or "), found(m))
	if m.Words != "" {
		fmt.Fprintf(b, "      (%s)\n", pastTries(m))
	}
	if m.Truncated {
		b.WriteString("      (only the line's first 64 KiB were followed)\n")
	}
}
