package config

import (
	"strings"
	"testing"
)

func TestParseAddress(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want SocketAddress
		ok   bool
	}{
		{"unixgram:///run/logwindow/nginx.sock", SocketAddress{"unixgram", "/run/logwindow/nginx.sock"}, true},
		{"udp://127.0.0.1:5140", SocketAddress{"udp", "127.0.0.1:5140"}, true},
		{"udp://[::1]:5140", SocketAddress{"udp", "[::1]:5140"}, true},
		{"udp://:5140", SocketAddress{"udp", ":5140"}, true},
		// Spellings of one socket give one address, which two inputs may not share.
		{"unixgram:///run/./logwindow//nginx.sock", SocketAddress{"unixgram", "/run/logwindow/nginx.sock"}, true},
		{"unixgram:///run/x/../logwindow/nginx.sock", SocketAddress{"unixgram", "/run/logwindow/nginx.sock"}, true},
		{"udp://127.0.0.1:05140", SocketAddress{"udp", "127.0.0.1:5140"}, true},
		{"unixgram://relative.sock", SocketAddress{}, false},
		{"unixgram:relative.sock", SocketAddress{}, false},
		{"udp://127.0.0.1", SocketAddress{}, false},
		{"udp://127.0.0.1:notaport", SocketAddress{}, false},
		// Port 0 binds a port the kernel picks, which no sender is told of.
		{"udp://127.0.0.1:0", SocketAddress{}, false},
		{"udp://:00", SocketAddress{}, false},
		{"udp://127.0.0.1:5140/x", SocketAddress{}, false},
		{"tcp://127.0.0.1:5140", SocketAddress{}, false},
		{"/run/x.sock", SocketAddress{}, false},
		{"%zz", SocketAddress{}, false},
		// nginx (and Go, and libc) end the path with a NUL within the address, so a path
		// that fills the address whole is one nginx refuses to send to.
		{"unixgram://" + longPath(maxSocketPath-1), SocketAddress{"unixgram", longPath(maxSocketPath - 1)}, true},
		{"unixgram://" + longPath(maxSocketPath), SocketAddress{}, false},
	} {
		t.Run(tc.in, func(t *testing.T) {
			got, err := parseSocketAddress(tc.in)
			if (err == nil) != tc.ok || got != tc.want {
				t.Errorf("parseSocketAddress(%q) = %+v, %v", tc.in, got, err)
			}
		})
	}
}

// longPath is an absolute path of n bytes.
func longPath(n int) string { return "/" + strings.Repeat("s", n-1) }
