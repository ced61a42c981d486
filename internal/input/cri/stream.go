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
