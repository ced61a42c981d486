package pipeline

import (
	"bytes"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/logwindow/logwindow_exporter/config"
	"github.com/logwindow/logwindow_exporter/internal/input/follow"
)

// A follower of one file parses on one core. With `shards: N` on a file path (not a glob,
// whose shards are followers of their own), N goroutines parse its lines: the reading
// goroutine and N-1 parse workers, each with a parser session and a sink of its own, all
// writing the one Set. The reading goroutine puts a read's lines into a batch and deals
// it to the workers when a batch is free, and parses them itself when none is (every
// worker has its batches queued): it never waits for a worker, so N goroutines keep N
// cores busy without a handoff to wait on. Once it has read its files to their end, it
// parses the batches no worker took yet (pool.help). A batch is the lines handed on under one hold of
// the cut (Options.Hold): the complete lines of one read, some hundreds, all with the clocks
// read for that read (follow.Options.Chunk). The lines are not copied: the batch takes the
// follower's read buffer and gives it the one it brought back from its last worker
// (follow.Options.Lend); only what the reading goroutine made of a line (a joined CRI
// message, its time and stream) is copied into the batch. Most reads' lines the batch
// takes whole, before the reading goroutine hands them on one by one
// (follow.Options.Block): it then only reads them, and the worker parses them as one
// span and counts them as handed. A read that finds no batch free the reading
// goroutine parses as one span too (parseBlock), as on one core.
//
// Counts are those of one worker: a line is parsed once, by one session, with the clocks of
// its read, and the store's sums, windows and sketches do not depend on the order their
// events come in. What does is which of several new label sets gets the last room of a
// full series budget, as between two inputs.
//
// A snapshot sees the series and the positions as one cut: the reading goroutine deals its
// batch before it lets go of the cut, and the snapshot, once it holds the cut, waits until
// the workers have parsed every batch dealt (pool.drain), so that every line before a
// position is in the series.

// batch is a read's lines on their way to a worker.
type batch struct {
	// read is the follower's buffer that holds the read's lines, taken by lend; once the
	// batch is parsed, lend gives it back to the follower in exchange for a later read's.
	read []byte
	// data holds what is not in read: joined messages, wrapper times and streams.
	data  []byte
	lines []batchLine
	// processing and wall are the clocks of the read (stream.setNow).
	processing, wall int64
	// handed counts the lines handed to the reading goroutine that went into the batch,
	// messages or not: they count as read once the batch's events are written
	// (stream.landed).
	handed uint64
	// notCRI counts the lines of handed that are not CRI lines (malformed), added once
	// the batch's lines count as read.
	notCRI uint64
}

// batchLine is one line of a batch: its file and the spans of data it gave, the message's
// of read when inRead. Lines that follow one another in read, each ended by a lone "\n"
// and with no wrapper time or stream, are one batchLine whose msg spans them all (add):
// the reading goroutine writes a line's worth of the batch only every few hundred lines,
// not every line, into memory the worker that parsed the batch before still holds.
type batchLine struct {
	path               string
	msg, wrapper, strm span
	inRead             bool
	// block: msg is the complete lines of a read, taken whole (batchHold.Block), each
	// ended by its "\n" and with its "\r"s; the worker strips them and counts the lines
	// as handed.
	block bool
}

// span is data[from:to].
type span struct{ from, to int32 }

func (s span) empty() bool { return s.from == s.to }

// add copies b into the batch's data.
func (bt *batch) add(b []byte) span {
	from := int32(len(bt.data))
	bt.data = append(bt.data, b...)
	return span{from, int32(len(bt.data))}
}

func (bt *batch) bytes(s span) []byte {
	if s.empty() {
		return nil
	}
	return bt.data[s.from:s.to:s.to]
}

// msg is line l's message.
func (bt *batch) msg(l *batchLine) []byte {
	if l.inRead {
		return bt.read[l.msg.from:l.msg.to:l.msg.to]
	}
	return bt.bytes(l.msg)
}

// within returns where b lies in buf, if it is a part of it: a slice of buf ends in buf's
// last byte of capacity.
func within(b, buf []byte) (span, bool) {
	c := cap(b)
	if c == 0 || c > cap(buf) || &b[:c][c-1] != &buf[:cap(buf)][cap(buf)-1] {
		return span{}, false
	}
	from := int32(cap(buf) - c)
	return span{from, from + int32(len(b))}, true
}

// pool is the parse workers of a follower's lines. It belongs to the follower's reading
// goroutine, which fills cur and deals it; the workers only parse what they are dealt.
type pool struct {
	// dealt are the batches to parse; free those parsed, to fill again. There are
	// batchesPerWorker per worker in all: a reader that finds none free parses the read.
	dealt, free chan *batch
	// inflight counts the batches dealt and not parsed yet (drain).
	inflight sync.WaitGroup
	workers  []*worker
	ended    sync.WaitGroup
	cur      *batch
	// inline: no batch was free at the read's first line; its lines are the reader's.
	inline bool
	// read is the follower's read buffer, as lend last saw it (nil before).
	read []byte
	// lent: a line of cur is in read.
	lent bool
}

// batchesPerWorker is how many batches a worker may have queued. The reader deals only at
// the start of a read and then parses a whole read when none is free, so a worker with
// fewer ran dry while it did: with 2, a worker waited for its next batch at some 40% of
// them, with 8 at under 10%. It costs 8 reads' bytes per worker (512 KiB by default).
const batchesPerWorker = 8

// worker is one parse worker: its binding to the current generation is its own.
type worker struct {
	bound atomic.Pointer[binding]
}

// newPool starts n workers parsing in's lines.
func newPool(p *Pipeline, in *stream, n int) *pool {
	w := &pool{dealt: make(chan *batch, n*batchesPerWorker), free: make(chan *batch, n*batchesPerWorker)}
	for range n * batchesPerWorker {
		w.free <- &batch{}
	}
	for range n {
		wk := &worker{}
		w.workers = append(w.workers, wk)
		w.ended.Go(func() { wk.run(p, in, w) })
	}
	return w
}

// run parses the batches dealt until the pool stops.
func (wk *worker) run(p *Pipeline, in *stream, w *pool) {
	for bt := range w.dealt {
		w.parse(p, in, &wk.bound, bt)
		// The worker and the reading goroutine run without a pause while the file is
		// behind, so the scheduler runs the garbage collector's mark worker only when
		// one of them is preempted, every 10 ms, and a mark phase, with every pointer
		// write behind a write barrier, lasts longer than on one processor. A yield per
		// batch lets the mark worker run at once.
		runtime.Gosched()
	}
}

// parse parses batch bt with the binding of slot, the goroutine's own, writes its events
// and frees it.
func (w *pool) parse(p *Pipeline, in *stream, slot *atomic.Pointer[binding], bt *batch) {
	b := in.bindTo(p, slot)
	b.sink.SetNow(bt.processing, bt.wall)
	b.parse.SetWall(bt.wall)
	handed := bt.handed
	for i := range bt.lines {
		l := &bt.lines[i]
		switch {
		case !l.inRead:
			parseMsg(b, l, bt.bytes(l.msg), bt)
		case l.block && b.paths == nil:
			// Only paths of parseBlock's checks: an input with a pool has no candidate
			// formats, whose session would parse no span (workersOf; a reload that adds
			// them starts the input anew, readingOf), nor a judged glob, and Block takes
			// no CRI lines whole.
			handed += b.spanDone(b.parse.ParseSpan(b.name, bt.msg(l), b.sink))
		case l.block:
			for run := bt.msg(l); len(run) > 0; handed++ {
				n := bytes.IndexByte(run, '\n')
				parseMsg(b, l, follow.TrimCR(run[:n:n]), bt)
				run = run[n+1:]
			}
		default:
			for run := bt.msg(l); ; {
				n := bytes.IndexByte(run, '\n')
				if n < 0 {
					parseMsg(b, l, run, bt)
					break
				}
				parseMsg(b, l, run[:n:n], bt)
				run = run[n+1:]
			}
		}
	}
	b.sink.Flush() // before the batch counts as parsed (drain)
	in.landed.Add(handed)
	add(&in.malformed, &bt.notCRI) // after the lines count as read, as flush does
	in.publish(b)
	in.watchZones(b, bt.wall)
	in.unbindIfStale(p, slot, b)
	bt.data, bt.lines, bt.handed = bt.data[:0], bt.lines[:0], 0
	w.free <- bt
	w.inflight.Done()
}

// help parses in the reading goroutine the batches dealt that no worker took yet, once it
// read its files to their end (it caught up with the writers): otherwise, at the end of
// what was written, the reading goroutine would wait while a worker parses its queue
// alone, some 2 ms of a second core's time at the end of a run of a busy file on two.
// dealt is open: only the reading goroutine stops a pool it can still load (resize).
func (w *pool) help(p *Pipeline, in *stream) {
	for {
		select {
		case bt := <-w.dealt:
			w.parse(p, in, &in.bound, bt)
		default:
			return
		}
	}
}

// parseMsg parses msg, a message of line l of batch bt, with binding b.
func parseMsg(b *binding, l *batchLine, msg []byte, bt *batch) {
	if b.paths != nil {
		b.paths.setLine(b.parse, l.path, lineValues{lineStream: bt.bytes(l.strm)})
	}
	b.parse.ParseFile(l.path, b.name, msg, bt.bytes(l.wrapper), b.sink, b.done)
}

// batching reports whether the read's lines go into a batch: one was free at its first
// line. Otherwise the reader parses them.
func (w *pool) batching() bool {
	if w.cur != nil {
		return true
	}
	if w.inline {
		return false
	}
	select {
	case w.cur = <-w.free:
		return true
	default:
		w.inline = true
		return false
	}
}

// add puts a line into the batch being filled (batching): its message by its place in the
// read buffer when it is there, else copied. A line of the buffer that starts right after
// the "\n" that ends the batch's last line, itself of the buffer, extends that line's span.
func (w *pool) add(path string, msg, wrapper, strm []byte) {
	bt := w.cur
	at, inRead := within(msg, w.read)
	if inRead && len(wrapper) == 0 && len(strm) == 0 && len(bt.lines) > 0 {
		last := &bt.lines[len(bt.lines)-1]
		if last.inRead && !last.block && last.path == path && last.wrapper.empty() && last.strm.empty() &&
			at.from == last.msg.to+1 && w.read[last.msg.to] == '\n' {
			last.msg.to = at.to
			return
		}
	}
	l := batchLine{path: path, wrapper: bt.add(wrapper), strm: bt.add(strm)}
	if l.msg, l.inRead = at, inRead; inRead {
		w.lent = true
	} else {
		l.msg = bt.add(msg)
	}
	bt.lines = append(bt.lines, l)
}

// lend is the follower's Lend: when the batch being filled has lines in the read buffer,
// it takes the buffer and gives the follower the one it holds from its last use (a new one
// the first time); otherwise the follower keeps its buffer.
func (w *pool) lend(buf []byte) []byte {
	if w.lent {
		bt := w.cur
		if len(bt.read) != len(buf) {
			bt.read = make([]byte, len(buf))
		}
		bt.read, buf = buf, bt.read
		w.lent = false
	}
	w.read = buf
	return buf
}

// deal hands the batch being filled, if any, to the workers, with the clocks of its read.
func (w *pool) deal(processing, wall int64) {
	w.inline = false
	if w.cur == nil {
		return
	}
	w.cur.processing, w.cur.wall = processing, wall
	w.inflight.Add(1)
	w.dealt <- w.cur // never blocks: a batch not free is dealt or being parsed
	w.cur = nil
}

// drain waits until every batch dealt is parsed. The caller keeps batches from being dealt
// meanwhile: it is the reading goroutine, or holds the cut.
func (w *pool) drain() { w.inflight.Wait() }

// stop parses what was dealt and ends the workers; the reading goroutine has ended or is
// the caller, and deals nothing more.
func (w *pool) stop() {
	close(w.dealt)
	w.ended.Wait()
}

// release drops the workers' bindings (stream.release).
func (w *pool) release() {
	for _, wk := range w.workers {
		wk.bound.Store(nil)
	}
}

// workersOf is how many goroutines parse the lines of input ci's follower, its reading
// goroutine included: `shards:` of a file path; a glob's shards are followers (shardsOf),
// each parsing on its own.
func workersOf(ci config.Input) int {
	if ci.File == nil || ci.LogFormats != nil || ci.File.IsGlob() {
		return 1
	}
	return max(ci.File.Shards, 1)
}

// batchHold is the follower's Hold when its lines may go to workers: the cut, held by the
// reading goroutine while it hands on a read's lines, which it deals as a batch before it
// lets go. It also starts, resizes or stops the pool when a reload changed the number of
// workers, at a point where no batch is being filled.
type batchHold struct {
	p  *Pipeline
	in *stream
}

// Lock takes the cut, then makes the pool the size wanted.
func (h batchHold) Lock() {
	h.p.cut.RLock()
	h.in.resize(h.p)
}

// Block is the follower's Block (follow.Options.Block), called while the cut is held:
// when a batch is free, a read's complete lines go into it as one span, which the reading
// goroutine then does not go through line by line; the worker that parses the batch finds
// the lines in it, strips the "\r" before a line's "\n" as the follower does, and counts
// them. The lines of an input that joins CRI messages, which the reading goroutine does
// itself, are handed on one by one. Without a pool, or with no batch free, the reading
// goroutine parses the read's lines as one span itself, when it can (parseBlock), as it
// does on one core. It returns whether it took them (follow.Options.Block): the worker
// counts a batch's as it finds them.
func (h batchHold) Block(path string, lines []byte) bool {
	w := h.in.pool.Load()
	if w == nil {
		return h.in.parseBlock(h.p, path, lines)
	}
	if h.in.cri != nil {
		return false
	}
	if !w.batching() {
		return h.in.parseBlock(h.p, path, lines)
	}
	at, inRead := within(lines, w.read)
	if !inRead {
		return false
	}
	w.cur.lines = append(w.cur.lines, batchLine{path: path, msg: at, inRead: true, block: true})
	w.lent = true
	return true
}

// Lend is the follower's Lend (follow.Options.Lend), called while the cut is held.
func (h batchHold) Lend(buf []byte) []byte {
	if w := h.in.pool.Load(); w != nil {
		return w.lend(buf)
	}
	return buf
}

// Unlock writes what the read's lines parsed by the reading goroutine made and deals the
// rest, then lets go of the cut.
func (h batchHold) Unlock() {
	h.in.flush()
	if w := h.in.pool.Load(); w != nil {
		w.deal(h.in.processing, h.in.wall)
	}
	h.p.cut.RUnlock()
}

// CaughtUp is the follower's CaughtUp (follow.Options.CaughtUp): the reading goroutine
// parses what the workers have not taken yet (pool.help), and settles the files of
// candidate formats that went quiet holding lines of none (settleQuiet).
func (h batchHold) CaughtUp() {
	if w := h.in.pool.Load(); w != nil {
		w.help(h.p, h.in)
	}
	h.in.settleQuiet(h.p)
}

// resize makes in's pool that of in.workers-1 workers besides the reading goroutine (none
// for one); called by it with no batch being filled.
func (in *stream) resize(p *Pipeline) {
	want := int(in.workers.Load()) - 1
	w := in.pool.Load()
	switch {
	case w != nil && len(w.workers) == want, w == nil && want < 1:
		return
	case w != nil:
		in.pool.Store(nil)
		w.stop()
	}
	if want >= 1 {
		in.pool.Store(newPool(p, in, want))
	}
}

// stopPool ends in's workers once its reading goroutine has ended, having parsed every
// line it dealt.
func (in *stream) stopPool() {
	if w := in.pool.Swap(nil); w != nil {
		w.stop()
	}
}

// drain waits until in's workers have parsed every line dealt to them; the caller holds
// the cut, so none is being dealt.
func (in *stream) drain() {
	if w := in.pool.Load(); w != nil {
		w.drain()
	}
}
