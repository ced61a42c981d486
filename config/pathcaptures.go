package config

import (
	"regexp"
	"slices"
	"strconv"
)

// pathCaptures decodes an input's `path_captures:`, a regex over the path of the file a
// line was read from whose named groups are captures of every line of that file.
func (d *decoder) pathCaptures(e entry, subject string, in *Input) {
	text, ok := d.scalar(e, subject, "path_captures")
	switch {
	case !ok:
		return
	case in.Path == "":
		d.add(e.key.Line, subject, "path_captures: applies to files; a socket's lines come from no path")
		return
	case text == "":
		d.add(e.key.Line, subject, "path_captures: is empty; give a regex with named groups, e.g. '^/var/log/pods/(?P<namespace>[^_]+)_(?P<pod>[^_]+)_'")
		return
	}
	re, err := regexp.Compile(text)
	if err != nil {
		d.add(e.key.Line, subject, "path_captures: invalid regex: %s", regexError(err))
		return
	}
	var names []string
	for _, name := range re.SubexpNames() {
		switch {
		case name == "":
		case slices.Contains(names, name):
			d.add(e.key.Line, subject, "path_captures: capture %q is defined twice in the regex; rename one", name)
			return
		case name == CRITimeCapture && in.Wrapper == WrapperCRI:
			d.add(e.key.Line, subject, "path_captures: %s is the time of a CRI line; name the capture otherwise", name)
			return
		default:
			names = append(names, name)
		}
	}
	if len(names) == 0 {
		d.add(e.key.Line, subject, "path_captures: the regex has no named group; name the parts of the path to capture with (?P<name>...)")
		return
	}
	in.PathCaptures = re
}

// PathCaptureNames are the names of the input's path captures, in the regex's order; nil
// without path_captures.
func (in Input) PathCaptureNames() []string {
	if in.PathCaptures == nil {
		return nil
	}
	var out []string
	for _, name := range in.PathCaptures.SubexpNames() {
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
		if r.Inputs != nil && !slices.Contains(r.Inputs, in.Name) {
			continue
		}
		have := in.PathCaptureNames()
		label := labelOfInput(in)
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
		for _, name := range have {
			if rd.caps.index(name) >= 0 {
				source := "a group of the match regex"
				if rd.caps.fields {
					source = "a capture of fields"
				}
				rd.add(line, rd.subject, "capture %q is both %s and a path capture of input %s, which the rule reads; rename one", name, source, label)
			}
		}
	}
}

// labelOfInput names an input in messages: by its name, else by its path.
func labelOfInput(in Input) string {
	if in.Name != "" {
		return strconv.Quote(in.Name)
	}
	return strconv.Quote(in.Source())
}
