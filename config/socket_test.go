package config

import (
	"fmt"
	"net"
	"path/filepath"
	"regexp"
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
		{"udp://localhost.:5140", SocketAddress{"udp", "localhost.:5140"}, ""},
		// An address spelled otherwise is the one address, which two inputs may not share:
		// an IPv4-mapped one is bound as the IPv4 address.
		{"udp://[::ffff:10.0.0.1]:5140", SocketAddress{"udp", "10.0.0.1:5140"}, ""},
		{"udp://[0:0:0:0:0:0:0:1]:5140", SocketAddress{"udp", "[::1]:5140"}, ""},
		{"udp://[FE80::1%eth0]:5140", SocketAddress{"udp", "[fe80::1%eth0]:5140"}, ""},
		// A name ending in a number would be looked up only when bound, and found nowhere.
		{"udp://300.1.1.1:514", SocketAddress{}, `: the host "300.1.1.1" is not an IPv4 address: that is four numbers from 0 to 255 between dots, with no leading zero`},
		{"udp://10.0.1:514", SocketAddress{}, `: the host "10.0.1" is not an IPv4 address: that is four numbers from 0 to 255 between dots, with no leading zero`},
		{"udp://010.0.0.1:514", SocketAddress{}, `: the host "010.0.0.1" is not an IPv4 address: that is four numbers from 0 to 255 between dots, with no leading zero`},
		{"udp://2130706433:514", SocketAddress{}, `: the host "2130706433" is not an IPv4 address: that is four numbers from 0 to 255 between dots, with no leading zero`},
		{"udp://10.0.0.1.:514", SocketAddress{}, `: the host "10.0.0.1." is not an IPv4 address: that is four numbers from 0 to 255 between dots, with no leading zero`},
		{"udp://" + strings.Repeat("a", 64) + ".example:514", SocketAddress{}, `: the host name "` + strings.Repeat("a", 64) + `.example" has a label longer than 63 bytes, the most a label has: ` + strings.Repeat("a", 64)},
		{"udp://" + strings.Repeat("a.", 127) + "ab:514", SocketAddress{}, `: the host name "` + strings.Repeat("a.", 127) + `ab" is longer than 253 bytes, the most a name has`},
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
		{"unixgram:relative.sock", SocketAddress{}, `: a unix socket is unixgram:// and an absolute path: unixgram:///relative.sock`},
		{"unixgram:/run/x.sock", SocketAddress{}, `: the scheme is followed by //: unixgram:///run/x.sock`},
		{"UNIXGRAM://run/x.sock", SocketAddress{}, `: a unix socket needs an absolute path, after three slashes: unixgram:///run/x.sock`},
		{"unixgram://localhost/run/x.sock", SocketAddress{}, `: a unix socket's address names no host (localhost): unixgram:///run/x.sock`},
		{"unixgram://@logwindow", SocketAddress{}, `: names the abstract socket @logwindow, which has no file; give a path, e.g. unixgram:///run/logwindow/nginx.sock`},
		{"unixgram:///run/%40x.sock", SocketAddress{"unixgram", "/run/@x.sock"}, ""},
		{"unixgram:///run/%2e%2e/x.sock", SocketAddress{"unixgram", "/x.sock"}, ""},
		{"unixgram:///", SocketAddress{}, `: the path names the directory /, where no socket can be made; give the socket file's path in it, e.g. /nginx.sock`},
		{"unixgram:///run/x/..", SocketAddress{}, `: the path names the directory /run, where no socket can be made; give the socket file's path in it, e.g. /run/nginx.sock`},
		{"unixgram:///run/x.sock?mode=0660", SocketAddress{}, `: the path holds ?, which would start a URL's query: a socket's options are keys of the input (socket_mode:); write a ? of the path as %3F`},
		{"unixgram:///run/x#1.sock", SocketAddress{}, `: the path holds #, which would start a URL's fragment: a socket's options are keys of the input (socket_mode:); write a # of the path as %23`},
		{"unixgram:///run/100%.sock", SocketAddress{}, `: the path holds a % not followed by two hex digits: write a % of the path as %25`},
		{"unixgram:///run/x%00.sock", SocketAddress{}, `: the path holds the control character '\x00' (%00), which no address has`},
		{"unixgram:///run/x%0A.sock", SocketAddress{}, `: the path holds the control character '\n' (%0A), which no address has`},
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
		{"/run/x.sock", SocketAddress{}, ` has no scheme (a unix socket's is unixgram://): unixgram:///run/x.sock`},
		{"127.0.0.1:5140", SocketAddress{}, ` has no scheme: a UDP address is udp://127.0.0.1:5140`},
		{"%zz", SocketAddress{}, ` has no scheme: write unixgram:///run/logwindow/nginx.sock or udp://127.0.0.1:5140`},
		// nginx's own spelling, pasted from its access_log line, is translated.
		{"unix:/run/x.sock", SocketAddress{}, ` is nginx's spelling of a unix socket: unixgram:///run/x.sock`},
		{"UNIX:/run/x.sock", SocketAddress{}, ` is nginx's spelling of a unix socket: unixgram:///run/x.sock`},
		{"syslog:server=,tag=nginx", SocketAddress{}, ` is nginx's access_log parameter; the input's address is that of the socket alone, and it names none: e.g. unixgram:///run/logwindow/nginx.sock or udp://127.0.0.1:5140`},
		{"syslog:server=unix:/run/x.sock,tag=nginx", SocketAddress{}, ` is nginx's access_log parameter; the input's address is that of the socket alone: unixgram:///run/x.sock`},
		{"syslog:server=10.0.0.1", SocketAddress{}, ` is nginx's access_log parameter; the input's address is that of the socket alone: udp://10.0.0.1:514 (nginx's port when it names none)`},
		{"syslog:server=10.0.0.1:", SocketAddress{}, ` is nginx's access_log parameter; the input's address is that of the socket alone: udp://10.0.0.1:514 (nginx's port when it names none)`},
		// A rewrite that would be refused in turn is not told: what is wrong in it is.
		{"syslog:server=300.1.1.1", SocketAddress{}, ` is nginx's access_log parameter; the input's address is that of the socket alone; and the host "300.1.1.1" is not an IPv4 address: that is four numbers from 0 to 255 between dots, with no leading zero`},
		{"unix://run/x.sock", SocketAddress{}, `: the scheme is unixgram:// (nginx sends datagrams), not unix://; and a unix socket needs an absolute path, after three slashes: unixgram:///run/x.sock`},
		{"unix:/", SocketAddress{}, ` is nginx's spelling of a unix socket; and the path names the directory /, where no socket can be made; give the socket file's path in it, e.g. /nginx.sock`},
		{"udp:", SocketAddress{}, `: the scheme is followed by //; and names no host and port; write e.g. udp://127.0.0.1:5140, or udp://:5140 for every address`},
		// nginx (and Go, and libc) end the path with a NUL within the address, so a path
		// that fills the address whole is one nginx refuses to send to.
		{"unixgram://" + longPath(maxSocketPath-1), SocketAddress{"unixgram", longPath(maxSocketPath - 1)}, ""},
		{"unixgram://" + longPath(maxSocketPath), SocketAddress{}, `: the path is 108 bytes, and a unix socket's is at most 107 (nginx refuses a longer one)`},
		// The path bound is the one cleaned.
		{"unixgram:///" + longPath(maxSocketPath-1), SocketAddress{"unixgram", longPath(maxSocketPath - 1)}, ""},
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
			checkSuggestions(t, tc.in, err)
		})
	}
}

// suggestion is an address an error tells to write instead; the scheme alone, or the
// template udp://host:port, is none.
var suggestion = regexp.MustCompile(`(unixgram|udp)://[^ ,()]+`)

// checkSuggestions fails when an error of parseSocketAddress(in) tells to write an
// address that is refused in turn. An address holding a character that ends a suggestion
// in the text is passed over: where the one told ends is not known.
func checkSuggestions(t *testing.T, in string, err error) {
	t.Helper()
	if err == nil || strings.ContainsAny(in, " ,()") {
		return
	}
	said := strings.TrimPrefix(err.Error(), strconv.Quote(in))
	for _, s := range suggestion.FindAllString(said, -1) {
		if s == "udp://host:port" {
			continue
		}
		if _, err := parseSocketAddress(s); err != nil {
			t.Errorf("parseSocketAddress(%q) tells to write %s, which is refused: %v", in, s, err)
		}
	}
}

// longPath is an absolute path of n bytes.
func longPath(n int) string { return "/" + strings.Repeat("s", n-1) }

// FuzzParseAddress feeds the address parser what a rule file may hold: it must never
// panic; an error quotes the address first and tells to write only addresses that load;
// an address loaded is a socket's, written in one spelling that loads as itself. Its seed
// corpus (testdata/fuzz/FuzzParseAddress) holds a form of each part the parser tells
// apart: IPv6 zones and mapped addresses, numeric hosts, schemes in capitals, abstract and
// relative unix paths, escapes, nginx's own spellings.
func FuzzParseAddress(f *testing.F) {
	for _, s := range []string{"unixgram:///run/logwindow/nginx.sock", "udp://127.0.0.1:5140", "udp://[fe80::1%eth0]:514",
		"syslog:server=unix:/run/x.sock,tag=nginx", "unixgram:///run/%3F%23%25.sock", "udp://::1:5140"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		a, err := parseSocketAddress(in)
		if err != nil {
			if !strings.HasPrefix(err.Error(), strconv.Quote(in)) {
				t.Fatalf("parseSocketAddress(%q): error %q does not quote the address first", in, err)
			}
			checkSuggestions(t, in, err)
			return
		}
		var again string
		switch a.Network {
		case "unixgram":
			if !filepath.IsAbs(a.Addr) || filepath.Clean(a.Addr) != a.Addr || len(a.Addr) >= maxSocketPath || strings.ContainsRune(a.Addr, 0) {
				t.Fatalf("parseSocketAddress(%q) = %+v: not a clean absolute path a socket address holds", in, a)
			}
			again = "unixgram://" + strings.NewReplacer("%", "%25", "?", "%3F", "#", "%23").Replace(a.Addr)
		case "udp":
			if _, _, err := net.SplitHostPort(a.Addr); err != nil {
				t.Fatalf("parseSocketAddress(%q) = %+v: %v", in, a, err)
			}
			again = "udp://" + a.Addr
		default:
			t.Fatalf("parseSocketAddress(%q) = %+v: no network", in, a)
		}
		if b, err := parseSocketAddress(again); err != nil || b != a {
			t.Fatalf("parseSocketAddress(%q) = %+v, whose spelling %q loads as %+v, %v", in, a, again, b, err)
		}
	})
}
