package follow

import (
	"bytes"
	"cmp"
	"errors"
	"io"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/logwindow/logwindow_exporter/internal/input"
)

// tailLen is how many bytes before the read offset are kept to recognise a
// file that was truncated and refilled past that offset between two reads.
// Log lines often share long endings (user agent, status, sizes); a window
// of several lines includes their differing starts (timestamps).
const tailLen = 1024

// headLen is how many of a file's first bytes are kept for the same purpose:
// the checksum identity of Filebeat and Vector, compared byte for byte.
const headLen = 1024

// minBuffer keeps reads large when MaxLineBytes is small.
const minBuffer = 64 << 10

// fileID identifies a file whatever its name: device and inode. An inode
// number cannot be reused while we hold the file open.
type fileID struct{ dev, ino uint64 }

func idOf(fi os.FileInfo) fileID {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return fileID{}
	}
	return fileID{dev: uint64(st.Dev), ino: uint64(st.Ino)}
}

// tracked is one open file. Fields under "reader" belong to the goroutine
// that reads; path and rotation fields are guarded by Follower.mu.
type tracked struct {
	id fileID
	f  *os.File

	path      string
	rotated   bool      // no longer found at any path of the input
	rotatedAt time.Time // when it was found gone

	// reader
	off      int64  // bytes read from the file
	partial  []byte // an incomplete line carried to the next turn
	skipping bool   // inside a line longer than the cap
	// lead: reading started within a line (at an offset after a byte other than "\n",
	// start_at: end with a writer in the middle of a line): its rest, up to its newline,
	// is no line, neither handed on nor counted, as the lines before the offset are not.
	lead     bool
	tail     [tailLen]byte
	tailN    int
	head     [headLen]byte
	headN    int
	lastData time.Time // when bytes were last read, or when it was opened
	readErr  string    // error already counted
	// seen is the file's size at the reader's last look that found it as it was read
	// (step): past the offset, what it knows the file holds and has not read yet, which a
	// truncation takes (Follower.readAgain).
	seen int64
	// encodingKnown says that the file's first bytes told whether it is UTF-8
	// (lineReader.checkEncoding), and the file was warned of when it is not.
	encodingKnown bool
	// zeros: NUL bytes end the file from the offset (found where it was positioned, or
	// ending a read) up to zeros: space its writer preallocated and fills in, or the
	// bytes a writer lost in a crash. They are held back, not read, until text is written
	// over them (pastZeros): read as text, they would be a line that a fill-in rewrites,
	// which would have the file taken as truncated and read again from its start, or,
	// past the line cap, skipped with the lines written over them. held is how many they
	// are, which are no bytes behind (Follower.Stats).
	zeros int64
	held  atomic.Int64
	// nulsText is where the last look at them found text after NULs at the offset
	// (pastZeros), 0 for none.
	nulsText int64
	// inHole: the last read ended in NUL bytes that open a line (overHole),
	// passed over as a hole that may go on past the read (skipHole).
	inHole bool

	done atomic.Int64 // offset up to which lines were handed on or skipped

	// judging: a file a glob found after the start, not read until the reader has told
	// whether it is the copy of another file of its directory (Follower.judged), which
	// positions pass over meanwhile, or have at done when it is held as a copy of part of
	// what was read (done is its size then). judgeSize is its size when last looked at, and
	// judgeAt when that size was first seen, judgeKept the truncated files it may be a
	// copy of, judgeLive whether it began as one of a file read at its path (reader), and
	// judgeOf the file read at its path it was last found to hold all that was read of.
	judging   atomic.Bool
	judgeSize int64
	judgeAt   time.Time
	judgeKept []copied
	judgeLive bool
	judgeOf   atomic.Pointer[tracked]

	// backfill: Options.Backfill is still to be called for what precedes off;
	// holdsReady when it is counted in Follower.backfills (a file opened by the first
	// scan), which readiness waits for.
	backfill, holdsReady bool
}

// rewritten reports whether what was read is no longer in the file: it is
// shorter than the offset, or the last bytes read before the offset or the
// file's first bytes differ from what was read there.
//
// Only content counts. Timestamps cannot tell a rewrite from an append: the
// kernel sets a file's mtime at the start of a write(), before its bytes and
// the new size are visible, so a look during a write sees a newer mtime at
// the old size, and a coarse clock shows the same on the next look.
func (t *tracked) rewritten(size int64) (bool, error) {
	switch {
	case size < t.off:
		return true, nil
	case t.off == 0:
		return false, nil
	}
	if changed, err := t.differs(t.tail[:t.tailN], t.off-int64(t.tailN)); changed || err != nil {
		return changed, err
	}
	if int64(t.tailN) >= t.off {
		return false, nil // the tail holds the whole file read so far
	}
	return t.differs(t.head[:t.headN], 0)
}

// differs reports whether the file's bytes at off are not want.
func (t *tracked) differs(want []byte, off int64) (bool, error) {
	var b [max(tailLen, headLen)]byte
	n, err := t.f.ReadAt(b[:len(want)], off)
	if err != nil && !errors.Is(err, io.EOF) {
		return false, err
	}
	return !bytes.Equal(b[:n], want), nil
}

// restart makes the next read start at offset 0, forgetting the old content, and what
// its first bytes said of its encoding: what is written again may be in another.
func (t *tracked) restart() {
	t.off, t.seen = 0, 0
	t.partial = t.partial[:0]
	t.skipping, t.lead = false, false
	t.tailN, t.headN = 0, 0
	t.encodingKnown = false
	t.inHole = false
	t.holdZeros(0, 0)
	t.done.Store(0)
}

// holdZeros notes that the NUL bytes from off up to zeros are held back (none when
// zeros ≤ off).
func (t *tracked) holdZeros(off, zeros int64) {
	t.zeros = zeros
	t.held.Store(max(0, zeros-off))
}

// positionAt makes reading start at off, as for a file followed from its end, or at the
// next line when off is within one.
func (t *tracked) positionAt(off int64) {
	t.off = off
	t.done.Store(off)
	n := int64(min(tailLen, off))
	got, err := t.f.ReadAt(t.tail[:n], off-n)
	if err != nil && !errors.Is(err, io.EOF) {
		got = 0
	}
	t.tailN = got
	// A byte order mark is no line's start, but nothing of a line comes before it either:
	// reading from just after the mark (a snapshot's position while the first line was
	// incomplete) starts at a line. So does reading from after a hole (skipHole).
	t.lead = got > 0 && t.tail[got-1] != '\n' && t.tail[got-1] != 0 && !bytes.Equal(t.tail[:got], byteOrderMark)
	if got, err = t.f.ReadAt(t.head[:min(headLen, off)], 0); err != nil && !errors.Is(err, io.EOF) {
		got = 0
	}
	t.headN = got
	t.holdZeros(off, 0)
	if zerosAt(t.f, off) {
		t.holdZeros(off, off+minZeros)
	}
}

// minZeros is the fewest NUL bytes taken for space preallocated or lost (zeros): fewer
// are text, the NULs of a character of UTF-16 or UTF-32 ("\n\x00" ends a line of
// UTF-16LE), where a preallocation or a crash leaves blocks of them.
const minZeros = 4

// zerosAt reports whether file holds minZeros NUL bytes at off. It is asked at each look
// at a file holding NULs back: an *os.File, not an interface, keeps its bytes off the heap.
func zerosAt(file *os.File, off int64) bool {
	var b [minZeros]byte
	n, _ := file.ReadAt(b[:], off)
	return n == minZeros && b == [minZeros]byte{}
}

// zerosLook is how many bytes from the offset pastZeros reads at each look for text
// written over the NULs held back there.
const zerosLook = 4096

// zerosBefore reports whether file holds minZeros NUL bytes before end: a file written
// over them holds text there, unless that text ends in NULs of its own.
func zerosBefore(file *os.File, end int64) bool {
	return zerosAt(file, max(0, end-minZeros))
}

// textEnd is where the NUL bytes that end file, size bytes long, begin: size when its
// last byte is no NUL, or when they are more than maxZeros (read at the start, a hostile
// file's gigabytes would delay it). A file followed from its end is read from there, so
// that what its writer writes over them is read (zeros).
func textEnd(file io.ReaderAt, size int64) int64 {
	var buf [4096]byte
	at := size // where the NULs read back over begin
	for at > 0 && size-at < maxZeros {
		n := min(int64(len(buf)), at)
		if got, _ := file.ReadAt(buf[:n], at-n); int64(got) < n {
			return size
		}
		i := n
		for i > 0 && buf[i-1] == 0 {
			i--
		}
		if at -= n - i; i > 0 {
			break
		}
	}
	if size-at < minZeros || size-at >= maxZeros {
		return size
	}
	return at
}

// maxZeros bounds the NUL bytes textEnd reads back over.
const maxZeros = 64 << 20

// pastZeros looks again at the NUL bytes held back at t's offset (zeros), the file
// size long now. It returns where to read on from: t.off when text was written over
// them (a writer filling in the space it preallocated), where text begins after them
// when it was written there instead (they are a hole: a crashed writer's lost bytes,
// then its successor's lines), or -1 while they are all there is.
//
// Text written over them may open with NULs of its own (a line of a binary protocol),
// which cannot be told from space still to fill in: its text is looked for within
// zerosLook bytes of the offset at each look, and read from there, as after a hole: text
// over them once two looks in a row found it there. One look may catch a writer copying a
// line into its file mapped in memory, whose copy (glibc's memcpy of more than 256 bytes)
// stores the line's first bytes last: read from its text then, the line would be cut. A
// file cut within them may have been written to since at a writer's own offset, short of
// where they ended: they are looked at again from the offset, else what it wrote would
// wait for the file to pass their old end, and be skipped then. It is cut within them
// when it is shorter than they were, or, written to up to their end or past it between
// two looks, when their last bytes are no longer NULs (zerosBefore).
func (t *tracked) pastZeros(size int64, stop *atomic.Bool) int64 {
	var b [zerosLook]byte
	n, _ := t.f.ReadAt(b[:min(int64(len(b)), max(0, size-t.off))], t.off)
	switch i := leadingNULs(b[:n]); {
	case i < minZeros:
		return t.off
	case i < n:
		if at := t.off + int64(i); at < t.zeros && at != t.nulsText {
			t.nulsText = at
			return -1
		}
		t.nulsText = 0
		return t.off + int64(i)
	}
	from := t.zeros
	switch {
	case size < from || !zerosBefore(t.f, from):
		from = t.off
	case size == from:
		return -1
	}
	if at := textAfter(t.f, from, size, stop); at < size {
		return at
	}
	t.holdZeros(t.off, size)
	return -1
}

// zerosToEnd reports whether nothing but NUL bytes follows off in t's file, up to its
// end: the NULs that end a read that filled the buffer are held back (zeros) only then.
// Text after them, already written, makes them a line's own, read with it: not the end of
// a line its writer cut, nor space it has yet to fill in.
func (t *tracked) zerosToEnd(off int64, stop *atomic.Bool) bool {
	fi, err := t.f.Stat()
	return err != nil || textAfter(t.f, off, fi.Size(), stop) >= fi.Size()
}

// atHole reports whether t is read from its start or from after NUL bytes, at a line's
// start: where a hole may open (skipHole). A line read up to its newline leaves none
// before it.
func (t *tracked) atHole() bool {
	return t.off == 0 || len(t.partial) == 0 && !t.lead && !t.skipping && t.tailN > 0 && t.tail[t.tailN-1] == 0
}

// skipHole moves t's reading past the NUL bytes at its offset, up to size: they are no
// text, but the hole that a writer which does not append (a shell's `>`, a file opened
// without O_APPEND) leaves when copytruncate empties its log under it and it writes on at
// its own offset. Read as text, they would open the first line written after the
// truncation, which they would make too long or unmatched. The file system is asked
// where data begins (SEEK_DATA), so that a hole of gigabytes is not read; where it cannot
// tell, the NULs are read. NULs up to the file's end are no hole yet but held back
// (zeros), as space preallocated may be filled in from where they begin. stop says to
// give up.
func (t *tracked) skipHole(size int64, stop *atomic.Bool) {
	t.inHole = false
	switch off := textAfter(t.f, t.off, size, stop); {
	case off >= size && !stop.Load():
		t.holdZeros(t.off, off)
	case off != t.off:
		t.positionAt(off)
	}
}

// textAfter is where the NUL bytes at off in file end, up to size (skipHole). The file
// system is asked where data begins (SEEK_DATA) at each block of them read, and they are
// read block by block: the block where they begin may hold the text before them, as data,
// the hole of gigabytes after it none.
func textAfter(file *os.File, off, size int64, stop *atomic.Bool) int64 {
	var buf [4096]byte
	for off < size && !stop.Load() {
		switch data, err := file.Seek(off, unix.SEEK_DATA); {
		case err == nil && data > off:
			off = min(data, size)
			continue
		case errors.Is(err, syscall.ENXIO):
			// Nothing but the hole so far, as far as the file goes now: truncated since size
			// was looked at (copytruncate), it holds less, and what is written to it next is
			// read from its start.
			if end, err := file.Seek(0, io.SeekEnd); err == nil {
				off = max(off, min(size, end))
			}
			return off
		}
		n, err := file.ReadAt(buf[:min(int64(len(buf))-off%int64(len(buf)), size-off)], off)
		i := leadingNULs(buf[:n])
		off += int64(i)
		if i < n || err != nil {
			break
		}
	}
	return off
}

// leadingNULs is how many NUL bytes b opens with. A block of them, as space preallocated
// or a hole reads, is compared whole (bytes.Equal, vectorized): byte by byte, pastZeros's
// look at each turn cost a fifth of a turn over files holding NULs back.
func leadingNULs(b []byte) int {
	n := 0
	for n < len(b) {
		k := min(len(b)-n, len(zeroBlock))
		if !bytes.Equal(b[n:n+k], zeroBlock[:k]) {
			break
		}
		n += k
	}
	for n < len(b) && b[n] == 0 {
		n++
	}
	return n
}

// zeroBlock is what leadingNULs compares with.
var zeroBlock [4096]byte

// noteRead keeps the first headLen bytes of the file and the last tailLen
// bytes read; p was read at t.off.
func (t *tracked) noteRead(p []byte) {
	if t.off < headLen && int64(t.headN) == t.off {
		t.headN += copy(t.head[t.headN:], p)
	}
	if len(p) >= tailLen {
		t.tailN = copy(t.tail[:], p[len(p)-tailLen:])
		return
	}
	keep := min(t.tailN, tailLen-len(p))
	copy(t.tail[:keep], t.tail[t.tailN-keep:t.tailN])
	t.tailN = keep + copy(t.tail[keep:], p)
}

// lineReader splits files into lines with one buffer of bounded size.
type lineReader struct {
	buf  []byte
	max  int
	h    input.Handler
	c    *counters
	stop *atomic.Bool // never set when reading cannot be stopped (a one-shot's)
	// chunk, tooLong, lend and block are Options.Chunk, Options.TooLong, Options.Lend
	// and Options.Block; block is nil when buf, longer than the cap and its newline, may
	// hold a complete line too long.
	chunk   func()
	tooLong func(path string, head []byte) bool
	lend    func(buf []byte) []byte
	block   func(path string, lines []byte) bool
	// hold is Options.Hold, or a lock no one else takes.
	hold sync.Locker
	// recheck: a follower's files may be rewritten while read, which pass checks for at
	// each read but its first (a replay's are read once, as they are).
	recheck bool
	// at is Options.At.
	at *Line
	// log is Options.Logger, for a file that is not UTF-8 (checkEncoding), and text
	// Options.Text.
	log  *slog.Logger
	text func(head []byte) ([]byte, bool)
	// before is where readChecked reads the bytes before the offset: the reader's, as
	// one declared in readChecked went to the heap (a syscall's iovec holds it), a KiB
	// allocated and faulted in at every read.
	before [tailLen]byte
}

// newLineReader reads lines as o (normalized) says; stop is nil when reading cannot be
// stopped (a one-shot's).
func newLineReader(o Options, h input.Handler, c *counters, stop *atomic.Bool) *lineReader {
	if stop == nil {
		// Asked all the same, by the looks for a hole's end (textAfter).
		stop = new(atomic.Bool)
	}
	// One byte more than the cap, for the newline that ends the longest line allowed.
	size := max(o.MaxLineBytes+1, minBuffer)
	if size > o.MaxLineBytes+1 {
		o.Block = nil // the buffer may hold a complete line too long
	}
	return &lineReader{
		buf:     make([]byte, size),
		max:     o.MaxLineBytes,
		h:       h,
		c:       c,
		stop:    stop,
		chunk:   o.Chunk,
		tooLong: o.TooLong,
		lend:    o.Lend,
		block:   o.Block,
		hold:    cmp.Or[sync.Locker](o.Hold, new(sync.Mutex)),
		at:      o.At,
		log:     o.Logger,
		text:    o.Text,
	}
}

func (r *lineReader) stopped() bool { return r.stop.Load() }

// pass reads t from its offset until the end of the file or until budget
// bytes were read, handing complete lines to the handler. An incomplete last
// line is kept in t for the next pass.
func (r *lineReader) pass(t *tracked, path string, budget int64) (read int64, atEOF bool, err error) {
	buf := r.buf
	start, end := 0, copy(buf, t.partial)
	defer func() { t.partial = append(t.partial[:0], buf[start:end]...) }()
	for read < budget {
		if t.inHole {
			fi, err := t.f.Stat()
			if err != nil {
				return read, false, err
			}
			if t.skipHole(fi.Size(), r.stop); t.zeros > t.off {
				return read, true, nil
			}
		}
		var n int
		var err error
		if r.recheck && read > 0 {
			// The lines handed on since the check before the pass may have taken long (a
			// slow handler): a file truncated and refilled past the offset meanwhile
			// would be read on from the middle of what was written anew.
			if n, err = t.readChecked(buf[end:], &r.before); errors.Is(err, errRewritten) {
				return read, false, err
			}
		} else {
			n, err = t.f.ReadAt(buf[end:], t.off)
		}
		if n > 0 && buf[end+n-1] == 0 {
			if k := n - len(bytes.TrimRight(buf[end:end+n], "\x00")); k >= minZeros && (err != nil || t.zerosToEnd(t.off+int64(n), r.stop)) {
				n -= k
				t.holdZeros(t.off+int64(n), t.off+int64(n+k))
				err = io.EOF // what follows them is for pastZeros to tell
			}
		}
		if n > 0 {
			t.noteRead(buf[end : end+n])
			t.off += int64(n)
			end += n
			read += int64(n)
			if !t.encodingKnown {
				r.checkEncoding(t, path)
			}
			if r.chunk != nil {
				r.chunk()
			}
		}
		r.hold.Lock()
		start, end = r.scan(t, path, start, end)
		buf, start, end = r.next(buf, start, end)
		r.hold.Unlock()
		switch {
		case r.stopped():
			return read, false, nil
		case errors.Is(err, io.EOF):
			return read, true, nil
		case err != nil:
			return read, false, err
		}
	}
	return read, false, nil
}

// readChecked is t.f.ReadAt(p, t.off), but it reads the bytes before the offset that
// t.tail holds too, in the same syscall (preadv), and returns errRewritten, having read
// nothing, when they are no longer those: a check at each read of a pass that costs no
// syscall of its own (a pread each was 0.2-0.8% of a catch-up's CPU). A rewrite is
// seen as by rewritten, unless it falls within that one syscall, after its read of the
// tail: as one between rewritten's check and a pass's first read is not.
// before is the caller's room for the bytes read before the offset.
func (t *tracked) readChecked(p []byte, before *[tailLen]byte) (int, error) {
	k := t.tailN
	rc, err := t.f.SyscallConn()
	if err != nil {
		return 0, err
	}
	var n int
	if rerr := rc.Read(func(fd uintptr) bool {
		for {
			n, err = unix.Preadv(int(fd), [][]byte{before[:k], p}, t.off-int64(k))
			if err != unix.EINTR {
				return true
			}
		}
	}); rerr != nil {
		return 0, rerr
	}
	switch {
	case err != nil:
		return 0, &os.PathError{Op: "preadv", Path: t.f.Name(), Err: err}
	case n < k || !bytes.Equal(before[:k], t.tail[:k]):
		return 0, errRewritten
	}
	n -= k
	if n == len(p) {
		return n, nil
	}
	// Short: at the file's end, which ReadAt says, as it would have (io.EOF).
	m, err := t.f.ReadAt(p[n:], t.off+int64(n))
	return n + m, err
}

// errRewritten is pass's when what it read before is no longer in the file: it was
// truncated, or rewritten, under the read offset since.
var errRewritten = errors.New("rewritten under the read offset")

// scan hands on the complete lines of buf[start:end] and returns what is
// left: the start of a line no longer than the cap, or nothing while a too
// long line is skipped.
func (r *lineReader) scan(t *tracked, path string, start, end int) (int, int) {
	buf := r.buf
	if t.lead {
		i := bytes.IndexByte(buf[start:end], '\n')
		if i < 0 {
			t.done.Store(t.off)
			return 0, 0
		}
		start += i + 1
		t.lead = false
	}
	// The mark of UTF-8 that tools on Windows open a file with says how the file is
	// written; it is no text of the first line (a JSON object after it is no JSON).
	// Until three bytes are read the line waits here, as any incomplete one does, and
	// is not too long yet whatever the cap.
	first := t.off-int64(end-start) == 0
	atMark := first && bytes.HasPrefix(byteOrderMark, buf[start:end])
	if first && bytes.HasPrefix(buf[start:end], byteOrderMark) {
		start += len(byteOrderMark)
	}
	if r.block != nil && !t.skipping {
		// Lines that hold NULs are handed on one by one, for a hole to be told from text
		// at each line's start (holeLen): the block's taker sees only lines.
		if i := bytes.LastIndexByte(buf[start:end], '\n'); i >= 0 && bytes.IndexByte(buf[start:start+i], 0) < 0 {
			if r.block(path, buf[start:start+i+1]) {
				start += i + 1
			}
		}
	}
	// The position after the lines handed on (a block's too) is stored once the read's
	// lines are, an atomic write spared per line: it is read for a cut only while the
	// hold is not held (Positions).
	rest := buf[start:end]
	for {
		i := bytes.IndexByte(rest, '\n')
		if i < 0 {
			break
		}
		line, at := rest[:i], t.off-int64(len(rest))
		rest = rest[i+1:]
		// One compare a line: a hole opens at a line's start, after the last line its
		// writer wrote before it (a copytruncate under a writer at its own offset, a
		// preallocation); NULs within a line are its text. The rest of a line too long
		// (t.skipping) is passed over by line whatever it holds.
		if i > 0 && line[0] == 0 {
			k := holeLen(line)
			line, at = line[k:], at+int64(k)
		}
		r.line(t, path, line, at)
		if r.stopped() {
			t.done.Store(t.off - int64(len(rest)))
			return end - len(rest), end
		}
	}
	start = end - len(rest)
	if start < end && buf[start] == 0 && !t.skipping {
		start = t.overHole(buf, start, end)
	}
	t.done.Store(t.off - int64(end-start))
	if !t.skipping && end-start > r.max && !atMark {
		t.skipping = true
		r.skip(path, buf[start:end])
	}
	if t.skipping {
		t.done.Store(t.off)
		return 0, 0
	}
	return start, end
}

// holeLen is how many NUL bytes open a line read from a file, when they are a hole:
// minZeros of them or more, else none. A follower present when the hole was made held
// them back at the file's end and read on from the text after them (pastZeros): no line,
// nor bytes lost; read after the text was written they count the same.
func holeLen(line []byte) int {
	if k := leadingNULs(line); k >= minZeros {
		return k
	}
	return 0
}

// overHole passes over the NUL bytes that open the incomplete line at buf[start:end] read
// from t, when they are a hole (holeLen), and returns where the line starts. When they
// go up to the read's end, the next read starts after the rest of them (t.inHole); fewer
// than minZeros are kept for the next read to tell.
func (t *tracked) overHole(buf []byte, start, end int) int {
	k := holeLen(buf[start:end])
	t.inHole = k > 0 && start+k == end
	return start + k
}

// next returns the buffer to read into after a read whose lines were handed on
// (the one Options.Lend gives, else buf), with what scan left of buf moved to its
// front: a line no longer than the cap, so the buffer always has room for the
// next read.
func (r *lineReader) next(buf []byte, start, end int) ([]byte, int, int) {
	to := buf
	if r.lend != nil {
		to = r.lend(buf)
	}
	r.buf = to
	return to, 0, copy(to, buf[start:end])
}

// byteOrderMark is U+FEFF in UTF-8, dropped where it opens a file.
var byteOrderMark = []byte("\xef\xbb\xbf")

// line hands on one line, which starts at offset at of t, or counts it when it was too
// long.
func (r *lineReader) line(t *tracked, path string, line []byte, at int64) {
	if t.skipping || len(line) > r.max {
		if !t.skipping {
			r.skip(path, line)
		}
		t.skipping = false
		return
	}
	r.c.lines.Add(1)
	if r.at != nil {
		*r.at = Line{Path: path, Dev: t.id.dev, Ino: t.id.ino, Offset: at, f: t.f}
	}
	r.h(path, TrimCR(line))
}

// TrimCR is line, without its "\n", as the handler is given it: without the "\r" before
// the "\n", if there is one. A Block handler makes the same of each line it takes.
func TrimCR(line []byte) []byte {
	if n := len(line); n > 0 && line[n-1] == '\r' {
		return line[:n-1]
	}
	return line
}

// skip counts a line too long to read, unless Options.TooLong, told of it by its
// first bytes, says it does not count; called once per line, when it is found too
// long, so that a line whose rest a follower resumed within it skips is counted.
func (r *lineReader) skip(path string, head []byte) {
	if r.tooLong == nil || r.tooLong(path, head) {
		r.c.tooLong.Add(1)
	}
}

// finish ends a file that will not grow any more: its last line, complete or
// not, is handed on.
func (r *lineReader) finish(t *tracked, path string) {
	r.hold.Lock()
	defer r.hold.Unlock()
	r.finishHeld(t, path)
}

// finishHeld is finish with Options.Hold held.
func (r *lineReader) finishHeld(t *tracked, path string) {
	if t.skipping || len(t.partial) > 0 {
		r.line(t, path, t.partial, t.off-int64(len(t.partial)))
	}
	t.partial = t.partial[:0]
	t.done.Store(t.off)
}
