package syslog

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
)

// Datagrams as nginx sent them (captured from Debian's nginx with `access_log
// syslog:server=unix:...,tag=nginx main;`, with and without nohostname).
const (
	nginxLine       = `127.0.0.1 - - [24/Nov/2026:05:28:09 +0000] "GET /a?b=1 HTTP/1.1" 200 2 "-" "ua x" 0.000 -`
	nginxDatagram   = `<190>Nov 24 05:28:09 vm nginx: ` + nginxLine
	nginxNoHostname = `<190>Nov 24 05:28:09 nginx: ` + nginxLine
)

func TestMessage(t *testing.T) {
	for _, tc := range []struct {
		name, in, want string
		ok             bool
	}{
		{"nginx", nginxDatagram, nginxLine, true},
		{"nginx nohostname", nginxNoHostname, nginxLine, true},
		{"space-padded day", "<13>Nov  4 01:02:03 host app: hello", "hello", true},
		{"tag with pid", "<13>Nov 24 01:02:03 host cron[123]: job done", "job done", true},
		{"tag with pid, no host", "<13>Nov 24 01:02:03 cron[123]: job done", "job done", true},
		{"ipv6 host", "<13>Nov 24 01:02:03 ::1 app: hi", "hi", true},
		{"ipv6 host starting with a word", "<13>Nov 24 01:02:03 fe80::1 app: hi", "hi", true},
		{"ipv6 host, tag with pid", "<13>Nov 24 01:02:03 2001:db8::1 nginx[7]: hi", "hi", true},
		{"no tag", "<13>Nov 24 01:02:03 host just words here", "just words here", true},
		// After a time the header is syslog(3)'s (`ident[pid]: `, the program's name, no
		// hostname) or a relay's (the hostname, then the tag): a word and a colon there is
		// the tag, a level's name too, as rsyslog reads it. Without a time, a level is the
		// message's (below).
		{"level's name after the time", "<14>Nov 29 12:00:00 host WARNING: x", "x", true},
		{"level's name after the time, no host", "<14>Nov 29 12:00:00 WARNING: x", "x", true},
		{"colon without space", "<13>Nov 24 01:02:03 host app:x", "x", true},
		{"trailing newline", "<13>Nov 24 01:02:03 host app: hi\n", "hi", true},
		{"trailing crlf", "<13>Nov 24 01:02:03 host app: hi\r\n", "hi", true},
		{"empty message", "<13>Nov 24 01:02:03 host app: ", "", true},
		{"only timestamp", "<13>Nov 24 01:02:03", "", true},
		{"pri 0", "<0>Nov 24 01:02:03 host app: hi", "hi", true},
		{"rfc5424", "<165>1 2003-10-11T22:14:15.003Z mymachine.example.com evntslog - ID47 - msg text", "msg text", true},
		{"rfc5424 sd", `<165>1 2003-10-11T22:14:15.003Z host app 42 ID47 [exampleSDID@32473 iut="3" eventSource="App\"x\]"][b@1 c="d"] BOM`, "BOM", true},
		{"rfc5424 bom", "<165>1 - - - - - - \xef\xbb\xbfhi", "hi", true},
		{"rfc5424 no msg", "<165>1 - - - - - -", "", true},
		{"rfc5424 bad sd", "<165>1 - - - - - [x", "<165>1 - - - - - [x", false},
		{"not syslog", "plain line", "plain line", false},
		{"pri too big", "<192>Nov 24 01:02:03 host app: hi", "<192>Nov 24 01:02:03 host app: hi", false},
		{"pri leading zero", "<013>Nov 24 01:02:03 host app: hi", "<013>Nov 24 01:02:03 host app: hi", false},
		{"pri unclosed", "<13Nov 24 01:02:03 host app: hi", "<13Nov 24 01:02:03 host app: hi", false},
		{"bad month", "<13>Foo 24 01:02:03 host app: hi", "Foo 24 01:02:03 host app: hi", true},
		{"bad time", "<13>Nov 24 01:0x:03 host app: hi", "Nov 24 01:0x:03 host app: hi", true},
		{"pri only", "<13>", "", true},
		// RFC 3164 4.3.3: what follows a PRI without a timestamp is the message (busybox
		// syslogd's and some loggers' local datagrams), a tag read off it as rsyslog does.
		{"no timestamp", "<13>hello", "hello", true},
		{"no timestamp, words", "<13>hello big world", "hello big world", true},
		{"no timestamp, tag", "<13>app: hello", "hello", true},
		{"no timestamp, tag with pid", "<30>cron[12]: job done", "job done", true},
		{"no timestamp, colon in a word", "<13>http://example.com/ up", "http://example.com/ up", true},
		{"no timestamp, ipv6 first", "<13>2001:db8::1 - - hi", "2001:db8::1 - - hi", true},
		{"no timestamp, nginx line", "<190>" + nginxLine, nginxLine, true},
		// Python's SysLogHandler sends `<PRI>message`: a JSON object is not a tag.
		{"no timestamp, json", `<14>{"message": "hi", "level": "INFO"}`, `{"message": "hi", "level": "INFO"}`, true},
		{"no timestamp, tag, json", `<14>app: {"message": "hi"}`, `{"message": "hi"}`, true},
		// Python's SysLogHandler ends a datagram with a NUL (captured from Python 3.12).
		{"python", "<12>WARNING: disk full\x00", "WARNING: disk full", true},
		{"python, json", "<12>{\"level\": \"WARNING\", \"message\": \"hi\"}\x00", `{"level": "WARNING", "message": "hi"}`, true},
		{"nul then newline", "<13>Nov 24 01:02:03 host app: hi\x00\n", "hi", true},
		// Python 2.7.0-2.7.3's SysLogHandler put a BOM before the message, as RFC 5424 does.
		{"no timestamp, bom", "<14>\xef\xbb\xbf{\"message\": \"hi\"}", `{"message": "hi"}`, true},
		{"unpadded day", "<13>Nov 4 01:02:03 host app: hello", "hello", true},
		{"fraction of a second", "<13>Nov 24 01:02:03.123 host app: hello", "hello", true},
		{"year before the time", "<13>Nov 24 2026 01:02:03 host app: hello", "hello", true},
		{"colon after the time", "<13>Nov 24 01:02:03: host app: hello", "hello", true},
		{"rfc3339 time", "<13>2026-11-24T01:02:03.123456+01:00 host app: hello", "hello", true},
		{"space before the time", "<13> Nov 24 01:02:03 host app: hello", "hello", true},
		{"rfc3339 time utc", "<13>2026-11-24T01:02:03Z app[7]: hello", "hello", true},
		{"rfc5424 malformed stays so", "<165>1 2003-10-11T22:14:15.003Z", "<165>1 2003-10-11T22:14:15.003Z", false},
		{"empty", "", "", false},
		{"newline kept out of whole line", "plain\n", "plain", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := Message([]byte(tc.in))
			if string(got) != tc.want || ok != tc.ok {
				t.Errorf("Message(%q) = %q, %v; want %q, %v", tc.in, got, ok, tc.want, tc.ok)
			}
		})
	}
}

// FuzzMessage: any datagram gives a suffix of itself (no copy, nothing invented, never a
// panic) and a header whose hostname and tag are subslices of it before the message
// (none when it is not syslog), and a message wrapped in a well-formed RFC 3164 header by
// the fuzzer's choice of fields, or in Cisco IOS's, comes back unchanged with that
// hostname and tag. The seed corpus (testdata/fuzz/FuzzMessage) holds nginx's datagrams
// with and without hostname and RFC 5424 with structured data.
func FuzzMessage(f *testing.F) {
	f.Fuzz(func(t *testing.T, datagram []byte, pri uint8, host, tag string, msg []byte) {
		got, h, ok := Parse(datagram)
		trimmed := trimNewline(datagram)
		if !bytes.HasSuffix(trimmed, got) || len(got) > 0 && &got[len(got)-1] != &trimmed[len(trimmed)-1] {
			t.Fatalf("Message(%q) = %q, not a suffix of the datagram", datagram, got)
		}
		if !ok && len(got) != len(trimmed) {
			t.Fatalf("Message(%q) = %q, not syslog but not whole", datagram, got)
		}
		if !ok && (h.Hostname != nil || h.Tag != nil) {
			t.Fatalf("Parse(%q): not syslog, yet host %q, tag %q", datagram, h.Hostname, h.Tag)
		}
		header := trimmed[:len(trimmed)-len(got)]
		for _, field := range [][]byte{h.Hostname, h.Tag} {
			if field != nil && !within(field, header) {
				t.Fatalf("Parse(%q) = host %q, tag %q: %q is not of the header %q", datagram, h.Hostname, h.Tag, field, header)
			}
		}
		if m, mok := Message(datagram); !bytes.Equal(m, got) || mok != ok {
			t.Fatalf("Message(%q) = %q, %v; Parse %q, %v", datagram, m, mok, got, ok)
		}
		if !wellFormedTag(tag) || !wellFormedHost(host) || len(trimNewline(msg)) != len(msg) {
			return
		}
		head := fmt.Sprintf("<%d>Nov  4 05:28:09 ", pri%192)
		if host != "" {
			head += host + " "
		}
		name, _, _ := strings.Cut(tag, "[")
		wrapped := append([]byte(head+tag+": "), msg...)
		if got, h, ok := Parse(wrapped); !ok || !bytes.Equal(got, msg) || string(h.Hostname) != host || string(h.Tag) != name {
			t.Fatalf("Parse(%q) = %q, host %q, tag %q, %v; want %q, %q, %q", wrapped, got, h.Hostname, h.Tag, ok, msg, host, name)
		}
		// The same message as Cisco IOS sends it: a sequence number, the origin, a
		// clock never synchronized, the mnemonic as the tag.
		head = fmt.Sprintf("<%d>%d: ", pri%192, pri)
		if host != "" {
			head += host + ": "
		}
		wrapped = append([]byte(head+"*Nov  4 05:28:09.123: %"+tag+": "), msg...)
		if got, h, ok := Parse(wrapped); !ok || !bytes.Equal(got, msg) || string(h.Hostname) != host || string(h.Tag) != "%"+name {
			t.Fatalf("Parse(%q) = %q, host %q, tag %q, %v; want %q, %q, %q", wrapped, got, h.Hostname, h.Tag, ok, msg, host, "%"+name)
		}
	})
}

// within reports whether sub is a subslice of b: its bytes are b's, not a copy.
func within(sub, b []byte) bool {
	for i := range len(b) - len(sub) + 1 {
		if len(sub) == 0 || &b[i] == &sub[0] {
			return true
		}
	}
	return false
}

func wellFormedTag(tag string) bool {
	name, pid, hasPid := tag, "", false
	if i := bytes.IndexByte([]byte(tag), '['); i >= 0 {
		name, pid, hasPid = tag[:i], tag[i:], true
	}
	if name == "" || len(tag) > maxTagLen {
		return false
	}
	for _, c := range []byte(name) {
		if c <= ' ' || c >= 0x7f || c == ':' || c == '[' || c == '"' {
			return false
		}
	}
	if !hasPid {
		return true
	}
	if len(pid) < 3 || pid[len(pid)-1] != ']' {
		return false
	}
	for _, c := range []byte(pid[1 : len(pid)-1]) {
		if !isDigit(c) {
			return false
		}
	}
	return true
}

// wellFormedHost is a hostname nginx could send: printable ASCII without space, and not
// something that reads as a tag itself (a hostname ending in ':').
func wellFormedHost(host string) bool {
	for _, c := range []byte(host) {
		if c <= ' ' || c >= 0x7f {
			return false
		}
	}
	_, _, isTag := afterTag([]byte(host + " "))
	return !isTag
}
