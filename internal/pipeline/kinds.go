package pipeline

import (
	"slices"

	"github.com/logwindow/logwindow_exporter/config"
	"github.com/logwindow/logwindow_exporter/internal/input"
	"github.com/logwindow/logwindow_exporter/internal/input/follow"
	"github.com/logwindow/logwindow_exporter/internal/input/syslog"
)

// inputKind is how the pipeline runs one kind of input.
type inputKind struct {
	// start runs the reader of shard of input ci, whose kind's sub-struct is set, handing
	// its lines to in.handle; in has its logger and, for a wrapper: cri input, its joiner.
	start func(p *Pipeline, ci config.Input, in *stream, shard int) (input.Input, error)
	// shards is how many readers share ci's lines; nil for one.
	shards func(ci config.Input) int
	// sourceAttr is the log attribute under which a named input's lines say its source;
	// "" when they say it otherwise.
	sourceAttr string
}

// inputKinds are the kinds of input the pipeline runs, by config.Input.Kind, in the
// manner of blackbox_exporter's probers: a new kind is its package under internal/input,
// its sub-struct of config.Input, its constructor below and its line here.
var inputKinds = map[string]inputKind{
	config.KindFile:   {start: startFollower, shards: globShards},
	config.KindSyslog: {start: startListener, sourceAttr: "socket"},
}

// shardsOf is how many readers share input ci's lines, at least one.
func shardsOf(ci config.Input) int {
	if k := inputKinds[ci.Kind()]; k.shards != nil {
		return max(k.shards(ci), 1)
	}
	return 1
}

// globShards is how many followers share a file input's glob: its `shards:`; a file
// path's shards are parse workers (workersOf).
func globShards(ci config.Input) int {
	if !ci.File.IsGlob() {
		return 1
	}
	return ci.File.Shards
}

// startFollower follows a file input's path: a follower per shard of a glob, each
// reading the directories dealt to it; a file path's follower, with `shards:`, deals its
// lines to parse workers (workers.go). It reads the clock once per chunk, and at process
// start may fill the windows of event-time rules from the end of the files (warmStart).
func startFollower(p *Pipeline, ci config.Input, in *stream, shard int) (input.Input, error) {
	hold := batchHold{p: p, in: in}
	opts := follow.Options{
		Path:          ci.File.Path,
		FromBeginning: ci.File.StartAt == config.StartAtBeginning,
		MaxLineBytes:  p.opts.MaxLineBytes,
		RotationGrace: p.opts.RotationGrace,
		PollInterval:  p.opts.PollInterval,
		Logger:        in.log,
		Backfill:      p.warmStart(ci, in.log),
		Hold:          hold,
		Lend:          hold.Lend,
		Block:         hold.Block,
		CaughtUp:      hold.CaughtUp,
		Files:         p.opts.OpenFiles,
		// A reload's (or a retry's) follower lists its files without p.mu (apply); the
		// start's before the exporter serves, as its warm start may fill windows.
		Later: !p.starting,
		Found: func(path string, dev, ino uint64) { p.warnReadTwice(in.source, path, fileID{dev: dev, ino: ino}) },
	}
	opts.Resume, opts.HandOver = p.resumeOf(ci.Source())
	opts.Left, opts.Truncated = p.leftOf(ci.Source())
	if opts.Resume == nil && len(p.vanished) > 0 {
		opts.Left = append(slices.Clip(opts.Left), p.vanished...)
	}
	if !opts.HandOver {
		opts.Taken, opts.Drained = p.resumeTaken, p.resumeDrained[ci.Source()]
		// A snapshot of an earlier version has no section of them (a nil map).
		opts.DrainedUnknown = opts.Resume != nil && p.resumeDrained == nil
	}
	if opts.Backfill != nil {
		// The storage lock's wait and the fill's are one startupProbe's.
		opts.Waited = max(p.opts.Now().Sub(p.begun), 0)
	}
	in.workers.Store(int32(workersOf(ci)))
	if in.deal != nil {
		opts.Select = func(path string) bool { return in.deal.owns(path, shard) }
		opts.Claim = func(dev, ino uint64) bool { return in.deal.claim(dev, ino, shard) }
		opts.Release = func(dev, ino uint64) { in.deal.release(dev, ino, shard) }
	}
	in.joinOptions(&opts, &p.cut, func() config.Streams { return p.gen.Load().input(in.source).Streams })
	pps, vps := p.partsOf(ci.Source()), []pathParts(nil)
	if opts.Resume == nil {
		vps = p.vanishedParts // of the inputs this one may replace, as p.vanished
	}
	if in.cri != nil && len(pps)+len(vps) > 0 {
		restart := p.starting // a snapshot's parts, its removed inputs named by their source
		opts.Started = func(from []follow.Position) {
			in.resumeFrom(from, restart, pps, vps)
			if len(vps) > 0 && p.vanishedTo == nil {
				p.vanishedTo = in
			}
		}
		// settleParts counts, under p.mu once the inputs started, the messages no Started
		// took: one that gives messages back runs before it, its first scan under p.mu.
		opts.Later = false
	}
	in.later = opts.Later
	in.formatOptions(p, &opts)
	if in.files != nil {
		in.at = new(follow.Line)
		opts.At = in.at
	}
	opts.Chunk = func() { in.processing, in.wall = p.clock.read() }
	return follow.Start(opts, in.handle(p))
}

// resumeOf is where the followers of source start that replace others (Options.Resume):
// those of the snapshot restored at Start, those stopped by handOver at a reload (then
// handedOver is true, for the follower's log); nil for new followers.
func (p *Pipeline) resumeOf(source string) (ps []follow.Position, handedOver bool) {
	if ps, ok := p.handedOver[source]; ok {
		return ps, true
	}
	return p.resume[source], false
}

// leftOf is where the followers whose positions resumeOf gives read the files they closed
// after the files left their path, and what the files they found truncated lately held,
// for the followers that replace them.
func (p *Pipeline) leftOf(source string) (left []follow.Position, truncated []follow.Truncation) {
	if _, ok := p.handedOver[source]; ok {
		return p.handedLeft[source], p.handedTruncated[source]
	}
	return p.resumeLeft[source], p.resumeTruncated[source]
}

// partsOf is what the joiners were in the middle of whose followers' positions resumeOf
// gives, for the joiners of the followers that replace them.
func (p *Pipeline) partsOf(source string) []pathParts {
	if _, ok := p.handedOver[source]; ok {
		return p.handedParts[source]
	}
	return p.resumeParts[source]
}

// startListener binds a syslog input's socket; its lines read the clock once per batch of
// datagrams, and what they made is written at the end of the batch. With candidate
// formats, lines held while none fits are settled once the socket was quiet for
// heldQuiet, as a file's are (settleQuiet), and parsed when it stops, as a file's are
// when its reader lets go of it (closeFile): a shutdown's snapshot has them, and no
// restart reads them again.
func startListener(p *Pipeline, ci config.Input, in *stream, _ int) (input.Input, error) {
	opts := syslog.Options{
		Network:      ci.Syslog.Socket.Network,
		Addr:         ci.Syslog.Socket.Addr,
		SocketMode:   ci.Syslog.SocketMode,
		MaxLineBytes: p.opts.MaxLineBytes,
		// A unix socket's path is checked as often as a file's, to bind it again when
		// its file was removed or replaced.
		CheckInterval: p.opts.PollInterval,
		Logger:        in.log,
		Header:        func(h syslog.Header) { in.header = h },
		Batch:         func() { in.processing, in.wall = p.clock.read() },
		BatchEnd:      in.flush,
	}
	if in.files != nil {
		opts.Quiet, opts.QuietInterval = func() { in.settleQuiet(p) }, p.opts.PollInterval
		opts.Stopped = func() { in.closeFile(p, "") } // a socket's datagrams are one file's, of no path
	}
	return syslog.Listen(opts, in.handle(p))
}
