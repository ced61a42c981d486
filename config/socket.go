package config

import (
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
	var a SocketAddress
	var err error
	switch strings.ToLower(scheme) {
	case "unixgram":
		a, err = unixAddress(rest)
	case "udp":
		a, err = udpAddress(rest)
	case "unix":
		// nginx's server=unix:/path is a datagram socket.
		return SocketAddress{}, fmt.Errorf("%q: the scheme is unixgram:// (nginx sends datagrams), not unix://: unixgram://%s", s, rest)
	default:
		return SocketAddress{}, fmt.Errorf("%q: the scheme is unixgram:// or udp://, not %q", s, scheme)
	}
	if err != nil {
		return SocketAddress{}, fmt.Errorf("%q: %w", s, err)
	}
	return a, nil
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
		return fmt.Errorf("%q is nginx's access_log parameter; the input's address is that of the socket alone: %s", s, nginxServer(server))
	}
	if path, ok := strings.CutPrefix(s, "unix:"); ok && strings.HasPrefix(path, "/") {
		return fmt.Errorf("%q is nginx's spelling of a unix socket; the input's is unixgram://%s", s, path)
	}
	for _, scheme := range []string{"unixgram:", "udp:"} {
		if strings.HasPrefix(strings.ToLower(s), scheme) {
			return fmt.Errorf("%q: the scheme is followed by //: %s//%s", s, scheme, strings.TrimLeft(s[len(scheme):], "/"))
		}
	}
	if strings.HasPrefix(s, "/") {
		return fmt.Errorf("%q has no scheme: a unix socket is unixgram://%[1]s", s)
	}
	if _, err := udpAddress(s); err == nil {
		return fmt.Errorf("%q has no scheme: a UDP address is udp://%[1]s", s)
	}
	return fmt.Errorf("%q has no scheme: write unixgram:///run/logwindow/nginx.sock or udp://127.0.0.1:5140", s)
}

// nginxServer says the input's address for nginx's server=ADDRESS.
func nginxServer(server string) string {
	if path, ok := strings.CutPrefix(server, "unix:"); ok {
		return "unixgram://" + path
	}
	if _, err := udpAddress(server); errors.Is(err, errNoPort) {
		return "udp://" + server + ":514 (nginx's port when it names none)"
	}
	return "udp://" + server
}

// unixAddress checks the part of a unix socket's address after "unixgram://": an
// absolute path, in which %XX escapes a byte (as in a URL: a ? or # of the path is
// written %3F or %23).
func unixAddress(rest string) (SocketAddress, error) {
	if !strings.HasPrefix(rest, "/") {
		if rest == "" {
			return SocketAddress{}, errors.New("names no path; give the socket's, e.g. unixgram:///run/logwindow/nginx.sock")
		}
		return SocketAddress{}, fmt.Errorf("a unix socket needs an absolute path, after three slashes: unixgram:///%s", rest)
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
	if strings.ContainsRune(path, 0) {
		return SocketAddress{}, errors.New("the path holds a NUL byte (%00), which no file name has")
	}
	// The socket is bound through a short name of its own and renamed into place, so a
	// path too long for a socket address would bind and then be out of nginx's reach.
	if len(path) >= maxSocketPath {
		return SocketAddress{}, fmt.Errorf("a unix socket's path is at most %d bytes (nginx refuses a longer one)", maxSocketPath-1)
	}
	// Cleaned as the socket's directory is when it is bound (filepath.Dir), so that two
	// spellings of one path are one address.
	clean := filepath.Clean(path)
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
		if a, err := netip.ParseAddr(host); err != nil || !a.Is6() {
			return SocketAddress{}, fmt.Errorf("[%s] is not an IPv6 address: only an IPv6 address is written in brackets", host)
		}
	} else {
		if strings.Count(rest, ":") > 1 {
			if b, ok := bracketed(rest); ok {
				return SocketAddress{}, fmt.Errorf("an IPv6 address is written in brackets, as the port follows it after a colon: %s", b)
			}
			return SocketAddress{}, fmt.Errorf("%q is not host:port: it has more than one colon", rest)
		}
		host, port, hasPort = strings.Cut(rest, ":")
		if _, err := netip.ParseAddr(host); host != "" && err != nil && !hostName().MatchString(host) {
			return SocketAddress{}, fmt.Errorf("the host %q is neither an IP address nor a host name", host)
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

// bracketed is an IPv6 address written without brackets as it is written with them, and
// whether rest is one: the last colon's part is the port if what is before it is an
// address, else rest is the address, without a port.
func bracketed(rest string) (string, bool) {
	if i := strings.LastIndexByte(rest, ':'); i >= 0 {
		if _, err := netip.ParseAddr(rest[:i]); err == nil && rest[i+1:] != "" && strings.Trim(rest[i+1:], "0123456789") == "" {
			return "udp://[" + rest[:i] + "]:" + rest[i+1:], true
		}
	}
	if _, err := netip.ParseAddr(rest); err == nil {
		return "udp://[" + rest + "]:514", true
	}
	return "", false
}
