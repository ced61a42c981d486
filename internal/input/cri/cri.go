// Package cri reads Kubernetes container log lines (the CRI format the kubelet writes
// under /var/log/containers: `<RFC 3339 time> <stream> <P|F> <message>`) and joins the
// partial (P) lines a runtime splits a long message into, so that rules see the message
// as the container wrote it.
package cri

import "bytes"

// Result says what Feed made of a line.
type Result uint8

const (
	// Complete: msg and time hold a whole message.
	Complete Result = iota
	// Partial: the line was a part of a longer message, kept until its last part.
	Partial
	// Malformed: the line is not a CRI line; it is dropped.
	Malformed
	// TooLong: the joined message passed the cap; it is dropped whole, the parts after the
	// cap included.
	TooLong
)

// MaxPending bounds the messages being joined at once (one per file and stream); a part
// that would start one more is dropped as TooLong, and so is the rest of its message.
const MaxPending = 4096

// Joiner joins partial lines per file and stream (stdout and stderr may interleave their
// parts). It is not safe for concurrent use: each input has its own.
type Joiner struct {
	max     int
	pending map[string]*stream // by source and stream name
}

type stream struct {
	buf      []byte
	overflow bool // the message being joined passed max; the rest of it is skipped
}

// New returns a Joiner capping joined messages at max bytes.
func New(max int) *Joiner { return &Joiner{max: max, pending: map[string]*stream{}} }

// Feed reads one line of source (the file it was read from). With Complete, msg is the
// message (joined when it came in parts) and time the line's time text; both are valid
// until the next Feed.
func (j *Joiner) Feed(source string, line []byte) (msg, time []byte, r Result) {
	time, rest, ok := bytes.Cut(line, []byte(" "))
	if !ok || len(time) == 0 {
		return nil, nil, Malformed
	}
	name, rest, ok := bytes.Cut(rest, []byte(" "))
	if !ok || len(name) == 0 {
		return nil, nil, Malformed
	}
	tag, msg, ok := bytes.Cut(rest, []byte(" "))
	if !ok {
		// "<time> <stream> F" with an empty message has no space after the tag.
		tag, msg = rest, nil
	}
	// The tag is flags separated by ':'; the first is P (partial) or F (full).
	flag, _, _ := bytes.Cut(tag, []byte(":"))
	if len(flag) != 1 || flag[0] != 'P' && flag[0] != 'F' {
		return nil, nil, Malformed
	}
	if flag[0] == 'F' && len(j.pending) == 0 {
		return msg, time, Complete
	}
	key := source + "\x00" + string(name)
	s := j.pending[key]
	if flag[0] == 'P' {
		if s == nil {
			if len(j.pending) >= MaxPending {
				return nil, nil, TooLong
			}
			s = &stream{}
			j.pending[key] = s
		}
		if !s.overflow {
			if len(s.buf)+len(msg) > j.max {
				s.overflow, s.buf = true, nil
			} else {
				s.buf = append(s.buf, msg...)
			}
		}
		return nil, nil, Partial
	}
	if s == nil {
		return msg, time, Complete
	}
	delete(j.pending, key)
	if s.overflow || len(s.buf)+len(msg) > j.max {
		return nil, nil, TooLong
	}
	return append(s.buf, msg...), time, Complete
}
