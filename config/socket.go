package config

import (
	"fmt"
	"net"
	"net/url"
	"path/filepath"
	"strconv"
	"strings"
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
// or `udp://host:port`.
func parseSocketAddress(s string) (SocketAddress, error) {
	u, err := url.Parse(s)
	if err != nil {
		return SocketAddress{}, fmt.Errorf("%q is not a URL (write unixgram:///run/logwindow/nginx.sock or udp://127.0.0.1:5140)", s)
	}
	switch u.Scheme {
	case "unixgram":
		if u.Host != "" || !strings.HasPrefix(u.Path, "/") || u.RawQuery != "" || u.Fragment != "" {
			return SocketAddress{}, fmt.Errorf("%q: a unix socket needs an absolute path, e.g. unixgram:///run/logwindow/nginx.sock", s)
		}
		// The socket is bound through a short name of its own and renamed into place, so a
		// path too long for a socket address would bind and then be out of nginx's reach.
		if len(u.Path) >= maxSocketPath {
			return SocketAddress{}, fmt.Errorf("%q: a unix socket's path is at most %d bytes (nginx refuses a longer one)", s, maxSocketPath-1)
		}
		// Cleaned as the socket's directory is when it is bound (filepath.Dir), so that two
		// spellings of one path are one address.
		return SocketAddress{Network: "unixgram", Addr: filepath.Clean(u.Path)}, nil
	case "udp":
		host, port, err := net.SplitHostPort(u.Host)
		if err != nil || u.Path != "" || u.RawQuery != "" || port == "" {
			return SocketAddress{}, fmt.Errorf("%q: a UDP address is udp://host:port, e.g. udp://127.0.0.1:5140", s)
		}
		n, err := net.LookupPort("udp", port)
		if err != nil {
			return SocketAddress{}, fmt.Errorf("%q: %q is not a port number", s, port)
		}
		if n == 0 {
			// The kernel would pick a port, which no sender is told of: nothing would come.
			return SocketAddress{}, fmt.Errorf("%q: port 0 is no port a sender can be given; name one, e.g. udp://127.0.0.1:5140", s)
		}
		return SocketAddress{Network: "udp", Addr: net.JoinHostPort(host, strconv.Itoa(n))}, nil
	}
	return SocketAddress{}, fmt.Errorf("%q: the scheme is unixgram:// or udp://, not %q", s, u.Scheme)
}
