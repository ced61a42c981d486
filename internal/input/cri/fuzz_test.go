package cri

import (
	"regexp"
	"strconv"
	"testing"
)

// criLine is the CRI log line as the kubelet's reader reads it, written as one pattern:
// the time, the stream, the tag (P or F, then ':'-separated flags), and the message after
// one space, if any.
var criLine = regexp.MustCompile(`(?s)^([^ ]+) ([^ ]{1,` + strconv.Itoa(MaxStreamBytes) + `}) ([PF])(?::[^ ]*)?(?: (.*))?$`)

// FuzzParseLine: whatever a line holds, parse splits it as the pattern of a CRI line does,
// or refuses it as the pattern does.
func FuzzParseLine(f *testing.F) {
	for _, s := range []string{
		"2024-03-01T12:00:00.000000001Z stdout F hello world",
		"2024-03-01T12:00:00Z stderr P part",
		"t stdout F",
		"t stdout F ",
		"t stdout F:x:y msg",
		"t stdout FP msg",
		"t stdout P:",
		"t  stdout F x",
		" t stdout F x",
		"t stdout",
		"t stdout X msg",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		time, name, partial, msg, ok := parse(line)
		m := criLine.FindSubmatch(line)
		if ok != (m != nil) {
			t.Fatalf("parse(%q): ok %v, the pattern %v", line, ok, m != nil)
		}
		if !ok {
			return
		}
		if string(time) != string(m[1]) || string(name) != string(m[2]) || partial != (m[3][0] == 'P') || string(msg) != string(m[4]) {
			t.Fatalf("parse(%q) = %q %q %v %q; the pattern %q", line, time, name, partial, msg, m[1:])
		}
	})
}
