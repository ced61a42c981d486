package cri

import "bytes"

// Stream returns the stream a CRI line was written to (its second field, stdout or
// stderr), so that a reader can skip the lines of a stream before joining them; ok is
// false when the line has no second field. It reads only up to that field: Feed still
// decides whether the line is a CRI line.
func Stream(line []byte) (name []byte, ok bool) {
	_, rest, ok := bytes.Cut(line, []byte(" "))
	if !ok {
		return nil, false
	}
	name, _, ok = bytes.Cut(rest, []byte(" "))
	if !ok || len(name) == 0 {
		return nil, false
	}
	return name, true
}

// MessageStart is where the message of a CRI line starts in it (its length when the
// message is empty); ok is false when line is not a CRI line. A reader tells the
// encoding of a container's text by the bytes from there, not by the runtime's time,
// stream and tag before them.
func MessageStart(line []byte) (at int, ok bool) {
	_, _, _, msg, ok := parse(line)
	if !ok {
		return 0, false
	}
	return len(line) - len(msg), true
}
