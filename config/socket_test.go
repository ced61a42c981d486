package config

import (
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
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
		{"udp://[FE80::1%25eth0]:5140", SocketAddress{"udp", "[fe80::1%eth0]:5140"}, ""},
		// A name ending in a number would be looked up only when bound, and found nowhere.
		{"udp://300.1.1.1:514", SocketAddress{}, `: the host "300.1.1.1" is not an IPv4 address: that is four numbers from 0 to 255 between dots, with no leading zero`},
		{"udp://10.0.1:514", SocketAddress{}, `: the host "10.0.1" is not an IPv4 address: that is four numbers from 0 to 255 between dots, with no leading zero`},
		{"udp://010.0.0.1:514", SocketAddress{}, `: the host "010.0.0.1" is not an IPv4 address: that is four numbers from 0 to 255 between dots, with no leading zero`},
		{"udp://2130706433:514", SocketAddress{}, `: the host "2130706433" is not an IPv4 address: that is four numbers from 0 to 255 between dots, with no leading zero`},
		{"udp://10.0.0.1.:514", SocketAddress{}, `: the host "10.0.0.1." is not an IPv4 address: that is four numbers from 0 to 255 between dots, with no leading zero`},
		{"udp://" + strings.Repeat("a", 64) + ".example:514", SocketAddress{}, `: the host name "` + strings.Repeat("a", 64) + `.example" has a label longer than 63 bytes, the most a label has: ` + strings.Repeat("a", 64)},
		{"udp://" + strings.Repeat("a.", 127) + "ab:514", SocketAddress{}, `: the host name "` + strings.Repeat("a.", 127) + `ab" is longer than 253 bytes, the most a name has`},
		{"udp://[::1]:5140", SocketAddress{"udp", "[::1]:5140"}, ""},
		// A zone follows %25, the escaped % of a URL (RFC 6874), as net/url reads it: it
		// loaded as 25eth0, an interface found nowhere when bound.
		{"udp://[fe80::1%25eth0]:514", SocketAddress{"udp", "[fe80::1%eth0]:514"}, ""},
		{"udp://[fe80::1%25%65th0]:514", SocketAddress{"udp", "[fe80::1%eth0]:514"}, ""},
		{"udp://[fe80::1%252]:514", SocketAddress{"udp", "[fe80::1%2]:514"}, ""},
		{"udp://[fe80::1%25eth0]", SocketAddress{}, `: names no port; nginx sends to port 514 when its server= names none: then write udp://[fe80::1%25eth0]:514`},
		{"udp://[fe80::1%eth0]:514", SocketAddress{}, `: the zone of [fe80::1%eth0] follows %25, a URL's escaped %, not a bare %: udp://[fe80::1%25eth0]:514`},
		{"udp://fe80::1%eth0:514", SocketAddress{}, `: an IPv6 address is written in brackets, as the port follows it after a colon: udp://[fe80::1%25eth0]:514`},
		{"udp://[fe80::1%25]:514", SocketAddress{}, `: [fe80::1%25] names no zone after %25, the interface (here eth0): udp://[fe80::1%25eth0]:514`},
		{"udp://[fe80::1%25eth%zz]:514", SocketAddress{}, `: the zone of [fe80::1%25eth%zz] holds "%zz", which is no escape a zone takes: its bytes are written as they are, a % as %25`},
		{"udp://[fe80::1%25eth%00]:514", SocketAddress{}, `: the zone of [fe80::1%25eth%00] holds "%00", which is no escape a zone takes: its bytes are written as they are, a % as %25`},
		// The kernel refuses a link-local address without its interface (EINVAL), and
		// passes over the zone of any other.
		{"udp://[fe80::1]:514", SocketAddress{}, `: [fe80::1] is a link-local address (fe80::/10), which is bound on one interface, named after %25 (here eth0): udp://[fe80::1%25eth0]:514`},
		{"udp://[2001:db8::1%25eth0]:514", SocketAddress{}, `: [2001:db8::1%25eth0] names the interface eth0, which the kernel reads only for a link-local address (fe80::/10): on 2001:db8::1 it is passed over, and the socket is on every interface: udp://[2001:db8::1]:514`},
		{"udp://[::%25eth0]:514", SocketAddress{}, `: [::%25eth0] names the interface eth0, which the kernel reads only for a link-local address (fe80::/10): on :: it is passed over, and the socket is on every interface: udp://[::]:514`},
		// Go binds a multicast address as the wildcard of its family, joining no group.
		{"udp://[ff02::1%25eth0]:514", SocketAddress{}, `: ff02::1 is a multicast address, which the socket would be bound as every address of the host is, joining no group: udp://[::]:514`},
		{"udp://[ff02::1]:5140", SocketAddress{}, `: ff02::1 is a multicast address, which the socket would be bound as every address of the host is, joining no group: udp://[::]:5140`},
		{"udp://224.0.0.1:5140", SocketAddress{}, `: 224.0.0.1 is a multicast address, which the socket would be bound as every address of the host is, joining no group: udp://0.0.0.0:5140`},
		{"udp://239.255.0.1:514", SocketAddress{}, `: 239.255.0.1 is a multicast address, which the socket would be bound as every address of the host is, joining no group: udp://0.0.0.0:514`},
		{"udp://[::ffff:224.0.0.1]:514", SocketAddress{}, `: ::ffff:224.0.0.1 is a multicast address, which the socket would be bound as every address of the host is, joining no group: udp://0.0.0.0:514`},
		{"udp://[::ffff:10.0.0.1%25eth0]:514", SocketAddress{}, `: [::ffff:10.0.0.1%25eth0] names the interface eth0, which the kernel reads only for a link-local address (fe80::/10): on ::ffff:10.0.0.1 it is passed over, and the socket is on every interface: udp://[::ffff:10.0.0.1]:514`},
		// A name no interface has would be found nowhere when bound.
		{"udp://[fe80::1%25eth%200]:514", SocketAddress{}, `: [fe80::1%25eth%200] names the interface "eth 0", which is no interface's: a name holds no ' '`},
		{"udp://[fe80::1%25a%2525b]:514", SocketAddress{}, `: [fe80::1%25a%2525b] names the interface "a%25b", which is no interface's: a name holds no '%'`},
		{"udp://[fe80::1%25" + strings.Repeat("e", 16) + "]:514", SocketAddress{}, `: [fe80::1%25` + strings.Repeat("e", 16) + `] names the interface "` + strings.Repeat("e", 16) + `", which is no interface's: a name is at most 15 bytes`},
		{"udp://[fe80::1%25" + strings.Repeat("e", 15) + "]:514", SocketAddress{"udp", "[fe80::1%" + strings.Repeat("e", 15) + "]:514"}, ""},
		// Index 0 is no interface: bind(2) refuses it as it refuses no zone (EINVAL).
		{"udp://[fe80::1%250]:514", SocketAddress{}, `: [fe80::1%250] names the interface "0", which is no interface's: index 0 is none, as if no zone were named`},
		{"udp://[fe80::1%25000]:514", SocketAddress{}, `: [fe80::1%25000] names the interface "000", which is no interface's: index 0 is none, as if no zone were named`},
		{"udp://[fe80::1%2510]:514", SocketAddress{"udp", "[fe80::1%10]:514"}, ""},
		// An IPv4-mapped link-local address is bound as the IPv4 one, which needs no
		// interface (it loaded before zones were checked).
		{"udp://[::ffff:169.254.0.1]:514", SocketAddress{"udp", "169.254.0.1:514"}, ""},
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
		{"udp://fe80::1", SocketAddress{}, `: an IPv6 address is written in brackets, as the port follows it after a colon; and [fe80::1] is a link-local address (fe80::/10), which is bound on one interface, named after %25 (here eth0): udp://[fe80::1%25eth0]:514`},
		{"udp://2001:db8::1", SocketAddress{}, `: an IPv6 address is written in brackets, as the port follows it after a colon: udp://[2001:db8::1]:514`},
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
		"syslog:server=unix:/run/x.sock,tag=nginx", "unixgram:///run/%3F%23%25.sock", "udp://::1:5140",
		// Zones: escaped as a URL's, and where the kernel reads one.
		"udp://[fe80::1%25eth0]:514", "udp://[fe80::1%25%65th%300]:514", "udp://[fe80::1%252]:514", "udp://[fe80::1]:514",
		"udp://[2001:db8::1%25eth0]:514", "udp://[fe80::1%25a%2525b]:514", "udp://fe80::1%eth0:514"} {
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
			// A zone is written after %25 (a zone holds no %).
			again = "udp://" + strings.Replace(a.Addr, "%", "%25", 1)
		default:
			t.Fatalf("parseSocketAddress(%q) = %+v: no network", in, a)
		}
		if b, err := parseSocketAddress(again); err != nil || b != a {
			t.Fatalf("parseSocketAddress(%q) = %+v, whose spelling %q loads as %+v, %v", in, a, again, b, err)
		}
	})
}

// TestSyslogInputsOnOneSocket: two syslog inputs whose sockets cannot both be bound are
// refused when the file is read, naming the line of the first, rather than at the start
// when the second's bind fails. localhost is bound as 127.0.0.1 and was passed over as
// another host. Each pair is also bound, as the input binds it (a udp socket, dual-stack
// on every address), so that the rule is the kernel's: the load refuses a pair exactly
// when the second bind fails.
func TestSyslogInputsOnOneSocket(t *testing.T) {
	port := freeUDPPort(t)
	const dup, every = "dup", "every"
	for _, c := range []struct {
		first, second string // hosts, bracketed if IPv6, the port appended
		refused       string // dup, every or "" for none
		note          string // after a dup's line
	}{
		{"localhost", "127.0.0.1", dup, " (localhost is bound as 127.0.0.1)"},
		{"127.0.0.1", "localhost", dup, " (localhost is bound as 127.0.0.1)"},
		{"LOCALHOST", "127.0.0.1", dup, " (localhost is bound as 127.0.0.1)"},
		{"localhost", "[::ffff:127.0.0.1]", dup, " (localhost is bound as 127.0.0.1)"},
		{"localhost", "localhost", dup, ""},
		{"127.0.0.1", "[::ffff:127.0.0.1]", dup, ""},
		{"localhost", "[::1]", "", ""},
		{"localhost", "", every, ""},
		{"[::]", "localhost", every, ""},
		// A socket on every address is dual-stack: it takes the port on the addresses of
		// both families, however it is written.
		{"0.0.0.0", "127.0.0.1", every, ""},
		{"127.0.0.1", "[::]", every, ""},
		{"", "[::1]", every, ""},
		{"[::1]", "0.0.0.0", every, ""},
		{"[::]", "0.0.0.0", every, ""},
		{"", "0.0.0.0", every, ""},
		// Addresses of their own are bound side by side, across families too.
		{"127.0.0.1", "[::1]", "", ""},
		{"127.0.0.1", "127.0.0.2", "", ""},
	} {
		t.Run(c.first+" "+c.second, func(t *testing.T) {
			addr := func(host string) string { return fmt.Sprintf("udp://%s:%d", host, port) }
			text := fmt.Sprintf("inputs:\n  - name: first\n    syslog: '%s'\n  - name: second\n    syslog: '%s'\nrules:\n  - name: r\n    match: x\n",
				addr(c.first), addr(c.second))
			want := ""
			switch c.refused {
			case dup:
				want = fmt.Sprintf(`s.yaml:5: input "second": syslog: %q is already received on by the input on line 3%s`, addr(c.second), c.note)
			case every:
				want = fmt.Sprintf(`s.yaml:5: input "second": syslog: %q overlaps the input on line 3: a UDP socket on every address takes port %d on each, and binding the second would fail`, addr(c.second), port)
			}
			checkParseError(t, text, "s.yaml", want)

			// The kernel's word on the pair.
			a, errA := parseSocketAddress(addr(c.first))
			b, errB := parseSocketAddress(addr(c.second))
			if errA != nil || errB != nil {
				t.Fatal(errA, errB)
			}
			first, err := bindUDP(a.Addr)
			if err != nil {
				t.Skipf("%s cannot be bound here: %v", a.Addr, err)
			}
			defer first.Close()
			second, err := bindUDP(b.Addr)
			if err == nil {
				second.Close()
			} else if !errors.Is(err, syscall.EADDRINUSE) {
				t.Skipf("%s cannot be bound here: %v", b.Addr, err)
			}
			if bound := err == nil; bound != (c.refused == "") {
				t.Errorf("binding %s beside %s: %v; the load refuses the pair: %v", b.Addr, a.Addr, err, c.refused != "")
			}
		})
	}
}

// bindUDP binds addr as the syslog input does.
func bindUDP(addr string) (*net.UDPConn, error) {
	ua, err := net.ResolveUDPAddr("udp", addr)
	if err != nil {
		return nil, err
	}
	return net.ListenUDP("udp", ua)
}

// freeUDPPort is a UDP port no socket has on any address, by a socket on every one that
// the kernel gave it, closed.
func freeUDPPort(t *testing.T) int {
	t.Helper()
	c, err := net.ListenUDP("udp", &net.UDPAddr{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	return c.LocalAddr().(*net.UDPAddr).Port
}

// TestZoneAsTheKernelBindsIt binds what the zone rules of parseSocketAddress are about, on
// a link-local address of this host: without its zone bind(2) refuses it (EINVAL), with
// it the socket is bound on that interface, and a zone on another address is passed over
// (the socket bound has none). An address loads exactly when it binds as written.
func TestZoneAsTheKernelBindsIt(t *testing.T) {
	ll, ifname := linkLocal(t)
	for _, c := range []struct {
		ip, zone string
		loads    bool
		bindFail error // what binding the address fails with, else nil
	}{
		{ll, "", false, syscall.EINVAL},
		{ll, ifname, true, nil},
		{ll, "0", false, syscall.EINVAL},
		{"::1", ifname, false, nil},
	} {
		t.Run(c.ip+"%"+c.zone, func(t *testing.T) {
			written := "udp://[" + c.ip + "]:5140"
			if c.zone != "" {
				written = "udp://[" + c.ip + "%25" + c.zone + "]:5140"
			}
			if _, err := parseSocketAddress(written); (err == nil) != c.loads {
				t.Errorf("parseSocketAddress(%s): %v, want it to load: %v", written, err, c.loads)
			}
			ua := &net.UDPAddr{IP: net.ParseIP(c.ip), Zone: c.zone}
			conn, err := net.ListenUDP("udp", ua)
			switch {
			case c.bindFail != nil:
				if !errors.Is(err, c.bindFail) {
					t.Errorf("binding %s: %v, want %v", ua, err, c.bindFail)
				}
				return
			case errors.Is(err, syscall.EADDRNOTAVAIL):
				t.Skipf("binding %s: %v", ua, err)
			case err != nil:
				t.Fatalf("binding %s: %v", ua, err)
			}
			defer conn.Close()
			// The zone is kept where it is read, as the address loads.
			if got, kept := conn.LocalAddr().(*net.UDPAddr).Zone, c.loads; (got != "") != kept {
				t.Errorf("binding %s bound %s: the zone is kept: %v, want %v", ua, conn.LocalAddr(), got != "", kept)
			}
		})
	}
}

// linkLocal is an IPv6 link-local address of this host and its interface's name.
func linkLocal(t *testing.T) (addr, ifname string) {
	t.Helper()
	ifs, err := net.Interfaces()
	if err != nil {
		t.Skip(err)
	}
	for _, i := range ifs {
		addrs, _ := i.Addrs()
		for _, a := range addrs {
			if n, ok := a.(*net.IPNet); ok && n.IP.To4() == nil && n.IP.IsLinkLocalUnicast() {
				return n.IP.String(), i.Name
			}
		}
	}
	t.Skip("no interface has an IPv6 link-local address")
	return "", ""
}
