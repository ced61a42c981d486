package config

import (
	"slices"
	"strings"
)

// Streams are the streams of a CRI line (its second field) a wrapper: cri input reads:
// a line of another stream is skipped before anything reads it, so it is neither
// malformed nor unmatched. The zero value reads both.
type Streams uint8

// The streams a container writes to.
const (
	StreamStdout Streams = 1 << iota
	StreamStderr
)

// streamNames are the values of `streams:`, in the order of their bits.
var streamNames = []string{"stdout", "stderr"}

// Reads reports whether a line of the stream name is read.
func (s Streams) Reads(name []byte) bool {
	if s == 0 {
		return true
	}
	for i, n := range streamNames {
		if string(name) == n {
			return s&(1<<i) != 0
		}
	}
	return false
}

// Apart reports whether inputs of streams s and t read none of the same lines of a file
// both follow: a container's stdout and its stderr, each read by an input of its own.
func (s Streams) Apart(t Streams) bool {
	return s != 0 && t != 0 && s&t == 0
}

// String lists the streams read, as `streams:` is written.
func (s Streams) String() string {
	if s == 0 {
		s = StreamStdout | StreamStderr
	}
	var out []string
	for i, n := range streamNames {
		if s&(1<<i) != 0 {
			out = append(out, n)
		}
	}
	return "[" + strings.Join(out, ", ") + "]"
}

// streams decodes `streams:` of an input whose wrapper is wrapper.
func (d *decoder) streams(e entry, subject, wrapper string) Streams {
	names, ok := d.words(e, subject, "streams", nil)
	if !ok {
		return 0
	}
	if wrapper != WrapperCRI {
		d.add(e.key.Line, subject, "streams: applies to a wrapper: cri input, whose lines say the stream they were written to")
		return 0
	}
	if len(names) == 0 {
		d.add(e.key.Line, subject, "streams: is empty: the input would read nothing; leave it out to read both stdout and stderr")
		return 0
	}
	var s Streams
	for _, name := range names {
		i := slices.Index(streamNames, name)
		if i < 0 {
			d.add(e.key.Line, subject, "streams: %q is not a stream of a container (have: %s)", name, strings.Join(streamNames, ", "))
			return 0
		}
		s |= 1 << i
	}
	return s
}
