package syslog

import "bytes"

// maxTagLen bounds an RFC 3164 tag. The RFC says 32; senders (nginx included) accept
// longer ones, and a tag has to end within this many bytes to be taken for one.
const maxTagLen = 48

// Header is what a datagram's syslog header says of where the message comes from: the
// hostname and the tag (RFC 5424's APP-NAME), subslices of the datagram, nil when the
// header has none ("-" in RFC 5424).
type Header struct {
	Hostname, Tag []byte
}

// Message returns the message of a syslog datagram, without its header: RFC 3164 as nginx
// and most libc syslog() implementations send it (`<PRI>Mmm dd hh:mm:ss [host] tag: msg`)
// or RFC 5424 (`<PRI>1 TIMESTAMP HOST APP PROCID MSGID SD msg`). ok is false when the
// datagram does not start with a syslog header; msg is then the whole datagram. One
// trailing newline is dropped either way. msg is always a subslice of datagram.
func Message(datagram []byte) (msg []byte, ok bool) {
	msg, _, ok = Parse(datagram)
	return msg, ok
}

// Parse is Message, which also returns the header's hostname and tag (none when ok is
// false).
func Parse(datagram []byte) (msg []byte, h Header, ok bool) {
	d := trimNewline(datagram)
	rest, ok := priority(d)
	if !ok {
		return d, Header{}, false
	}
	if m, h, ok := rfc5424(rest); ok {
		return m, h, true
	}
	if m, h, ok := rfc3164(rest); ok {
		return m, h, true
	}
	return d, Header{}, false
}

func trimNewline(b []byte) []byte {
	b = bytes.TrimSuffix(b, []byte("\n"))
	return bytes.TrimSuffix(b, []byte("\r"))
}

// priority reads `<PRI>`: one to three digits, at most 191 (facility 23, severity 7),
// without leading zeros except "0" itself.
func priority(b []byte) ([]byte, bool) {
	if len(b) < 3 || b[0] != '<' {
		return nil, false
	}
	v, i := 0, 1
	for ; i < len(b) && i <= 4 && isDigit(b[i]); i++ {
		v = v*10 + int(b[i]-'0')
	}
	digits := i - 1
	if digits == 0 || digits > 3 || i >= len(b) || b[i] != '>' || v > 191 || (digits > 1 && b[1] == '0') {
		return nil, false
	}
	return b[i+1:], true
}

// rfc5424 strips `VERSION SP TIMESTAMP SP HOSTNAME SP APP-NAME SP PROCID SP MSGID SP SD
// [SP MSG]` after the priority; a UTF-8 BOM opening the message goes too.
func rfc5424(b []byte) ([]byte, Header, bool) {
	if len(b) < 2 || b[0] != '1' || b[1] != ' ' {
		return nil, Header{}, false
	}
	b = b[2:]
	// TIMESTAMP, HOSTNAME, APP-NAME, PROCID, MSGID: "-" or printable ASCII without space.
	var fields [5][]byte
	for field := range fields {
		end := 0
		for end < len(b) && b[end] > ' ' && b[end] < 0x7f {
			end++
		}
		if end == 0 || end >= len(b) || b[end] != ' ' {
			return nil, Header{}, false
		}
		fields[field] = b[:end]
		b = b[end+1:]
	}
	b, ok := structuredData(b)
	if !ok {
		return nil, Header{}, false
	}
	h := Header{Hostname: nilValue(fields[1]), Tag: nilValue(fields[2])}
	if len(b) == 0 {
		return b, h, true
	}
	if b[0] != ' ' {
		return nil, Header{}, false
	}
	return bytes.TrimPrefix(b[1:], []byte("\xef\xbb\xbf")), h, true
}

// nilValue is an RFC 5424 header field, nil for "-" (the nil value).
func nilValue(f []byte) []byte {
	if len(f) == 1 && f[0] == '-' {
		return nil
	}
	return f
}

// structuredData skips "-" or one or more `[id param="value" ...]` elements, whose quoted
// values may hold `\"`, `\\` and `\]`.
func structuredData(b []byte) ([]byte, bool) {
	if len(b) > 0 && b[0] == '-' {
		return b[1:], true
	}
	if len(b) == 0 || b[0] != '[' {
		return nil, false
	}
	for len(b) > 0 && b[0] == '[' {
		i, quoted := 1, false
		for ; i < len(b); i++ {
			switch c := b[i]; {
			case quoted && c == '\\':
				i++
			case c == '"':
				quoted = !quoted
			case !quoted && c == ']':
				goto closed
			}
		}
		return nil, false
	closed:
		b = b[i+1:]
	}
	return b, true
}

// rfc3164 strips `Mmm dd hh:mm:ss SP [HOSTNAME SP] TAG[pid]: SP` after the priority.
// nginx sends the hostname unless told `nohostname`, so a first word that is not a tag
// is the hostname. Without a tag, the message is what follows the hostname (RFC 3164
// makes the tag optional).
func rfc3164(b []byte) ([]byte, Header, bool) {
	if !timestamp3164(b) {
		return nil, Header{}, false
	}
	b = b[len("Mmm dd hh:mm:ss"):]
	if len(b) == 0 {
		return b, Header{}, true
	}
	if b[0] != ' ' {
		return nil, Header{}, false
	}
	b = b[1:]
	sp := bytes.IndexByte(b, ' ')
	word := b
	if sp >= 0 {
		word = b[:sp]
	}
	// A hostname that is an IPv6 address (fe80::1) would read as a tag up to its first
	// colon; a tag has one colon after it, an IPv6 address at least two.
	if bytes.Count(word, []byte(":")) < 2 {
		if tag, msg, ok := afterTag(b); ok {
			return msg, Header{Tag: tag}, true
		}
	}
	if sp <= 0 {
		// A single word after the time: no hostname and no tag, only a message.
		return b, Header{}, true
	}
	h := Header{Hostname: b[:sp]}
	b = b[sp+1:]
	if tag, msg, ok := afterTag(b); ok {
		h.Tag = tag
		return msg, h, true
	}
	return b, h, true
}

var months = [12]string{"Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"}

// timestamp3164 checks `Mmm dd hh:mm:ss`, the day space-padded ("Nov  4").
func timestamp3164(b []byte) bool {
	const n = len("Mmm dd hh:mm:ss")
	if len(b) < n {
		return false
	}
	month := false
	for _, m := range months {
		if string(b[:3]) == m {
			month = true
			break
		}
	}
	if !month || b[3] != ' ' || b[6] != ' ' || b[9] != ':' || b[12] != ':' {
		return false
	}
	if !(b[4] == ' ' || isDigit(b[4])) || !isDigit(b[5]) {
		return false
	}
	for _, i := range []int{7, 8, 10, 11, 13, 14} {
		if !isDigit(b[i]) {
			return false
		}
	}
	return true
}

// afterTag returns the tag and what follows `tag: ` or `tag[pid]: ` at the start of b: a
// tag is up to maxTagLen bytes of printable ASCII other than space, ':' and '['.
func afterTag(b []byte) (tag, msg []byte, ok bool) {
	i := 0
	for i < len(b) && i < maxTagLen && b[i] > ' ' && b[i] < 0x7f && b[i] != ':' && b[i] != '[' {
		i++
	}
	if i == 0 || i >= len(b) {
		return nil, nil, false
	}
	tag = b[:i]
	if b[i] == '[' {
		j := i + 1
		for j < len(b) && isDigit(b[j]) {
			j++
		}
		if j == i+1 || j >= len(b) || b[j] != ']' {
			return nil, nil, false
		}
		i = j + 1
	}
	if i >= len(b) || b[i] != ':' {
		return nil, nil, false
	}
	b = b[i+1:]
	// One space follows the colon; a message starting right after it is kept whole.
	return tag, bytes.TrimPrefix(b, []byte(" ")), true
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }
