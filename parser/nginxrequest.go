package parser

import "bytes"

// What nginx (1.22, with its defaults) made of a request line it logged, for the lines
// whose status says it may have refused it. nginx sets $request_method, $request_uri, $uri
// and $server_protocol only once it has read the whole line; a line it refuses (400: a
// space or a control character in the target, userinfo or a bad host in an absolute
// form, a method of other bytes, HTTP/0.9 with another method than GET, a version it
// cannot read; 505: a major version above 1) it logs as it came, with none of them. A
// line it read but whose path it could not normalise (a '%' not followed by two hex
// digits, "%00", ".." above the root) it answers with 400 too, having set the method and
// the protocol only.

// requestVerdict is what nginx made of a request line.
type requestVerdict uint8

const (
	// lineRead: nginx read the line and its target; every part is the line's.
	lineRead requestVerdict = iota
	// lineRefused: nginx refused the line: it has no part.
	lineRefused
	// lineVersion: a major version above 1, which nginx answers with 505 (HTTP/1.x) and
	// writes itself for a request of HTTP/2 or 3, whose line it made from the request.
	lineVersion
	// pathRefused: nginx read the line but not its path: the method and the protocol only.
	pathRefused
)

// nginxVerdict is what nginx made of request line req, logged with status (its $status;
// nil for a format without it). A line nginx refused is answered with 400 or 505, or 414
// (too long: the line logged is cut where nginx's buffer ended, and is refused whatever
// it reads as) or 408 (the client stopped sending it, which the line does not show: it
// is read as if it had ended there). Any other status is of a line nginx read, which
// costs a look at the status's first byte: the check below is made for those four
// alone. Without a status every line is checked, and a major version above 1 is taken
// for one nginx wrote itself for HTTP/2 or 3 (which an HTTP/1 client's would be
// answered 505 for).
func nginxVerdict(req, status []byte) requestVerdict {
	// Neither 4xx nor 5xx ('4' and '5' differ in their lowest bit alone): small enough to
	// be inlined into the split of every line.
	if len(status) == 3 && status[0]|1 != '5' {
		return lineRead
	}
	return refusedVerdict(req, status)
}

// refusedVerdict is nginxVerdict of a line whose status may be of a request line nginx
// refused.
func refusedVerdict(req, status []byte) requestVerdict {
	if len(status) == 3 {
		switch string(status) {
		case "400", "408":
		case "414":
			return lineRefused
		case "505":
			if v := nginxRequestLine(req); v != lineVersion {
				return v
			}
			return lineRefused
		default:
			return lineRead
		}
	}
	if plainRequestLine(req) {
		return lineRead
	}
	if v := nginxRequestLine(req); v != lineVersion {
		return v
	}
	return lineRead
}

// plainRequestLine reports whether r has the shape nearly every request line has, which
// nginx reads whole ("GET /a/b.js?c=d HTTP/1.1"): a method, a space, a target in origin
// form without a '%' or a segment that starts with a '.' (whose path nginx reads as it
// is), a space and HTTP/1.0, HTTP/1.1 or HTTP/2.0 (the line nginx writes for HTTP/2,
// lineVersion). nginxRequestLine of such a line is lineRead or lineVersion: it is spared
// the state machine's look at every byte, and what it does not tell goes to it.
func plainRequestLine(r []byte) bool {
	const proto = len(" HTTP/1.1")
	m := 0
	for m < len(r) && nginxMethod[r[m]] {
		m++
	}
	end := len(r) - proto
	if m == 0 || end <= m+1 || r[m] != ' ' || r[m+1] != '/' {
		return false
	}
	switch string(r[end:]) {
	case " HTTP/1.1", " HTTP/1.0", " HTTP/2.0":
	default:
		return false
	}
	for i := m + 2; i < end; i++ {
		if c := r[i]; !plainTarget[c] && (c != '.' || r[i-1] == '/') {
			return false
		}
	}
	return true
}

// The states of nginxRequestLine, named after ngx_http_parse_request_line's. nginx tells
// apart the states of a target (after a slash, in a segment, after a '?' or a byte to
// normalise) for the path's normalisation, which nginxPathRead makes on its own; they take
// and refuse the same bytes, so one state (target) stands for them.
const (
	stMethod = iota
	stSpacesBeforeURI
	stSchema
	stSchemaSlash
	stSchemaSlashSlash
	stHostStart
	stHost
	stHostIPLiteral
	stHostEnd
	stPort
	stTarget
	stHTTP09
	stHTTPH
	stHTTPHT
	stHTTPHTT
	stHTTPHTTP
	stFirstMajorDigit
	stMajorDigit
	stFirstMinorDigit
	stMinorDigit
	stSpacesAfterDigit
)

// nginxRequestLine reads r, a request line as nginx logs it (up to the CR or LF that ended
// it, which it takes as ending there), as ngx_http_parse_request_line and
// ngx_http_parse_complex_uri do.
func nginxRequestLine(r []byte) requestVerdict {
	if len(r) == 0 || !nginxMethod[r[0]] {
		return lineRefused
	}
	state, methodEnd, path, major, minor := stMethod, 0, -1, 0, 0
	// odd: the target has a '%' or a segment that starts with a '.', without which its
	// path is read as it is (a '.' elsewhere, as in "/app.js", is a byte like any other).
	odd := false
scan:
	for i := 1; i < len(r); i++ {
		c := r[i]
		letter := c|0x20 >= 'a' && c|0x20 <= 'z'
		digit := c >= '0' && c <= '9'
		switch state {
		case stMethod:
			if c == ' ' {
				methodEnd, state = i, stSpacesBeforeURI
			} else if !nginxMethod[c] {
				return lineRefused
			}
		case stSpacesBeforeURI:
			switch {
			case c == '/':
				path, state = i, stTarget
			case letter:
				state = stSchema
			case c != ' ':
				return lineRefused
			}
		case stSchema:
			switch {
			case letter || digit || c == '+' || c == '-' || c == '.':
			case c == ':':
				state = stSchemaSlash
			default:
				return lineRefused
			}
		case stSchemaSlash, stSchemaSlashSlash:
			if c != '/' {
				return lineRefused
			}
			state++
		case stHostStart, stHost, stHostEnd, stPort:
			switch {
			case state == stHostStart && c == '[':
				state = stHostIPLiteral
			case (state == stHostStart || state == stHost) && (letter || digit || c == '.' || c == '-'):
				state = stHost
			case state == stPort && digit:
			case state != stPort && c == ':':
				state = stPort
			case c == '/':
				path, state = i, stTarget
			case c == '?':
				// No path: nginx's is "/", and the query is read as a target's.
				state = stTarget
			case c == ' ':
				state = stHTTP09
			default:
				return lineRefused
			}
		case stHostIPLiteral:
			switch {
			case c == ']':
				state = stHostEnd
			case letter || digit || bytes.IndexByte([]byte(":-._~!$&'()*+,;="), c) >= 0:
			default:
				return lineRefused
			}
		case stTarget:
			// Most of a line is its target, whose bytes mostly mean nothing to the check:
			// they are passed in a loop of their own.
			for plainTarget[c] {
				if i++; i == len(r) {
					break scan
				}
				c = r[i]
			}
			switch {
			case c == ' ':
				state = stHTTP09
			case c == '%' || c == '.':
				odd = odd || c == '%' || r[i-1] == '/'
			default:
				return lineRefused
			}
		case stHTTP09:
			switch c {
			case ' ':
			case 'H':
				state = stHTTPH
			default:
				return lineRefused
			}
		case stHTTPH, stHTTPHT, stHTTPHTT, stHTTPHTTP:
			if c != "TTP/"[state-stHTTPH] {
				return lineRefused
			}
			state++
		case stFirstMajorDigit, stMajorDigit:
			switch {
			case state == stMajorDigit && c == '.':
				state = stFirstMinorDigit
			case !digit || state == stFirstMajorDigit && c == '0':
				return lineRefused
			default:
				// Refused at its first digit too many, whatever follows.
				if major = major*10 + int(c-'0'); major > 1 {
					return lineVersion
				}
				state = stMajorDigit
			}
		case stFirstMinorDigit, stMinorDigit:
			switch {
			case state == stMinorDigit && c == ' ':
				state = stSpacesAfterDigit
			case !digit || minor > 99:
				return lineRefused
			default:
				minor, state = minor*10+int(c-'0'), stMinorDigit
			}
		case stSpacesAfterDigit:
			if c != ' ' {
				return lineRefused
			}
		}
	}
	switch state {
	case stTarget, stHTTP09:
		// HTTP/0.9, which has GET alone.
		if string(r[:methodEnd]) != "GET" {
			return lineRefused
		}
	case stMinorDigit, stSpacesAfterDigit:
	default:
		return lineRefused
	}
	if path >= 0 && odd && !nginxPathRead(r[path:]) {
		return pathRefused
	}
	return lineRead
}

// plainTarget marks the bytes of a target that neither end it (a space), nor make nginx
// refuse it (a control byte, DEL), nor may make it refuse its path ('%', '.').
var plainTarget = func() (t [256]bool) {
	for c := range 256 {
		t[c] = c > ' ' && c != 0x7f && c != '%' && c != '.'
	}
	return t
}()

// nginxPathRead reports whether nginx normalises the path that starts target (at its '/')
// as ngx_http_parse_complex_uri does, slashes merged (merge_slashes, on by default): it
// refuses a '%' not followed by two hex digits, a "%00", and a ".." that leaves the root,
// the path read up to its query or fragment ('?' or '#' as sent; "%3F" is of the path) and
// decoded as it goes, so that "%2e%2e" is "..", "%2F" a '/'. Of the normalised path only
// how many slashes it has is kept: a ".." after a path of one slash leaves the root.
func nginxPathRead(target []byte) bool {
	const (
		usual = iota
		slash
		dot
		dotDot
	)
	state, slashes := usual, 0
	for i := 0; i < len(target); i++ {
		c := target[i]
		if c == ' ' || c == '?' || c == '#' {
			break
		}
		if c == '%' {
			if i+2 >= len(target) {
				return false
			}
			h, ok := hexByte(target[i+1], target[i+2])
			if !ok || h == 0 {
				return false
			}
			// A '%', '#' or '?' decoded is kept as it is, as any byte but a '/' or a '.':
			// it ends no path.
			i += 2
			c = h
		}
		switch {
		case c == '/' && state == dotDot:
			if slashes == 1 {
				return false
			}
			slashes--
			state = slash
		case c == '/' && state == usual:
			slashes++
			state = slash
		case c == '/':
			state = slash
		case c == '.' && (state == slash || state == dot):
			state++
		default:
			state = usual
		}
	}
	return state != dotDot || slashes > 1
}
