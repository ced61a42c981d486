package pipeline

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"log/slog"
	"time"

	"github.com/logwindow/logwindow_exporter/config"
	"github.com/logwindow/logwindow_exporter/parser"
)

// DefaultBackfillBytes bounds how far back a warm start reads a file.
const DefaultBackfillBytes = 256 << 20

// probeBytes is how far a probe of the warm start reads to find a line with a time, and
// its first step back from the end.
const probeBytes = 64 << 10

// warmStart returns the follower's Backfill for input ci at process start, or nil when no
// warm start applies: start_at beginning (the whole file is read anyway), backfill off, a
// wrapper: cri input (its lines need the joining of partial lines), or no event-time rule
// reading this input. Its lines carry their own time, so the windows of those rules can
// be filled from the end of the file; processing-time rules cannot be.
func (p *Pipeline) warmStart(ci config.Input, log *slog.Logger) func(path string, file io.ReaderAt, end int64) {
	if !p.starting || ci.File.StartAt != config.StartAtEnd || p.opts.BackfillBytes <= 0 || ci.Wrapper != "" {
		return nil
	}
	var longest int64
	for _, r := range p.gen.Load().cfg.Rules {
		if r.Timestamp != nil && r.Reads(ci) {
			longest = max(longest, int64(r.Longest()/time.Second))
		}
	}
	if longest == 0 {
		return nil
	}
	return func(path string, file io.ReaderAt, end int64) {
		g := p.gen.Load()
		sink := g.set.NewBackfillSink()
		processing, wall := p.clock.read()
		sink.SetNow(processing, wall)
		name := g.inputName(ci.Source())
		maxLine := maxLineBytes(p.opts)
		from := backfillFrom(file, end, p.opts.BackfillBytes, wall-longest, g.parser, name, maxLine)
		ps := g.parser.NewSession()
		ps.SetFormat(name, g.input(ci.Source()).LogFormat)
		if paths := newPathValues(g.input(ci.Source()), g.parser, p.opts.Now); paths != nil {
			paths.set(ps, path)
		}
		lines := readLines(file, from, end, maxLine, func(line []byte) { ps.ParseWrapped(name, line, nil, sink) })
		log.Info("warm start: windows of event-time rules filled from the end of the file",
			"path", path, "from", from, "to", end, "lines", lines)
		if ahead := sink.LeftAhead(); ahead > 0 {
			log.Warn("warm start: lines stamped after the host's clock were left out of the windows (a writer's clock ahead, or local times read as UTC by a timestamp layout without a zone: give it the log's timestamp: location:); read live, such a line counts at the second it is read, as a future line",
				"path", path, "rule_matches", ahead, "wall_clock", time.Unix(wall, 0).UTC())
		}
	}
}

// backfillFrom finds where a warm start reads from: going back from end in doubling steps,
// the first offset whose next line with a time is at or before cutoff (older than every
// window), or end−limit (or 0) when none is. Lines are in time order give or take a few
// seconds, so what precedes that line is older still; at most twice the bytes needed are
// read.
func backfillFrom(file io.ReaderAt, end, limit, cutoff int64, ps *parser.Parser, input string, maxLine int) int64 {
	floor := max(0, end-limit)
	for step := int64(probeBytes); ; step *= 2 {
		at := end - step
		if at <= floor {
			return floor
		}
		if t, ok := firstTime(file, at, min(end, at+probeBytes), ps, input, maxLine); ok && t <= cutoff {
			return at
		}
	}
}

// firstTime is the time of the first complete line after offset from (before to) that an
// event-time rule gives one.
func firstTime(file io.ReaderAt, from, to int64, ps *parser.Parser, input string, maxLine int) (int64, bool) {
	var found timeSink
	readLines(file, from, to, maxLine, func(line []byte) {
		if !found.seen {
			ps.Parse(input, line, &found)
		}
	})
	return found.time, found.seen
}

// timeSink keeps the time of the first event that has one.
type timeSink struct {
	time int64
	seen bool
}

func (s *timeSink) Event(e *parser.Event) {
	if e.HasTime && !s.seen {
		s.time, s.seen = e.Time, true
	}
}

func (s *timeSink) Drop(int, parser.DropReason) {}

// readLines hands h every complete line between from and to, skipping the first when from
// is inside a line (not at 0 and not after a newline) and lines longer than maxLine; it
// returns the number of lines handed on. A read error ends it: a warm start is best effort.
func readLines(file io.ReaderAt, from, to int64, maxLine int, h func(line []byte)) int {
	skip := false
	if from > 0 {
		var b [1]byte
		if _, err := file.ReadAt(b[:], from-1); err != nil {
			return 0
		}
		skip = b[0] != '\n'
	}
	r := bufio.NewReaderSize(io.NewSectionReader(file, from, to-from), 64<<10)
	var long []byte
	tooLong := false
	n := 0
	for {
		chunk, err := r.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			if len(long)+len(chunk) > maxLine+1 {
				tooLong, long = true, long[:0]
			} else if !tooLong {
				long = append(long, chunk...)
			}
			continue
		}
		if err != nil {
			return n // EOF: a last line without newline is not complete
		}
		line := chunk
		if len(long) > 0 || tooLong {
			line = append(long, chunk...)
		}
		switch {
		case skip:
			skip = false
		case tooLong || len(line)-1 > maxLine:
		default:
			h(bytes.TrimSuffix(line[:len(line)-1], []byte("\r")))
			n++
		}
		long, tooLong = long[:0], false
	}
}
