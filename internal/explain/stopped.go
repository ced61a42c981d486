package explain

import (
	"fmt"
	"strings"
)

// Stopped says in a few words where a line no rule matched stopped fitting the rules of
// its input: the log format's variable and byte, the regex's byte and what it expected,
// or the structured format the line is not in. A log format's rule is preferred, as the
// format is what the input's lines are written in.
func (l *Line) Stopped() string {
	var miss, malformed *Rule
	// A line of a candidate format that lacks what every rule reading it needs is read by
	// none: it is of the input's formats, and that is what the rules lack. A line that
	// does not fit its file's format (a rule of it missed) is of none: where it stops
	// fitting is said below.
	var lacking []string
	format, missed := "", false
	for _, r := range l.Rules {
		missed = missed || r.Miss != nil && r.Miss.Candidates != nil
		if r.Outcome == "other_format" {
			format = r.Format
			if len(r.Lacks) > 0 {
				lacking = append(lacking, fmt.Sprintf("no %s (rule %s)", strings.Join(r.Lacks, ", "), r.Name))
			}
		}
	}
	if format != "" && !missed {
		if len(lacking) == 0 {
			return fmt.Sprintf("the line is of the log format %s, to which no rule applies", format)
		}
		return fmt.Sprintf("the line is of the log format %s, to which no rule applies: it has %s", format, strings.Join(lacking, ", "))
	}
	for i := range l.Rules {
		r := &l.Rules[i]
		switch {
		case r.Miss != nil && r.Miss.Candidates != nil && r.Miss.LogFormat == "":
			return "the line fits none of the log formats " + strings.Join(r.Miss.Candidates, ", ")
		case r.Miss != nil && r.Miss.Candidates != nil:
			return fmt.Sprintf("the line fits none of the log formats %s; %s, which it fits the farthest, at byte %d, %s, expects %s, but the line has %s",
				strings.Join(r.Miss.Candidates, ", "), r.Miss.LogFormat, r.Miss.End, misfitWhere(r.Miss), expected(r.Miss), found(r.Miss))
		case r.Miss != nil && r.Miss.Words != "":
			return pastTries(r.Miss)
		case r.Miss != nil && r.Miss.LogFormat != "":
			return fmt.Sprintf("at byte %d, %s, the log format expects %s, but the line has %s", r.Miss.End, misfitWhere(r.Miss), expected(r.Miss), found(r.Miss))
		case r.Miss != nil && miss == nil:
			miss = r
		case r.Outcome == "malformed" && malformed == nil:
			malformed = r
		}
	}
	switch {
	case miss != nil:
		m := miss.Miss
		return fmt.Sprintf("rule %s's regex reads up to byte %d, then expects %s, but the line has %s", miss.Name, m.End, expected(m), found(m))
	case malformed != nil:
		return fmt.Sprintf("the line is not %s (rule %s)", malformed.Format, malformed.Name)
	}
	return "no rule reads this input"
}

// misfitWhere is where in a log format the line stopped fitting it: in the variable it
// was reading, or in the text after one.
func misfitWhere(m *NoMatch) string {
	switch {
	case m.In != "" && m.After != "":
		return "in " + m.In + " or the text after it"
	case m.In != "":
		return "in " + m.In
	case m.After != "":
		return "in the text after " + m.After
	}
	return "at the start of the format"
}

// pastTries says why a line that would fit with its value of words ending later does not.
func pastTries(m *NoMatch) string {
	return fmt.Sprintf("the line would fit the log format with %s ending at a later space than the 16 tried, which only a client's crafted value needs; it is not read so", m.Words)
}

func expected(m *NoMatch) string {
	if len(m.Expected) == 0 {
		return "nothing more"
	}
	return strings.Join(m.Expected, " or ")
}

func found(m *NoMatch) string {
	if m.Found == "" {
		return "the end of the line"
	}
	return m.Found
}
