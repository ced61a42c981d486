package config

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
)

func TestParseAddress(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want SocketAddress
		// err is what the error says after the address it quotes first; "" for none.
		err string
	}{
		{"unixgram:///run/logwindow/nginx.sock", SocketAddress{"unixgram", "/run/logwindow/nginx.sock"}, ""},
		{"udp://127.0.0.1:5140", SocketAddress{"udp", "127.0.0.1:5140"}, ""},
		{"udp://[::1]:5140", SocketAddress{"udp", "[::1]:5140"}, ""},
		{"udp://[fe80::1%eth0]:514", SocketAddress{"udp", "[fe80::1%eth0]:514"}, ""},
		{"udp://:5140", SocketAddress{"udp", ":5140"}, ""},
		{"udp://localhost:5140", SocketAddress{"udp", "localhost:5140"}, ""},
		{"UDP://127.0.0.1:5140", SocketAddress{"udp", "127.0.0.1:5140"}, ""},
		// Spellings of one socket give one address, which two inputs may not share.
		{"unixgram:///run/./logwindow//nginx.sock", SocketAddress{"unixgram", "/run/logwindow/nginx.sock"}, ""},
		{"unixgram:///run/x/../logwindow/nginx.sock", SocketAddress{"unixgram", "/run/logwindow/nginx.sock"}, ""},
		{"unixgram:///run/logwindow/nginx%2Esock", SocketAddress{"unixgram", "/run/logwindow/nginx.sock"}, ""},
		{"udp://127.0.0.1:05140", SocketAddress{"udp", "127.0.0.1:5140"}, ""},
		{"unixgram://relative.sock", SocketAddress{}, `: a unix socket needs an absolute path, after three slashes: unixgram:///relative.sock`},
		{"unixgram://", SocketAddress{}, `: names no path; give the socket's, e.g. unixgram:///run/logwindow/nginx.sock`},
		{"unixgram:relative.sock", SocketAddress{}, `: the scheme is followed by //: unixgram://relative.sock`},
		{"unixgram:///", SocketAddress{}, `: the path names the directory /, where no socket can be made; give the socket file's path in it, e.g. /nginx.sock`},
		{"unixgram:///run/x/..", SocketAddress{}, `: the path names the directory /run, where no socket can be made; give the socket file's path in it, e.g. /run/nginx.sock`},
		{"unixgram:///run/x.sock?mode=0660", SocketAddress{}, `: the path holds ?, which would start a URL's query: a socket's options are keys of the input (socket_mode:); write a ? of the path as %3F`},
		{"unixgram:///run/x#1.sock", SocketAddress{}, `: the path holds #, which would start a URL's fragment: a socket's options are keys of the input (socket_mode:); write a # of the path as %23`},
		{"unixgram:///run/100%.sock", SocketAddress{}, `: the path holds a % not followed by two hex digits: write a % of the path as %25`},
		{"unixgram:///run/x%00.sock", SocketAddress{}, `: the path holds a NUL byte (%00), which no file name has`},
		{"unix:///run/x.sock", SocketAddress{}, `: the scheme is unixgram:// (nginx sends datagrams), not unix://: unixgram:///run/x.sock`},
		// nginx's default port, which it sends to when server= names none, is said.
		{"udp://127.0.0.1", SocketAddress{}, `: names no port; nginx sends to port 514 when its server= names none: then write udp://127.0.0.1:514`},
		{"udp://127.0.0.1:", SocketAddress{}, `: names no port; nginx sends to port 514 when its server= names none: then write udp://127.0.0.1:514`},
		{"udp://[::1]", SocketAddress{}, `: names no port; nginx sends to port 514 when its server= names none: then write udp://[::1]:514`},
		{"udp://", SocketAddress{}, `: names no host and port; write e.g. udp://127.0.0.1:5140, or udp://:5140 for every address`},
		// nginx's server= takes a number, as this does: url.Parse said "is not a URL".
		{"udp://127.0.0.1:syslog", SocketAddress{}, `: the port is a number from 1 to 65535 (nginx's server= takes no service name), not "syslog"`},
		{"udp://[::1]:syslog", SocketAddress{}, `: the port is a number from 1 to 65535 (nginx's server= takes no service name), not "syslog"`},
		{"udp://127.0.0.1:-1", SocketAddress{}, `: the port is a number from 1 to 65535 (nginx's server= takes no service name), not "-1"`},
		{"udp://127.0.0.1:65536", SocketAddress{}, `: port 65536 is past 65535, the highest`},
		{"udp://127.0.0.1:99999999999999999999999", SocketAddress{}, `: port 99999999999999999999999 is past 65535, the highest`},
		// Port 0 binds a port the kernel picks, which no sender is told of.
		{"udp://127.0.0.1:0", SocketAddress{}, `: port 0 is no port a sender can be given; name one, e.g. udp://127.0.0.1:5140`},
		{"udp://:00", SocketAddress{}, `: port 0 is no port a sender can be given; name one, e.g. udp://127.0.0.1:5140`},
		{"udp://::1:5140", SocketAddress{}, `: an IPv6 address is written in brackets, as the port follows it after a colon: udp://[::1]:5140`},
		{"udp://fe80::1", SocketAddress{}, `: an IPv6 address is written in brackets, as the port follows it after a colon: udp://[fe80::1]:514`},
		{"udp://127.0.0.1:5140:1", SocketAddress{}, `: "127.0.0.1:5140:1" is not host:port: it has more than one colon`},
		{"udp://[127.0.0.1]:5140", SocketAddress{}, `: [127.0.0.1] is not an IPv6 address: only an IPv6 address is written in brackets`},
		{"udp://[::1:5140", SocketAddress{}, `: the [ of an IPv6 address is not closed by ]`},
		{"udp://[::1]5140", SocketAddress{}, `: "5140" follows the IPv6 address where :port belongs`},
		{"udp://127.0.0.1:5140/x", SocketAddress{}, `: a UDP address is udp://host:port, with no path (/x)`},
		{"udp://127.0.0.1:5140?rcvbuf=1m", SocketAddress{}, `: a UDP address is udp://host:port, with no query (?rcvbuf=1m)`},
		{"udp://127.0.0.1:5140#x", SocketAddress{}, `: a UDP address is udp://host:port, with no fragment (#x)`},
		{"udp://nginx@127.0.0.1:5140", SocketAddress{}, `: a UDP address is udp://host:port, with no user (nginx@)`},
		{"udp://%zz:5140", SocketAddress{}, `: the host "%zz" is neither an IP address nor a host name`},
		{"udp://local host:5140", SocketAddress{}, `: the host "local host" is neither an IP address nor a host name`},
		{"udp://127.0.0.1:5140\n", SocketAddress{}, `: holds the control character '\n', which no address has`},
		{"udp:127.0.0.1:5140", SocketAddress{}, `: the scheme is followed by //: udp://127.0.0.1:5140`},
		{"tcp://127.0.0.1:5140", SocketAddress{}, `: the scheme is unixgram:// or udp://, not "tcp"`},
		{"/run/x.sock", SocketAddress{}, ` has no scheme: a unix socket is unixgram:///run/x.sock`},
		{"127.0.0.1:5140", SocketAddress{}, ` has no scheme: a UDP address is udp://127.0.0.1:5140`},
		{"%zz", SocketAddress{}, ` has no scheme: write unixgram:///run/logwindow/nginx.sock or udp://127.0.0.1:5140`},
		// nginx's own spelling, pasted from its access_log line, is translated.
		{"unix:/run/x.sock", SocketAddress{}, ` is nginx's spelling of a unix socket; the input's is unixgram:///run/x.sock`},
		{"syslog:server=unix:/run/x.sock,tag=nginx", SocketAddress{}, ` is nginx's access_log parameter; the input's address is that of the socket alone: unixgram:///run/x.sock`},
		{"syslog:server=10.0.0.1", SocketAddress{}, ` is nginx's access_log parameter; the input's address is that of the socket alone: udp://10.0.0.1:514 (nginx's port when it names none)`},
		// nginx (and Go, and libc) end the path with a NUL within the address, so a path
		// that fills the address whole is one nginx refuses to send to.
		{"unixgram://" + longPath(maxSocketPath-1), SocketAddress{"unixgram", longPath(maxSocketPath - 1)}, ""},
		{"unixgram://" + longPath(maxSocketPath), SocketAddress{}, `: a unix socket's path is at most 107 bytes (nginx refuses a longer one)`},
	} {
		t.Run(tc.in, func(t *testing.T) {
			got, err := parseSocketAddress(tc.in)
			switch {
			case tc.err == "" && err != nil:
				t.Fatalf("parseSocketAddress(%q): %v", tc.in, err)
			case tc.err != "" && fmt.Sprint(err) != strconv.Quote(tc.in)+tc.err:
				t.Fatalf("parseSocketAddress(%q): error %v, want %q%s", tc.in, err, tc.in, tc.err)
			case got != tc.want:
				t.Errorf("parseSocketAddress(%q) = %+v, want %+v", tc.in, got, tc.want)
			}
		})
	}
}

// longPath is an absolute path of n bytes.
func longPath(n int) string { return "/" + strings.Repeat("s", n-1) }
