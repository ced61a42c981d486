package pipeline

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/logwindow/logwindow_exporter/config"
	"github.com/logwindow/logwindow_exporter/internal/explain"
	"github.com/logwindow/logwindow_exporter/internal/store"
	"github.com/logwindow/logwindow_exporter/parser"
	"github.com/logwindow/logwindow_exporter/parser/event"
)

// Fit is what a one-shot made of the lines of one input: how many were of the input's
// format. A line fits when some rule that reads the input matched it (its regex, or its
// log format's, matched) or read its fields (it is JSON or logfmt as the rule reads),
// whatever the rule's filters, value and time then made of it: a line that does not fit
// is one no rule could read at all, the sign of a format that is not the file's. For a
// wrapper: cri input the lines are the messages (joined from their parts), without the
// lines of streams it does not read.
type Fit struct {
	// Input is the input's label; for a file no input reads, empty (File names it).
	Input string
	// Lines are the lines the rules read, Fitting those that fit; Skipped the CRI lines
	// of streams the input does not read (streams:), which are neither.
	Lines, Fitting, Skipped int
	// TooLong are the lines (or CRI messages) longer than --input.max-line-bytes,
	// Malformed the lines of a wrapper: cri input that are not CRI lines, and Unfinished
	// its messages in parts whose last part their file did not have: the rules never read
	// them, so they are neither.
	TooLong, Malformed, Unfinished int
	// First is the number of the first line that does not fit in File (0: none), and
	// Stopped where it stopped fitting (explain.Line.Stopped).
	First   int
	File    string
	Stopped string
	// NoFormat are the files the running exporter would count under parser.NoFormat,
	// each read to its end as a file gone quiet: of a glob of one log format, none of
	// whose first lines fit it (verdicts); of candidate formats, none of whose last lines
	// fit any. The first misfit names one file: a file wholly of another format after a
	// stray line of another would go unnamed.
	NoFormat []string
	// Unread are the lines (of Lines) of another application's JSON log, which the
	// running exporter counts apart from unmatched ones (parser.Session.Unread), and
	// UnreadFiles their files, in the order first read: neither misfits nor of the format.
	Unread      int
	UnreadFiles []string
	// startup are the lines of each file that did not fit (parser.StartupLines). When
	// every file's are an nginx image's start-up lines alone, and no more of them than
	// the running exporter bounds a file's by (parser.MaxStartupLines), the input's pods
	// served no request yet: it waits for one, and so the one-shot fails not.
	startup map[string]parser.StartupLines
	// files is how many files the input read lines of, a glob's matches each one: past
	// one, the line number then names its file.
	files int
	// read is how many of the one-shot's paths of the input were read: a path of which
	// nothing was, each of its files unreadable, is told of by its error alone, as a
	// count of no lines would read as a file of none.
	read int
	// empty are the paths of the input read that held no line: a file given, a glob
	// given (each of its matches empty), or a match of a glob read by itself; emptyNamed
	// those of them given by name, which the input's line tells of though the input read
	// lines of its other files. A log just rotated is empty beside the file rotated away
	// from it, so that is no error; but the name may be a stale or mistyped one, which
	// the user learns. A glob's empty match (a pod that logged nothing yet) is not told.
	empty, emptyNamed []string
}

// emptyFile notes file, of f's input, as read and holding no line.
func (f *Fit) emptyFile(file fileInput) {
	f.empty = append(f.empty, file.file)
	if file.glob == "" && !config.IsGlob(file.file) {
		f.emptyNamed = append(f.emptyNamed, file.file)
	}
}

// String is the one-shots' line about the input: `input NAME: N of M lines fit (first
// misfit at line K: where it stopped)`.
func (f Fit) String() string {
	var b strings.Builder
	if f.Input != "" {
		fmt.Fprintf(&b, "input %s: ", f.Input)
	} else {
		fmt.Fprintf(&b, "file %s (no input reads it): ", explain.Display(f.File))
	}
	fmt.Fprintf(&b, "%d of %d lines fit", f.Fitting, f.Lines)
	var notes []string
	if f.First > 0 {
		at := fmt.Sprintf("line %d", f.First)
		if f.files > 1 {
			// A glob's file is named by whoever can write in its directory: a newline in
			// its name would forge a line of the summary.
			at += " of " + explain.Display(f.File)
		}
		notes = append(notes, fmt.Sprintf("first misfit at %s: %s", at, f.Stopped))
	}
	if n := len(f.NoFormat); n > 0 && f.files > 1 {
		// Of one file read, the input's count of the lines that fit says as much.
		notes = append(notes, fmt.Sprintf("%d %s of no format: %s", n, plural(n, "file", "files"), f.named(f.NoFormat)))
	}
	if f.Unread > 0 {
		note := fmt.Sprintf("%d %s unread: JSON objects with none of the members its rules read, another application's log", f.Unread, plural(f.Unread, "line", "lines"))
		if f.files > 1 {
			note += ": " + f.named(f.UnreadFiles)
		}
		notes = append(notes, note)
	}
	if f.Skipped > 0 {
		notes = append(notes, fmt.Sprintf("%d %s of other streams skipped", f.Skipped, plural(f.Skipped, "line", "lines")))
	}
	if f.TooLong > 0 {
		notes = append(notes, fmt.Sprintf("%d %s longer than --input.max-line-bytes skipped", f.TooLong, plural(f.TooLong, "line", "lines")))
	}
	if f.Malformed > 0 {
		notes = append(notes, fmt.Sprintf("%d %s skipped", f.Malformed, plural(f.Malformed, "line not a CRI line", "lines not CRI lines")))
	}
	if f.Unfinished > 0 {
		notes = append(notes, fmt.Sprintf("%d %s at the end of their file skipped", f.Unfinished, plural(f.Unfinished, "message unfinished", "messages unfinished")))
	}
	if n := len(f.emptyNamed); n > 0 {
		notes = append(notes, fmt.Sprintf("%d %s given empty: %s", n, plural(n, "file", "files"), f.named(f.emptyNamed)))
	}
	if f.idle() {
		notes = append(notes, "its lines are an nginx image's start-up lines alone: no request yet")
	}
	if len(notes) > 0 {
		fmt.Fprintf(&b, " (%s)", strings.Join(notes, notesSep))
	}
	return b.String()
}

// named lists the first maxNoFormatNamed of paths in order, and "..." for more. A name
// holding the list's separator, or the notes', is quoted: as it is, it would read as two
// names, or as a name and a note.
func (f Fit) named(paths []string) string {
	names := make([]string, 0, maxNoFormatNamed+1)
	for _, path := range slices.Sorted(slices.Values(paths))[:min(len(paths), maxNoFormatNamed)] {
		names = append(names, explain.Display(path, namesSep, notesSep))
	}
	if len(paths) > maxNoFormatNamed {
		names = append(names, "...")
	}
	return strings.Join(names, namesSep)
}

// idle reports whether the input read lines, none of which fit, those of each file an
// nginx image's start-up lines alone: its pods served no request yet.
func (f Fit) idle() bool {
	if f.Lines == 0 || f.Fitting > 0 || len(f.startup) == 0 {
		return false
	}
	for _, lines := range f.startup {
		if !lines.Only() {
			return false
		}
	}
	return true
}

// namesSep parts the names of a summary's list, notesSep its notes.
const namesSep, notesSep = ", ", "; "

// maxNoFormatNamed is how many of an input's files of no format its summary names: a
// glob over every pod of a node may match hundreds of another image's.
const maxNoFormatNamed = 3

// plural is one when n is 1, else many.
func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// fits counts the lines of each input read in a one-shot, in the order the inputs
// were first read.
type fits struct {
	gen  *generation
	sink *store.Sink
	all  []*Fit
	// byInput is the Fit of each input by label; a file no input reads has one of its own.
	byInput map[string]*Fit
}

func newFits(gen *generation) *fits {
	return &fits{gen: gen, sink: gen.set.NewSink(), byInput: map[string]*Fit{}}
}

// of is the Fit of file's input.
func (fs *fits) of(file fileInput) *Fit {
	key := "\x00" + file.file
	if file.found {
		key = file.input.Label()
	}
	f, ok := fs.byInput[key]
	if !ok {
		f = &Fit{File: file.file}
		if file.found {
			f.Input = file.input.Label()
		}
		fs.byInput[key] = f
		fs.all = append(fs.all, f)
	}
	return f
}

// lines counts the lines of a file of f's input as ps parses them into sink: call read
// with each line just before ps.ParseFile, kept just after, closing before ps.Settle
// and ps.CloseFile, both given done as the LineDone, and settled between them. ps must
// be told the input's formats. judge says that the input's files are judged by its one
// log format, which a rule reads, as the running exporter judges a glob's (verdicts).
func (fs *fits) lines(f *Fit, input string, judge bool, ps *parser.Session, sink replaySink) *lineFits {
	l := &lineFits{fs: fs, f: f, input: input, ps: ps, sink: sink, x: explain.New(fs.gen.cfg.Rules, ps, fs.sink),
		pending: map[string][]pendingLine{}}
	if judge {
		l.judged = newVerdicts()
	}
	return l
}

// lineFits counts a file input's lines, each when it is parsed (LineDone): at once, or,
// for a line held while its file's format is chosen, when a later line has it parsed. A
// line fits when its own parse gave the sink an event or a drop, or a rule reading the
// input read it by the program it was parsed with (parser.Session.Fitted): so a line
// fits as the runtime reads it, by its own input's formats and its file's chosen one, and
// one that has held lines parsed is not counted by their events.
type lineFits struct {
	fs    *fits
	f     *Fit
	input string
	ps    *parser.Session
	sink  replaySink
	x     *explain.Explainer
	// path is the file of the lines being parsed; pending are the lines of each file read
	// and not yet parsed, oldest first. received is the sink's count when the line parsed
	// next started.
	path     string
	pending  map[string][]pendingLine
	received uint64
	// judged judges the files of an input of one log format (nil for another).
	judged *verdicts
}

// pendingLine is a line read and not yet parsed: its number in its file and its text,
// copied (kept) once it outlives the read's buffer.
type pendingLine struct {
	n    int
	msg  []byte
	kept bool
}

// read notes line number n of path, msg, about to be parsed.
func (l *lineFits) read(path string, n int, msg []byte) {
	l.path, l.received = path, l.sink.Received()
	l.pending[path] = append(l.pending[path], pendingLine{n: n, msg: msg})
}

// kept copies the lines of the last read's file the parse holds.
func (l *lineFits) kept() {
	p := l.pending[l.path]
	for i := len(p) - 1; i >= 0 && !p[i].kept; i-- {
		p[i].msg, p[i].kept = slices.Clone(p[i].msg), true
	}
}

// closing says that what is held of path is parsed next (CloseFile).
func (l *lineFits) closing(path string) { l.path, l.received = path, l.sink.Received() }

// done is the parse's LineDone: the oldest line of the file being parsed was.
func (l *lineFits) done(_, fitted bool) {
	received := l.sink.Received()
	own := received != l.received
	l.received = received
	p := l.pending[l.path]
	if len(p) == 0 {
		return
	}
	line := p[0]
	p[0] = pendingLine{}
	l.pending[l.path] = p[1:]
	// As the running exporter counts a line (binding.done): one of the file's format
	// that gave the sink nothing may be unread.
	unread := !own && fitted && l.ps.Unread(l.input)
	fit := own || fitted && !unread && l.ps.Fitted(l.input, line.msg)
	if l.judged != nil {
		l.judged.line(l.path, line.msg, fit)
	}
	if unread {
		l.f.Lines++
		if l.f.Unread++; !slices.Contains(l.f.UnreadFiles, l.path) {
			l.f.UnreadFiles = append(l.f.UnreadFiles, l.path)
		}
		return
	}
	l.fs.line(l.f, l.x, l.input, l.path, line.n, line.msg, fit)
}

// settled says that the file of path, read to its end, went quiet and was settled
// (ps.Settle) as the running exporter settles one; files keeps the formats chosen for
// the files of an input of candidate formats (nil for another). A file of no format is
// noted in the Fit.
func (l *lineFits) settled(path string, files *parser.Files) {
	var none []string
	if l.judged != nil {
		l.judged.settle(path)
		none = l.judged.noFormatFiles()
		l.judged.closed(path)
	} else if files != nil {
		none = files.NoFormatFiles()
	}
	if slices.Contains(none, path) {
		l.f.NoFormat = append(l.f.NoFormat, path)
	}
}

// line counts line number n of path, msg, which the rules of input read, and which fit or
// not; x explains the first misfit.
func (fs *fits) line(f *Fit, x *explain.Explainer, input, path string, n int, msg []byte, fit bool) {
	f.Lines++
	if fit {
		f.Fitting++
		return
	}
	if f.startup == nil {
		f.startup = map[string]parser.StartupLines{}
	}
	startup := f.startup[path]
	startup.Add(msg)
	f.startup[path] = startup
	if f.First == 0 {
		f.First, f.File = n, path
		if fs.gen.parser.ReadsInput(input) {
			l := x.Explain(input, msg, false)
			f.Stopped = l.Stopped()
		} else {
			f.Stopped = "no rule reads this input"
		}
	}
}

// write writes the line of each input a path of was read to w (nil: nowhere).
func (fs *fits) write(w io.Writer) error {
	if w == nil {
		return nil
	}
	for _, f := range fs.all {
		if f.read == 0 {
			continue
		}
		if _, err := fmt.Fprintln(w, f); err != nil {
			return err
		}
	}
	return nil
}

// misfits fails a one-shot in which an input read lines and none fit: whatever the rules
// count of it is zero because the format is not the file's, or because no line could be
// read at all (each too long, or not a CRI line of a wrapper: cri input), or because all
// it read are unread (another application's JSON log, as the running exporter counts
// them), as a JSON access log whose keys the rules do not name is too; but not when its
// lines are an nginx image's start-up lines alone (pods that served no request yet, as
// the running exporter takes them). A file no input reads is fileInput.noInputErr's to judge.
func (fs *fits) misfits(mode string) error {
	var errs []error
	for _, f := range fs.all {
		if err := f.readNothing(mode); err != nil {
			errs = append(errs, err)
			continue
		}
		switch {
		case f.Input == "" || f.Fitting > 0 || f.idle():
		case f.Lines > f.Unread:
			errs = append(errs, fmt.Errorf("%s: input %s read %d %s and none is of its format (first: %s)", mode, f.Input, f.Lines, plural(f.Lines, "line", "lines"), f.Stopped))
		case f.Unread > 0:
			errs = append(errs, fmt.Errorf("%s: input %s read %d %s and none fit: JSON objects with none of the members its rules read (%s): another application's log, or an access log whose keys the rules do not name", mode, f.Input, f.Unread, plural(f.Unread, "line", "lines"), f.named(f.UnreadFiles)))
		case f.TooLong+f.Malformed > 0:
			errs = append(errs, fmt.Errorf("%s: input %s read %d %s and could read none: %d longer than --input.max-line-bytes, %d %s", mode, f.Input, f.TooLong+f.Malformed, plural(f.TooLong+f.Malformed, "line", "lines"), f.TooLong, f.Malformed, plural(f.Malformed, "not a CRI line", "not CRI lines")))
		}
	}
	return errors.Join(errs...)
}

// readNothing fails a one-shot in which an input was given files and read no line of
// them, the files empty: it checked nothing, and zeros and a success would pass for rules
// that fit the log. The error names the files, so that a stale or mistyped name is found.
// A file no input reads is fileInput.noInputErr's to judge.
func (f Fit) readNothing(mode string) error {
	if f.Input == "" || f.read == 0 || f.Lines+f.Skipped+f.TooLong+f.Malformed+f.Unfinished > 0 {
		return nil
	}
	return fmt.Errorf("%s: input %s read no line: the files given are empty: %s", mode, f.Input, f.named(f.empty))
}

// readNothing fails a one-shot in which an input read no line of the files given it
// (Fit.readNothing), for the one-shots that do not fail on misfits: --explain, whose
// lines show why they do not fit.
func (fs *fits) readNothing(mode string) error {
	var errs []error
	for _, f := range fs.all {
		errs = append(errs, f.readNothing(mode))
	}
	return errors.Join(errs...)
}

// Sample reads each file as the input that reads it would (its wrapper, streams and path
// captures; see Replay) through cfg's rules, without counting anything, writes each
// input's Fit to opts.Summary, and each rule's lines dropped for its layout or value
// (ruleDrops), and fails when an input read lines and none fit, a rule counted none of
// the lines it matched and dropped some so, a file could not be read (a symlink out of a
// glob's root, not followed, among them), or, as Replay, no input reads a file and no
// rule matched any of its lines: the check of a config against a sample of its logs.
func Sample(cfg *config.Config, files []string, opts Options) error {
	opts.setDefaults()
	gen, err := newGeneration(cfg, nil, opts)
	if err != nil {
		return err
	}
	fs := newFits(gen)
	read := inputsOf(cfg, files, opts.Logger)
	rules := newRuleDrops(cfg.Rules)
	counts, err := replayFiles("sample", gen.parser, read, opts, rules, fs)
	if err != nil {
		return err
	}
	return errors.Join(fs.write(opts.Summary), rules.write(opts.Summary), fs.misfits("sample"), rules.countedNone(),
		unreadErr("sample", read, counts), noInputErrs(cfg, "sample", read, counts))
}

// mistakes are the drops a rule's own layout or value makes: a time that does not parse
// (a layout not the log's, a zone its location has not) or a value that is not a number
// (a capture of text), where a value of "-" (no_value) is the log's own.
var mistakes = [...]parser.DropReason{parser.BadTimestamp, parser.BadNumber}

// ruleDrops is a sample's sink: it counts each rule's lines counted and those dropped
// for each reason, so that a rule that fits the sample's lines and drops them all for a
// layout or a value not the log's is told of, not taken for a rule the check passes.
type ruleDrops struct {
	rules    []*config.Rule
	received uint64
	counted  []int
	dropped  [][event.NumDropReasons]int
}

func newRuleDrops(rules []*config.Rule) *ruleDrops {
	return &ruleDrops{rules: rules, counted: make([]int, len(rules)), dropped: make([][event.NumDropReasons]int, len(rules))}
}

func (d *ruleDrops) Event(e *parser.Event) { d.received++; d.counted[e.Rule]++ }

func (d *ruleDrops) Drop(rule int, r parser.DropReason) { d.received++; d.dropped[rule][r]++ }

// Received is how many events and drops d was given.
func (d *ruleDrops) Received() uint64 { return d.received }

// of is rule i's lines matched and its mistakes, worded: "2 bad_timestamp, 1 bad_number".
func (d *ruleDrops) of(i int) (matched, wrong int, words string) {
	matched = d.counted[i]
	for _, n := range d.dropped[i] {
		matched += n
	}
	var parts []string
	for _, r := range mistakes {
		if n := d.dropped[i][r]; n > 0 {
			wrong += n
			parts = append(parts, fmt.Sprintf("%d %s", n, r))
		}
	}
	return matched, wrong, strings.Join(parts, ", ")
}

// write writes a line for each rule that dropped lines for its mistakes to w (nil:
// nowhere).
func (d *ruleDrops) write(w io.Writer) error {
	if w == nil {
		return nil
	}
	for i, r := range d.rules {
		matched, wrong, words := d.of(i)
		if wrong == 0 {
			continue
		}
		if _, err := fmt.Fprintf(w, "rule %s: %d of %d %s it matched dropped: %s (--explain=FILE says why of each)\n",
			r.Name, wrong, matched, plural(matched, "line", "lines"), words); err != nil {
			return err
		}
	}
	return nil
}

// countedNone fails a sample in which a rule counted none of the lines it matched and
// dropped some for its mistakes: whatever it counts of its log is then zero.
func (d *ruleDrops) countedNone() error {
	var errs []error
	for i, r := range d.rules {
		if matched, wrong, words := d.of(i); wrong > 0 && d.counted[i] == 0 {
			errs = append(errs, fmt.Errorf("sample: rule %s counted none of the %d %s it matched: %s", r.Name, matched, plural(matched, "line", "lines"), words))
		}
	}
	return errors.Join(errs...)
}
