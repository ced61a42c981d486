package config

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
)

// pathCaptures decodes a file input's `path_captures:`, a regex over the path of the file
// a line was read from whose named groups are captures of every line of that file; nil
// when it is not valid. wrapper is the input's, whose captures the regex must not name.
func (d *decoder) pathCaptures(e entry, subject, wrapper string) *regexp.Regexp {
	text, ok := d.scalar(e, subject, "path_captures")
	switch {
	case !ok:
		return nil
	case text == "":
		d.add(e.key.Line, subject, "path_captures: is empty; give a regex with named groups, e.g. '^/var/log/pods/(?P<namespace>[^_]+)_(?P<pod>[^_]+)_'")
		return nil
	}
	re, ok := d.compile(e.key.Line, subject, "path_captures", text)
	if !ok {
		return nil
	}
	var names []string
	seen := map[string]bool{}
	for _, name := range re.SubexpNames() {
		switch {
		case name == "":
		case seen[name]:
			d.add(e.key.Line, subject, "path_captures: capture %q is defined twice in the regex; rename one", name)
			return nil
		case name == CRITimeCapture && wrapper == WrapperCRI:
			d.add(e.key.Line, subject, "path_captures: %s is the time of a CRI line; name the capture otherwise", name)
			return nil
		case name == StreamCapture && wrapper == WrapperCRI:
			d.add(e.key.Line, subject, "path_captures: %s is the stream of a CRI line (stdout, stderr), which rules read as a capture already; name the capture otherwise", name)
			return nil
		default:
			names = append(names, name)
		}
		seen[name] = true
	}
	if len(names) == 0 {
		d.add(e.key.Line, subject, "path_captures: the regex has no named group; name the parts of the path to capture with (?P<name>...)")
		return nil
	}
	return re
}

// PathCaptureNames are the names of the captures the input gives every line of a source:
// its path captures, in the regex's order, then its InputCaptureNames.
func (in Input) PathCaptureNames() []string {
	return append(in.pathRegexNames(), in.InputCaptureNames()...)
}

// pathRegexNames are the names of the groups of the input's path_captures, in the regex's
// order; nil without path_captures.
func (in Input) pathRegexNames() []string {
	if in.File == nil || in.File.PathCaptures == nil {
		return nil
	}
	var out []string
	for _, name := range in.File.PathCaptures.SubexpNames() {
		if name != "" {
			out = append(out, name)
		}
	}
	return out
}

// pathCapture returns the index a rule reads the path capture name at, the rule taking it
// in, or -1 when no input has a path capture of that name. Which inputs the rule reads is
// known only later: checkPathCaptures then checks that each of them has it.
func (rd *ruleDecoder) pathCapture(name string) int {
	if !slices.ContainsFunc(rd.allInputs, func(in Input) bool { return slices.Contains(in.PathCaptureNames(), name) }) {
		return -1
	}
	j := slices.Index(rd.paths, name)
	if j < 0 {
		j = len(rd.paths)
		rd.paths = append(rd.paths, name)
	}
	return len(rd.caps.names) + j
}

// pathCaptureNames lists every input's path captures, for messages.
func (rd *ruleDecoder) pathCaptureNames() []string {
	var out []string
	for _, in := range rd.allInputs {
		for _, name := range in.PathCaptureNames() {
			if !slices.Contains(out, name) {
				out = append(out, name)
			}
		}
	}
	return out
}

// checkPathCaptures checks the path captures against the inputs the rule reads (every
// input without inputs:): each of them must have every path capture the rule names, so
// that no line reads one as empty for want of it, and none may have a path capture named
// as a capture of the line, which would make the name mean two things.
func (rd *ruleDecoder) checkPathCaptures(r *Rule, line int) {
	r.PathCaptures = rd.paths
	for _, in := range rd.allInputs {
		if !r.Reads(in) {
			continue
		}
		have := in.PathCaptureNames()
		label := strconv.Quote(in.Label())
		for _, name := range rd.paths {
			if slices.Contains(have, name) {
				continue
			}
			advice := "restrict the rule to the inputs that have it (inputs: [...])"
			if in.Name == "" {
				advice = "name the inputs that have it and restrict the rule to them (inputs: [...])"
			}
			rd.add(line, rd.subject, "capture %q is a path capture of another input, but not of input %s, which the rule reads; %s", name, label, advice)
		}
		if rd.caps == nil {
			continue
		}
		// An input's own captures (InputCaptureNames) give way to the line's.
		for _, name := range in.pathRegexNames() {
			if rd.caps.index(name) >= 0 {
				source := "a group of the match regex"
				switch {
				case rd.caps.format != nil:
					source = fmt.Sprintf("a variable of the log format %q", rd.caps.format.Describe())
				case rd.caps.candidates:
					source = "a capture of the candidate log formats"
				case rd.caps.fields:
					source = "a capture of fields"
				}
				rd.add(line, rd.subject, "capture %q is both %s and a path capture of input %s, which the rule reads; rename one", name, source, label)
			}
		}
	}
}
