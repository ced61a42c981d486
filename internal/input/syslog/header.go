package syslog

import "bytes"

// maxTagLen bounds an RFC 3164 tag. The RFC says 32; senders (nginx included) accept
// longer ones, and a tag has to end within this many bytes to be taken for one.
const maxTagLen = 48

// Message returns the message of a syslog datagram, without its header: RFC 3164 as nginx
// and most libc syslog() implementations send it (`<PRI>Mmm dd hh:mm:ss [host] tag: msg`)
// or RFC 5424 (`<PRI>1 TIMESTAMP HOST APP PROCID MSGID SD msg`). ok is false when the
// datagram does not start with a syslog header; msg is then the whole datagram. One
// trailing newline is dropped either way. msg is always a subslice of datagram.
func Message(datagram []byte) (msg []byte, ok bool) {
	d := trimNewline(datagram)
	rest, ok := priority(d)
	if !ok {
		return d, false
	}
	if m, ok := rfc5424(rest); ok {
		return m, true
	}
	if m, ok := rfc3164(rest); ok {
		return m, true
	}
	return d, false
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
func rfc5424(b []byte) ([]byte, bool) {
	if len(b) < 2 || b[0] != '1' || b[1] != ' ' {
		return nil, false
	}
	b = b[2:]
	// TIMESTAMP, HOSTNAME, APP-NAME, PROCID, MSGID: "-" or printable ASCII without space.
	for field := 0; field < 5; field++ {
		end := 0
		for end < len(b) && b[end] > ' ' && b[end] < 0x7f {
			end++
		}
		if end == 0 || end >= len(b) || b[end] != ' ' {
			return nil, false
		}
		b = b[end+1:]
	}
	b, ok := structuredData(b)
	if !ok {
		return nil, false
	}
	if len(b) == 0 {
		return b, true
	}
	if b[0] != ' ' {
		return nil, false
	}
	return bytes.TrimPrefix(b[1:], []byte("\xef\xbb\xbf")), true
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
func rfc3164(b []byte) ([]byte, bool) {
	if !timestamp3164(b) {
		return nil, false
	}
	b = b[len("Mmm dd hh:mm:ss"):]
	if len(b) == 0 {
		return b, true
	}
	if b[0] != ' ' {
		return nil, false
	}
	b = b[1:]
	if msg, ok := afterTag(b); ok {
		return msg, true
	}
	sp := bytes.IndexByte(b, ' ')
	if sp <= 0 {
		// A single word after the time: no hostname and no tag, only a message.
		return b, true
	}
	b = b[sp+1:]
	if msg, ok := afterTag(b); ok {
		return msg, true
	}
	return b, true
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

// afterTag returns what follows `tag: ` or `tag[pid]: ` at the start of b: a tag is up to
// maxTagLen bytes of printable ASCII other than space, ':' and '['.
func afterTag(b []byte) ([]byte, bool) {
	i := 0
	for i < len(b) && i < maxTagLen && b[i] > ' ' && b[i] < 0x7f && b[i] != ':' && b[i] != '[' {
		i++
	}
	if i == 0 || i >= len(b) {
		return nil, false
	}
	if b[i] == '[' {
		j := i + 1
		for j < len(b) && isDigit(b[j]) {
			j++
		}
		if j == i+1 || j >= len(b) || b[j] != ']' {
			return nil, false
		}
		i = j + 1
	}
	if i >= len(b) || b[i] != ':' {
		return nil, false
	}
	b = b[i+1:]
	// One space follows the colon; a message starting right after it is kept whole.
	return bytes.TrimPrefix(b, []byte(" ")), true
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }
