package logformat

import (
	"slices"
	"strings"
)

// Auto is what `log_format: auto` stands for: the formats the exporter tells apart by
// their lines, most specific first (a tie between candidates that fit alike goes to the
// earlier one). The nginx formats come before Apache's, whose combined has nginx
// combined's shape.
var Auto = []string{
	"upstreaminfo",
	"main_upstream_time", "main_request_time", "main",
	"combined_upstream_time", "combined_request_time", "combined",
	JSONObject,
	"apache_combined", "apache_common",
}

// JSONObject is the candidate that reads a line holding one JSON object, each of its
// members a capture named after its key (what nginx writes with an escape=json template
// whose keys are its variables' names).
const JSONObject = "json"

// apachePrefix names an Apache preset in a list of candidates, where nginx's and Apache's
// combined would otherwise share a name.
const apachePrefix = "apache_"

// ParseCandidate compiles one candidate of a list of formats: a preset of nginx, one of
// Apache prefixed with apache_ (apache_combined), JSONObject, or a format string: an nginx
// log_format directive as pasted from nginx.conf, an nginx JSON object template ({...}), an
// nginx format ($variables), else an Apache one (%directives).
func ParseCandidate(text string) (*Format, error) {
	// Whitespace around a candidate is never part of it, a preset's name included.
	t := strings.TrimSpace(text)
	switch {
	case t == JSONObject:
		return &Format{Server: Nginx, Preset: JSONObject, Escape: EscapeJSON}, nil
	case strings.HasPrefix(t, apachePrefix) && ApachePresets[strings.TrimPrefix(t, apachePrefix)] != "":
		f, err := ParseApache(strings.TrimPrefix(t, apachePrefix))
		if f != nil {
			f.Preset = t
		}
		return f, err
	case strings.HasPrefix(t, "{") && strings.HasSuffix(t, "}"),
		NginxPresets[t] != "" || strings.Contains(text, "$") || !strings.Contains(text, "%"):
		// As a single format is read: a pasted directive says its escaping, a JSON
		// template without one reads both of nginx's.
		return ParseNginxValue(text, EscapeDefault, false)
	}
	return ParseApache(text)
}

// SameLines reports whether two text formats fit the same lines alike: the same pieces,
// of the same escaping, whose values are numbers in the same places, whatever their
// variables are named. Of two such candidates the one listed first is chosen for every
// file (choose), so the other reads nothing.
func (f *Format) SameLines(g *Format) bool {
	if f.JSON() || g.JSON() || f.Escape != g.Escape || len(f.Pieces) != len(g.Pieces) {
		return false
	}
	for i, p := range f.Pieces {
		q := g.Pieces[i]
		if p.Kind != q.Kind || p.Lit != q.Lit || p.Stop != q.Stop || p.Optional != q.Optional || p.Spaces != q.Spaces || p.Pattern != q.Pattern || (p.Group == 0) != (q.Group == 0) {
			return false
		}
		if p.Kind != PieceLiteral && p.Group > 0 && f.Numeric(f.Captures[p.Group-1].Name) != g.Numeric(g.Captures[q.Group-1].Name) {
			return false
		}
	}
	return true
}

// CandidatePresets are the names a list of candidates may give instead of a format
// string, sorted as Auto.
func CandidatePresets() []string {
	out := append([]string(nil), Auto...)
	for name := range NginxPresets {
		if !slices.Contains(out, name) {
			out = append(out, name)
		}
	}
	return out
}

// AnyObject reports whether the format is JSONObject: its captures are whatever keys a
// line's object has, so it gives every capture a rule may name.
func (f *Format) AnyObject() bool {
	return f.Preset == JSONObject && f.Regex == "" && len(f.Fields) == 0
}

// ID identifies the format among candidates: equal formats (Equal) have equal IDs.
func (f *Format) ID() string {
	if f.AnyObject() {
		return JSONObject
	}
	return f.Key() + "\x00" + f.Escape.String() + "\x00" + f.Text
}

// TimeOfName is Time for a capture of JSONObject, whose captures are keys named after
// nginx's variables: its time variables read as they do in a text format.
func TimeOfName(capture string) (layout string, unix, ok bool) {
	f := &Format{Server: Nginx, Fields: []Field{{Name: capture, Var: "$" + capture}}}
	return f.Time(capture)
}

// DerivedFrom is the derived capture name would be of a format whose captures are named
// after nginx's variables (a JSONObject line's keys): its kind and source, ok false for a
// name that is not a derived capture's.
func DerivedFrom(name string) (Derived, bool) {
	for k, n := range derivedNames {
		if n != name {
			continue
		}
		from := "request"
		if DeriveKind(k) == StatusClass {
			from = "status"
		}
		return Derived{Name: name, From: from, Kind: DeriveKind(k)}, true
	}
	return Derived{}, false
}

// numericNginx are nginx's variables whose values are numbers (or lists of them, or "-"
// for an upstream not reached).
var numericNginx = []string{"status", "request_time", "body_bytes_sent", "bytes_sent", "request_length", "msec",
	"upstream_response_time", "upstream_connect_time", "upstream_header_time", "upstream_status",
	"upstream_response_length", "upstream_bytes_received", "upstream_bytes_sent"}

// numericApache are the letters of mod_log_config's directives that write numbers, by
// which a capture is numeric whatever it is named (s, s_original, T_ms).
const numericApache = "sbBDTIOS"

// Numeric reports whether the server writes capture as a number (a list of numbers for
// an upstream variable, "-" for none), which tells lines of formats of one shape apart
// (a quoted header where a time would be).
func (f *Format) Numeric(capture string) bool {
	if f.Server == Apache {
		// A directive ends with its letter (%{ms}T, %>s); ^ti and ^to write text, and
		// ^FB, a number, ends with B as %B does.
		i := slices.IndexFunc(f.Captures, func(c Capture) bool { return c.Name == capture })
		return i >= 0 && strings.IndexByte(numericApache, f.Captures[i].Var[len(f.Captures[i].Var)-1]) >= 0
	}
	return slices.Contains(numericNginx, capture)
}
