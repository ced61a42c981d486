// Package config loads and validates the exporter's YAML rule file into data: regexes and
// templates compiled, every name and window checked, every error found at once with its
// file and line. It builds nothing that runs (the store sizes the wheels from a rule's
// quantity.Spec).
//
// A loaded *Config is immutable: a reload builds a new one and the caller swaps it in only
// when Load returned no error, so a bad file never changes what is running.
package config

import (
	"io/fs"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/prometheus/common/model"

	"github.com/logwindow/logwindow_exporter/config/logformat"
	"github.com/logwindow/logwindow_exporter/config/quantity"
)

// Config is one validated, compiled rule file.
type Config struct {
	// File is the path the config was loaded from; errors and logs name it.
	File     string
	Global   Global
	Inputs   []Input
	Patterns map[string]string
	Rules    []*Rule
	// warned are the warnings found while decoding, for Warnings.
	warned []Problem
}

// Global holds the defaults every rule inherits.
type Global struct {
	// Windows are the default windows, sorted ascending, without duplicates.
	Windows []time.Duration
	// WindowNames are Windows as the user wrote them ("90s" stays "90s"), in the same
	// order: the `window` label values.
	WindowNames []string
	// MaxSeriesPerRule bounds the label sets one rule may hold before folding into overflow.
	MaxSeriesPerRule int
	// CounterTTL is how long a label set's `_total` is kept after its last line once its
	// windows are released; 0 keeps it while the process lives.
	CounterTTL time.Duration
}

// Input is one source of lines: the keys every kind of input takes, and its kind's own in
// the one of File and Syslog that is set (the loader sets exactly one). In the file all
// are written at one level, the key that makes the kind (path:, syslog:) beside the rest.
type Input struct {
	// Name is optional; rules may restrict themselves to named inputs.
	Name string
	// Format is how the input's lines are structured; fields rules read only inputs of a
	// structured format.
	Format Format
	// LogFormat is the web server's format its lines are written in (log_format:,
	// apache_log_format:), nil without one; a JSON template makes Format FormatJSON.
	LogFormat *logformat.Format
	// LogFormats are the candidates of a log_format: list (or auto): each file's lines are
	// read by the one they fit (see the parser's Session); nil for an input of one format.
	LogFormats []*logformat.Format
	// Wrapper is how each line is wrapped around what rules see: "" or "cri".
	Wrapper string
	// Streams are the streams of a wrapper: cri input's lines it reads (streams:); zero
	// reads both.
	Streams Streams
	// File is set for an input following a file or glob (path:).
	File *FileInput
	// Syslog is set for an input receiving datagrams on a socket (syslog:).
	Syslog *SyslogInput
}

// The kinds of input, as Input.Kind names them.
const (
	KindFile   = "file"
	KindSyslog = "syslog"
)

// FileInput is what a file input (path:) has of its own.
type FileInput struct {
	// Path is the file or glob.
	Path    string
	StartAt StartAt
	// PathCaptures is a regex over the path of the file a line was read from: its named
	// groups are captures of every line of that file; nil without.
	PathCaptures *regexp.Regexp
	// Shards, for a glob, is how many followers share its files, each reading the
	// directories dealt to it, so that the files of many pods are parsed on several
	// cores; for a file path, how many parse workers share its lines, so that one busy
	// file is parsed on several cores. 0 (not set) is one.
	Shards int
}

// IsGlob reports whether the input's path is a glob (see IsGlob).
func (f *FileInput) IsGlob() bool { return IsGlob(f.Path) }

// IsGlob reports whether path is a glob: has a metacharacter of filepath.Match. The
// pipeline (followers or parse workers) and the follower (a glob's scans or one file)
// decide by it alike.
func IsGlob(path string) bool { return strings.ContainsAny(path, `*?[\`) }

// SyslogInput is what a syslog input (syslog:) has of its own.
type SyslogInput struct {
	// Address is the socket address as written (unixgram:///path or udp://host:port);
	// Socket is it parsed.
	Address string
	Socket  SocketAddress
	// SocketMode is the mode of a unixgram socket file; 0 means the syslog package's
	// default.
	SocketMode fs.FileMode
}

// Kind names the input's kind (KindFile, KindSyslog), by which the pipeline runs it; ""
// for an Input the loader did not make.
func (in Input) Kind() string {
	switch {
	case in.File != nil:
		return KindFile
	case in.Syslog != nil:
		return KindSyslog
	}
	return ""
}

// Source identifies the input: its path, or its syslog address. Config refuses two inputs
// with one source, so it is also the identity of an input across reloads.
func (in Input) Source() string {
	switch {
	case in.File != nil:
		return in.File.Path
	case in.Syslog != nil:
		return in.Syslog.Address
	}
	return ""
}

// Label names the input in the input label of its self-metrics, in logs and in messages:
// its name, or its source when it has none.
func (in Input) Label() string {
	if in.Name != "" {
		return in.Name
	}
	return in.Source()
}

// StartAt says where reading a file that exists at start begins.
type StartAt int

const (
	// StartAtEnd skips what the file holds at start (the default, like tail -F).
	StartAtEnd StartAt = iota
	// StartAtBeginning reads the file from offset 0, to rebuild windows from history.
	StartAtBeginning
)

// WrapperCRI is the wrapper of Kubernetes container logs; CRITimeCapture is the capture
// holding such a line's own time, for timestamp: on rules reading only CRI inputs.
const (
	WrapperCRI     = "cri"
	CRITimeCapture = "cri_time"
)

// WrapperTime is the Timestamp.Capture of a rule that takes its time from the line's
// wrapper (cri_time) rather than from a capture of the message.
const WrapperTime = -2

// Format is the structure of an input's lines.
type Format int

const (
	// FormatText lines are read by match regexes only (the default).
	FormatText Format = iota
	// FormatJSON lines are one JSON object each.
	FormatJSON
	// FormatLogfmt lines are key=value pairs.
	FormatLogfmt
)

// formatNames are the `format:` values, indexed by Format.
var formatNames = []string{"text", "json", "logfmt"}

// String gives the format as written in the config.
func (f Format) String() string {
	if f < 0 || int(f) >= len(formatNames) {
		return "unknown"
	}
	return formatNames[f]
}

// Rule is one compiled rule: a regex, how its captures become labels and a value, and the
// windows it is kept over.
type Rule struct {
	// Name is the metric base name; families are Name+"_total", Name+"_window", ...
	Name string
	// Match is the regex as written; Expanded is it after %{PATTERN} expansion.
	Match    string
	Expanded string
	Regexp   *regexp.Regexp
	// Labels are sorted by name; each value is rendered from captures.
	Labels []Label
	// Rewrites change label values (a top label's too) before they key a series, in the
	// order written; RewritesOf gives one label's.
	Rewrites []Rewrite
	// Where filters: every capture must match its regex for the line to count.
	Where []Where
	// WhereNot filters: a line whose capture matches one of these regexes does not count.
	WhereNot []Where
	// Fields, for a rule reading structured lines instead of matching a regex (Regexp is
	// then nil): capture i+1 is Fields[i], sorted by capture name; Format is their inputs'.
	Fields []Field
	Format Format
	// LogFormat is set for a rule with neither match: nor fields:, which reads the
	// captures of its inputs' log format: Regexp is the format's (Match is empty), or, for a
	// JSON template, Fields are its variables. Derived are the captures the format computes
	// (a request's method, a status's class), numbered after the regex's groups or the
	// fields.
	LogFormat *logformat.Format
	Derived   []Derived
	// Candidates are set for a rule without match: or fields: that reads an input with
	// candidate log formats (Input.LogFormats): the formats of every input it reads. Its
	// captures are then named by Fields (the names any candidate gives), and Variants[k]
	// is the rule compiled against Candidates[k], nil when that format lacks a capture the
	// rule reads (the rule does not apply to a file of that format).
	Candidates []*logformat.Format
	Variants   []*Rule
	// ValueCapture is the capture index summed per line; -1 for a counting rule.
	ValueCapture int
	// ValueList: the value capture is a list, one number per upstream tried (an nginx
	// upstream variable of the rule's log format), and a line's value is the first: that
	// of the upstream the request went to first.
	ValueList bool
	// Timestamp is nil for processing-time rules.
	Timestamp *Timestamp
	// Windows are sorted ascending, without duplicates; WindowNames are them as written,
	// in the same order.
	Windows     []time.Duration
	WindowNames []string
	// WindowEnd is where the windows end: at the second they are read in, or at the one
	// before (`window_end:`).
	WindowEnd WindowEnd
	// Spec is what the rule computes over its windows (help, value name, aggregations,
	// quantiles, buckets, top values, distinct count), in the table of quantities' terms.
	quantity.Spec
	// Items are texts rendered per line for the summaries that read one: SummaryKind.Item
	// n of the rule's wheels reads Items[n-1] (the text a distinct count counts, the value a
	// top-values summary ranks).
	Items []Item
	// Inputs restricts the rule to these input names; nil means every input.
	Inputs []string
	// Initial are label sets that exist from the start and never expire, each with its
	// values in Labels order.
	Initial [][]string
	// Fingerprint identifies the rule's definition: equal fingerprints across a reload mean
	// the rule's window state can be kept.
	Fingerprint string
	// PathCaptures are the captures the rule reads from the path of a line's file (its
	// inputs' path_captures): capture Captures()+1+i is PathCaptures[i].
	PathCaptures []string
	// Line is the 1-based line of the rule in File, for messages.
	Line int
}

// Longest is the rule's longest window (Windows is sorted ascending and never empty once
// loaded).
func (r *Rule) Longest() time.Duration { return r.Windows[len(r.Windows)-1] }

// WindowName is window i of Windows as its series' window label names it: as written.
func (r *Rule) WindowName(i int) string {
	if len(r.WindowNames) == len(r.Windows) {
		return r.WindowNames[i]
	}
	return model.Duration(r.Windows[i]).String()
}

// IsValueRule reports whether the rule sums a capture rather than counting lines.
func (r *Rule) IsValueRule() bool { return r.ValueCapture >= 0 }

// Reads says whether the rule reads in's lines: it names no inputs, or in's name (an
// input without a name is read only by rules that name none).
func (r *Rule) Reads(in Input) bool {
	return r.Inputs == nil || in.Name != "" && slices.Contains(r.Inputs, in.Name)
}

// Label is one output label and its template over captures.
type Label struct {
	Name     string
	Template Template
}

// Item is a text a rule renders per line for a summary of its windows.
type Item struct {
	Template Template
	// Label: the item is shown as a label value (a top value), so it is rendered as one,
	// valid UTF-8 and capped in length, and equal label values are one item. Otherwise its
	// full bytes are kept, so that no two texts become one by capping.
	Label bool
}

// Template is a label template compiled to alternating literal text and capture references,
// so rendering a value needs no parsing per line.
type Template []TemplatePart

// TemplatePart is either literal text (Capture < 0) or a reference to a capture index.
type TemplatePart struct {
	Literal string
	Capture int
}

// Field is one capture of a fields rule: a logfmt key, or a JSON key with dots for nesting.
type Field struct {
	Capture string
	// Path is the key as written; Segments is it split at the dots.
	Path     string
	Segments []string
}

// Captures is the number of captures of the line a rule's labels, filters, value and
// timestamp may refer to (indexes 1..Captures; 0 is the whole line); its path captures
// follow them.
func (r *Rule) Captures() int {
	return r.Read() + len(r.Derived)
}

// CaptureName is the name of capture i: a regex group's or a field's, then the captures
// its log format derives, then its path captures; "" for the whole line (0), an unnamed
// group and what is no capture (a literal's -1, a wrapper's time).
func (r *Rule) CaptureName(i int) string {
	read, all := r.Read(), r.Captures()
	switch {
	case i <= 0:
		return ""
	case i <= read && r.Regexp != nil:
		return r.Regexp.SubexpNames()[i]
	case i <= read:
		return r.Fields[i-1].Capture
	case i <= all:
		return r.Derived[i-read-1].Name
	case i-all <= len(r.PathCaptures):
		return r.PathCaptures[i-all-1]
	}
	return ""
}

// Read is the number of captures the line gives (regex groups or fields), before the
// derived ones.
func (r *Rule) Read() int {
	if r.Regexp != nil {
		return r.Regexp.NumSubexp()
	}
	return len(r.Fields)
}

// Where is one capture filter of a rule.
type Where struct {
	CaptureName string
	Capture     int
	Regexp      *regexp.Regexp
}

// Timestamp tells how a rule reads the event time from a capture.
type Timestamp struct {
	CaptureName string
	// Capture is the capture index, or WrapperTime.
	Capture int
	Layout  string
	// Unix: the capture is seconds since the epoch with a fraction (nginx's $msec); Layout
	// is then empty.
	Unix bool
	// Location is the time zone a Layout without one reads its times in (the key
	// location:, an IANA name); nil reads them as UTC. Only a layout without a numeric
	// offset has it: with one, each line says its own.
	Location *time.Location
}

// ReadLayout is the layout the times are read with: Layout with each fraction of a
// second of a fixed number of digits (.000, ,000000) written as one of any number (.999,
// ,999999), which also reads none, and each numeric offset (-07:00, -0700, -07) as one
// that also reads Z (Z07:00). A line counts at its second, which no fraction
// changes, and a writer that trims a fraction's zeros (Go's RFC3339Nano, containerd) or
// leaves a whole second's out (Python's isoformat) would otherwise have those lines
// dropped as bad timestamps: a tenth of them at nine digits. Z is UTC's offset in ISO 8601
// and RFC 3339, which proxies and JSON loggers write where nginx's $time_iso8601 has
// +00:00.
func (ts *Timestamp) ReadLayout() string {
	return readLayout(ts.Layout)
}

// readLayout is layout as ReadLayout reads it.
func readLayout(layout string) string {
	return anyZulu(anyFraction(layout))
}

// anyZulu returns layout with each numeric offset element of Go's (-07:00:00, -070000,
// -07:00, -0700, -07) written as its ISO 8601 form, which reads a Z too (Z07:00).
func anyZulu(layout string) string {
	return strings.ReplaceAll(layout, "-07", "Z07")
}

// anyFraction returns layout with each of Go's elements of a fraction of fixed digits (a
// run of zeros after a point or comma, ending at a non-digit) written as one of any
// number.
func anyFraction(layout string) string {
	b := []byte(layout)
	for i := 0; i+1 < len(b); i++ {
		if b[i] != '.' && b[i] != ',' || b[i+1] != '0' {
			continue
		}
		j := i + 1
		for j < len(b) && b[j] == '0' {
			j++
		}
		if j < len(b) && '0' <= b[j] && b[j] <= '9' {
			i = j - 1 // not a fraction: a literal, or part of another element
			continue
		}
		for k := i + 1; k < j; k++ {
			b[k] = '9'
		}
		i = j - 1
	}
	return string(b)
}

// Folds reports whether a time the layout reads may fall in an hour its zone (In) repeats
// when clocks go back, which of the two instants it is left to the reader: the zone is not
// UTC, and the layout reads no zone name (MST), which would say which. A location is
// given only beside a layout that reads no offset (see rule.go).
func (ts *Timestamp) Folds() bool {
	return ts.In() != time.UTC && !ts.ReadsZoneName()
}

// ReadsZoneName reports whether the layout reads a zone abbreviation (MST) and no offset,
// so that the abbreviation alone gives a time's offset, which only In's abbreviations (and
// UTC's, GMT's) do. One beside an offset (time.Time's String: -0700 MST) names it.
func (ts *Timestamp) ReadsZoneName() bool {
	return strings.Contains(ts.Layout, "MST") && !readsOffset(ts.Layout)
}

// In is the time zone the layout's times are read in when they carry none.
func (ts *Timestamp) In() *time.Location {
	if ts.Location == nil {
		return time.UTC
	}
	return ts.Location
}
