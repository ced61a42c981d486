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
// and most libc syslog() implementations send it (`<PRI>Mmm dd hh:mm:ss [host] tag: msg`),
// with the timestamps other senders put there (see timestamp3164), or RFC 5424
// (`<PRI>1 TIMESTAMP HOST APP PROCID MSGID SD msg`). After a priority without a timestamp
// the rest is the message (RFC 3164 4.3.3's relay keeps it whole as the content), less a
// `tag: ` opening it. ok is false when the datagram does not start with a priority, or
// claims RFC 5424 and is not; msg is then the whole datagram. One trailing newline and
// NUL are dropped either way (trimNewline). msg is always a subslice of datagram.
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
	if bytes.HasPrefix(rest, []byte("1 ")) {
		// A version 1 that is not RFC 5424: a broken sender, not a message of its own.
		return d, Header{}, false
	}
	if m, h, ok := cisco(rest); ok {
		return m, h, true
	}
	if m, h, ok := rfc3164(rest); ok {
		return m, h, true
	}
	return headerless(rest)
}

// trimNewline drops the end of line a sender may close a datagram with: a newline, with
// a carriage return before it, and a NUL, which Python's SysLogHandler puts after every
// message ("some old syslog daemons expect a NUL terminator"), and which would make a
// JSON message malformed.
func trimNewline(b []byte) []byte {
	b = bytes.TrimSuffix(b, []byte("\n"))
	b = bytes.TrimSuffix(b, []byte("\r"))
	b = bytes.TrimSuffix(b, []byte("\x00"))
	return bytes.TrimSuffix(b, []byte("\r"))
}

// Blank reports whether a datagram carries no line: it has no bytes, or only spaces, tabs,
// line ends and NULs. rsyslog passes over an empty datagram, and senders send such ones
// to keep a connection or a NAT mapping alive; taken whole as a line, each would be a
// malformed datagram and an unmatched line. The input passes over them, and so do the
// one-shots reading a file as its datagrams.
func Blank(datagram []byte) bool {
	for _, c := range datagram {
		switch c {
		case ' ', '\t', '\r', '\n', 0:
		default:
			return false
		}
	}
	return true
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
	return bytes.TrimPrefix(b[1:], utf8BOM), h, true
}

// utf8BOM is U+FEFF in UTF-8, which may open a message.
var utf8BOM = []byte("\xef\xbb\xbf")

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

// rfc3164 strips `TIMESTAMP SP [HOSTNAME SP] TAG[pid]: SP` after the priority. nginx
// sends the hostname unless told `nohostname`, so a first word that is not a tag is the
// hostname. Without a tag, the message is what follows the hostname (RFC 3164 makes the
// tag optional).
func rfc3164(b []byte) ([]byte, Header, bool) {
	if len(b) > 0 && b[0] == ' ' {
		// One space before the time, as some switches send (rsyslog reads past it too).
		b = b[1:]
	}
	n := timestamp3164(b)
	if n == 0 {
		return nil, Header{}, false
	}
	b = b[n:]
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

// headerless reads what follows a priority without a timestamp (`<13>hello`, as busybox
// syslogd and some loggers send locally): the message, less a tag opening it as rsyslog
// reads one. With no timestamp to say that a header is there, only `tag: ` or
// `tag[pid]: ` with its space counts, so that a message such as `http://host/` or an
// IPv6 address is kept whole, and a log level is no tag: `<12>WARNING: disk full` is
// what Python's SysLogHandler sends under a formatter of "%(levelname)s: %(message)s",
// and the level is the message's (rsyslog takes it for the tag). No hostname is read
// (RFC 3164 puts it after the time). A UTF-8 BOM opening the message goes, as after an
// RFC 5424 header: Python's SysLogHandler put one there (2.7.0 to 2.7.3, 3.2.0 to 3.2.3).
func headerless(b []byte) ([]byte, Header, bool) {
	b = bytes.TrimPrefix(b, utf8BOM)
	if tag, msg, ok := afterTag(b); ok && len(msg) < len(b) && b[len(b)-len(msg)-1] == ' ' && !isLevel(tag) {
		return msg, Header{Tag: tag}, true
	}
	return b, Header{}, true
}

// levels are the names of a log level or syslog severity, which open a message more often
// than a program is named so.
var levels = []string{"emerg", "emergency", "panic", "alert", "crit", "critical", "fatal", "err", "error",
	"warn", "warning", "notice", "info", "informational", "debug", "trace"}

// isLevel reports whether tag is one of levels, in any case.
func isLevel(tag []byte) bool {
	for _, l := range levels {
		if bytes.EqualFold(tag, []byte(l)) {
			return true
		}
	}
	return false
}

// cisco strips the header Cisco IOS writes after the priority:
// `[seq: ][origin: ][*|.]TIMESTAMP[ ZONE]: `, where seq is the message's sequence number
// (`service sequence-numbers`), origin its hostname (`logging origin-id`), `*` or `.`
// marks a clock never or no longer synchronized, and the timestamp may have a year and
// milliseconds (`service timestamps log datetime msec year show-timezone`). The
// `%FACILITY-SEVERITY-MNEMONIC: ` opening the message is its tag, as rsyslog's Cisco
// parser reads it. ok is false unless a sequence number, a marker or a zone before a
// mnemonic says the header is Cisco's: without them it is RFC 3164's (rfc3164).
func cisco(b []byte) ([]byte, Header, bool) {
	var h Header
	seq := false
	// A number is no program's name: `123: ` is a sequence number, whatever follows it.
	if n := digits(b); n > 0 && n+1 < len(b) && b[n] == ':' && b[n+1] == ' ' {
		b, seq = b[n+2:], true
	}
	if seq {
		if c := bytes.Index(b, []byte(": ")); c > 0 && bytes.IndexByte(b[:c], ' ') < 0 && ciscoTime(b[c+2:], true) > 0 {
			h.Hostname, b = b[:c], b[c+2:]
		}
	}
	n := ciscoTime(b, seq)
	if n == 0 && !seq {
		return nil, Header{}, false
	}
	b = bytes.TrimPrefix(b[n:], []byte(" "))
	if tag, msg, ok := mnemonicTag(b); ok {
		h.Tag = tag
		return msg, h, true
	}
	return b, h, true
}

// ciscoTime returns the length of a Cisco timestamp opening b with the colon that ends
// it, 0 if there is none or it may be RFC 3164's. Without a sequence number before it
// (seq) or a marker, a time and a colon is left to rfc3164, which reads it alike, and a
// word and a colon after the time is a zone only in capitals and before a mnemonic
// (`UTC: %SYS-5-CONFIG_I: `): else it is a tag, as nginx's in `Nov 24 05:28:09 nginx: `.
func ciscoTime(b []byte, seq bool) int {
	marked := len(b) > 0 && (b[0] == '*' || b[0] == '.')
	i := 0
	if marked {
		i = 1
	}
	n := timestamp3164(b[i:])
	if n == 0 {
		return 0
	}
	i += n
	plain := !marked && !seq
	if b[i-1] == ':' {
		if plain {
			return 0
		}
		return i
	}
	// A zone: letters, then the colon.
	z, upper := i+1, true
	for z < len(b) && z-i-1 < 7 && ('A' <= b[z] && b[z] <= 'Z' || 'a' <= b[z] && b[z] <= 'z') {
		upper = upper && b[z] <= 'Z'
		z++
	}
	if i < len(b) && b[i] == ' ' && z-i-1 >= 2 && z < len(b) && b[z] == ':' {
		if plain && (!upper || !mnemonic(bytes.TrimPrefix(b[z+1:], []byte(" ")))) {
			return 0
		}
		return z + 1
	}
	return 0
}

// mnemonic reports whether b opens with a Cisco message's `%FACILITY-SEVERITY-MNEMONIC:`,
// its severity a digit from 0 to 7.
func mnemonic(b []byte) bool {
	tag, _, ok := mnemonicTag(b)
	if !ok {
		return false
	}
	parts := bytes.Split(tag[1:], []byte("-"))
	if len(parts) < 3 {
		return false
	}
	sev := parts[len(parts)-2]
	return len(sev) == 1 && '0' <= sev[0] && sev[0] <= '7' && len(parts[0]) > 0 && len(parts[len(parts)-1]) > 0
}

// mnemonicTag is afterTag for the `%MNEMONIC: ` opening a Cisco message: the tag keeps
// its '%', which marks it and is no part of its name, so the name alone is held to
// maxTagLen as an RFC 3164 tag is.
func mnemonicTag(b []byte) (tag, msg []byte, ok bool) {
	if len(b) == 0 || b[0] != '%' {
		return nil, nil, false
	}
	name, msg, ok := afterTag(b[1:])
	if !ok {
		return nil, nil, false
	}
	return b[:1+len(name)], msg, true
}

var months = [12]string{"Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"}

// timestamp3164 returns the length of the timestamp opening b, 0 if there is none:
// RFC 3164's `Mmm dd hh:mm:ss`, the day space-padded ("Nov  4"), and what rsyslog also
// accepts there from other senders: an unpadded day ("Nov 4"), a year before the time
// ("Nov 24 2026 01:02:03", Cisco), a fraction of a second, a colon after the time, or
// an RFC 3339 timestamp (rsyslog's forwarding format). rfc3164 also reads past one space
// before it.
func timestamp3164(b []byte) int {
	if n := rfc3339(b); n > 0 {
		return n
	}
	if len(b) < len("Mmm d hh:mm:ss") || b[3] != ' ' {
		return 0
	}
	month := false
	for _, m := range months {
		if string(b[:3]) == m {
			month = true
			break
		}
	}
	if !month {
		return 0
	}
	i := 4
	switch {
	case b[4] == ' ' && isDigit(b[5]), isDigit(b[4]) && isDigit(b[5]):
		i = 6
	case isDigit(b[4]):
		i = 5
	default:
		return 0
	}
	if i >= len(b) || b[i] != ' ' {
		return 0
	}
	i++
	if n := digits(b[i:]); n == 4 && i+4 < len(b) && b[i+4] == ' ' {
		i += 5
	}
	if !clock(b[i:]) {
		return 0
	}
	i += len("hh:mm:ss")
	i += fraction(b[i:])
	if i < len(b) && b[i] == ':' {
		i++
	}
	return i
}

// rfc3339 returns the length of an RFC 3339 timestamp opening b
// (`2026-11-24T01:02:03[.frac](Z|+hh:mm)`), 0 if there is none.
func rfc3339(b []byte) int {
	const date = len("2026-11-24T")
	if len(b) < date+len("hh:mm:ssZ") || digits(b) != 4 || b[4] != '-' || digits(b[5:]) != 2 ||
		b[7] != '-' || digits(b[8:]) != 2 || b[10] != 'T' || !clock(b[date:]) {
		return 0
	}
	i := date + len("hh:mm:ss")
	i += fraction(b[i:])
	switch {
	case i < len(b) && b[i] == 'Z':
		return i + 1
	case i+6 <= len(b) && (b[i] == '+' || b[i] == '-') && digits(b[i+1:]) == 2 && b[i+3] == ':' && digits(b[i+4:]) == 2:
		return i + 6
	}
	return 0
}

// clock checks `hh:mm:ss` at the start of b.
func clock(b []byte) bool {
	return len(b) >= len("hh:mm:ss") && digits(b) == 2 && b[2] == ':' && digits(b[3:]) == 2 && b[5] == ':' && digits(b[6:]) == 2
}

// fraction returns the length of `.digits` at the start of b, 0 if there is none.
func fraction(b []byte) int {
	if len(b) < 2 || b[0] != '.' {
		return 0
	}
	if n := digits(b[1:]); n > 0 {
		return 1 + n
	}
	return 0
}

// digits returns how many decimal digits open b.
func digits(b []byte) int {
	n := 0
	for n < len(b) && isDigit(b[n]) {
		n++
	}
	return n
}

// afterTag returns the tag and what follows `tag: ` or `tag[pid]: ` at the start of b: a
// tag is up to maxTagLen bytes of printable ASCII other than space, ':' and '[', and
// other than '"', which no program's name has and a JSON object's first member does
// (`{"level": "info"}` is a message, not the tag `{"level"`).
func afterTag(b []byte) (tag, msg []byte, ok bool) {
	i := 0
	for i < len(b) && i < maxTagLen && b[i] > ' ' && b[i] < 0x7f && b[i] != ':' && b[i] != '[' && b[i] != '"' {
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
