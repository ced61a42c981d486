// Package cri reads Kubernetes container log lines (the CRI format the kubelet writes
// under /var/log/containers: `<RFC 3339 time> <stream> <P|F> <message>`) and joins the
// partial (P) lines a runtime splits a long message into, so that rules see the message
// as the container wrote it.
package cri

import (
	"bytes"
	"iter"
	"strings"
	"sync/atomic"
)

// Result says what Feed made of a line.
type Result uint8

const (
	// Complete: msg and time hold a whole message.
	Complete Result = iota
	// Partial: the line was a part of a longer message, kept until its last part, or
	// skipped with the rest of a message that is dropped (see TooLong).
	Partial
	// Malformed: the line is not a CRI line; it is dropped.
	Malformed
	// TooLong: the joined message passed the cap, or was refused the memory to be joined
	// in (MaxPending, the Joiner's room); it is dropped whole, its parts after the refusal
	// included, and this, at its last part, is its one count.
	TooLong
	// Discarded: the line ended a message that lost a part the reader skipped for its
	// length (see Dropped); the reader counted that, so the message is dropped uncounted.
	Discarded
)

// MaxPending bounds the messages being joined at once (one per file and stream). A part
// that would start one more is refused: its message is dropped whole, counted once as
// TooLong, and what is kept of it until its last part is a mark without its bytes. The
// marks do not take the places of messages being joined, so that which messages a
// restart joins (Resume) does not depend on the order it is given them in.
//
// MaxTracked bounds the messages in progress, joined or marked, each mark a few dozen
// bytes: past it, a part that would start one more can only be counted as TooLong,
// each part alike, and the last (F) part of its message, which cannot be told from a
// whole message, is handed on as one; a message given back (Resume) is not kept.
const (
	MaxPending = 4096
	MaxTracked = 2 * MaxPending
)

// MaxStreamBytes bounds a stream's name, so that what the marks of messages in progress
// hold is bounded whatever the lines or a snapshot say: a runtime writes stdout or
// stderr. A line with a longer one is not a CRI line (Malformed).
const MaxStreamBytes = 64

// Bytes HeldBytes counts for each message being joined besides its buffer and its
// stream's name (the record, its map entry), and for each file with one (the file's map
// of streams, its entry), as measured by TestHeldBytesIsTheHeap. File names are not
// counted: they are the reader's.
const (
	streamOverhead = 40
	sourceOverhead = 280
)

// Joiner joins partial lines per file and stream (stdout and stderr may interleave their
// parts). It is not safe for concurrent use: each input has its own, used by the input's
// reading goroutine; HeldBytes alone may be read from any goroutine.
type Joiner struct {
	max     int
	pending map[string]map[string]*stream // by source, then stream name; no empty inner map
	n       int                           // messages being joined or skipped: streams in pending
	skipped int                           // of them, those skipped (overflow)
	held    atomic.Int64
	// room reports whether the process may hold n more bytes (Bound); nil is no bound.
	room func(n int64) bool
}

type stream struct {
	buf      []byte
	overflow bool // the message being joined passed max; the rest of it is skipped
	counted  bool // and its drop was counted by the reader (Dropped): Discarded at its end
}

// New returns a Joiner capping joined messages at max bytes.
func New(max int) *Joiner { return &Joiner{max: max, pending: map[string]map[string]*stream{}} }

// Bound makes the Joiner ask room whether it may hold n more bytes when a message's
// buffer would grow by n: a part that room refuses drops its message as one past the cap
// does (TooLong), so that what the Joiner holds stays within the memory bound it is
// charged to. room is called by the Joiner's goroutine, on a buffer's growth, not on
// every line; what HeldBytes grew by since the caller last read it is not in n.
func (j *Joiner) Bound(room func(n int64) bool) { j.room = room }

// parse splits a CRI line; partial says whether its tag is P (else F).
func parse(line []byte) (time, name []byte, partial bool, msg []byte, ok bool) {
	time, rest, ok := bytes.Cut(line, []byte(" "))
	if !ok || len(time) == 0 {
		return nil, nil, false, nil, false
	}
	name, rest, ok = bytes.Cut(rest, []byte(" "))
	if !ok || len(name) == 0 || len(name) > MaxStreamBytes {
		return nil, nil, false, nil, false
	}
	tag, msg, ok := bytes.Cut(rest, []byte(" "))
	if !ok {
		// "<time> <stream> F" with an empty message has no space after the tag.
		tag, msg = rest, nil
	}
	// The tag is flags separated by ':'; the first is P (partial) or F (full).
	flag, _, _ := bytes.Cut(tag, []byte(":"))
	if len(flag) != 1 || flag[0] != 'P' && flag[0] != 'F' {
		return nil, nil, false, nil, false
	}
	return time, name, flag[0] == 'P', msg, true
}

// Feed reads one line of source (the file it was read from). With Complete, msg is the
// message (joined when it came in parts) and time the line's time text; both are valid
// until the next Feed.
func (j *Joiner) Feed(source string, line []byte) (msg, time []byte, r Result) {
	time, name, partial, msg, ok := parse(line)
	if !ok {
		return nil, nil, Malformed
	}
	if !partial && len(j.pending) == 0 {
		return opening(msg), time, Complete
	}
	s := j.pending[source][string(name)]
	if partial {
		if s == nil {
			if s = j.open(source, name); s == nil {
				return nil, nil, TooLong
			}
			msg = opening(msg)
		}
		switch {
		case s.overflow:
		case len(s.buf)+len(msg) > j.max:
			j.overflow(s)
		default:
			grown := append(s.buf, msg...)
			n := int64(cap(grown) - cap(s.buf))
			if n > 0 && j.room != nil && !j.room(n) {
				j.overflow(s)
				break
			}
			s.buf = grown
			j.held.Add(n)
		}
		return nil, nil, Partial
	}
	if s == nil {
		return opening(msg), time, Complete
	}
	j.end(source, name)
	switch {
	case s.counted:
		return nil, nil, Discarded
	case s.overflow || len(s.buf)+len(msg) > j.max:
		return nil, nil, TooLong
	}
	return append(s.buf, msg...), time, Complete
}

// opening is the first part of a message (or the whole) without the UTF-8 byte order
// mark a container may write at its start (a .NET or PowerShell console does): it says
// how the text is written and is no text of the message, which a log format or JSON would
// not read past. One amid a message, where a runtime split it, is the message's.
func opening(msg []byte) []byte {
	if len(msg) >= 3 && msg[0] == 0xef && msg[1] == 0xbb && msg[2] == 0xbf {
		return msg[3:]
	}
	return msg
}

// Dropped tells the Joiner that the reader skipped a line of source too long to read,
// whose first bytes are head, and counted it. When the line was a part (P) of a message,
// the rest of the message is skipped up to and including its last (F) line (Partial,
// then Discarded), so that the last part is not taken for a whole message; when it was
// the last part, the message it ended is dropped. Without the line's tag in head, or
// with MaxPending messages being joined already, nothing can be done.
func (j *Joiner) Dropped(source string, head []byte) {
	_, name, partial, _, ok := parse(head)
	switch {
	case !ok:
	case !partial:
		j.end(source, name)
	default:
		s := j.pending[source][string(name)]
		if s == nil {
			if s = j.open(source, name); s == nil {
				return
			}
		}
		j.overflow(s)
		s.counted = true
	}
}

// Release forgets what is kept of source's messages: their last parts will not come
// (follow.Options.Closed says when). It returns how many of the messages it drops no count
// took yet, every one but those the reader counted a part of (Dropped): each would have
// been handed on or counted as TooLong at its last part, and is lost uncounted unless the
// caller counts it.
func (j *Joiner) Release(source string) (uncounted int) {
	streams, ok := j.pending[source]
	if !ok {
		return 0
	}
	freed := int64(sourceOverhead)
	for name, s := range streams {
		freed += int64(streamOverhead + len(name) + cap(s.buf))
		if s.overflow {
			j.skipped--
		}
		if !s.counted {
			uncounted++
		}
	}
	delete(j.pending, source)
	j.n -= len(streams)
	j.held.Add(-freed)
	return uncounted
}

// Part is a message a Joiner is in the middle of: its parts so far, as Pending gives it,
// for Resume to give back to another Joiner (a restart's) before the rest of its parts.
type Part struct {
	// Stream is the stream the message is written to (stdout, stderr).
	Stream string
	// Joined is what its parts so far make, joined; empty when Skipped.
	Joined []byte
	// Skipped says that the rest of the message is skipped up to its last part, which
	// ends it: it passed the cap, or was refused the memory or a place to be joined in
	// (TooLong at its last part); Counted that the reader skipped one of its parts too
	// long to read, and counted that (Discarded at its last part).
	Skipped, Counted bool
}

// Pending yields the messages being joined and skipped now, with the file (source) they
// are of, a file's one after another. Joined is valid until the next Feed, Dropped,
// Release or Resume.
func (j *Joiner) Pending() iter.Seq2[string, Part] {
	return func(yield func(string, Part) bool) {
		for source, streams := range j.pending {
			for name, s := range streams {
				if !yield(source, Part{Stream: name, Joined: s.buf, Skipped: s.overflow, Counted: s.counted}) {
					return
				}
			}
		}
	}
}

// Resumed says what Resume made of a message given back.
type Resumed uint8

const (
	// Kept: the message goes on (or is skipped to its last part, within the bounds).
	Kept Resumed = iota
	// Held: a message of its file's stream is in progress already (given back before
	// it, by another Joiner's Pending, or twice in a damaged snapshot); that one goes on.
	Held
	// Untracked: MaxTracked messages are in progress.
	Untracked
	// Unreadable: Feed reads no stream of its name (a forged or damaged snapshot's).
	Unreadable
)

// Resume takes back a message of source that a Joiner was in the middle of (Pending), as
// if its parts so far had been fed: its next part, or its last, goes on from there. It is
// bound as Feed's parts are: past the cap, or refused the memory (Bound) or a place
// (MaxPending), it is skipped to its last part and counted then as TooLong; past
// MaxTracked it is not kept (Untracked). A message of source's stream being joined
// already stays as it is (Held), and one of a stream Feed does not read (Unreadable) is
// not kept. It reports whether p was kept, and why not: the next parts of one that was
// not are read as a message of their own, and its first parts are lost, which no count
// took (but the reader's of a Counted one): the caller counts them.
func (j *Joiner) Resume(source string, p Part) Resumed {
	switch {
	case !Readable(p.Stream):
		return Unreadable
	case j.pending[source][p.Stream] != nil:
		return Held
	}
	s := j.open(source, []byte(p.Stream))
	switch {
	case s == nil:
		return Untracked
	case p.Skipped || p.Counted || len(p.Joined) > j.max:
		j.overflow(s)
		s.counted = p.Counted
	case s.overflow, len(p.Joined) == 0:
	case j.room != nil && !j.room(int64(len(p.Joined))):
		j.overflow(s)
	default:
		s.buf = append(make([]byte, 0, len(p.Joined)), p.Joined...)
		j.held.Add(int64(cap(s.buf)))
	}
	return Kept
}

// Readable reports whether Feed reads the lines of a stream of this name: one that is
// not empty, holds no space and is at most MaxStreamBytes long.
func Readable(stream string) bool {
	return stream != "" && len(stream) <= MaxStreamBytes && !strings.Contains(stream, " ")
}

// HeldBytes is about what the Joiner holds in memory now: the messages being joined, and
// what keeps them. It is safe to call from any goroutine.
func (j *Joiner) HeldBytes() int64 { return j.held.Load() }

// open starts a message of source's stream name: one to join, one to skip (overflow) when
// MaxPending are being joined, or nil when MaxTracked are tracked.
func (j *Joiner) open(source string, name []byte) *stream {
	if j.n >= MaxTracked {
		return nil
	}
	streams := j.pending[source]
	if streams == nil {
		streams = map[string]*stream{}
		j.pending[source] = streams
		j.held.Add(sourceOverhead)
	}
	s := &stream{overflow: j.n-j.skipped >= MaxPending}
	streams[string(name)] = s
	j.n++
	if s.overflow {
		j.skipped++
	}
	j.held.Add(int64(streamOverhead + len(name)))
	return s
}

// end forgets the message of source's stream name, if one is being joined.
func (j *Joiner) end(source string, name []byte) {
	streams := j.pending[source]
	s, ok := streams[string(name)]
	if !ok {
		return
	}
	delete(streams, string(name))
	j.n--
	if s.overflow {
		j.skipped--
	}
	freed := int64(streamOverhead + len(name) + cap(s.buf))
	if len(streams) == 0 {
		delete(j.pending, source)
		freed += sourceOverhead
	}
	j.held.Add(-freed)
}

// overflow drops what s joined: the rest of its message is skipped.
func (j *Joiner) overflow(s *stream) {
	if !s.overflow {
		j.skipped++
	}
	j.held.Add(-int64(cap(s.buf)))
	s.overflow, s.buf = true, nil
}
