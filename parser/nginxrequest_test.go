package parser

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"text/template"
	"time"

	"github.com/logwindow/logwindow_exporter/config"
	"github.com/logwindow/logwindow_exporter/internal/testutil/nginxlog"
	"github.com/logwindow/logwindow_exporter/internal/testutil/testexec"
)

var updateNginx = flag.Bool("update-nginx", false, "send TestRequestLinesNginx's request lines to a real nginx (on PATH or in /usr/sbin) and rewrite testdata/nginx-requests.golden with its access log")

// requestLineParts are the pieces requestLineCases makes lines of: methods, targets of
// each form, protocols, and the spaces between.
var requestLineParts = struct{ methods, targets, protocols, spaces []string }{
	methods: []string{"GET", "POST", "HEAD", "PROPFIND", "M-SEARCH", "GET_X", "-", "get", "Get", "G3T", "CONNECT", "PRI", ""},
	targets: []string{
		"/", "/a/b", "/a b", "/a\tb", "/a\x01", "/a\x7f", "/caf\xc3\xa9", "/\xff", `/q"x`, `/x\y`, "/a+b", "/a;b=c",
		"/%7E", "/%7e", "/%zz", "/%", "/%4", "/%00", "/%01", "/%2e%2e/x", "/%2E%2E", "/%2F", "/a%2F..%2F..%2Fb", "/a%3Fb", "/%23x", "/%25",
		"/..", "/../a", "/a/..", "/a/../..", "/a/../b", "/./a", "/.", "/a/.", "/a/./..", "/...", "/a..", "//a", "//..", "/a//../..", "/a/b/../../..",
		"/a#f", "/a#%zz", "/a?b", "/a?b#c", "/a?%zz", "/a?b c", "/a?..", "/?", "/a?/../..", "/%zz?x", "/..?x", "/..#x",
		"*", "a/b", "", "?x", "#x", "%2F",
		"http://h/p", "http://h", "http://h/", "http://h?q", "http://h?q/../..", "http://h:80", "http://h:80/p", "http://h:/p", "http://h:8a/p",
		"http://:80/p", "http:///p", "http://u@h/p", "http://u:pw@h/p", "http:/h/p", "http:h/p", "http:", "http://", "HTTP://H/p",
		"h1+.-://h/p", "1http://h/p", "ht_tp://h/p", "http://[::1]/p", "http://[::1]", "http://[::1]:8080/p", "http://[::1", "http://[v1.x]/p",
		"http://[::1]x/p", "http://[a b]/p", "http://a..b/p", "http://a_b/p", "http://h./p", "http://.h/p", "http://h%41/p", "http://h/../p",
		"http://h/%zz", "https://h/p?x#y", "http://h#f", "h:443", "example.com:443", "http://h:80:80/p",
	},
	protocols: []string{"HTTP/1.1", "HTTP/1.0", "HTTP/1.1", "HTTP/2.0", "HTTP/3", "HTTP/10.1", "HTTP/1.100", "HTTP/1.1000", "HTTP/0.9",
		"HTTP/1", "HTTP/1.", "HTTP/", "HTTP", "H", "http/1.1", "HTTP/1.1x", "HTTP/1.1 x", "HTTP/01.1", "HTTP/1.01", "HTTPS/1", "HTTP/1.1 "},
	spaces: []string{" ", " ", " ", "  ", "\t", ""},
}

// requestLineCases are the request lines of TestRequestLinesNginx: the forms nginx reads
// and those it refuses, each alone, then made up at random from pieces of them (methods,
// targets of each form, protocols, the spaces between) and changed a byte at a time, from
// a fixed seed. None holds a CR or a LF, which end a line.
func requestLineCases() []string {
	parts := requestLineParts
	methods, targets, protocols, spaces := parts.methods, parts.targets, parts.protocols, parts.spaces
	var cases []string
	for _, tg := range targets {
		cases = append(cases, "GET "+tg+" HTTP/1.1", "GET "+tg)
	}
	for _, m := range methods {
		cases = append(cases, m+" / HTTP/1.1", m+" /")
	}
	for _, p := range protocols {
		cases = append(cases, "GET / "+p)
	}
	r := rand.New(rand.NewPCG(21, 400))
	pick := func(vs []string) string { return vs[r.IntN(len(vs))] }
	const mutations = " %/.?#:@[]H1\x00\x7f\x80"
	for range 500 {
		line := pick(methods) + pick(spaces) + pick(targets)
		if r.IntN(5) > 0 {
			line += pick(spaces) + pick(protocols)
		}
		if r.IntN(10) == 0 {
			line += " "
		}
		if r.IntN(3) == 0 {
			b := []byte(line)
			for range 1 + r.IntN(2) {
				i := r.IntN(len(b) + 1)
				c := mutations[r.IntN(len(mutations))]
				switch r.IntN(3) {
				case 0:
					b = append(b[:i], append([]byte{c}, b[i:]...)...)
				case 1:
					if i < len(b) {
						b[i] = c
					}
				default:
					if i < len(b) {
						b = append(b[:i], b[i+1:]...)
					}
				}
			}
			line = string(b)
		}
		cases = append(cases, line)
	}
	// Lines of the forms nginx reads, most of them, with queries and escapes.
	good := []string{"/", "/a/b", "/caf\xc3\xa9", `/q"x`, "/a+b", "/%7E", "/a/../b", "/./a", "//a", "/a#f", "/a?b", "/a?b#c", "/a?%zz",
		"/a?/../..", "/a..", "http://h/p", "http://h", "http://h?q", "http://h:80", "http://h:80/p?x", "http://[::1]:8080/p", "HTTP://H/p",
		"http://a..b/p", "http://h/%7E?x"}
	for range 250 {
		line := pick(methods[:5]) + pick(spaces[:4]) + pick(good)
		if r.IntN(6) > 0 {
			line += pick(spaces[:4]) + pick([]string{"HTTP/1.1", "HTTP/1.0", "HTTP/1.1 ", "HTTP/1.100", "HTTP/2.0"})
		}
		cases = append(cases, line)
	}
	// Lines longer than nginx's buffers for one (client_header_buffer_size and
	// large_client_header_buffers of 1k, below): answered 414, logged cut.
	cases = append(cases, "GET /"+strings.Repeat("a", 1100)+" HTTP/1.1", "GET /"+strings.Repeat("a", 1100),
		"GET /a"+strings.Repeat("/..", 400)+" HTTP/1.1")
	return cases
}

// requestsNginxConf is the nginx of -update-nginx: one server answering 200 to every request
// it reads, and writing each to the access log in nginxRequestsFormat.
const requestsNginxConf = `{{if .User}}user {{.User}};{{end}}
worker_processes 1;
pid {{.Dir}}/nginx.pid;
error_log {{.Dir}}/error.log notice;
events { worker_connections 16; }
http {
    log_format requests '{{.Format}}';
    client_header_buffer_size 1k;
    large_client_header_buffers 2 1k;
    lingering_close off;
    client_body_temp_path {{.Dir}}/client_temp;
    proxy_temp_path {{.Dir}}/proxy_temp;
    fastcgi_temp_path {{.Dir}}/fastcgi_temp;
    uwsgi_temp_path {{.Dir}}/uwsgi_temp;
    scgi_temp_path {{.Dir}}/scgi_temp;
    server {
        listen 127.0.0.1:{{.Port}};
        access_log {{.Dir}}/access.log requests;
        location / { return 200 "ok\n"; }
        location = /-ready { access_log off; return 200 "ok\n"; }
    }
}
`

// nginxRequestsFormat is how testdata/nginx-requests.golden is written: a value nginx has not
// set is "-" ("" for a $server_protocol it began reading), and every '"' of a value is
// escaped (\x22), so that `" "` ends a value.
const nginxRequestsFormat = `$status "$request" "$request_method" "$request_uri" "$uri" "$server_protocol"`

// writeNginxRequests sends each case to a real nginx on a connection of its own, one after
// the other, and writes its access log to golden.
func writeNginxRequests(t *testing.T, cases []string, golden string) {
	bin := testexec.LookTools(t, "Debian: apt-get install nginx-light", "nginx")["nginx"]
	dir := t.TempDir()
	user := ""
	if os.Geteuid() == 0 {
		user = "root"
	}
	port := testexec.FreePort(t)
	var conf bytes.Buffer
	if err := template.Must(template.New("").Parse(requestsNginxConf)).Execute(&conf, map[string]any{
		"User": user, "Dir": dir, "Port": port, "Format": nginxRequestsFormat,
	}); err != nil {
		t.Fatal(err)
	}
	confPath := filepath.Join(dir, "nginx.conf")
	if err := os.WriteFile(confPath, conf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	errorLog := filepath.Join(dir, "error.log")
	p := testexec.StartTest(t, dir, "nginx", []string{bin, "-p", dir, "-c", confPath, "-e", errorLog, "-g", "daemon off;"}, errorLog)
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	testexec.WaitHTTP(t, p, "http://"+addr+"/-ready")
	access := filepath.Join(dir, "access.log")
	for _, c := range cases {
		conn, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		if err := conn.SetDeadline(time.Now().Add(testexec.DefaultTimeout)); err != nil {
			t.Fatal(err)
		}
		// The headers are read only after a line of HTTP/1.x, and ignored otherwise.
		if _, err := io.WriteString(conn, c+"\r\nHost: x\r\nConnection: close\r\n\r\n"); err != nil {
			t.Fatal(err)
		}
		// nginx resets a connection it closed with bytes unread (a line too long).
		if _, err := io.Copy(io.Discard, conn); err != nil && !errors.Is(err, syscall.ECONNRESET) {
			t.Fatalf("%q: %v", c, err)
		}
		conn.Close()
	}
	// nginx writes a request's line before it closes its connection.
	data, err := os.ReadFile(access)
	if err != nil {
		t.Fatal(err)
	}
	if n := bytes.Count(data, []byte("\n")); n != len(cases) {
		t.Fatalf("nginx logged %d requests of %d", n, len(cases))
	}
	version, err := exec.Command(bin, "-v").CombinedOutput()
	if err != nil {
		t.Fatal(err)
	}
	head := fmt.Sprintf("# %s, log_format '%s'; go test ./parser -run TestRequestLinesNginx -update-nginx writes it.\n",
		strings.TrimSpace(string(version)), nginxRequestsFormat)
	if err := os.WriteFile(golden, append([]byte(head), data...), 0o644); err != nil {
		t.Fatal(err)
	}
}

// nginxLogged is what nginx logged of a request.
type nginxLogged struct {
	status                                  string
	request, method, requestURI, uri, proto string
}

// readNginxRequests reads testdata/nginx-requests.golden, values unescaped and "-" empty.
func readNginxRequests(t *testing.T, golden string) []nginxLogged {
	f, err := os.Open(golden)
	if err != nil {
		t.Fatalf("%v (go test ./parser -run TestRequestLinesNginx -update-nginx writes it with a real nginx)", err)
	}
	defer f.Close()
	line := regexp.MustCompile(`^(\d{3}) "([^"]*)" "([^"]*)" "([^"]*)" "([^"]*)" "([^"]*)"$`)
	var out []nginxLogged
	s := bufio.NewScanner(f)
	s.Buffer(nil, 1<<20)
	for s.Scan() {
		if strings.HasPrefix(s.Text(), "#") {
			continue
		}
		m := line.FindStringSubmatch(s.Text())
		if m == nil {
			t.Fatalf("%s: %q is not of %s", golden, s.Text(), nginxRequestsFormat)
		}
		v := make([]string, 5)
		for i := range v {
			if v[i] = testUnescape(m[2+i], "default"); v[i] == "-" && i > 0 {
				v[i] = ""
			}
		}
		out = append(out, nginxLogged{m[1], v[0], v[1], v[2], v[3], v[4]})
	}
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestRequestLinesNginx holds the request parts the parser derives from $request to those
// a real nginx (1.22) logged for the same requests, in testdata/nginx-requests.golden: its
// $request_method, $request_uri and $server_protocol, and $uri where nginx did not
// normalise the path (the parser's uri is the path as sent: see docs/configuration.md),
// for lines it read, refused (400, 505, 414), or read but not its path (400). Each line
// is read with nginx's $status (as every preset has it), without it (every request line
// checked; a line answered 505 or 414 cannot be told then, and is left out), and from a
// JSON template. go test ./parser -run TestRequestLinesNginx -update-nginx sends the
// cases to the nginx on PATH and rewrites the file first.
func TestRequestLinesNginx(t *testing.T) {
	cases := requestLineCases()
	golden := filepath.Join("testdata", "nginx-requests.golden")
	if *updateNginx {
		writeNginxRequests(t, cases, golden)
	}
	logged := readNginxRequests(t, golden)
	if len(logged) != len(cases) {
		t.Fatalf("%s has %d requests, the cases are %d: rewrite it (-update-nginx)", golden, len(logged), len(cases))
	}
	readings := []struct {
		name, format, escape string
		line                 func(l nginxLogged) string
		unknown              func(l nginxLogged) bool
	}{
		{name: "with $status", format: `$status "$request"`, escape: "default",
			line: func(l nginxLogged) string { return l.status + ` "` + nginxEscape(l.request, "default") + `"` }},
		{name: "without $status", format: `"$request"`, escape: "default",
			line:    func(l nginxLogged) string { return `"` + nginxEscape(l.request, "default") + `"` },
			unknown: func(l nginxLogged) bool { return l.status == "505" || l.status == "414" }},
		{name: "JSON", format: `{"status":"$status","request":"$request"}`, escape: "json",
			line: func(l nginxLogged) string {
				b, _ := json.Marshal(map[string]string{"status": l.status, "request": l.request})
				return string(b)
			}},
	}
	counts := map[string]int{}
	for _, rd := range readings {
		t.Run(rd.name, func(t *testing.T) {
			eachNginxRequestParser(t, rd.format, rd.escape, "m: '${request_method}', t: '${request_uri}', u: '${uri}', p: '${server_protocol}'", "requests.yaml", func(matcher string, p *Parser, r *config.Rule) {
				for i, l := range logged {
					if sent := cases[i]; l.request != sent && !(l.status == "414" && strings.HasPrefix(sent, l.request)) {
						t.Fatalf("%s line %d: nginx logged the request %q, the case is %q: rewrite it (-update-nginx)", golden, i+1, l.request, sent)
					}
					if rd.unknown != nil && rd.unknown(l) {
						continue
					}
					text := rd.line(l)
					got := parsedLabels(p, r, text)
					if got == nil {
						t.Fatalf("%s: %q does not fit %q", matcher, text, rd.format)
					}
					where := fmt.Sprintf("%s: %q (nginx: %s)", matcher, l.request, l.status)
					want := map[string]string{"m": validLabel(l.method), "t": validLabel(l.requestURI), "p": validLabel(l.proto)}
					for k, w := range want {
						// nginx writes a method "-" as it writes none.
						if got[k] != w && !(k == "m" && w == "" && got[k] == "-" && strings.HasPrefix(l.request, "- ")) {
							t.Errorf("%s: %s = %q, nginx's %q", where, map[string]string{"m": "request_method", "t": "request_uri", "p": "server_protocol"}[k], got[k], w)
						}
					}
					// nginx's $uri is the path decoded and normalised where it has a byte
					// to decode or a segment to merge or drop; the parser's, the path as
					// it came.
					path, _, _ := strings.Cut(l.requestURI, "?")
					normalised := strings.ContainsAny(path, "%#") || strings.Contains(path, "//") || strings.Contains(path, "/.")
					if got["u"] != validLabel(l.uri) && !(normalised && got["u"] == validLabel(path)) {
						t.Errorf("%s: uri = %q, nginx's $uri %q ($request_uri %q)", where, got["u"], l.uri, l.requestURI)
					}
					if matcher == matchers[0].name {
						counts[rd.name+" "+l.status+map[bool]string{true: " read", false: " refused"}[got["m"] != ""]]++
					}
				}
			})
		})
	}
	t.Logf("%d request lines: %v", len(cases), counts)
}

// FuzzNginxRequestLine: the check of a request line takes any bytes and any status
// without a panic; a status nginx answers no refused line with reads it as read, and a
// line with neither '%' nor '.' has no path nginx could refuse.
func FuzzNginxRequestLine(f *testing.F) {
	for _, c := range requestLineCases() {
		f.Add([]byte(c), []byte("400"))
	}
	f.Add([]byte("GET /"+strings.Repeat("%", 1000)), []byte(""))
	f.Add([]byte("GET http://[::1]:80/a/../.. HTTP/1.1"), []byte("505"))
	f.Fuzz(func(t *testing.T, req, status []byte) {
		v := nginxVerdict(req, status)
		if len(status) == 3 && (status[0] < '4' || status[0] > '5') && v != lineRead {
			t.Fatalf("%q with status %q: %d, want read", req, status, v)
		}
		if !bytes.ContainsAny(req, "%.") && v == pathRefused {
			t.Fatalf("%q: its path refused without a '%%' or a '.'", req)
		}
		if len(req) > 0 && req[0] == '/' {
			nginxPathRead(req)
		}
		if v := nginxRequestLine(req); plainRequestLine(req) && v != lineRead && v != lineVersion {
			t.Fatalf("%q: plain, but nginx's check says %d", req, v)
		}
	})
}

// TestPlainRequestLine holds the shortcut of a format without $status to the whole check:
// a line it takes as plain is one nginx reads (or one it wrote for HTTP/2), for every
// request line of TestRequestLinesNginx, every line made of its pieces (each method,
// space, target, space and protocol), every generated line's and each of those changed
// a byte at a time; and it takes nearly all of the generated lines, which are what a
// server mostly logs, as plain.
func TestPlainRequestLine(t *testing.T) {
	var generated []string
	for _, l := range nginxlog.Lines(t, 5000, 7) {
		from := bytes.Index(l, []byte(`] "`)) + 3
		generated = append(generated, string(l[from:from+bytes.IndexByte(l[from:], '"')]))
	}
	lines := append(requestLineCases(), generated...)
	r := rand.New(rand.NewPCG(22, 7))
	const bytesOfNote = " %/.?#:@[]H1\x00\x7f\x80\t-Ga"
	for _, l := range lines[:len(lines):len(lines)] {
		for range 4 {
			b := []byte(l)
			if len(b) == 0 {
				continue
			}
			b[r.IntN(len(b))] = bytesOfNote[r.IntN(len(bytesOfNote))]
			lines = append(lines, string(b))
		}
	}
	parts := requestLineParts
	spaces := slices.Compact(slices.Sorted(slices.Values(parts.spaces)))
	for _, m := range parts.methods {
		for _, sp := range spaces {
			for _, tg := range parts.targets {
				for _, sp2 := range spaces {
					for _, p := range parts.protocols {
						lines = append(lines, m+sp+tg+sp2+p)
					}
				}
			}
		}
	}
	plain := 0
	for _, l := range lines {
		if !plainRequestLine([]byte(l)) {
			continue
		}
		plain++
		if v := nginxRequestLine([]byte(l)); v != lineRead && v != lineVersion {
			t.Errorf("%q: plain, but nginx's check says %d", l, v)
		}
	}
	common := 0
	for _, l := range generated {
		if plainRequestLine([]byte(l)) {
			common++
		}
	}
	if common < len(generated)*95/100 {
		t.Errorf("%d of %d generated request lines plain, want 95%% or more", common, len(generated))
	}
	t.Logf("%d of %d lines plain, %d of %d generated", plain, len(lines), common, len(generated))
}
