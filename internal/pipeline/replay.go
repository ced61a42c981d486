package pipeline

import (
	"errors"
	"io"
	"slices"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/logwindow/logwindow_exporter/config"
	"github.com/logwindow/logwindow_exporter/internal/explain"
	"github.com/logwindow/logwindow_exporter/internal/input/cri"
	"github.com/logwindow/logwindow_exporter/internal/input/follow"
	"github.com/logwindow/logwindow_exporter/internal/input/syslog"
	"github.com/logwindow/logwindow_exporter/internal/scrape"
	"github.com/logwindow/logwindow_exporter/internal/store"
	"github.com/logwindow/logwindow_exporter/parser"
)

// Replay reads every file to its end through cfg's rules and writes the exposition text of
// the rules' families (and the per-rule self-metrics) to w.
//
// A replay happens at one instant. Without event-time rules that is the clock's now, so
// every line lands in the current second. With event-time rules it is the newest line's
// own time not ahead of the clock (else the clock's now), found by a first pass, so that
// replaying a log gives the same output every time and event-time windows are rebuilt
// exactly, and a line stamped ahead of the clock is future there as it is live;
// processing-time rules then place every line at that instant too.
//
// Each file is read as the input that reads it would: a wrapper: cri input's messages of
// its streams, with its path captures. Each input's Fit goes to opts.Summary, and an input
// that read lines none of which fit fails the replay, after the output; so does a file
// that could not be read (a symlink out of a glob's root, not followed; a FIFO; no
// permission) or a directory of a glob that could not be listed, each named, the other
// files read. A file is read once, however many of the files or glob matches given reach
// it.
func Replay(cfg *config.Config, files []string, opts Options, w io.Writer) error {
	opts.setDefaults()
	gen, err := newGeneration(cfg, nil, opts)
	if err != nil {
		return err
	}
	read := inputsOf(cfg, files, opts.Logger)
	now := newClock(opts.Now, nil, nil).second()
	if hasEventTime(cfg) {
		newest := &newestTime{until: now}
		if _, err := replayFiles("replay", gen.parser, read, opts.quiet(), newest, nil); err != nil {
			return err
		}
		if newest.seen {
			now = newest.time
		}
	}
	sink := gen.set.NewBatchSink()
	sink.SetNow(now, now)
	fs := newFits(gen)
	counts, err := replayFiles("replay", gen.parser, read, opts, sink, fs)
	if err != nil {
		return err
	}
	sink.Flush()
	c := scrape.NewCollector(scrape.Options{
		Set:   func() *store.Set { return gen.set },
		Now:   func() int64 { return now },
		Wall:  func() int64 { return now },
		Start: now,
	})
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(c)
	if err := c.WriteText(w, reg); err != nil {
		return err
	}
	return errors.Join(fs.write(opts.Summary), fs.misfits("replay"), unreadErr("replay", read, counts), noInputErrs(cfg, "replay", read, counts))
}

// ignoreDone is told of the lines a replay parses, which it counts by its sink.
func ignoreDone(bool, bool) {}

// replaySink is a sink that tells how many events and drops it was given.
type replaySink interface {
	parser.Sink
	Received() uint64
}

// fileCount is what a replay made of one file: its lines, those too long to read, and
// the events and drops of rules that matched them.
type fileCount struct {
	lines, tooLong int
	received       uint64
	unread         []error // readCounts.unread
}

// unreadErr is the error of what a one-shot (mode) could not read of files, after its
// output: a line for each file or directory.
func unreadErr(mode string, files []fileInput, counts []fileCount) error {
	var errs []error
	for i, f := range files {
		// A glob's match read by itself is named as the glob given, as reading the glob
		// names it.
		given := f.file
		if f.glob != "" {
			given = f.glob
		}
		for _, err := range slices.Concat(f.unlisted, counts[i].unread) {
			errs = append(errs, &fileError{mode, given, err})
		}
	}
	return errors.Join(errs...)
}

// fileError is an error of a one-shot (mode) reading file, one line whatever the names
// in it: a glob's matches are named by whoever can write in their directory, and a
// newline in one would forge a line of the output (a log line, an error of another
// file). The file, and the error when it holds such a character, are Go-quoted then
// (explain.Display, explain.DisplayText).
type fileError struct {
	mode, file string
	err        error
}

func (e *fileError) Error() string {
	return e.mode + " " + explain.Display(e.file) + ": " + explain.DisplayText(e.err.Error())
}

func (e *fileError) Unwrap() error { return e.err }

// replayFiles reads files through p into sink for a one-shot (mode), counting in fs
// (nil: not) what fits. A file that several of files reach is read once, as the first
// reaches it.
func replayFiles(mode string, p *parser.Parser, files []fileInput, opts Options, sink replaySink, fs *fits) ([]fileCount, error) {
	ps := p.NewSession()
	counts := make([]fileCount, len(files))
	claimed := map[[2]uint64]bool{}
	claim := func(dev, ino uint64) bool {
		id := [2]uint64{dev, ino}
		if claimed[id] {
			return false
		}
		claimed[id] = true
		return true
	}
	joiners := logJoiners{}
	for i, file := range files {
		ci := file.input
		paths := newPathValues(ci, p, opts.Now)
		if paths != nil && ci.File != nil {
			paths.miss = func(path string) {
				opts.Logger.Warn(pathsMissMessage, "input", ci.Label(), "path", path, "path_captures", ci.File.PathCaptures.String())
			}
		}
		ps.SetPath(nil) // none of the previous file's
		var formats *parser.Files
		if ci.LogFormats != nil {
			formats = parser.NewFiles()
		}
		ps.SetFormats(ci.LogFormats, formats)
		ps.SetFormat(ci.Name, ci.LogFormat)
		before := sink.Received()
		var fit *Fit
		var lines *lineFits
		done := parser.LineDone(ignoreDone)
		if fs != nil {
			fit = fs.of(file)
			lines = fs.lines(fit, ci.Name, ci.LogFormat != nil && p.ReadsInput(ci.Name), ps, sink)
			done = lines.done
		}
		var read []string
		got, err := readMessages(file, opts, claim, joiners.of(ci, opts), keptFor(files, i), func(path string, n int, msg, wrapperTime []byte, lv lineValues) {
			if paths != nil {
				paths.setLine(ps, file.pathOf(path), lv)
			}
			if !slices.Contains(read, path) {
				read = append(read, path)
			}
			if lines != nil {
				lines.read(path, n, msg)
			}
			ps.ParseFile(path, ci.Name, msg, wrapperTime, sink, done)
			if lines != nil {
				lines.kept()
			}
		})
		if err != nil {
			return nil, &fileError{mode, file.file, err}
		}
		// What a file held while its format was being chosen is parsed at its end. A file
		// read to its end went quiet: it is settled as the running exporter settles a
		// file quiet for a while, so that a one-shot finds the files of no format it would.
		for _, path := range read {
			if paths != nil {
				paths.set(ps, file.pathOf(path))
			}
			if lines != nil {
				lines.closing(path)
			}
			ps.Settle(path, ci.Name, sink, done)
			if lines != nil {
				lines.settled(path, formats)
			}
			ps.CloseFile(path, ci.Name, sink, done)
		}
		if fit != nil {
			fit.files += got.files
			fit.Skipped += got.skipped
			fit.TooLong += got.tooLong
			fit.Malformed += got.malformed
			fit.Unfinished += got.unfinished
			if got.lines > 0 || len(got.unread) == 0 {
				fit.read++
			}
			if file.found && got.lines+got.tooLong == 0 && len(got.unread) == 0 {
				fit.emptyFile(file)
			}
		}
		counts[i] = fileCount{lines: got.lines, tooLong: got.tooLong, received: sink.Received() - before, unread: got.unread}
	}
	return counts, nil
}

// logJoiners are the joiners of a one-shot's cri inputs, by input: a CRI message in parts
// at the end of a file goes on in a later file given of the same log (the file rotated
// away from it, then it), so each input's joiner is kept from one file to the next.
type logJoiners map[string]*cri.Joiner

// of is ci's joiner, made at its first file; nil for an input without wrapper: cri.
func (j logJoiners) of(ci config.Input, opts Options) *cri.Joiner {
	if ci.Wrapper != config.WrapperCRI {
		return nil
	}
	if j[ci.Label()] == nil {
		j[ci.Label()] = cri.New(maxLineBytes(opts))
	}
	return j[ci.Label()]
}

// keptFor is the log of files[i] when a file given after it goes on with it (goesOnIn),
// whose messages in parts at its end readMessages keeps with the joiner; else "".
func keptFor(files []fileInput, i int) string {
	if slices.ContainsFunc(files[i+1:], files[i].goesOnIn) {
		return files[i].path
	}
	return ""
}

// goesOnIn reports whether the log f reads may go on in next, a file given after it: a
// file of the same log, as a rotated file of it and then the log are, of a wrapper: cri
// input, whose messages in parts may then be split across the two. A glob's files are
// each of a log of their own.
func (f fileInput) goesOnIn(next fileInput) bool {
	return f.found && next.found && f.input.Wrapper == config.WrapperCRI && f.input.Label() == next.input.Label() &&
		!config.IsGlob(f.file) && !config.IsGlob(next.file) && f.path == next.path
}

// readCounts is what readMessages read of a file beyond the messages it handed on.
type readCounts struct {
	// lines counts every line read; skipped those of streams the input does not read,
	// too long or not. files counts the files lines were read of, a glob's one after
	// the other.
	lines, skipped, files int
	// tooLong counts the lines (or CRI messages joined from parts) of what the input
	// reads that were longer than the line cap, malformed the lines of a wrapper: cri
	// input that are not CRI lines, unfinished the CRI messages whose last part the
	// file did not have (a copy taken while its container wrote it), not counted as too
	// long yet: each is skipped, and told of in the one-shot's summary, since the rules
	// never see it.
	tooLong, malformed, unfinished int
	// unread are the errors of the files that could not be read and the directories that
	// could not be listed (follow.Unread), each naming it, symlinks out of a glob's root
	// among them: the other files were read, and the one-shot fails after its output.
	unread []error
}

// readMessages reads file to its end as its input reads lines: for a wrapper: cri input,
// the messages of its streams, joined from their parts by j (nil: a joiner of its own),
// per log, the path the input names a file by (fileInput.pathOf). It hands fn each
// message with the path it was read from (a glob reads several), the number of its (last)
// line there, its wrapper's time and its own captures, all valid during the call, and
// returns what it read that fn was not handed. The messages of a log whose last part its
// file did not have are unfinished, but those of keep, which stay with j for the next file
// of that log. claim, when not nil, is asked of each file before it is read
// (follow.Options.Claim).
func readMessages(file fileInput, opts Options, claim func(dev, ino uint64) bool, j *cri.Joiner, keep string, fn func(path string, n int, msg, wrapperTime []byte, lv lineValues)) (readCounts, error) {
	ci := file.input
	in := &stream{}
	if ci.Wrapper == config.WrapperCRI {
		in.cri = j
		if j == nil {
			in.cri = cri.New(maxLineBytes(opts))
		}
	}
	o := follow.Options{Path: file.file, Glob: file.glob, MaxLineBytes: opts.MaxLineBytes, Logger: opts.Logger, Claim: claim}
	in.joinOptions(&o, nil, func() config.Streams { return ci.Streams })
	var c readCounts
	if in.cri != nil {
		tooLong := o.TooLong
		o.TooLong = func(path string, head []byte) bool { return tooLong(file.pathOf(path), head) }
		o.Closed = func(path string) {
			log := file.pathOf(path)
			if log == keep {
				return
			}
			c.unfinished += in.cri.Release(log)
		}
	}
	// A line too long to read is a line of its file all the same: the lines after it are
	// numbered as the file has them.
	var numbered string
	n := 0 // the line's number in its file
	number := func(path string) {
		if path != numbered {
			numbered, n = path, 0
		}
		n++
	}
	tooLong := o.TooLong
	o.TooLong = func(path string, head []byte) bool {
		number(path)
		return tooLong == nil || tooLong(path, head)
	}
	var last string
	st, err := follow.ReadToEnd(o, func(path string, line []byte) {
		if path != last {
			last = path
			c.files++
		}
		number(path)
		if ci.Syslog != nil && syslog.Blank(line) {
			// A blank datagram is a keepalive, which the input passes over: no line.
			return
		}
		c.lines++
		var lv lineValues
		if ci.Syslog != nil {
			// A line of a syslog input's file is a datagram: its header is stripped, as
			// the input strips it; a line without one is taken whole.
			msg, h, _ := syslog.Parse(line)
			lv[lineHostname], lv[lineTag] = h.Hostname, h.Tag
			fn(path, n, msg, nil, lv)
			return
		}
		switch msg, wrapperTime, u := in.unwrap(file.pathOf(path), line, ci.Streams, &lv); u {
		case message:
			fn(path, n, msg, wrapperTime, lv)
		case otherStream:
			c.skipped++
		case notCRILine:
			c.malformed++
		}
	})
	// A line of another stream too long to read never reached the handler: joinOptions
	// counted it as read (landed), and it is skipped as the other lines of its stream.
	// The follower counted it as read, not as too long.
	other := int(in.landed.Load())
	c.lines += other
	c.skipped += other
	c.tooLong = int(st.TooLong + in.tooLong.Load())
	if u, ok := errors.AsType[*follow.Unread](err); ok {
		c.unread, err = u.Errs, nil
	}
	return c, err
}

func hasEventTime(cfg *config.Config) bool {
	for _, r := range cfg.Rules {
		if r.Timestamp != nil {
			return true
		}
	}
	return false
}

// newestTime is the first replay pass's sink: it only keeps the newest event time that is
// not after until, the clock's second. A line stamped ahead of the clock (a bad timestamp,
// a writer whose clock is ahead) is future, as the exporter would count it: taken as the
// instant, it would make every other line late and every window empty.
type newestTime struct {
	time     int64
	until    int64
	seen     bool
	received uint64
}

func (n *newestTime) Event(e *parser.Event) {
	n.received++
	if e.HasTime && e.Time <= n.until && (!n.seen || e.Time > n.time) {
		n.time, n.seen = e.Time, true
	}
}

func (n *newestTime) Drop(int, parser.DropReason) { n.received++ }

// Received is how many events and drops n was given.
func (n *newestTime) Received() uint64 { return n.received }
