package pipeline

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/logwindow/logwindow_exporter/config"
	"github.com/logwindow/logwindow_exporter/config/logformat"
	"github.com/logwindow/logwindow_exporter/internal/input"
	"github.com/logwindow/logwindow_exporter/internal/input/cri"
	"github.com/logwindow/logwindow_exporter/internal/input/follow"
	"github.com/logwindow/logwindow_exporter/internal/input/syslog"
	"github.com/logwindow/logwindow_exporter/internal/selfmetric"
	"github.com/logwindow/logwindow_exporter/internal/store"
	"github.com/logwindow/logwindow_exporter/parser"
)

// stream is one input of the config running: a followed path or a syslog socket. It is identified across reloads
// by its source alone (config.Input.Source; config refuses two inputs with one source): a
// reload that renames it or changes its start_at keeps its follower and read offsets (or
// its bound socket), so no line is read twice or skipped, and start_at applies only when a
// path is first followed. One that changes how it is read (reading) or its glob's shards
// starts it anew, from the positions of the followers it replaces (handOver).
type stream struct {
	source string
	label  string // for self-metrics: the name, or the source when unnamed; guarded by Pipeline.mu
	// reading is how the reader was started to read lines (readingOf): a reload that
	// changes it starts the input anew (handOver).
	reading reading
	// running is the follower of a path or the listener on a socket.
	running input.Input
	// log is the logger of the input's lines (Pipeline.inputLogger).
	log *slog.Logger
	// bound is what the input's reading goroutine writes to: the generation it picked up
	// at the first line after a reload. A reload clears it, so that an input that receives
	// no line does not keep the previous generation (its parser and stores) alive.
	bound atomic.Pointer[binding]
	// malformed counts lines its fields rules could not read (not JSON, not logfmt), or
	// not CRI lines on a cri input; unmatched the lines no rule matched. They, and unread,
	// are added from the bindings' counts (publish) after the lines are counted as read
	// (landed), and stats loads them before it: a look never finds more lines by what
	// became of them than lines read.
	malformed, unmatched atomic.Uint64
	// unread counts the lines of files whose chosen candidate format no rule reads
	// (parser.Session.Unread), which are not unmatched: no rule was meant to read them.
	unread atomic.Uint64
	// unfit counts the unmatched lines that fitted no group of rules (parser.LineDone):
	// of an input with a log format, lines not of it; fit the well-formed lines that
	// fitted one (warnUnreadable). Both are added from the bindings' counts when the
	// lines' events are written (publish), fit first: a look at them never finds a
	// line that did not fit without those that did before it.
	unfit, fit atomic.Uint64
	// cri joins the partial lines of a wrapper: cri input (nil otherwise); used by the
	// follower's goroutine only. tooLong counts the messages it dropped: joined past the
	// line cap or refused the memory, or whose file went before their last part.
	cri     *cri.Joiner
	tooLong atomic.Uint64
	// stopping is set once the input is being stopped: the joiner then keeps what it was
	// in the middle of as the follower lets go of its files, for the shutdown's snapshot
	// or the joiners of the followers a reload starts instead (handOver).
	stopping atomic.Bool
	// hold charges the memory bound (store.Set.Hold) with what the joiner's partial
	// messages take, held what it was charged so far: a running input's (nil in a replay),
	// used by its reading goroutine, and by stopInputs once it stopped.
	hold func(n int64)
	held int64
	// processing and wall are the clock's reading for the lines being read: a follower
	// reads it once per chunk it reads (follow.Options.Chunk), a socket input once per
	// batch of datagrams (syslog.Options.Batch). Used by the reading goroutine only.
	processing, wall int64
	// header is the syslog header of the datagram being handled (syslog.Options.Header),
	// used by the reading goroutine only.
	header syslog.Header
	// later says that the follower lists and opens its files in its own goroutine
	// (follow.Options.Later), as a reload starts it; readiness does not wait for it.
	later bool
	// deal is the dealer of the glob's directories that this follower shares with the
	// input's other shards (nil with one follower).
	deal *dealer
	// files is the format chosen for each file of an input with candidate log formats
	// and the lines held while it is chosen (nil for an input of one format); used by
	// the reading goroutine, across generations.
	files *parser.Files
	// judged judges the files of a glob of one log format (nil for another input); used
	// by the reading goroutine, across generations, and by the binding's judge.
	judged *verdicts
	// at is where the line being handed on starts (follow.Options.At), for a follower of
	// candidate formats (nil otherwise); kept is, by path, where the first of the lines
	// held while its format is chosen starts in each file (keepHeld), which a snapshot's
	// positions go back to (keptAt), so that a restart after a kill reads the lines that
	// were held, and not counted, again. Used by the reading goroutine and by a snapshot,
	// each under the cut.
	at   *follow.Line
	kept map[string][]follow.Position
	// holding is, by path, the processing second of the last line of each file that
	// holds lines (of a syslog input, of its one path ""), or of a glob of one log format
	// that waits to be judged (verdicts.line), for settleQuiet. Used by the reading
	// goroutine only.
	holding map[string]int64
	// workers is how many goroutines are to parse the follower's lines (workersOf), set
	// by reloads; pool is the workers running besides the reading goroutine, nil while it
	// parses them alone (see workers.go). A batch's lines have no binding of the reading
	// goroutine's: it looks up the CRI streams the input reads once per config, streams
	// those of streamsOf.
	workers   atomic.Int32
	pool      atomic.Pointer[pool]
	streamsOf *config.Config
	streams   config.Streams
	// unflushed is the binding the reading goroutine's lines went to since it last
	// flushed: a binding's sink holds what the lines made (store.NewBatchSink) until the
	// reading goroutine is done handing lines on for a while (flush). Used by that
	// goroutine only.
	unflushed *binding
	// handed counts the lines the reading goroutine parsed since it last flushed; landed
	// the lines whose events are written, which is what the input's lines read say (see
	// stats): a scrape that sees a line read sees what it made, though a sink holds a
	// read's events until the read's last line.
	handed uint64
	landed atomic.Uint64
	// notCRI counts the lines the reading goroutine found not CRI lines since it last
	// flushed, added to malformed then, after the lines are counted as read.
	notCRI uint64
}

// binding is an input's view of one generation.
type binding struct {
	gen *generation
	// parse is gen's parser with buffers of the input's own: its lines come from one
	// goroutine.
	parse *parser.Session
	sink  *store.Sink
	name  string // the input's name in gen's config, for rules' inputs: restriction
	// streams are the CRI streams the input reads in gen's config.
	streams config.Streams
	// paths gives parse the path captures of each line's file; nil when none is read.
	paths *pathValues
	// done counts each line parse tells of as malformed or unmatched; received is the
	// sink's count of events and drops after the line before, by which a line no rule
	// matched is told without a second pass.
	done     parser.LineDone
	received uint64
	// fits and unfits count the well-formed lines done told of that fitted and that did
	// not, since they were last added to the stream's fit and unfit (publish), and
	// malformed, unmatched and unread those it told of so: plain counts of the binding's
	// goroutine, so that a line pays no atomic operation for them.
	fits, unfits                 uint64
	malformed, unmatched, unread uint64
	// judge says that the stream's files are judged by the input's one log format, which a
	// rule reads (stream.judged).
	judge bool
	// zones are the runs of the offsets from the clock of the times the rules read, one
	// per time read of the parser (watchZones); nil until the first is sampled.
	zones []zoneRun
}

// publish adds what b counted of its lines to the stream's counts, and its sink's matched
// lines to its rules' (store.NewDeferredSink); called by b's goroutine once their events
// are written and the lines counted as read (landed).
func (in *stream) publish(b *binding) {
	b.sink.Publish()
	add(&in.fit, &b.fits)
	add(&in.unfit, &b.unfits)
	add(&in.malformed, &b.malformed)
	add(&in.unmatched, &b.unmatched)
	add(&in.unread, &b.unread)
}

// add adds *n to c and zeroes it: one atomic operation, and none for nothing.
func add(c *atomic.Uint64, n *uint64) {
	if *n > 0 {
		c.Add(*n)
		*n = 0
	}
}

// bind returns the input's binding to the current generation, making it on the first
// line after a reload.
func (in *stream) bind(p *Pipeline) *binding { return in.bindTo(p, &in.bound) }

// bindTo is bind for the goroutine whose binding slot holds: the reading goroutine's, or
// a parse worker's.
func (in *stream) bindTo(p *Pipeline, slot *atomic.Pointer[binding]) *binding {
	g := p.gen.Load()
	if b := slot.Load(); b != nil && b.gen == g {
		return b
	}
	ci := g.input(in.source)
	b := &binding{gen: g, parse: g.parser.NewSession(), sink: g.set.NewDeferredSink(), name: ci.Name, streams: ci.Streams, paths: newPathValues(ci, g.parser, p.opts.Now)}
	if b.paths != nil && ci.File != nil {
		b.paths.miss = func(path string) {
			// Once per load for the input, whichever of its shards or workers finds it.
			if _, logged := g.pathsMissed.LoadOrStore(in.source, true); !logged {
				in.log.Warn(pathsMissMessage, "path", path, "path_captures", ci.File.PathCaptures.String())
			}
		}
	}
	if in.files != nil {
		// Candidates a reload took away (or the input with them) are none rather than nil:
		// nil would drop in.files, and with it the lines held while a file's format was
		// being chosen, which the reader started anew reads on past (handOver). With none,
		// they are parsed when the stopping reader lets go of their files.
		formats := ci.LogFormats
		if formats == nil {
			formats = []*logformat.Format{}
		}
		b.parse.SetFormats(formats, in.files)
	} else {
		b.parse.SetFormat(ci.Name, ci.LogFormat)
	}
	if in.judged != nil && slot == &in.bound {
		format := ""
		if ci.LogFormat != nil && g.parser.ReadsInput(ci.Name) {
			format, b.judge = ci.LogFormat.ID(), true
		}
		in.judged.judgeBy(format)
	}
	b.received = b.sink.Received()
	b.done = func(wellFormed, fitted bool) {
		received := b.sink.Received()
		switch {
		case !wellFormed:
			b.malformed++
		case received != b.received:
			b.fits++
		case fitted:
			b.fits++
			if in.files != nil && b.parse.Unread(b.name) {
				b.unread++
			} else {
				b.unmatched++
			}
		default:
			b.unmatched++
			b.unfits++
		}
		b.received = received
	}
	slot.Store(b)
	return b
}

// unbindIfStale lets go of binding b, held in slot, when a reload came after it was
// loaded: a reload between the Load of the generation and the Store of the binding would
// leave the old generation bound after the reload cleared it.
func (in *stream) unbindIfStale(p *Pipeline, slot *atomic.Pointer[binding], b *binding) {
	if p.gen.Load() != b.gen {
		slot.CompareAndSwap(b, nil)
	}
}

// unwrapped says what unwrap made of a line.
type unwrapped uint8

const (
	// message: the line gave a message for the rules.
	message unwrapped = iota
	// pending: the line was a part of a message still being joined, or a message past
	// the line cap (counted).
	pending
	// notCRILine: the line is not a CRI line, malformed for the caller to count.
	notCRILine
	// otherStream: the line is of a CRI stream the input does not read (streams:); it is
	// skipped before it is joined. The follower counted it as a line read, as it counts
	// every line it hands on; it is neither malformed, unmatched nor too long (a one-shot
	// counts it as skipped: readMessages).
	otherStream
)

// unwrap returns what the parser is to read of a line: for a cri input of streams, the
// message (joined from its parts), its time and, in lv, its stream.
func (in *stream) unwrap(path string, line []byte, streams config.Streams, lv *lineValues) (msg, wrapperTime []byte, u unwrapped) {
	if in.cri == nil {
		return line, nil, message
	}
	name, skip := skipsStream(line, streams)
	if skip {
		return nil, nil, otherStream
	}
	msg, wrapperTime, r := in.cri.Feed(path, line)
	in.chargeHeld()
	switch r {
	case cri.Complete:
		lv[lineStream] = name
		return msg, wrapperTime, message
	case cri.Malformed:
		return nil, nil, notCRILine
	case cri.TooLong:
		in.tooLong.Add(1)
	}
	return nil, nil, pending
}

// criText is where a CRI file's text starts (follow.Options.Text): the message of its
// first line, whose bytes tell what its container writes in (UTF-16, a Windows console's
// or PowerShell's), as a file's first bytes tell of its own; a first line that is not a
// CRI line leaves the file's bytes as they are.
func criText(head []byte) ([]byte, bool) {
	line, _, whole := bytes.Cut(head, []byte("\n"))
	if at, ok := cri.MessageStart(line); ok {
		return head[at:], true
	}
	return head, whole
}

// skipsStream returns the stream of a CRI line, and whether it is of a stream an input
// of streams does not read, which is skipped before it is joined.
func skipsStream(line []byte, streams config.Streams) (name []byte, skip bool) {
	name, ok := cri.Stream(line)
	return name, ok && !streams.Reads(name)
}

// joinOptions has the follower of a cri input tell a file's encoding by its first
// message (criText) and tell its joiner of the lines it skips for their length, so that
// the rest of their message goes with them, and of the files it is done with, so that
// their partial messages are forgotten, under cut (nil in a one-shot), as a
// snapshot reads the joiner under it; but not as the input stops: the follower then lets
// go of every file while their messages in parts go on, in the shutdown's snapshot or in
// the followers a reload starts instead. streams are the streams the input reads now: a
// line of another is skipped before it is joined (unwrap), and so is one too long, whose
// message the joiner would otherwise keep until its file goes; it counts as a line read,
// as the others of its stream do, not as too long. A message forgotten with its file
// counts as too long, as one the joiner drops for the memory does: it is dropped whole,
// and a pod deleted while its container wrote a long message showed it nowhere.
func (in *stream) joinOptions(o *follow.Options, cut *sync.RWMutex, streams func() config.Streams) {
	if in.cri != nil {
		o.Text = criText
		o.TooLong = func(path string, head []byte) bool {
			if _, skip := skipsStream(head, streams()); skip {
				in.landed.Add(1) // read as the other lines of its stream are: it makes no event
				return false
			}
			in.cri.Dropped(path, head)
			in.chargeHeld()
			return true
		}
		o.Closed = func(path string) {
			if in.stopping.Load() {
				return // what the joiner holds goes with the input (stopInput)
			}
			if cut != nil {
				cut.RLock()
				defer cut.RUnlock()
			}
			in.tooLong.Add(uint64(in.cri.Release(path)))
			in.chargeHeld()
		}
	}
}

// formatOptions has the follower of an input with candidate log formats tell of the files
// it is done with, so that their held lines are parsed and their state forgotten, and that
// of a glob of one log format, so that their verdicts are.
func (in *stream) formatOptions(p *Pipeline, o *follow.Options) {
	if in.files == nil && in.judged == nil {
		return
	}
	closed := o.Closed
	o.Closed = func(path string) {
		if closed != nil {
			closed(path)
		}
		if in.files != nil {
			in.closeFile(p, path)
		} else {
			delete(in.holding, path)
			in.judged.closed(path)
		}
	}
}

// chargeHeld charges hold with what the joiner's partial messages grew or shrank by since
// the last call: two loads a line when they did not change.
func (in *stream) chargeHeld() {
	if in.hold == nil {
		return
	}
	if n := in.cri.HeldBytes(); n != in.held {
		in.hold(n - in.held)
		in.held = n
	}
}

// inputName is the name cfg gives the input reading source.
func (g *generation) inputName(source string) string {
	return g.input(source).Name
}

// input is cfg's input reading source (a zero Input when there is none).
func (g *generation) input(source string) config.Input {
	for _, ci := range g.cfg.Inputs {
		if ci.Source() == source {
			return ci
		}
	}
	return config.Input{}
}

// stats is the input's snapshot with what the pipeline counts of it.
func (in *stream) stats() selfmetric.InputStats {
	// What became of the lines is loaded before the lines read, which are counted first
	// (flush): a scrape never shows more lines unmatched, malformed or unread (or, of a
	// socket, malformed datagrams: its Stats) than read.
	st := in.running.Stats()
	st.MalformedLines = in.malformed.Load()
	st.Unmatched = in.unmatched.Load()
	st.Unread = in.unread.Load()
	// The input counts a line as read when it hands it on; its events are written when
	// the read or batch it came in is done. Lines count as read once they are written, so
	// that a scrape never shows a line read whose events it lacks.
	st.LinesRead = in.landed.Load()
	// What came in to be the lines (a socket's datagrams) is loaded after them, which it
	// is counted before: a scrape never shows more lines read than datagrams received.
	if a, ok := in.running.(input.Arrivals); ok {
		for _, c := range a.Arrivals() {
			if i := slices.IndexFunc(st.Counters, func(o input.Counter) bool { return o.Name == c.Name && o.LabelValue == c.LabelValue }); i >= 0 {
				st.Counters[i] = c
			}
		}
	}
	st.TooLong += in.tooLong.Load()
	if in.files != nil {
		st.Formats = in.files.Formats()
	} else if in.judged != nil {
		st.Formats = in.judged.formats()
	}
	return selfmetric.InputStats{Input: in.label, Stats: st}
}

// syncInputs starts the inputs of cfg that are not running and stops those cfg no longer
// names. It keeps going past an input that fails to start and returns every failure.
func (p *Pipeline) syncInputs(cfg *config.Config) error {
	// The inputs of sources cfg no longer has stop before any starts: one moved to another
	// address of the same socket (udp://127.0.0.1:514 to udp://0.0.0.0:514) could not bind
	// while the old one holds it. Those of a source cfg keeps are left to handOver, which
	// keeps where they stopped.
	sources := map[string]bool{}
	for _, ci := range cfg.Inputs {
		sources[ci.Source()] = true
	}
	for k, in := range p.inputs {
		if !sources[in.source] {
			p.stopInput(k, in)
			if f, ok := in.running.(*follow.Follower); ok {
				ps := f.Positions()
				p.vanished = append(append(p.vanished, ps...), f.Left()...)
				for _, pp := range in.partsAt(ps, f.Drained) {
					pp.from = in.label
					p.vanishedParts = append(p.vanishedParts, pp)
				}
			}
		}
	}
	wanted := map[string]bool{}
	var errs []error
	p.notRunning = nil
	for _, ci := range cfg.Inputs {
		p.handOver(ci)
		deal := p.dealerOf(ci)
		for shard := range shardsOf(ci) {
			key := streamKey(ci, shard)
			wanted[key] = true
			if in, running := p.inputs[key]; running {
				in.label = ci.Label()
				in.workers.Store(int32(workersOf(ci)))
				continue
			}
			in, err := p.startInput(ci, shard, deal)
			if err != nil {
				errs = append(errs, err)
				if len(p.notRunning) == 0 || p.notRunning[len(p.notRunning)-1].Input != ci.Label() {
					p.notRunning = append(p.notRunning, NotRunning{Input: ci.Label(), Err: err})
				}
				continue
			}
			p.inputs[key] = in
		}
	}
	p.stopInputs(wanted)
	p.settleParts(cfg)
	p.handedOver, p.handedParts, p.handedLeft, p.handedTruncated, p.vanished = nil, nil, nil, nil, nil
	p.vanishedParts, p.vanishedTo = nil, nil
	followed := slices.Collect(maps.Values(p.inputs))
	p.followed.Store(&followed)
	return errors.Join(errs...)
}

// reading is what of an input's config its reader is started with, besides its source:
// a joiner of CRI lines, the state of candidate formats per file, a unix socket's mode
// (set only as the socket is made).
type reading struct {
	cri, formats bool
	socketMode   fs.FileMode
}

func readingOf(ci config.Input) reading {
	r := reading{cri: ci.Wrapper == config.WrapperCRI, formats: ci.LogFormats != nil}
	if ci.Syslog != nil && ci.Syslog.Socket.Network == "unixgram" {
		r.socketMode = cmp.Or(ci.Syslog.SocketMode, syslog.DefaultSocketMode)
	}
	return r
}

// handOver stops the readers of ci's source that ci no longer has, as when a reload
// changed its shards or how its lines are read (reading), and keeps where followers
// stopped for those that replace them (startFollower), so that these read on from there
// rather than from start_at: from the beginning they would count every line of the files
// again, from the end skip those written meanwhile.
func (p *Pipeline) handOver(ci config.Input) {
	keep := map[string]bool{}
	for shard := range shardsOf(ci) {
		keep[streamKey(ci, shard)] = true
	}
	for k, in := range p.inputs {
		if in.source != ci.Source() || keep[k] && in.reading == readingOf(ci) {
			continue
		}
		p.stopInput(k, in)
		if f, ok := in.running.(*follow.Follower); ok {
			if p.handedOver == nil {
				p.handedOver, p.handedParts = map[string][]follow.Position{}, map[string][]pathParts{}
				p.handedLeft, p.handedTruncated = map[string][]follow.Position{}, map[string][]follow.Truncation{}
			}
			// Not nil when empty: a file none of them read came after them, and is read
			// from its first byte as a new file is. The messages its joiner was in the
			// middle of go on in the joiners of the followers that replace it.
			stopped := f.Positions()
			ps := append(p.handedOver[in.source], stopped...)
			if ps == nil {
				ps = []follow.Position{}
			}
			p.handedOver[in.source] = ps
			p.handedParts[in.source] = append(p.handedParts[in.source], in.partsAt(stopped, f.Drained)...)
			p.handedLeft[in.source] = append(p.handedLeft[in.source], f.Left()...)
			p.handedTruncated[in.source] = append(p.handedTruncated[in.source], f.Truncated()...)
		}
	}
}

// streamKey identifies the stream of an input's shard across reloads: its source, and for
// a glob shared by several followers the shard and their number (a reload that changes
// the number starts the input's followers anew, reading on where the others stopped:
// handOver).
func streamKey(ci config.Input, shard int) string {
	n := shardsOf(ci)
	if n == 1 {
		return ci.Source()
	}
	return fmt.Sprintf("%s#%d/%d", ci.Source(), shard, n)
}

// dealerOf is the dealer the followers of ci's shards share: a running shard's, so that
// one restarted beside it is dealt the same directories, else a new one (nil with one
// follower).
func (p *Pipeline) dealerOf(ci config.Input) *dealer {
	n := shardsOf(ci)
	if n == 1 {
		return nil
	}
	for shard := range n {
		if in, running := p.inputs[streamKey(ci, shard)]; running {
			return in.deal
		}
	}
	return newDealer(n, p.opts.Now)
}

// stopInputs stops every running input whose source keep does not hold (all when keep is
// nil).
func (p *Pipeline) stopInputs(keep map[string]bool) {
	for k, in := range p.inputs {
		if !keep[k] {
			p.stopInput(k, in)
		}
	}
}

// stopInput stops the running input in, of key k.
func (p *Pipeline) stopInput(k string, in *stream) {
	in.stop()
	if in.hold != nil {
		in.hold(-in.held) // its partial messages go with it
	}
	delete(p.inputs, k)
}

// stop stops in's reader, then its parse workers once they parsed what it dealt them. A
// stream may be stopped more than once.
func (in *stream) stop() {
	in.stopping.Store(true)
	in.running.Stop()
	in.stopPool()
}

// startInput starts the reader of one shard of input ci by the constructor of its kind.
func (p *Pipeline) startInput(ci config.Input, shard int, deal *dealer) (*stream, error) {
	in := &stream{source: ci.Source(), label: ci.Label(), deal: deal, reading: readingOf(ci)}
	kind, ok := inputKinds[ci.Kind()]
	if !ok {
		return nil, fmt.Errorf("input %s: the pipeline runs no input of kind %q", in.label, ci.Kind())
	}
	in.log = p.inputLogger(ci, kind.sourceAttr)
	if ci.Wrapper == config.WrapperCRI {
		in.cri = cri.New(maxLineBytes(p.opts))
		in.hold = func(n int64) { p.gen.Load().set.Hold(n) }
		in.cri.Bound(func(n int64) bool {
			// Past the bound, partial messages are dropped (counted as too long), as new
			// series fold: what they hold is charged to the same bound. What the joiner
			// took since the last charge (a message's record) is not charged yet.
			set := p.gen.Load().set
			limit := set.MaxBytes()
			return limit <= 0 || set.MemoryUsed()+in.cri.HeldBytes()-in.held+n <= limit
		})
	}
	if ci.LogFormats != nil {
		in.files = parser.NewFiles()
	} else if ci.File != nil && ci.File.IsGlob() {
		in.judged = newVerdicts()
	}
	running, err := kind.start(p, ci, in, shard)
	if err != nil {
		return nil, fmt.Errorf("input %s: %w", in.label, err)
	}
	in.running = running
	return in, nil
}

// inputLogger is the logger of an input's lines: input is its name, as in the input label
// of its metrics and in rules' inputs:, or its source when it has none. A named input's
// lines also carry its source under sourceAttr, its kind's, when they do not say it
// otherwise (a follower's name the file they are about).
func (p *Pipeline) inputLogger(ci config.Input, sourceAttr string) *slog.Logger {
	if sourceAttr != "" && ci.Name != "" {
		return p.opts.Logger.With("input", ci.Name, sourceAttr, ci.Source())
	}
	return p.opts.Logger.With("input", ci.Label())
}

// handle returns the follower's handler: every line goes through the current generation's
// parser into its Set, with the processing and wall-clock seconds of its arrival (one
// clock reading per chunk read from a file, or per batch of datagrams) as now for
// processing-time and event-time rules.
func (in *stream) handle(p *Pipeline) input.Handler {
	return func(path string, line []byte) {
		if w := in.pool.Load(); w != nil && w.batching() {
			in.batch(p, w, path, line)
			return
		}
		b := in.bind(p)
		lv := lineValues{lineHostname: in.header.Hostname, lineTag: in.header.Tag}
		if msg, wrapperTime, u := in.unwrap(path, line, b.streams, &lv); u == message {
			if b.paths != nil {
				b.paths.setLine(b.parse, path, lv)
			}
			in.setNow(b)
			fits := b.fits
			b.parse.ParseFile(path, b.name, msg, wrapperTime, b.sink, b.done)
			if b.judge {
				if judged, waits := in.judged.line(path, msg, b.fits != fits); judged {
					in.keepHeld(path, waits)
				}
			}
			if in.files != nil {
				in.keepHeld(path, b.parse.Holds())
			}
		} else {
			if u == notCRILine {
				in.notCRI++
			}
			if in.at != nil && len(in.kept) > 0 && len(in.kept[path]) > 0 {
				// A line of no message (a CRI part, a line of another stream) of a path
				// that holds lines: in a file that took the path since (a rotation) it is
				// where the file is read again from, with the parts of a message begun
				// before it.
				in.keepHeld(path, true)
			}
		}
		in.handed++ // after the parse: a flush by setNow is of the lines before
		in.unbindIfStale(p, &in.bound, b)
	}
}

// parseBlock parses the complete lines of a read (follow.Options.Block) in the reading
// goroutine, for an input whose lines handle would give the parse as they are and do
// nothing more with: not CRI, without path captures, candidate formats or a judged glob.
// It does what handle does for each line, without each line handed on by a call, counted
// by an atomic add and checked for a pool and a wrapper (some 3% of a line's CPU with the
// example's rules); the parser goes through the lines itself (Session.ParseSpan) and
// what b.done would count of each is added once for the read. It returns whether it
// parsed them (follow.Options.Block), not for another input, whose lines are then
// handed on one by one. Like a worker's batch, the read is parsed
// with the binding of its start: a reload during it applies from the next read, as it
// would had it come a read later. The lines' path is the Block's, which an input of one
// format does not read.
func (in *stream) parseBlock(p *Pipeline, _ string, lines []byte) bool {
	if in.cri != nil || in.files != nil {
		return false
	}
	b := in.bind(p)
	if b.paths != nil || b.judge {
		return false
	}
	in.setNow(b)
	sp := b.parse.ParseSpan(b.name, lines, b.sink)
	in.handed += b.spanDone(sp)
	in.unbindIfStale(p, &in.bound, b)
	return true
}

// spanDone counts what b.done would have counted of each line of sp, a span b's session
// parsed (Session.ParseSpan), at once for them all (with no candidate formats no fitted
// line is unread), and returns how many lines it held.
func (b *binding) spanDone(sp parser.Span) uint64 {
	b.malformed += sp.Malformed
	b.unmatched += sp.Fitted + sp.Unfitted
	b.fits += sp.Matched + sp.Fitted
	b.unfits += sp.Unfitted
	b.received = b.sink.Received()
	return sp.Lines
}

// batch is handle with a pool: the line's message goes into the batch being filled, for
// a worker to parse.
func (in *stream) batch(p *Pipeline, w *pool, path string, line []byte) {
	w.cur.handed++
	var lv lineValues
	if in.cri != nil {
		if g := p.gen.Load(); g.cfg != in.streamsOf {
			in.streamsOf, in.streams = g.cfg, g.input(in.source).Streams
		}
	}
	switch msg, wrapperTime, u := in.unwrap(path, line, in.streams, &lv); u {
	case message:
		w.add(path, msg, wrapperTime, lv[lineStream])
	case notCRILine:
		w.cur.notCRI++
	}
}

// setNow gives b's sink the clocks of the line being parsed, and its session the wall
// clock the line is read at as it is written; the reading goroutine's sink of another
// binding (the generation changed) is flushed first, so that it holds nothing once it is
// let go.
func (in *stream) setNow(b *binding) {
	if in.unflushed != b {
		in.flush()
		in.unflushed = b
	}
	b.sink.SetNow(in.processing, in.wall)
	b.parse.SetWall(in.wall)
}

// flush writes what the reading goroutine's sink holds: when a read's lines were handed
// on (the follower's hold is let go), after a batch of datagrams, after a file's held
// lines were parsed.
//
// The lines count as read once their events are written, and what became of them
// (publish) once they count as read: a scrape that shows a line read shows its events,
// and never more lines unmatched or malformed than read.
func (in *stream) flush() {
	b := in.unflushed
	if b != nil {
		b.sink.Flush()
	}
	in.landed.Add(in.handed)
	in.handed = 0
	add(&in.malformed, &in.notCRI)
	if b != nil {
		in.publish(b)
		in.watchZones(b, in.wall)
		in.unflushed = nil
	}
}

// keepHeld notes, after a message of path was parsed, when its file (a syslog input's
// lines: path "") last held lines (holding) and, for a follower, where its first held
// line starts, or forgets path's files when held says none is held. The lines a
// path holds are every message of it from the first held on, so a file's first held line
// is where a restart reads it again from. With a CRI wrapper that is the message's last
// part, the line that completed it: its parts before are lost, as those of a message being
// joined are, rather than a message of another stream counted between them read again.
// A file that took a holding path since its first held line (a rotation) is read again
// from its first line since, message or not: every line after that one is.
func (in *stream) keepHeld(path string, held bool) {
	if !held {
		if len(in.kept) > 0 {
			delete(in.kept, path)
		}
		if len(in.holding) > 0 {
			delete(in.holding, path)
		}
		return
	}
	if in.holding == nil {
		in.holding = map[string]int64{}
	}
	in.holding[path] = in.processing
	if in.at == nil {
		return // no file to read again
	}
	ks := in.kept[path]
	i := slices.IndexFunc(ks, func(k follow.Position) bool { return k.Dev == in.at.Dev && k.Ino == in.at.Ino })
	if i >= 0 && in.at.Offset >= ks[i].Offset {
		return
	}
	// The file's first held line, or one before the first kept: it was truncated and is
	// read again from its start, and what it held before is gone.
	pos, ok := in.at.Position()
	switch {
	case !ok: // its first bytes cannot be read (nor its position taken at the cut, then)
	case i >= 0:
		ks[i] = pos
	default:
		if in.kept == nil {
			in.kept = map[string][]follow.Position{}
		}
		in.kept[path] = append(ks, pos)
	}
}

// keptAt is ps, the positions of the follower's files, with those that hold lines at
// their first held line: every line before it is counted, none after. A file no longer
// read (rotated away and closed while its successor, read under its path, holds lines
// after it) is there too, for a restart to find by its identity.
func (in *stream) keptAt(ps []follow.Position) []follow.Position {
	for _, ks := range in.kept {
		for _, k := range ks {
			i := slices.IndexFunc(ps, func(p follow.Position) bool { return p.Dev == k.Dev && p.Ino == k.Ino })
			switch {
			case i < 0:
				ps = append(ps, k)
			case k.Offset < ps[i].Offset: // under the path it is read under now
				ps[i].Offset, ps[i].Head = k.Offset, k.Head
			}
		}
	}
	return ps
}

// closeFile parses what is held of a file the follower is done with, while its format
// was being chosen, and forgets the file (parseHeld).
func (in *stream) closeFile(p *Pipeline, path string) { in.parseHeld(p, path, true) }

// heldQuiet is how long a file that holds lines of no format chosen, none of which fits a
// candidate, gets no line before they are settled (settleQuiet): long enough for a
// container's start-up messages to be followed by its first lines of a format, short
// enough for a short log of another format to be told of while it matters.
const heldQuiet = time.Minute

// settleQuiet settles (parser.Session.Settle) the files that hold lines of no format
// chosen and got no line for heldQuiet: counted under parser.NoFormat and logged, as a
// file of MaxHeld such lines is, their lines counted as unmatched. A file of fewer lines
// would otherwise hold them, uncounted and untold, until it is closed. A glob of one log
// format has its files that wait to be judged settled alike (verdicts.settle): one of
// fewer lines would never be told of. Called by the
// reading goroutine each time it caught up with the writers, which the follower's poll
// has it do every poll interval, and by a syslog input's every poll interval while no
// datagram waits (syslog.Options.Quiet).
func (in *stream) settleQuiet(p *Pipeline) {
	if len(in.holding) == 0 {
		return
	}
	now := p.clock.second()
	for path, last := range in.holding {
		if now-last < int64(heldQuiet/time.Second) {
			continue
		}
		// A file whose format is chosen holds the lines that do not fit it for its next
		// line that fits, unless more of them fit another candidate (Settle chooses it
		// again from them): it is looked at again once it holds a line more.
		delete(in.holding, path)
		if in.judged != nil {
			in.judged.settle(path) // its lines were parsed as they came
		} else {
			in.parseHeld(p, path, false)
		}
	}
}

// parseHeld parses the lines held of the file of path, under the cut as handing on a
// line does: the held lines are counted and their file's position let go of at once.
// closed says that the follower is done with the file (closeFile), which is forgotten;
// else the file went quiet (settleQuiet) and is settled at the clock's reading now.
func (in *stream) parseHeld(p *Pipeline, path string, closed bool) {
	p.cut.RLock()
	defer p.cut.RUnlock()
	b := in.bind(p)
	if b.paths != nil {
		b.paths.set(b.parse, path)
	}
	if !closed {
		in.processing, in.wall = p.clock.read()
	}
	in.setNow(b)
	if closed {
		delete(in.kept, path)
		delete(in.holding, path)
		b.parse.CloseFile(path, b.name, b.sink, b.done)
	} else if b.parse.Settle(path, b.name, b.sink, b.done) {
		delete(in.kept, path)
	}
	in.flush()
	in.unbindIfStale(p, &in.bound, b)
}

// release drops the input's bindings to a generation that is no longer current; the next
// line binds the current one.
func (in *stream) release() {
	in.bound.Store(nil)
	if w := in.pool.Load(); w != nil {
		w.release()
	}
}

// MissingInputs words a warning for every file input of cfg whose path matches no file
// now: such an input is followed all the same (the file may appear later), but a mistyped
// path would otherwise give a healthy exporter with forever empty panels. Directories
// count as no file: the follower passes over a glob's directories without a word, so a
// glob that stops a level short of the files (pods/* for pods/*/*.log) would read nothing
// with nothing said; nor does a glob whose files are all symbolic links out of its root
// (/var/log/containers/*.log, whose links lead into /var/log/pods), which the follower
// refuses one by one; nor does a path to a named pipe or a device, which it refuses as
// not a regular file. A rule file of no input at all, which --replay reads files with,
// has its rules read no line while served: that is said too.
func MissingInputs(cfg *config.Config) []string {
	if len(cfg.Inputs) == 0 {
		return []string{"no inputs: served, the rules read no line; give inputs: (files, globs or syslog sockets), or read files once with --replay FILE"}
	}
	var out []string
	for _, ci := range cfg.Inputs {
		if ci.File == nil {
			continue // no file is its
		}
		matches, err := filepath.Glob(ci.File.Path)
		if err == nil {
			if w, some := outOfRoot(ci.Label(), ci.File.Path, matches); some {
				if w != "" {
					out = append(out, w)
				}
				continue
			}
		}
		const missing = "matches no file; it is followed once one appears"
		what := missing
		for _, m := range matches {
			// nginx's access.log linked to /dev/stdout, a pipe meant to be read: the
			// follower refuses it as not a regular file, and retries for ever.
			if kind := special(m); kind != "" {
				what = fmt.Sprintf("matches no regular file (%s is %s), and only a regular file is read; it is followed once one is there", m, kind)
				break
			}
		}
		if what == missing && slices.ContainsFunc(matches, isDir) {
			what = "matches only directories, which are not read (a glob names files: DIR/*.log); it is followed once a file matches"
		}
		out = append(out, fmt.Sprintf("input %q: path %q %s, and logwindow_input_files{input=%q} is 0 until then", ci.Label(), ci.File.Path, what, ci.Label()))
	}
	return out
}

// ReadTwice words a warning for the file inputs that all read a file now, when a rule
// reads two of them or more: that rule counts the file's lines as many times. config
// warns of a path that another input's glob matches as written; this finds what only the
// files tell, two globs over one tree (a node's nginx containers and all its containers)
// or a path reached through a link, once the files are there. The files read by the same
// inputs are told of in one warning, which names every input: a warning per two inputs
// said of a file three read that two of them did, and narrowing one of those left it
// read twice. It runs at every start and reload, over nodes of thousands of pod files:
// only the inputs of a pair it looks at are listed, each once, a stat a file, the pair's
// files are matched by their identity (not each against each), and only a file both
// match is resolved, to tell whether each input's follower reads it.
func ReadTwice(cfg *config.Config) []string {
	files := make([][]fileSeen, len(cfg.Inputs))
	listed := make([]bool, len(cfg.Inputs))
	filesOf := func(i int) []fileSeen {
		if !listed[i] {
			files[i], listed[i] = matchesOf(cfg.Inputs[i].File.Path), true
		}
		return files[i]
	}
	// readBy is, for each file two inputs read, the path it was first found at and the
	// inputs that read it, in the config's order; seen the files in the order found.
	type readers struct {
		path   string
		inputs []int
	}
	readBy := map[fileID]*readers{}
	var seen []fileID
	for i, a := range cfg.Inputs {
		for j := i + 1; j < len(cfg.Inputs) && a.File != nil; j++ {
			if !countedTwice(cfg, a, cfg.Inputs[j]) || len(filesOf(i)) == 0 || len(filesOf(j)) == 0 {
				continue
			}
			b := cfg.Inputs[j]
			ofB := map[fileID][]string{}
			for _, g := range files[j] {
				ofB[g.id] = append(ofB[g.id], g.path)
			}
			for _, f := range files[i] {
				paths := ofB[f.id]
				if len(paths) == 0 || !follows(a, f.path) || !slices.ContainsFunc(paths, func(p string) bool { return follows(b, p) }) {
					continue
				}
				r := readBy[f.id]
				if r == nil {
					r = &readers{path: f.path}
					readBy[f.id] = r
					seen = append(seen, f.id)
				}
				for _, k := range []int{i, j} {
					if n, found := slices.BinarySearch(r.inputs, k); !found {
						r.inputs = slices.Insert(r.inputs, n, k)
					}
				}
			}
		}
	}
	// The files of the same inputs, by those inputs, in the order their first was found.
	type group struct {
		inputs []int
		paths  []string
	}
	var groups []*group
	for _, id := range seen {
		r := readBy[id]
		k := slices.IndexFunc(groups, func(g *group) bool { return slices.Equal(g.inputs, r.inputs) })
		if k < 0 {
			groups = append(groups, &group{inputs: r.inputs})
			k = len(groups) - 1
		}
		groups[k].paths = append(groups[k].paths, r.path)
	}
	out := make([]string, 0, len(groups))
	for _, g := range groups {
		out = append(out, readTwiceWarning(cfg, g.inputs, g.paths))
	}
	return out
}

// countedTwice reports whether a line of a file the file inputs a and b of cfg both read
// is counted twice, a warning of ReadTwice's: a rule reads both, of streams not apart,
// and config does not warn of them already (configWarns).
func countedTwice(cfg *config.Config, a, b config.Input) bool {
	if a.File == nil || b.File == nil || configWarns(a.File.Path, b.File.Path) || a.Streams.Apart(b.Streams) {
		return false
	}
	return slices.ContainsFunc(cfg.Rules, func(r *config.Rule) bool { return r.Reads(a) && r.Reads(b) })
}

// warnReadTwice warns of the file at path, of identity id, which the follower of the
// input of source found after its first scan (follow.Options.Found: a pod started since
// the start or the last reload), when the followers of other inputs read it too and a
// rule counts its lines twice or more: ReadTwice's warning, which the start and a reload
// word of the files there then, said of it as it comes rather than at the next reload.
// It is said once per set of inputs until the next reload, of the first such file: what
// to change is those inputs' globs or a rule's inputs, the same for every file they share,
// and a node whose containers restart for days makes a new file at a new path for each
// restart (the container's next 1.log, a pod's new directory), each warned of again
// otherwise. Nor is anything kept per file, which went on growing while files came and
// went: g.readTwiceTold holds a set of inputs' indexes, as many as the config makes of
// sets of inputs that read one file. The follower of the input that finds it last warns:
// each reads it before it looks at the others, so of two that find it at once, one sees
// the other at least.
func (p *Pipeline) warnReadTwice(source, path string, id fileID) {
	followed := p.followed.Load()
	if followed == nil {
		return
	}
	sources := []string{source}
	for _, in := range *followed {
		if f, ok := in.running.(*follow.Follower); ok && !slices.Contains(sources, in.source) && f.Reads(id.dev, id.ino) {
			sources = append(sources, in.source)
		}
	}
	if len(sources) < 2 {
		return
	}
	g := p.gen.Load()
	cfg := g.cfg
	var readers, ins []int
	for i, ci := range cfg.Inputs {
		if slices.Contains(sources, ci.Source()) {
			readers = append(readers, i)
		}
	}
	for _, k := range readers {
		if slices.ContainsFunc(readers, func(j int) bool { return j != k && countedTwice(cfg, cfg.Inputs[k], cfg.Inputs[j]) }) {
			ins = append(ins, k)
		}
	}
	if len(ins) < 2 {
		return
	}
	if _, told := g.readTwiceTold.LoadOrStore(inputsKey(ins), true); told {
		return
	}
	read := make([]config.Input, len(ins))
	for k, i := range ins {
		read[k] = cfg.Inputs[i]
	}
	p.opts.Logger.Warn(readTwiceWarning(cfg, ins, []string{path}), "inputs", inputPathsOf(read))
}

// inputsKey is the key of the indexes ins, in order, of a config's inputs: "0,2".
func inputsKey(ins []int) string {
	b := make([]byte, 0, 4*len(ins))
	for k, i := range ins {
		if k > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendInt(b, int64(i), 10)
	}
	return string(b)
}

// readTwiceWarning words ReadTwice's warning of the files at paths, which the inputs of
// cfg at indexes ins all read, naming the rule that counts their lines the most times.
func readTwiceWarning(cfg *config.Config, ins []int, paths []string) string {
	read := make([]config.Input, len(ins))
	for k, i := range ins {
		read[k] = cfg.Inputs[i]
	}
	rule, reads, times := config.CountedMost(cfg.Rules, read)
	more := ""
	switch len(paths) {
	case 1:
	case 2:
		more = " and 1 other file"
	default:
		more = fmt.Sprintf(" and %d other files", len(paths)-1)
	}
	if len(ins) == 2 {
		return fmt.Sprintf("inputs %q and %q both read %s%s: rule %q, which reads both inputs, counts their lines twice; narrow a glob, or name one of the inputs in the rule's inputs:",
			cfg.Inputs[ins[0]].Label(), cfg.Inputs[ins[1]].Label(), paths[0], more, rule)
	}
	labels := make([]string, len(ins))
	for k, i := range ins {
		labels[k] = strconv.Quote(cfg.Inputs[i].Label())
	}
	return fmt.Sprintf("inputs %s all read %s%s: rule %q, which reads %d of those inputs, counts their lines %s; narrow a glob, or name one of the inputs in the rule's inputs:",
		strings.Join(labels, ", "), paths[0], more, rule, reads, config.Times(times))
}

// fileSeen is a regular file an input's path matches now.
type fileSeen struct {
	path string
	id   fileID
}

// matchesOf are the regular files path matches now, in the glob's order.
func matchesOf(path string) []fileSeen {
	matches, _ := filepath.Glob(path)
	var out []fileSeen
	for _, m := range matches {
		fi, err := statMatch(m)
		if err != nil || !fi.Mode().IsRegular() {
			continue
		}
		if id, ok := idOf(fi); ok {
			out = append(out, fileSeen{m, id})
		}
	}
	return out
}

// follows reports whether a follower of in reads path, one of its matches: a glob's
// symbolic links out of its root are refused.
func follows(in config.Input, path string) bool {
	return !in.File.IsGlob() || follow.OutOfRoot(in.File.Path, path) == nil
}

// configWarns reports whether config warns of inputs of paths a and b reading a file
// twice: one is a path that the other, a glob, matches as written.
func configWarns(a, b string) bool {
	matches := func(glob, path string) bool {
		ok, _ := filepath.Match(filepath.Clean(glob), filepath.Clean(path))
		return config.IsGlob(glob) && !config.IsGlob(path) && ok
	}
	return matches(a, b) || matches(b, a)
}

// outOfRoot words the warning of MissingInputs for the path of input label whose every
// file (of matches, the regular files) the follower refuses as a symbolic
// link out of the glob's root; "" when it reads one. some is whether matches has a file
// at all. It stops at the first file read, most often the first: a start or a reload
// stats no more of a glob of thousands of pod files.
func outOfRoot(label, path string, matches []string) (warning string, some bool) {
	var first error
	files := 0
	for _, m := range matches {
		if !regular(m) {
			continue
		}
		files++
		if !config.IsGlob(path) {
			return "", true // a path given as it is may be a link anywhere
		}
		err := follow.OutOfRoot(path, m)
		if err == nil {
			return "", true
		}
		first = cmp.Or(first, err)
	}
	if files == 0 {
		return "", false
	}
	more := ""
	switch files {
	case 1:
	case 2:
		more = ", and so is the other file it matches"
	default:
		more = fmt.Sprintf(", and so are the %d other files it matches", files-1)
	}
	return fmt.Sprintf("input %q: path %q matches no file it reads: %v%s; glob the files the links lead to, and logwindow_input_files{input=%q} is 0 until then", label, path, first, more, label), true
}

// SocketProblems words a warning for every syslog input whose unix socket could not be
// created here now (syslog.CheckUnixPath): a start refuses it, but the check that asks may
// run where the exporter does not (a CI job, without the pod's volumes), so it is no
// error. Only --config.check asks: the start and a reload report the bind's own error.
func SocketProblems(cfg *config.Config) []string {
	var out []string
	for _, ci := range cfg.Inputs {
		if ci.Syslog == nil || ci.Syslog.Socket.Network != "unixgram" {
			continue
		}
		if err := syslog.CheckUnixPath(ci.Syslog.Socket.Addr); err != nil {
			out = append(out, fmt.Sprintf("input %q: %s: %v: a start here fails to create it", ci.Label(), ci.Syslog.Address, err))
		}
	}
	return out
}

// regular reports whether path is a regular file (a symlink is looked through): what a
// follower reads.
func regular(path string) bool {
	fi, err := statMatch(path)
	return err == nil && fi.Mode().IsRegular()
}

// special says what path is when it is there and is neither a regular file nor a
// directory (a symlink is looked through): a named pipe, a socket or a device, which no
// follower reads; "" when it is not one.
func special(path string) string {
	fi, err := os.Stat(path)
	switch {
	case err != nil || fi.Mode().IsRegular() || fi.IsDir():
		return ""
	case fi.Mode()&os.ModeNamedPipe != 0:
		return "a named pipe"
	case fi.Mode()&os.ModeSocket != 0:
		return "a socket"
	}
	return "a device"
}

// isDir reports whether path is a directory (a symlink is looked through).
func isDir(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.IsDir()
}

// maxLineBytes is the line cap of opts, which also caps a joined CRI message.
func maxLineBytes(opts Options) int {
	if opts.MaxLineBytes > 0 {
		return opts.MaxLineBytes
	}
	return follow.DefaultMaxLineBytes
}
