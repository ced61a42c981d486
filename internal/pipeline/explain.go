package pipeline

import (
	"errors"
	"slices"

	"github.com/logwindow/logwindow_exporter/config"
	"github.com/logwindow/logwindow_exporter/internal/explain"
	"github.com/logwindow/logwindow_exporter/internal/input/cri"
	"github.com/logwindow/logwindow_exporter/internal/input/follow"
	"github.com/logwindow/logwindow_exporter/internal/input/syslog"
	"github.com/logwindow/logwindow_exporter/parser"
)

// Explain explains the first maxLines lines of file (the messages of a wrapper: cri
// input, of its streams) as a replay of them would count them, handing each line's
// explanation to emit as it is made, so that what is held does not grow with the
// explanations (a line's may be a hundred times the line), nor with maxLines: the lines
// are not kept, but read again for each pass over them; it stops explaining at emit's
// first error, which it returns. The lines are explained in order, each line's events going into the series store before
// the next line is explained, so budgets and overflow are those the lines themselves
// bring about. Like Replay it happens at one instant: the newest line's own time not ahead
// of the clock when a rule has a timestamp, else the clock's now (a pass of its own). The file is read to its end, lines beyond
// maxLines unexamined but for those that settle the format of lines held before the cut
// (parser.MaxHeld at most): a line is explained by the format its file's lines after it
// have chosen for it, as a replay counts it, not by the choice of the moment of the cut.
//
// A glob is read as Replay reads it given alone: by the input that reads it as written,
// else, when an input reads some of its matches, each match by its own input. When no
// input reads a file and no rule matched any of its lines, the lines come with an error
// that says so, as do the files of a glob that could not be read (symlinks out of its
// root, not followed, among them), each named, and so do an input's files given when
// they are empty: no line was explained. Each input's Fit, over all its lines read
// as Replay reads them, goes to opts.Summary.
func Explain(cfg *config.Config, file string, maxLines int, opts Options, emit func(explain.Line) error) error {
	opts.setDefaults()
	gen, err := newGeneration(cfg, nil, opts)
	if err != nil {
		return err
	}
	// A glob that no input reads as written but whose matches one does (a node's pod logs
	// by a shorter glob, a log's rotated files) is its matches, each read as its input
	// reads it, as --replay reads them; one that no input's matches are of is explained as
	// one file, its lines numbered in its files.
	read := inputsOf(cfg, []string{file}, opts.Logger)
	counts := make([]fileCount, len(read))
	// A message is kept, while its parse holds it, with the file it is of (an index into
	// read), the number of its (last) line, its wrapper's time, and the path and captures
	// of its own that its captures are worked out from (path_captures, a CRI line's
	// stream).
	type message struct {
		file, n           int
		text, wrapperTime []byte
		path              string
		lv                lineValues
	}
	// Each line is read as its input reads it, by its own formats (inputs without a name
	// share theirs, which does not say which of their formats is the file's) and by the
	// format chosen for its file, each of a glob's files its own: parsed is told of each
	// of the first maxLines messages, in order, as it is parsed (a line held while the
	// format is chosen, by a later one), and sink of their events alone. The messages
	// after them are parsed only until the first maxLines are. A line has the captures its
	// input gives it besides its own, as a replay's. The files are read again at each
	// parse, not kept: only the messages the parse holds are (parser.MaxHeld at most), so
	// that what is held does not grow with --explain.lines.
	parse := func(ps *parser.Session, sink parser.Sink, parsed func(m message)) error {
		var (
			at      = -1 // the file of last in read
			last    string
			paths   *pathValues
			pending []message // fed to the parse, not yet done
		)
		n, fed := 0, 0
		done := func(bool, bool) {
			if n < maxLines {
				parsed(pending[0])
			}
			pending = pending[1:]
			n++
		}
		sink = firstLines{sink, &n, maxLines}
		// A glob's files are read one after the other: each is closed, the lines it held
		// parsed, before the next one's are, so that lines are done in their order.
		closeLast := func() {
			if last == "" {
				return
			}
			if paths != nil {
				paths.set(ps, read[at].pathOf(last))
			}
			ps.CloseFile(last, read[at].input.Name, sink, done)
		}
		joiners := logJoiners{}
		for i, f := range read {
			got, err := readMessages(f, opts.quiet(), nil, joiners.of(f.input, opts), keptFor(read, i), func(path string, ln int, msg, wrapperTime []byte, lv lineValues) {
				if n >= maxLines || fed-parser.MaxHeld >= maxLines { // maxLines+MaxHeld may overflow
					return
				}
				fed++
				for k := range lv {
					lv[k] = slices.Clone(lv[k])
				}
				m := message{i, ln, slices.Clone(msg), slices.Clone(wrapperTime), path, lv}
				if m.file != at || m.path != last {
					closeLast()
					last = m.path
				}
				if m.file != at {
					at = m.file
					ps.SetPath(nil) // none of the previous file's
					ps.SetFormats(f.input.LogFormats, parser.NewFiles())
					ps.SetFormat(f.input.Name, f.input.LogFormat)
					paths = newPathValues(f.input, gen.parser, opts.Now)
				}
				if paths != nil {
					paths.setLine(ps, f.pathOf(m.path), m.lv)
				}
				pending = append(pending, m)
				ps.ParseFile(m.path, f.input.Name, m.text, m.wrapperTime, sink, done)
			})
			if err != nil {
				return &fileError{"explain", f.file, err}
			}
			counts[i].unread = got.unread
		}
		closeLast()
		return nil
	}
	now := newClock(opts.Now, nil, nil).second()
	if hasEventTime(cfg) {
		newest := &newestTime{until: now}
		if err := parse(gen.parser.NewSession(), newest, func(message) {}); err != nil {
			return err
		}
		if newest.seen {
			now = newest.time
		}
	}
	sink := gen.set.NewSink()
	sink.SetNow(now, now)
	ps := gen.parser.NewSession()
	x := explain.New(cfg.Rules, ps, sink)
	var emitErr error
	// A line is explained as its parse read it (Session.ExplainWrapped), its events fed
	// to sink before the next line's parse; the parse's own go nowhere.
	err = parse(ps, &newestTime{}, func(m message) {
		if emitErr != nil {
			return
		}
		l := x.ExplainWrapped(read[m.file].input.Name, m.text, m.wrapperTime, true)
		l.Number = m.n
		if config.IsGlob(file) {
			l.SetFile(m.path) // line numbers of several files
		}
		counts[m.file].lines++
		if !l.Unmatched {
			counts[m.file].received++
		}
		emitErr = emit(l)
	})
	if emitErr != nil {
		return emitErr
	}
	if err != nil {
		return err
	}
	fs := newFits(gen)
	all, err := replayFiles("explain", gen.parser, read, opts, &newestTime{}, fs)
	if err != nil {
		return err
	}
	for i := range counts {
		// Of a file whose lines are all too long, none was explained: noInputErr says so.
		counts[i].tooLong = all[i].tooLong
	}
	return errors.Join(fs.write(opts.Summary), fs.readNothing("explain"), unreadErr("explain", read, counts), noInputErrs(cfg, "explain", read, counts))
}

// firstLines is a sink that passes on the events and drops of the lines parsed while
// fewer than n were, as *parsed counts them.
type firstLines struct {
	parser.Sink
	parsed *int
	n      int
}

func (f firstLines) Event(e *parser.Event) {
	if *f.parsed < f.n {
		f.Sink.Event(e)
	}
}

func (f firstLines) Drop(rule int, reason parser.DropReason) {
	if *f.parsed < f.n {
		f.Sink.Drop(rule, reason)
	}
}

// Explain explains one line as the running rules would count it if input read it now,
// without counting it. input is an input's name or, for an input without one, its path
// or socket (config.Input.Label, as its self-metrics name it): the inputs without a name
// share the name "", which does not say whose formats read the line, so such an input's
// line is read by its own formats, alone, as its file's first line would be. "" is the one
// input without a name when there is one, else a line of no input of the config. A
// complete CRI line of a stream a cri input reads is explained as the input reads it, by
// its message and time (what --explain shows of it); any other line as it is, so that a
// message pasted alone is explained too. A datagram pasted for a syslog input is
// explained by its message, its header stripped as the input strips it. The line has
// the captures the input gives a line of its own, as the input reads it: the stream of
// a CRI line, the hostname and tag of a datagram's header (those of its file's path are
// unset: no path is pasted). line is given as its input would find it, with the "\r" that
// ends it when it was before a "\n": a line longer than the inputs take (MaxLineBytes),
// that "\r" counted as the follower counts it, is told too long (explain.Line.TooLong),
// read by no rule, as its input would skip it; the "\r" is then dropped, as the follower
// drops it.
func (p *Pipeline) Explain(input string, line []byte) explain.Line {
	// Every kind of input skips a line longer than the cap before it is read: a file's
	// or a CRI log's line whole, with the "\r" before its newline, a datagram with its
	// header and any line end it was sent with. A pasted line has lost its "\n": a
	// datagram sent with one is judged a byte short of what its input counts.
	tooLong := len(line) > maxLineBytes(p.opts)
	line = follow.TrimCR(line)
	if tooLong {
		return explain.TooLongLine(input, line)
	}
	gen := p.gen.Load()
	sink := gen.set.NewSink()
	sink.SetNow(p.clock.read())
	in, known := testedInput(gen.cfg, input)
	name, wrapperTime := input, []byte(nil)
	var lv lineValues
	var paths *pathValues
	if known {
		name = in.Name
		// The input skips a line of a stream it does not read before joining it: no
		// message of it is counted, so it is explained as it is.
		if stream, _ := cri.Stream(line); in.Wrapper == config.WrapperCRI && in.Streams.Reads(stream) {
			if msg, at, r := cri.New(maxLineBytes(p.opts)).Feed("", line); r == cri.Complete {
				line, wrapperTime, lv[lineStream] = msg, at, stream
			}
		}
		// A syslog input reads a datagram's message; one without a header, whole.
		if in.Syslog != nil {
			var h syslog.Header
			line, h, _ = syslog.Parse(line)
			lv[lineHostname], lv[lineTag] = h.Hostname, h.Tag
		}
		paths = newPathValues(in, gen.parser, p.opts.Now)
	}
	if !known || name != "" && paths == nil {
		return explain.New(gen.cfg.Rules, gen.parser, sink).ExplainWrapped(name, line, wrapperTime, false)
	}
	// Read by a session of the input's own, as --explain reads a file's lines: by its own
	// formats, and with the captures it gives the line.
	ps := gen.parser.NewSession()
	ps.SetFormats(in.LogFormats, parser.NewFiles())
	ps.SetFormat(name, in.LogFormat)
	if paths != nil {
		paths.setLine(ps, "", lv)
	}
	x := explain.New(gen.cfg.Rules, ps, sink)
	var out explain.Line
	done := func(bool, bool) { out = x.ExplainWrapped(name, line, wrapperTime, false) }
	ps.ParseFile("", name, line, wrapperTime, &newestTime{}, done)
	ps.CloseFile("", name, &newestTime{}, done)
	out.Input = input
	return out
}

// testedInput is the input the line tester names input (see Pipeline.Explain): the input
// of that name, else the input without a name of that path or socket, else, for "", the
// one input without a name.
func testedInput(cfg *config.Config, input string) (config.Input, bool) {
	if i := slices.IndexFunc(cfg.Inputs, func(in config.Input) bool { return in.Name != "" && in.Name == input }); i >= 0 {
		return cfg.Inputs[i], true
	}
	var unnamed []config.Input
	for _, in := range cfg.Inputs {
		if in.Name == "" {
			if input != "" && in.Source() == input {
				return in, true
			}
			unnamed = append(unnamed, in)
		}
	}
	if input == "" && len(unnamed) == 1 {
		return unnamed[0], true
	}
	return config.Input{}, false
}

// Config returns the config in force.
func (p *Pipeline) Config() *config.Config {
	return p.gen.Load().cfg
}
