package config

import (
	"cmp"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"unicode"
)

// maxSocketPath is one more than the longest path a sender reaches a unix socket by: the
// address holds the path and the NUL that nginx (like libc and Go) ends it with, and nginx
// refuses a path that leaves no room for it.
const maxSocketPath = len(syscall.RawSockaddrUnix{}.Path)

// SocketAddress is a syslog input's socket, parsed.
type SocketAddress struct {
	Network string // "unixgram" or "udp"
	Addr    string // socket path or host:port
}

// parseSocketAddress checks an address as written in the config: `unixgram:///abs/path`
// or `udp://host:port`. It is read by hand rather than by url.Parse, whose errors name
// neither the part that is wrong nor what it should be ("invalid port").
func parseSocketAddress(s string) (SocketAddress, error) {
	if i := strings.IndexFunc(s, isControl); i >= 0 {
		return SocketAddress{}, fmt.Errorf("%q: holds the control character %q, which no address has", s, s[i])
	}
	scheme, rest, ok := strings.Cut(s, "://")
	if !ok {
		return SocketAddress{}, noScheme(s)
	}
	switch strings.ToLower(scheme) {
	case "unixgram", "udp":
	case "unix":
		// nginx's server=unix:/path is a datagram socket.
		return SocketAddress{}, rewritten(s, ": the scheme is unixgram:// (nginx sends datagrams), not unix://", "unixgram", rest, "")
	default:
		return SocketAddress{}, fmt.Errorf("%q: the scheme is unixgram:// or udp://, not %q", s, scheme)
	}
	a, err := schemeAddress(strings.ToLower(scheme), rest)
	if err != nil {
		return SocketAddress{}, fmt.Errorf("%q: %w", s, err)
	}
	return a, nil
}

// schemeAddress checks the part of an address after scheme://, the scheme unixgram or udp.
func schemeAddress(scheme, rest string) (SocketAddress, error) {
	if scheme == "unixgram" {
		return unixAddress(rest)
	}
	return udpAddress(rest)
}

// rewritten is the error of s, which why says is not written as an address is: with the
// address to write instead, scheme://rest and a note, when that loads, else with what is
// still wrong in it, so that no error tells to write an address that would not load.
func rewritten(s, why, scheme, rest, note string) error {
	return fmt.Errorf("%q%w", s, instead(why, scheme, rest, note))
}

// instead is rewritten's error without the address it is about.
func instead(why, scheme, rest, note string) error {
	if _, err := schemeAddress(scheme, rest); err != nil {
		return fmt.Errorf("%s; and %w", why, err)
	}
	return fmt.Errorf("%s: %s://%s%s", why, scheme, rest, note)
}

// isControl reports whether r is an ASCII control character: a YAML escape ("\n", "\0")
// put it in the address, where no sender's address has one.
func isControl(r rune) bool { return r < 0x20 || r == 0x7f }

// noScheme words the error of an address without "://": nginx's own spelling of the
// address, a scheme without its slashes, a path, or a host and port.
func noScheme(s string) error {
	if server, ok := strings.CutPrefix(s, "syslog:server="); ok {
		// access_log's syslog:server=ADDRESS,tag=... pasted whole.
		server, _, _ = strings.Cut(server, ",")
		const why = " is nginx's access_log parameter; the input's address is that of the socket alone"
		if server == "" {
			return fmt.Errorf("%q%s, and it names none: e.g. unixgram:///run/logwindow/nginx.sock or udp://127.0.0.1:5140", s, why)
		}
		// nginx reads its unix: in any case.
		if path, ok := cutPrefixFold(server, "unix:"); ok {
			return rewritten(s, why, "unixgram", path, "")
		}
		if _, err := udpAddress(server); errors.Is(err, errNoPort) {
			return rewritten(s, why, "udp", strings.TrimSuffix(server, ":")+":514", " (nginx's port when it names none)")
		}
		return rewritten(s, why, "udp", server, "")
	}
	if path, ok := cutPrefixFold(s, "unix:"); ok && strings.HasPrefix(path, "/") {
		return rewritten(s, " is nginx's spelling of a unix socket", "unixgram", path, "")
	}
	if path, ok := cutPrefixFold(s, "unixgram:"); ok {
		if !strings.HasPrefix(path, "/") {
			return rewritten(s, ": a unix socket is unixgram:// and an absolute path", "unixgram", "/"+path, "")
		}
		// The path's own slash is the third: unixgram:/run/x.sock is unixgram:///run/x.sock.
		return rewritten(s, ": the scheme is followed by //", "unixgram", "/"+strings.TrimLeft(path, "/"), "")
	}
	if rest, ok := cutPrefixFold(s, "udp:"); ok {
		return rewritten(s, ": the scheme is followed by //", "udp", strings.TrimLeft(rest, "/"), "")
	}
	if strings.HasPrefix(s, "/") {
		return rewritten(s, " has no scheme (a unix socket's is unixgram://)", "unixgram", s, "")
	}
	if _, err := udpAddress(s); err == nil {
		return fmt.Errorf("%q has no scheme: a UDP address is udp://%[1]s", s)
	}
	return fmt.Errorf("%q has no scheme: write unixgram:///run/logwindow/nginx.sock or udp://127.0.0.1:5140", s)
}

// cutPrefixFold is strings.CutPrefix with the prefix matched in any case, as a scheme is.
func cutPrefixFold(s, prefix string) (string, bool) {
	if len(s) < len(prefix) || !strings.EqualFold(s[:len(prefix)], prefix) {
		return s, false
	}
	return s[len(prefix):], true
}

// unixAddress checks the part of a unix socket's address after "unixgram://": an
// absolute path, in which %XX escapes a byte (as in a URL: a ? or # of the path is
// written %3F or %23).
func unixAddress(rest string) (SocketAddress, error) {
	if !strings.HasPrefix(rest, "/") {
		host, path, hasPath := strings.Cut(rest, "/")
		switch {
		case rest == "":
			return SocketAddress{}, errors.New("names no path; give the socket's, e.g. unixgram:///run/logwindow/nginx.sock")
		case strings.HasPrefix(rest, "@"):
			// The socket must be a file: its mode is set, and its path looked at and bound
			// again when it is removed.
			return SocketAddress{}, fmt.Errorf("names the abstract socket %s, which has no file; give a path, e.g. unixgram:///run/logwindow/nginx.sock", rest)
		case hasPath && (host == "localhost" || strings.Contains(host, ".")):
			// A URL's host: a unix socket is on this host alone.
			return SocketAddress{}, instead(fmt.Sprintf("a unix socket's address names no host (%s)", host), "unixgram", "/"+path, "")
		}
		return SocketAddress{}, instead("a unix socket needs an absolute path, after three slashes", "unixgram", "/"+rest, "")
	}
	if i := strings.IndexAny(rest, "?#"); i >= 0 {
		c := rest[i : i+1]
		return SocketAddress{}, fmt.Errorf("the path holds %s, which would start a URL's %s: a socket's options are keys of the input (socket_mode:); write a %[1]s of the path as %[3]s",
			c, map[string]string{"?": "query", "#": "fragment"}[c], url.PathEscape(c))
	}
	path, err := url.PathUnescape(rest)
	if err != nil {
		return SocketAddress{}, errors.New("the path holds a % not followed by two hex digits: write a % of the path as %25")
	}
	if i := strings.IndexFunc(path, isControl); i >= 0 {
		// Refused escaped as written: a NUL ends the path, and no sender is given a
		// path with a control character.
		return SocketAddress{}, fmt.Errorf("the path holds the control character %q (%%%02X), which no address has", path[i], path[i])
	}
	// Cleaned as the socket's directory is when it is bound (filepath.Dir), so that two
	// spellings of one path are one address.
	clean := filepath.Clean(path)
	// The socket is bound through a short name of its own and renamed into place, so a
	// path too long for a socket address would bind and then be out of nginx's reach.
	if len(clean) >= maxSocketPath {
		return SocketAddress{}, fmt.Errorf("the path is %d bytes, and a unix socket's is at most %d (nginx refuses a longer one)", len(clean), maxSocketPath-1)
	}
	if last := filepath.Base(strings.TrimRight(path, "/")); clean == "/" || last == "." || last == ".." {
		return SocketAddress{}, fmt.Errorf("the path names the directory %s, where no socket can be made; give the socket file's path in it, e.g. %s", clean, filepath.Join(clean, "nginx.sock"))
	}
	return SocketAddress{Network: "unixgram", Addr: clean}, nil
}

// errNoPort is udpAddress's error for an address without a port.
var errNoPort = errors.New("names no port")

// hostName is a DNS name: letters, digits, - and _ in labels between dots.
var hostName = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^[A-Za-z0-9_]([A-Za-z0-9_-]*[A-Za-z0-9_])?(\.[A-Za-z0-9_]([A-Za-z0-9_-]*[A-Za-z0-9_])?)*\.?$`)
})

// udpAddress checks the part of a UDP address after "udp://": host:port, the host an IP
// address (an IPv6 one in brackets), a host name or nothing (every address), the port a
// number from 1 to 65535 as nginx's server= takes it.
func udpAddress(rest string) (SocketAddress, error) {
	if i := strings.IndexAny(rest, "/?#"); i >= 0 {
		what := map[byte]string{'/': "path", '?': "query", '#': "fragment"}[rest[i]]
		return SocketAddress{}, fmt.Errorf("a UDP address is udp://host:port, with no %s (%s)", what, rest[i:])
	}
	if i := strings.LastIndexByte(rest, '@'); i >= 0 {
		return SocketAddress{}, fmt.Errorf("a UDP address is udp://host:port, with no user (%s)", rest[:i+1])
	}
	if rest == "" {
		return SocketAddress{}, errors.New("names no host and port; write e.g. udp://127.0.0.1:5140, or udp://:5140 for every address")
	}
	var host, port string
	hasPort := false
	if strings.HasPrefix(rest, "[") {
		end := strings.IndexByte(rest, ']')
		if end < 0 {
			return SocketAddress{}, errors.New("the [ of an IPv6 address is not closed by ]")
		}
		host, port = rest[1:end], rest[end+1:]
		if port != "" && port[0] != ':' {
			return SocketAddress{}, fmt.Errorf("%q follows the IPv6 address where :port belongs", port)
		}
		port, hasPort = strings.CutPrefix(port, ":")
		a, err := bracketedHost(host, rest[end+1:])
		if err != nil {
			return SocketAddress{}, err
		}
		// One spelling per address, so that two inputs on one are told apart at load: an
		// IPv4-mapped one is bound as the IPv4 address it maps.
		host = a.Unmap().String()
	} else {
		if strings.Count(rest, ":") > 1 {
			if b, ok := bracketed(rest); ok {
				return SocketAddress{}, instead("an IPv6 address is written in brackets, as the port follows it after a colon", "udp", b, "")
			}
			return SocketAddress{}, fmt.Errorf("%q is not host:port: it has more than one colon", rest)
		}
		host, port, hasPort = strings.Cut(rest, ":")
		if err := checkHost(host); err != nil {
			return SocketAddress{}, err
		}
		if a, err := netip.ParseAddr(host); err == nil && a.IsMulticast() {
			return SocketAddress{}, multicast(a, "0.0.0.0:"+cmp.Or(port, "514"))
		}
	}
	if !hasPort || port == "" {
		return SocketAddress{}, fmt.Errorf("%w; nginx sends to port 514 when its server= names none: then write udp://%s:514", errNoPort, strings.TrimSuffix(rest, ":"))
	}
	if strings.Trim(port, "0123456789") != "" {
		return SocketAddress{}, fmt.Errorf("the port is a number from 1 to 65535 (nginx's server= takes no service name), not %q", port)
	}
	n, err := strconv.ParseUint(port, 10, 16)
	switch {
	case err != nil:
		return SocketAddress{}, fmt.Errorf("port %s is past 65535, the highest", port)
	case n == 0:
		// The kernel would pick a port, which no sender is told of: nothing would come.
		return SocketAddress{}, errors.New("port 0 is no port a sender can be given; name one, e.g. udp://127.0.0.1:5140")
	}
	return SocketAddress{Network: "udp", Addr: net.JoinHostPort(host, strconv.FormatUint(n, 10))}, nil
}

// bracketedHost reads host, written in brackets before after (:port), as net/url reads
// an IPv6 host: the address and, after %25 (a URL's escaped %, RFC 6874), the zone
// naming the interface of a link-local one, in which %XX escapes a byte. A zone is
// refused where the kernel would not bind it as written: missing on a link-local
// address (bind fails), on any other (it is passed over, the socket on every
// interface), or no interface's name (bind fails).
func bracketedHost(host, after string) (netip.Addr, error) {
	ip, zone, zoned := strings.Cut(host, "%")
	a, err := netip.ParseAddr(ip)
	if err != nil || !a.Is6() {
		return netip.Addr{}, fmt.Errorf("[%s] is not an IPv6 address: only an IPv6 address is written in brackets", host)
	}
	if a.IsMulticast() {
		any := "[::]"
		if a.Is4In6() {
			any = "0.0.0.0" // bound as the IPv4 address it maps
		}
		return netip.Addr{}, multicast(a, any+portOr514(after))
	}
	// The address with a zone, eth0 standing for the interface's name.
	withZone := "[" + ip + "%25eth0]" + portOr514(after)
	// An IPv4-mapped address is bound as the IPv4 one (169.254.0.1 needs no interface).
	linkLocal := a.IsLinkLocalUnicast() && !a.Is4In6()
	switch {
	case !zoned && linkLocal:
		// bind(2) refuses it (EINVAL): which interface's link is not known.
		return netip.Addr{}, instead(fmt.Sprintf("[%s] is a link-local address (fe80::/10), which is bound on one interface, named after %%25 (here eth0)", host), "udp", withZone, "")
	case !zoned:
		return a, nil
	case !strings.HasPrefix(zone, "25"):
		// net/url reads a % in brackets as an escape and refuses this one; read as it
		// stands, a zone opening with two hex digits (%25eth0, %2a) would be read otherwise.
		return netip.Addr{}, instead(fmt.Sprintf("the zone of [%s] follows %%25, a URL's escaped %%, not a bare %%", host), "udp", "["+ip+"%25"+zone+"]"+after, "")
	case zone == "25":
		return netip.Addr{}, instead(fmt.Sprintf("[%s] names no zone after %%25, the interface (here eth0)", host), "udp", withZone, "")
	}
	u, err := url.Parse("//[" + host + "]")
	if err != nil {
		var esc url.EscapeError
		if errors.As(err, &esc) {
			return netip.Addr{}, fmt.Errorf("the zone of [%s] holds %q, which is no escape a zone takes: its bytes are written as they are, a %% as %%25", host, string(esc))
		}
		return netip.Addr{}, fmt.Errorf("[%s] is not an IPv6 address and zone a URL holds", host)
	}
	name := strings.TrimPrefix(u.Hostname(), ip+"%")
	if !linkLocal {
		// The kernel reads the zone (sin6_scope_id) only where the address needs it.
		return netip.Addr{}, instead(fmt.Sprintf("[%s] names the interface %s, which the kernel reads only for a link-local address (fe80::/10): on %s it is passed over, and the socket is on every interface", host, name, a), "udp", "["+ip+"]"+after, "")
	}
	if err := checkZone(name); err != nil {
		return netip.Addr{}, fmt.Errorf("[%s] names the interface %q, %w", host, name, err)
	}
	return a.WithZone(name), nil
}

// multicast is the error of a multicast address a: Go binds a UDP socket on one as on the
// wildcard address of its family (with SO_REUSEADDR, so that a second multicast input on
// the port binds too) and joins no group, so the input would take the port's datagrams to any
// address of the host, and a group's only if another program joined it. any is that
// wildcard address and the port, which says what the socket does.
func multicast(a netip.Addr, any string) error {
	return instead(fmt.Sprintf("%s is a multicast address, which the socket would be bound as every address of the host is, joining no group", a), "udp", any, "")
}

// maxInterfaceName is the longest name Linux gives an interface (IFNAMSIZ less its NUL).
const maxInterfaceName = 15

// checkZone checks a zone decoded: an interface's index (not 0), or a name Linux gives an
// interface (dev_valid_name), which any other is not, found nowhere when bound.
func checkZone(name string) error {
	switch {
	case strings.Trim(name, "0") == "":
		// Index 0 is no interface: the address is bound as without one (EINVAL).
		return errors.New("which is no interface's: index 0 is none, as if no zone were named")
	case strings.Trim(name, "0123456789") == "":
		return nil
	case len(name) > maxInterfaceName:
		return fmt.Errorf("which is no interface's: a name is at most %d bytes", maxInterfaceName)
	case name == "." || name == "..":
		return errors.New("which is no interface's name")
	}
	if i := strings.IndexFunc(name, func(r rune) bool { return r == '/' || r == ':' || r == '%' || unicode.IsSpace(r) }); i >= 0 {
		return fmt.Errorf("which is no interface's: a name holds no %q", name[i])
	}
	return nil
}

// portOr514 is the :port written after an address, or nginx's port when none is.
func portOr514(after string) string {
	if after == "" || after == ":" {
		return ":514"
	}
	return after
}

// checkHost checks a host not in brackets: nothing, an IPv4 address or a host name.
func checkHost(host string) error {
	if _, err := netip.ParseAddr(host); host == "" || err == nil {
		return nil
	}
	if !hostName().MatchString(host) {
		return fmt.Errorf("the host %q is neither an IP address nor a host name", host)
	}
	labels := strings.Split(strings.TrimSuffix(host, "."), ".")
	if last := labels[len(labels)-1]; strings.Trim(last, "0123456789") == "" {
		// No top-level domain is a number: a name ending in one is an IPv4 address
		// mistyped, which would be looked up as a name only when the socket is bound.
		return fmt.Errorf("the host %q is not an IPv4 address: that is four numbers from 0 to 255 between dots, with no leading zero", host)
	}
	// A resolver refuses longer names (RFC 1035) only when the socket is bound.
	if len(strings.TrimSuffix(host, ".")) > 253 {
		return fmt.Errorf("the host name %q is longer than 253 bytes, the most a name has", host)
	}
	for _, l := range labels {
		if len(l) > 63 {
			return fmt.Errorf("the host name %q has a label longer than 63 bytes, the most a label has: %s", host, l)
		}
	}
	return nil
}

// localhostIP is the address a UDP socket on localhost is bound on: Go's resolver gives
// a udp address its first IPv4 address, and every system's hosts file names localhost
// 127.0.0.1.
const localhostIP = "127.0.0.1"

// isLocalhost reports whether host is localhost, in any case, as the hosts file is read
// (localhost. is looked up by DNS).
func isLocalhost(host string) bool { return strings.EqualFold(host, "localhost") }

// bracketed is an IPv6 address written without brackets as it is written with them (after
// udp://, its zone after %25), and whether rest is one: the last colon's part is the port
// if what is before it is an address, else rest is the address, without a port.
func bracketed(rest string) (string, bool) {
	inBrackets := func(addr string) string { return "[" + strings.Replace(addr, "%", "%25", 1) + "]" }
	if i := strings.LastIndexByte(rest, ':'); i >= 0 {
		if _, err := netip.ParseAddr(rest[:i]); err == nil && rest[i+1:] != "" && strings.Trim(rest[i+1:], "0123456789") == "" {
			return inBrackets(rest[:i]) + ":" + rest[i+1:], true
		}
	}
	if _, err := netip.ParseAddr(rest); err == nil {
		return inBrackets(rest) + ":514", true
	}
	return "", false
}
