package parser

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// formatCase is a line of a log format and what some of its captures must read; "<unset>"
// is a capture that reads as empty because the server had no value (or, derived, its
// source is not of the shape).
type formatCase struct {
	name  string
	input string // the input's format keys, YAML flow
	line  string
	want  map[string]string
}

const unsetValue = "<unset>"

var formatCases = []formatCase{
	{"combined", `log_format: combined`,
		`10.0.0.1 - alice [01/Mar/2024:12:00:00 +0000] "GET /a/b?x=1&y=2 HTTP/1.1" 200 512 "-" "curl/8.5.0"`,
		map[string]string{"remote_addr": "10.0.0.1", "remote_user": "alice", "time_local": "01/Mar/2024:12:00:00 +0000",
			"request": "GET /a/b?x=1&y=2 HTTP/1.1", "request_method": "GET", "request_uri": "/a/b?x=1&y=2", "uri": "/a/b",
			"server_protocol": "HTTP/1.1", "status": "200", "status_class": "2xx", "body_bytes_sent": "512",
			"http_referer": unsetValue, "http_user_agent": "curl/8.5.0"}},
	{"escapes undone", `log_format: combined`,
		`::1 - - [01/Mar/2024:12:00:00 +0000] "GET /caf\xC3\xA9?q=\x22a b\x22 HTTP/1.1" 404 0 "-" "say \x22hi\x22 \xE2\x82\xAC \x5Cx41"`,
		map[string]string{"remote_user": unsetValue, "request_uri": `/café?q="a b"`, "uri": "/café",
			"http_user_agent": `say "hi" € \x41`, "status_class": "4xx"}},
	{"request nginx could not parse", `log_format: combined`,
		`1.2.3.4 - - [01/Mar/2024:12:00:00 +0000] "\x16\x03\x01\x00" 400 0 "-" "-"`,
		map[string]string{"request": "\x16\x03\x01\x00", "request_method": unsetValue, "uri": unsetValue, "server_protocol": unsetValue, "status_class": "4xx"}},
	{"request logged as -", `log_format: combined`,
		`1.2.3.4 - - [01/Mar/2024:12:00:00 +0000] "-" 400 0 "-" "-"`,
		map[string]string{"request": unsetValue, "request_method": unsetValue, "request_uri": unsetValue}},
	{"empty request", `log_format: combined`,
		`1.2.3.4 - - [01/Mar/2024:12:00:00 +0000] "" 400 0 "-" "-"`,
		map[string]string{"request": "", "request_method": unsetValue}},
	{"HTTP/0.9 and a target with spaces", `log_format: '"$request" "$http_referer" $status'`,
		`"GET /x" "GET /a b HTTP/1.0" 200`,
		map[string]string{"request_method": "GET", "request_uri": "/x", "server_protocol": unsetValue, "http_referer": "GET /a b HTTP/1.0"}},
	// Requests as nginx's parser reads them, each line as nginx 1.22 logged it with
	// $request_method, $uri, $request_uri and $server_protocol beside: a method of other
	// than capitals, '_' and '-' is refused (400) and has none of them; spaces around the
	// target may be more than one, and those after the protocol are in $server_protocol.
	{"a lower-case method nginx refused", `log_format: combined`,
		`127.0.0.1 - - [30/Nov/2026:05:31:44 +0000] "get / HTTP/1.1" 400 157 "-" "-"`,
		map[string]string{"request": "get / HTTP/1.1", "request_method": unsetValue, "uri": unsetValue, "request_uri": unsetValue,
			"server_protocol": unsetValue, "status_class": "4xx"}},
	{"a method of mixed case nginx refused", `log_format: combined`,
		`127.0.0.1 - - [30/Nov/2026:05:31:44 +0000] "Get /b HTTP/1.1" 400 157 "-" "-"`,
		map[string]string{"request_method": unsetValue, "uri": unsetValue}},
	{"a method with _ nginx took", `log_format: combined`,
		`127.0.0.1 - - [30/Nov/2026:05:31:44 +0000] "GET_X /c HTTP/1.1" 200 3 "-" "-"`,
		map[string]string{"request_method": "GET_X", "uri": "/c", "request_uri": "/c", "server_protocol": "HTTP/1.1"}},
	{"doubled spaces around the target", `log_format: combined`,
		`127.0.0.1 - - [30/Nov/2026:05:31:44 +0000] "GET  /a  HTTP/1.1" 200 3 "-" "-"`,
		map[string]string{"request": "GET  /a  HTTP/1.1", "request_method": "GET", "uri": "/a", "request_uri": "/a", "server_protocol": "HTTP/1.1"}},
	{"spaces after the protocol", `log_format: combined`,
		`127.0.0.1 - - [30/Nov/2026:05:31:44 +0000] "GET /a?x=1 HTTP/1.1  " 200 3 "-" "-"`,
		map[string]string{"request_method": "GET", "uri": "/a", "request_uri": "/a?x=1", "server_protocol": "HTTP/1.1  "}},
	{"a target in absolute form", `log_format: combined`,
		`127.0.0.1 - - [30/Nov/2026:05:31:44 +0000] "GET http://evil.example/p?q=1 HTTP/1.1" 200 3 "-" "-"`,
		map[string]string{"request_method": "GET", "uri": "/p", "request_uri": "/p?q=1", "server_protocol": "HTTP/1.1"}},
	// Without a path nginx takes a '/' of "://" as the path, and the query from its '?'.
	{"a target in absolute form without a path", `log_format: combined`,
		`127.0.0.1 - - [30/Nov/2026:05:31:44 +0000] "GET http://evil.example:80 HTTP/1.1" 200 3 "-" "-"`,
		map[string]string{"request_method": "GET", "uri": "/", "request_uri": "/", "server_protocol": "HTTP/1.1"}},
	{"a target in absolute form with a query and no path", `log_format: combined`,
		`127.0.0.1 - - [30/Nov/2026:05:31:44 +0000] "GET http://evil.example?q/r HTTP/1.1" 200 3 "-" "-"`,
		map[string]string{"request_method": "GET", "uri": "/", "request_uri": "?q/r", "server_protocol": "HTTP/1.1"}},
	{"a method and spaces alone", `log_format: combined`,
		`127.0.0.1 - - [30/Nov/2026:05:31:44 +0000] "GET  " 400 157 "-" "-"`,
		map[string]string{"request_method": unsetValue, "uri": unsetValue, "request_uri": unsetValue}},
	// $remote_user is what any client's Authorization header says (auth_basic or not), and
	// nginx escapes no space nor bracket of it: the request still counts, with its status.
	{"a user with spaces", `log_format: combined`,
		`127.0.0.1 - a b [30/Nov/2026:23:19:46 +0000] "GET /up HTTP/1.1" 502 157 "-" "curl/7.88.1"`,
		map[string]string{"remote_user": "a b", "time_local": "30/Nov/2026:23:19:46 +0000", "status": "502", "uri": "/up"}},
	{"a user holding what follows it", `log_format: combined`,
		`127.0.0.1 - a [b] c [30/Nov/2026:23:19:46 +0000] "GET /up HTTP/1.1" 502 157 "-" "-"`,
		map[string]string{"remote_user": "a [b] c", "time_local": "30/Nov/2026:23:19:46 +0000", "status": "502"}},
	{"a user with spaces in upstreaminfo", `log_format: upstreaminfo`,
		`10.0.0.1 - x] \x22GET / HTTP/1.1\x22 200 1 \x22-\x22 \x22y [01/Mar/2024:12:00:00 +0000] "GET / HTTP/1.1" 401 1 "-" "ua" 90 0.000 [a] [] - - - - ab`,
		map[string]string{"remote_user": `x] "GET / HTTP/1.1" 200 1 "-" "y`, "status": "401", "req_id": "ab"}},
	{"an Apache user with spaces", `apache_log_format: common`,
		`::1 - a b [10/Oct/2000:13:55:36 -0700] "GET /a HTTP/1.1" 401 -`,
		map[string]string{"u": "a b", "s": "401", "uri": "/a"}},
	// nginx's $uri is the path decoded: a client's %20 is a space in it.
	{"a path with spaces", `log_format: '$remote_addr $request_method $uri $status $request_time'`,
		`127.0.0.1 GET /a b[\x22x 502 0.001`,
		map[string]string{"uri": `/a b["x`, "status": "502", "request_time": "0.001"}},
	{"an Apache path with spaces", `apache_log_format: '%h %m %U %>s'`,
		`::1 GET /a b 404`,
		map[string]string{"U": "/a b", "s": "404"}},
	// A request line out of quotes: its spaces are every request's.
	{"an Apache request line out of quotes", `apache_log_format: '%h %r %>s %b'`,
		`::1 GET /a?b HTTP/1.1 200 5`,
		map[string]string{"r": "GET /a?b HTTP/1.1", "request_method": "GET", "uri": "/a", "server_protocol": "HTTP/1.1", "s": "200", "b": "5"}},
	{"a request line out of quotes", `log_format: '$remote_addr $request $status $request_time'`,
		`::1 GET /a HTTP/1.1 404 0.004`,
		map[string]string{"request": "GET /a HTTP/1.1", "request_method": "GET", "status": "404", "request_time": "0.004"}},
	{"apache takes a lower-case method", `apache_log_format: common`,
		`::1 - - [10/Oct/2000:13:55:36 -0700] "get  /a  HTTP/1.1" 501 -`,
		map[string]string{"request_method": "get", "uri": "/a", "request_uri": "/a", "server_protocol": "HTTP/1.1"}},
	{"a header at the end reads to the end of the line", `log_format: '$status $http_user_agent'`,
		`200 curl/8.5.0 (x; y) "z"`, map[string]string{"http_user_agent": `curl/8.5.0 (x; y) "z"`}},
	{"a line may end before the format's last variables", `log_format: '$status "$request" $request_time $upstream_response_time'`,
		`200 "GET / HTTP/1.1"`, map[string]string{"status": "200", "request_time": unsetValue, "upstream_response_time": unsetValue}},
	{"or before its last one", `log_format: '$status "$request" $request_time $upstream_response_time'`,
		`200 "GET / HTTP/1.1" 0.5`, map[string]string{"request_time": "0.5", "upstream_response_time": unsetValue}},
	{"$time_local before a space", `log_format: '$time_local $status'`,
		`01/Mar/2024:12:00:00 +0000 200`, map[string]string{"time_local": "01/Mar/2024:12:00:00 +0000", "status": "200"}},
	{"upstreaminfo with retries", `log_format: upstreaminfo`,
		`10.0.0.1 - - [01/Mar/2024:12:00:00 +0000] "POST /api HTTP/2.0" 502 150 "-" "ua" 321 0.050 [default-web-80] [] 10.1.0.5:8080, 10.1.0.6:8080 0, 150 0.004, 0.045 502, 502 7f3a`,
		map[string]string{"request_length": "321", "request_time": "0.050", "proxy_upstream_name": "default-web-80",
			"proxy_alternative_upstream_name": "", "upstream_addr": "10.1.0.5:8080, 10.1.0.6:8080",
			"upstream_response_length": "0, 150", "upstream_response_time": "0.004, 0.045", "upstream_status": "502, 502", "req_id": "7f3a"}},
	{"upstreaminfo after an internal redirect", `log_format: upstreaminfo`,
		`10.0.0.1 - - [01/Mar/2024:12:00:00 +0000] "GET / HTTP/1.1" 200 1 "-" "ua" 90 0.002 [a] [b] 10.1.0.5:8080 : 10.1.0.7:80 1 : 1 0.001 : 0.001 404 : 200 x`,
		map[string]string{"upstream_addr": "10.1.0.5:8080 : 10.1.0.7:80", "upstream_status": "404 : 200", "req_id": "x"}},
	{"upstreaminfo without upstream", `log_format: upstreaminfo`,
		`10.0.0.1 - - [01/Mar/2024:12:00:00 +0000] "GET / HTTP/1.1" 200 1 "-" "ua" 90 0.000 [] [] - - - - ab`,
		map[string]string{"upstream_addr": unsetValue, "upstream_response_time": unsetValue, "req_id": "ab"}},
	{"escape=json text", `{log_format: '$remote_addr "$http_user_agent" $status', log_format_escape: json}`,
		`10.0.0.1 "say \"hi\" \\ \u0001 é" 200`,
		map[string]string{"http_user_agent": "say \"hi\" \\ \x01 é", "status": "200", "status_class": "2xx"}},
	{"escape=json keeps -", `{log_format: '$remote_user $status', log_format_escape: json}`,
		`- 200`, map[string]string{"remote_user": "-"}},
	{"escape=none", `{log_format: '"$http_user_agent" $status', log_format_escape: none}`,
		`"a \x22 b" 200`, map[string]string{"http_user_agent": `a \x22 b`}},
	{"braced variable", `log_format: '${status}x${body_bytes_sent}'`,
		`200x15`, map[string]string{"status": "200", "body_bytes_sent": "15"}},
	{"variables in another case are nginx's lowercase ones", `log_format: '$Remote_Addr [$Time_Local] "$REQUEST" $Status'`,
		`10.0.0.1 [01/Mar/2024:12:00:00 +0000] "GET /a HTTP/1.1" 503`,
		map[string]string{"remote_addr": "10.0.0.1", "time_local": "01/Mar/2024:12:00:00 +0000", "request_method": "GET",
			"uri": "/a", "status": "503", "status_class": "5xx"}},
	{"format's own request_method wins", `log_format: '"$request" $request_method'`,
		`"GET /a HTTP/1.1" POST`, map[string]string{"request_method": "POST", "uri": "/a"}},
	{"apache combined", `apache_log_format: combined`,
		`127.0.0.1 - frank [10/Oct/2000:13:55:36 -0700] "GET /apache_pb.gif?x HTTP/1.0" 200 2326 "http://www.example.com/start.html" "Mozilla/4.08 \"quoted\" \\ \xc3\xa9"`,
		map[string]string{"h": "127.0.0.1", "l": unsetValue, "u": "frank", "t": "[10/Oct/2000:13:55:36 -0700]",
			"r": "GET /apache_pb.gif?x HTTP/1.0", "request_method": "GET", "uri": "/apache_pb.gif", "s": "200", "status_class": "2xx",
			"b": "2326", "i_referer": "http://www.example.com/start.html", "i_user_agent": `Mozilla/4.08 "quoted" \ é`}},
	// Apache's %b writes a size of 0 as "-" (the Common Log Format's); with a condition it
	// writes "-" for the statuses it does not log, which is no size at all.
	{"apache common, no body", `apache_log_format: common`,
		`::1 - - [10/Oct/2000:13:55:36 -0700] "HEAD / HTTP/1.1" 304 -`,
		map[string]string{"b": "0", "s": "304", "request_method": "HEAD", "l": unsetValue}},
	{"apache size with a condition", `apache_log_format: '%h %>s %200b %B'`,
		`::1 304 - 0`, map[string]string{"b": unsetValue, "s": "304", "B": "0"}},
	{"apache size of one digit", `apache_log_format: '%h %>s %b'`,
		`::1 200 7`, map[string]string{"b": "7", "s": "200"}},
	{"apache size of the final request", `apache_log_format: '%h %>s %>b'`,
		`::1 304 -`, map[string]string{"b": "0", "s": "304"}},
	{"apache size with a negated condition", `apache_log_format: '%h %>s %!304,200b'`,
		`::1 304 -`, map[string]string{"b": unsetValue, "s": "304"}},
	{"apache directives", `apache_log_format: '%a %>s %D %{X-Request-Id}i %U%q'`,
		`10.0.0.1 200 1234 abc /x?y=1`,
		map[string]string{"a": "10.0.0.1", "s": "200", "D": "1234", "i_x_request_id": "abc", "U": "/x", "q": "?y=1"}},
	// A negation without statuses is no condition: %!b writes a size of 0 as "-" as %b does.
	{"apache size negated without statuses", `apache_log_format: '%h %>s %!b'`,
		`::1 304 -`, map[string]string{"b": "0", "s": "304"}},
	// Directives of one letter that read the original request of an internal redirect
	// and the final one (an ErrorDocument, a rewrite passed through) are captures of
	// their own: the final one keeps the letter, and status_class and the request's parts
	// are the final request's, whichever comes first.
	{"apache original and final status", `apache_log_format: '%h %s %>s'`,
		`1.2.3.4 302 200`, map[string]string{"s_original": "302", "s": "200", "status_class": "2xx"}},
	{"apache final status first", `apache_log_format: '%h %>s %s'`,
		`1.2.3.4 200 302`, map[string]string{"s_original": "302", "s": "200", "status_class": "2xx"}},
	{"apache original and final path", `apache_log_format: '%h %<U %>U'`,
		`1.2.3.4 /a /b`, map[string]string{"U_original": "/a", "U": "/b"}},
	{"apache original and final duration", `apache_log_format: '%h %T %>T %{ms}T %D'`,
		`1.2.3.4 1 2 2500 2500123`, map[string]string{"T_original": "1", "T": "2", "T_ms": "2500", "D": "2500123"}},
	{"apache original and final request", `apache_log_format: '%h "%r" "%>r" %>s'`,
		`1.2.3.4 "GET /old HTTP/1.1" "GET /new?x HTTP/1.1" 200`,
		map[string]string{"r_original": "GET /old HTTP/1.1", "r": "GET /new?x HTTP/1.1", "uri": "/new", "request_uri": "/new?x"}},
	{"apache host of the original request", `apache_log_format: '%h %<h %>s'`,
		`1.2.3.4 5.6.7.8 200`, map[string]string{"h": "1.2.3.4", "h_original": "5.6.7.8"}},
	// A directive with a condition beside the same without one: "-" for the statuses it
	// does not log.
	{"apache status with a condition", `apache_log_format: '%h %>s %!200,304s %400,501{User-agent}i "%{User-agent}i"'`,
		`1.2.3.4 200 - - "curl/8"`, map[string]string{"s": "200", "s_original_not_200_304": unsetValue,
			"i_user_agent_400_501": unsetValue, "i_user_agent": "curl/8", "status_class": "2xx"}},
	{"apache status with a condition, logged", `apache_log_format: '%h %>s %!200,304s %400,501{User-agent}i "%{User-agent}i"'`,
		`1.2.3.4 404 404 - "curl/8"`, map[string]string{"s": "404", "s_original_not_200_304": "404",
			"i_user_agent_400_501": unsetValue, "i_user_agent": "curl/8"}},
	// Two conditions and no directive without one: the first keeps the name it had
	// before directives were named apart.
	{"apache two conditions of a header", `apache_log_format: '%h %>s %400,501{User-agent}i %!400,501{User-agent}i'`,
		`1.2.3.4 404 - curl/8`, map[string]string{"i_user_agent": unsetValue, "i_user_agent_not_400_501": "curl/8", "s": "404"}},
	// The same directive twice writes one value: its capture.
	{"apache directive twice", `apache_log_format: '%h %>s %h'`,
		`1.2.3.4 200 1.2.3.4`, map[string]string{"h": "1.2.3.4", "s": "200"}},
	// X-Forwarded-For, out of quotes, lists the addresses of each proxy joined by ", ", as a
	// client behind two of them has it: a space after a comma is in the value.
	{"X-Forwarded-For of two proxies", `log_format: '$http_x_forwarded_for - $remote_user [$time_local] "$request" $status'`,
		`203.0.113.7, 10.0.0.1 - - [01/Mar/2024:12:00:00 +0000] "GET / HTTP/1.1" 200`,
		map[string]string{"http_x_forwarded_for": "203.0.113.7, 10.0.0.1", "status": "200"}},
	{"X-Forwarded-For of one", `log_format: '$http_x_forwarded_for - $remote_user [$time_local] "$request" $status'`,
		`203.0.113.7 - - [01/Mar/2024:12:00:00 +0000] "GET / HTTP/1.1" 200`,
		map[string]string{"http_x_forwarded_for": "203.0.113.7", "status": "200"}},
	{"X-Forwarded-For without spaces", `log_format: '$http_x_forwarded_for - $remote_user [$time_local] "$request" $status'`,
		`203.0.113.7,10.0.0.1 - - [01/Mar/2024:12:00:00 +0000] "GET / HTTP/1.1" 200`,
		map[string]string{"http_x_forwarded_for": "203.0.113.7,10.0.0.1", "status": "200"}},
	{"X-Forwarded-For as the proxy adds it", `log_format: '$proxy_add_x_forwarded_for $status'`,
		`203.0.113.7, 10.0.0.1, 10.0.0.2 200`,
		map[string]string{"proxy_add_x_forwarded_for": "203.0.113.7, 10.0.0.1, 10.0.0.2", "status": "200"}},
	// Out of quotes before variables a line may leave out, it takes the fewest of its
	// items the line fits with: an item ending with a comma (a client's header
	// "203.0.113.7,") is its last, as nginx 1.22 wrote these lines.
	{"X-Forwarded-For ending with a comma", `log_format: '$remote_addr - $remote_user [$time_local] "$request" $status $body_bytes_sent "$http_referer" "$http_user_agent" $http_x_forwarded_for $request_time $upstream_response_time'`,
		`127.0.0.1 - - [30/Nov/2026:05:31:44 +0000] "GET /e HTTP/1.1" 200 3 "-" "-" 203.0.113.7, 0.000 -`,
		map[string]string{"http_x_forwarded_for": "203.0.113.7,", "request_time": "0.000", "upstream_response_time": unsetValue}},
	{"X-Forwarded-For of two headers, the last empty", `log_format: '$remote_addr - $remote_user [$time_local] "$request" $status $body_bytes_sent "$http_referer" "$http_user_agent" $http_x_forwarded_for $request_time $upstream_response_time'`,
		`127.0.0.1 - - [30/Nov/2026:05:31:44 +0000] "GET /f HTTP/1.1" 200 3 "-" "-" 203.0.113.7,  0.000 -`,
		map[string]string{"http_x_forwarded_for": "203.0.113.7, ", "request_time": "0.000", "upstream_response_time": unsetValue}},
	{"X-Forwarded-For of two proxies before optional variables", `log_format: '$remote_addr - $remote_user [$time_local] "$request" $status $body_bytes_sent "$http_referer" "$http_user_agent" $http_x_forwarded_for $request_time $upstream_response_time'`,
		`127.0.0.1 - - [30/Nov/2026:05:31:44 +0000] "GET /g HTTP/1.1" 200 3 "-" "-" 203.0.113.7, 10.0.0.1 0.000 0.001`,
		map[string]string{"http_x_forwarded_for": "203.0.113.7, 10.0.0.1", "request_time": "0.000", "upstream_response_time": "0.001"}},
	// Before a header read to the end of the line, it takes the most.
	{"X-Forwarded-For before a header at the end", `log_format: '$remote_addr $http_x_forwarded_for $status $host'`,
		`127.0.0.1 203.0.113.7, 10.0.0.1 200 example.com`,
		map[string]string{"http_x_forwarded_for": "203.0.113.7, 10.0.0.1", "status": "200", "host": "example.com"}},
	{"apache X-Forwarded-For", `apache_log_format: '%{X-Forwarded-For}i %l %u %t \"%r\" %>s %b'`,
		`203.0.113.7, 10.0.0.1 - - [01/Mar/2024:12:00:00 +0000] "GET / HTTP/1.1" 200 5`,
		map[string]string{"i_x_forwarded_for": "203.0.113.7, 10.0.0.1", "s": "200"}},
	// A time of a strftime format (%{...}t) holds the spaces the format writes: followed
	// by a space, it reads as many, as $time_local reads its one.
	{"apache strftime time, a space", `apache_log_format: '%h %{%Y-%m-%d %H:%M:%S}t \"%r\" %>s'`,
		`10.0.0.1 2024-03-01 12:00:00 "GET / HTTP/1.1" 200`,
		map[string]string{"h": "10.0.0.1", "t__y__m__d__h__m__s": "2024-03-01 12:00:00", "s": "200"}},
	{"apache strftime time, spaces", `apache_log_format: '%{%a %b %d %H:%M:%S %Y}t %h %>s'`,
		`Fri Mar 01 12:00:00 2024 10.0.0.1 200`,
		map[string]string{"t__a__b__d__h__m__s__y": "Fri Mar 01 12:00:00 2024", "h": "10.0.0.1", "s": "200"}},
	// The conversions that write spaces themselves, in the C locale: %c (its day of two
	// digits) and %r, also after an E or O modifier.
	{"apache strftime time, %c", `apache_log_format: '%{%c}t %h %>s'`,
		`Fri Mar 15 12:00:00 2024 10.0.0.1 200`,
		map[string]string{"t__c": "Fri Mar 15 12:00:00 2024", "h": "10.0.0.1", "s": "200"}},
	{"apache strftime time, %Ec", `apache_log_format: '%{%Ec}t %h %>s'`,
		`Fri Mar 15 12:00:00 2024 10.0.0.1 200`,
		map[string]string{"t__ec": "Fri Mar 15 12:00:00 2024", "h": "10.0.0.1", "s": "200"}},
	{"apache strftime time, %r", `apache_log_format: '%{%r}t %h %>s'`,
		`12:00:00 PM 10.0.0.1 200`,
		map[string]string{"t__r": "12:00:00 PM", "h": "10.0.0.1", "s": "200"}},
	// A number padded with a space (%e, %k, %l, glibc's %_d, the day of %c) writes one
	// more space on the numbers of one digit: "[ 5/Nov/2026: 5:00:00 +0000]".
	{"apache strftime time, days and hours padded", `apache_log_format: '%h %{[%e/%b/%Y:%k:%M:%S %z]}t \"%r\" %>s'`,
		`10.0.0.1 [ 5/Nov/2026: 5:00:00 +0000] "GET / HTTP/1.1" 200`,
		map[string]string{"h": "10.0.0.1", "t___e__b__y__k__m__s__z_": "[ 5/Nov/2026: 5:00:00 +0000]", "request_method": "GET", "s": "200"}},
	{"apache strftime time, padded numbers of two digits", `apache_log_format: '%h %{[%e/%b/%Y:%k:%M:%S %z]}t \"%r\" %>s'`,
		`10.0.0.1 [15/Nov/2026:15:00:00 +0000] "GET / HTTP/1.1" 200`,
		map[string]string{"t___e__b__y__k__m__s__z_": "[15/Nov/2026:15:00:00 +0000]", "s": "200"}},
	{"apache strftime time, glibc's _ flag", `apache_log_format: '%h %{%_d/%b/%Y %l:%M}t %>s'`,
		`10.0.0.1  5/Nov/2026  5:00 200`,
		map[string]string{"h": "10.0.0.1", "t___d__b__y__l__m": " 5/Nov/2026  5:00", "s": "200"}},
	{"apache strftime time, %c of a day of one digit", `apache_log_format: '%{%c}t %h %>s'`,
		`Thu Mar  1 12:00:00 2024 10.0.0.1 200`,
		map[string]string{"t__c": "Thu Mar  1 12:00:00 2024", "h": "10.0.0.1", "s": "200"}},
	{"apache strftime time, padded at the end of the line", `apache_log_format: '%>s %{%b %e}t'`,
		`200 Mar  1`, map[string]string{"s": "200", "t__b__e": "Mar  1"}},
	// nginx's $date_local and $date_gmt (of its SSI module, which nginx's packages build
	// in) are written by SSI's default timefmt, "%A, %d-%b-%Y %H:%M:%S %Z": three spaces,
	// its numbers padded with zeros.
	{"nginx $date_local out of quotes", `log_format: '$date_local $status $date_gmt [$time_local]'`,
		`Monday, 30-Nov-2026 08:54:44 UTC 200 Monday, 30-Nov-2026 08:54:44 GMT [30/Nov/2026:08:54:44 +0000]`,
		map[string]string{"date_local": "Monday, 30-Nov-2026 08:54:44 UTC", "status": "200", "date_gmt": "Monday, 30-Nov-2026 08:54:44 GMT"}},
	{"apache strftime time, Apache's example", `apache_log_format: '%h [%{%d/%b/%Y %T}t.%{msec_frac}t %{%z}t] \"%r\" %>s'`,
		`10.0.0.1 [01/Mar/2024 12:00:00.123 +0000] "GET / HTTP/1.1" 200`,
		map[string]string{"t__d__b__y__t": "01/Mar/2024 12:00:00", "t_msec_frac": "123", "t__z": "+0000", "s": "200"}},
	{"json template", `{log_format: '{"time":"$time_iso8601","req":{"line":"$request","status":$status},"ua":"$http_user_agent","mixed":"$host:$server_port"}', log_format_escape: json}`,
		`{"time":"2024-03-01T12:00:00+00:00","req":{"line":"GET /p?q HTTP/1.1","status":503},"ua":"a \"b\" é","mixed":"h:80"}`,
		map[string]string{"time_iso8601": "2024-03-01T12:00:00+00:00", "request": "GET /p?q HTTP/1.1", "request_method": "GET",
			"request_uri": "/p?q", "uri": "/p", "server_protocol": "HTTP/1.1", "status": "503", "status_class": "5xx", "http_user_agent": `a "b" é`}},
	{"json template, escaped request", `{log_format: '{"r":"$request","s":"$status"}', log_format_escape: json}`,
		`{"r":"GET /caf\u00e9 HTTP/1.1","s":"200"}`,
		map[string]string{"request_method": "GET", "uri": "/café", "status_class": "2xx"}},
	{"json template read as text, JSON's \\u00HH is U+00HH", `log_format: '{"ua":"$http_user_agent","s":"$status"}'`,
		`{"ua":"caf\u00E9 \u0001 \xC3\xA9","s":"200"}`, map[string]string{"http_user_agent": "café \x01 é", "status": "200"}},
	{"json template, escaped key", `{log_format: '{"st\/x":"$status","c\u0061":{"b":$body_bytes_sent}}', log_format_escape: json}`,
		`{"st\/x":"503","ca":{"b":12}}`, map[string]string{"status": "503", "body_bytes_sent": "12"}},
}

// formatConfig is a config with one input of the case's format and one rule whose labels
// are the captures the case checks, each label named after its capture.
func formatConfig(c formatCase) string {
	var labels []string
	for _, name := range slices.Sorted(maps.Keys(c.want)) {
		labels = append(labels, fmt.Sprintf("%s: '${%s}'", name, name))
	}
	input := c.input
	if !strings.HasPrefix(input, "{") {
		input = "{" + input + "}"
	}
	return fmt.Sprintf("inputs:\n  - name: web\n    path: /a\n    <<: %s\nrules:\n  - name: r\n    labels: {%s}\n", input, strings.Join(labels, ", "))
}

// TestLogFormatCaptures checks what a line of each kind of format gives its captures,
// through Parse (which processes only the captures its rules read) and Explain (which
// processes all), on each matcher.
func TestLogFormatCaptures(t *testing.T) {
	for _, c := range formatCases {
		cfg := mustParse(t, formatConfig(c))
		rule := cfg.Rules[0]
		for _, m := range matchers {
			t.Run(m.name+"/"+c.name, func(t *testing.T) {
				p, err := build(cfg.Rules, m.engine)
				if err != nil {
					t.Fatal(err)
				}
				sink := &labelSink{}
				p.Parse("web", []byte(c.line), sink)
				if len(sink.events) != 1 {
					t.Fatalf("Parse: %d events, want one", len(sink.events))
				}
				for i, l := range rule.Labels {
					want := c.want[l.Name]
					if want == unsetValue {
						want = ""
					}
					if got := sink.events[0][i]; got != want {
						t.Errorf("Parse: %s = %q, want %q", l.Name, got, want)
					}
				}
				ex := p.Explain("web", []byte(c.line))
				got := map[string]string{}
				for _, cp := range ex.Rules[0].Captures {
					v := string(cp.Value)
					if !cp.Matched {
						v = unsetValue
					}
					got[cp.Name] = v
				}
				for name, want := range c.want {
					if got[name] != want {
						t.Errorf("Explain: %s = %q, want %q", name, got[name], want)
					}
				}
			})
		}
	}
}

// labelSink keeps the label values of each event.
type labelSink struct{ events [][]string }

func (s *labelSink) Event(e *Event) {
	var ls []string
	for _, l := range e.Labels {
		ls = append(ls, string(l))
	}
	s.events = append(s.events, ls)
}

func (s *labelSink) Drop(int, DropReason) {}

// TestLogFormatValuesAndTimes: a value logged as "-" is no value, and the time variables
// read without a layout.
func TestLogFormatValuesAndTimes(t *testing.T) {
	cfg := mustParse(t, `
inputs:
  - {name: web, path: /a, log_format: '[$time_local] $time_iso8601 $msec $status $upstream_response_time'}
rules:
  - {name: local, timestamp: {capture: time_local}}
  - {name: iso, timestamp: {capture: time_iso8601}}
  - {name: msec, timestamp: {capture: msec}}
  - {name: upstream, value: upstream_response_time, where: {status_class: '^5xx$'}}
`)
	parseOnEachMatcher(t, cfg.Rules, "web", 3, func(i int) string { return fmt.Sprint(i) }, func(i int) string {
		return []string{
			`[01/Mar/2024:13:00:00 +0100] 2024-03-01T13:00:00+01:00 1709294400.999 502 0.004`,
			`[01/Mar/2024:13:00:00 +0100] 2024-03-01T13:00:00+01:00 1709294400.000 504 -`,
			`[01/Mar/2024:13:00:00 +0100] 2024-03-01T13:00:00+01:00 17092944x 200 -`,
		}[i]
	}, func(t *testing.T, i int, got []record) {
		want := []record{
			{Rule: "local", Value: 1, Time: mar1, HasTime: true},
			{Rule: "iso", Value: 1, Time: mar1, HasTime: true},
			{Rule: "msec", Value: 1, Time: mar1, HasTime: true},
		}
		switch i {
		case 0:
			want = append(want, record{Rule: "upstream", Value: 0.004})
		case 1:
			want = append(want, record{Rule: "upstream", Drop: NoValue.String()})
		case 2:
			want[2] = record{Rule: "msec", Drop: BadTimestamp.String()}
		}
		if !slices.Equal(got, want) {
			t.Errorf("got %v\nwant %v", got, want)
		}
	})
}

// TestUpstreamListValues: a value rule over an upstream variable reads the first upstream
// tried; "-" there is no value. So in a JSON template, and in a JSON object whose members
// are named after the variables (the json candidate), which hold the list as a string.
func TestUpstreamListValues(t *testing.T) {
	// Each line is a status, an upstream response time and an upstream status.
	lines := [][3]string{{"502", "0.004, 0.045", "502, 200"}, {"200", "0.010 : 0.002", "404 : 200"}, {"200", "-, 0.5", "-, 200"},
		{"499", "-", "-"}, {"200", "0.125", "200"}, {"200", "x, 0.1", "200"}}
	want := [][]record{
		{{Rule: "upstream", Value: 0.004}, {Rule: "status", Value: 502}},
		{{Rule: "upstream", Value: 0.010}, {Rule: "status", Value: 200}},
		{{Rule: "upstream", Drop: NoValue.String()}, {Rule: "status", Value: 200}},
		{{Rule: "upstream", Drop: NoValue.String()}, {Rule: "status", Value: 499}},
		{{Rule: "upstream", Value: 0.125}, {Rule: "status", Value: 200}},
		{{Rule: "upstream", Drop: BadNumber.String()}, {Rule: "status", Value: 200}},
	}
	jsonLine := func(l [3]string) string {
		return fmt.Sprintf(`{"status":%s,"upstream_response_time":"%s","upstream_status":"%s"}`, l[0], l[1], l[2])
	}
	for _, f := range []struct {
		name, logFormat string
		line            func([3]string) string
	}{
		{"text", `'$status $upstream_response_time $upstream_status'`, func(l [3]string) string { return strings.Join(l[:], " ") }},
		{"json template", `"log_format j escape=json '{\"status\":$status,\"upstream_response_time\":\"$upstream_response_time\",\"upstream_status\":\"$upstream_status\"}';"`, jsonLine},
		{"json object", `[json]`, jsonLine},
	} {
		t.Run(f.name, func(t *testing.T) {
			cfg := mustParse(t, `
inputs: [{name: web, path: /a, log_format: `+f.logFormat+`}]
rules:
  - {name: upstream, value: upstream_response_time}
  - {name: status, value: status}
`)
			parseOnEachMatcher(t, cfg.Rules, "web", len(lines), func(i int) string { return strings.Join(lines[i][:], " ") }, func(i int) string { return f.line(lines[i]) },
				func(t *testing.T, i int, got []record) {
					if !slices.Equal(got, want[i]) {
						t.Errorf("got %v, want %v", got, want[i])
					}
				})
		})
	}
}

// TestLogFormatMisfits: lines that do not fit their format are not read, whatever they
// hold: more fields than the format (a line of another format), or, with escape=none
// lines read as escape=default, a raw quote making a value look like the next fields.
func TestLogFormatMisfits(t *testing.T) {
	for _, c := range []struct{ name, input, line string }{
		{"a field more", `log_format: combined`, `10.0.0.1 - - [01/Mar/2024:12:00:00 +0000] "GET / HTTP/1.1" 200 5 "-" "ua" "10.1.1.1"`},
		{"a number more", `log_format: '$status $request_time'`, `200 0.004 0.003`},
		{"a forged line in the request", `log_format: '"$request" $status $body_bytes_sent "$http_user_agent" $request_time'`,
			`"GET / HTTP/1.1" 500 1 "x" 0.001" 400 153 "x" 0.001`},
		{"a quote in the user agent", `log_format: '"$request" $status "$http_user_agent" $request_time $upstream_response_time'`,
			`"GET / HTTP/1.1" 200 "x" 500 1 "y" 0.001 0.001`},
		{"the text of another format", `log_format: combined`, `2024/03/01 12:00:00 [error] 12#12: *1 open() failed`},
		{"apache, a field more", `apache_log_format: common`, `::1 - - [10/Oct/2000:13:55:36 -0700] "GET / HTTP/1.0" 200 5 "-"`},
	} {
		cfg := mustParse(t, formatConfig(formatCase{input: c.input, want: map[string]string{}}))
		for _, m := range matchers {
			t.Run(m.name+"/"+c.name, func(t *testing.T) {
				p, err := build(cfg.Rules, m.engine)
				if err != nil {
					t.Fatal(err)
				}
				sink := &labelSink{}
				p.Parse("web", []byte(c.line), sink)
				if len(sink.events) != 0 {
					t.Errorf("%q read as %v", c.line, sink.events)
				}
			})
		}
	}
}

// TestPathEnd checks pathEnd against the first '?' or space found the plain way, on paths
// of lengths around its 8-byte words, with bytes next to ' ' and '?' (which a word's test
// may flag falsely above a true find) and stops at every position of a word.
func TestPathEnd(t *testing.T) {
	long := strings.Repeat("/ab", 30)
	targets := []string{"", "/", "/a?b", "/a b", "?", " ", "/a?b c", "/a b?c", long, long + "?x", long + " HTTP/1.1",
		long[:63] + "?", long[:64] + "?", long[:65] + " ", long + long + "?q" + long}
	for n := range 20 {
		for _, stop := range []string{" ", "?"} {
			targets = append(targets, strings.Repeat("!", n)+stop+"@>?", strings.Repeat("\x1f", n)+stop)
		}
	}
	r := rand.New(rand.NewPCG(3, 4))
	for range 300 {
		b := make([]byte, r.IntN(200))
		for i := range b {
			b[i] = "/a?é \xff!@>\x1f"[r.IntN(10)]
		}
		targets = append(targets, string(b))
	}
	for i, target := range targets {
		for _, from := range []int{0, 4} {
			t.Run(fmt.Sprintf("%d/%d", i, from), func(t *testing.T) {
				req := []byte("GET " + target)
				want := len(req)
				if k := strings.IndexAny(string(req[from:]), "? "); k >= 0 {
					want = from + k
				}
				if got := pathEnd(req, from); got != want {
					t.Errorf("pathEnd(%q, %d) = %d, want %d", req, from, got, want)
				}
			})
		}
	}
}

// TestAppendClass checks a status class written as a word against the same bytes appended
// one by one, with every room from none to more than a word after the text: the bytes before
// it are left as they were and the class ends the text.
func TestAppendClass(t *testing.T) {
	for room := range 10 {
		for _, d := range []byte("0259") {
			buf := make([]byte, 5, 5+room)
			copy(buf, "ab\xffcd")
			got := appendClass(buf, d)
			want := append([]byte("ab\xffcd"), d, 'x', 'x')
			if string(got) != string(want) {
				t.Errorf("room %d, digit %c: %q, want %q", room, d, got, want)
			}
		}
	}
}

// A value rule over Apache's %b sums a response without a body, which it writes "-", as 0
// (as nginx's $body_bytes_sent writes it) rather than dropping it as no value: the rule's
// events are every response, on each matcher.
func TestApacheSizeDashIsZero(t *testing.T) {
	c := mustParse(t, `
inputs: [{name: web, path: /a, apache_log_format: common}]
rules:
  - {name: bytes, value: b, labels: {s: '${s}'}}
`)
	lines := []string{
		`::1 - - [10/Oct/2000:13:55:36 -0700] "GET / HTTP/1.1" 200 512`,
		`::1 - - [10/Oct/2000:13:55:36 -0700] "GET / HTTP/1.1" 304 -`,
	}
	want := [][]record{{{Rule: "bytes", Labels: "s=200", Value: 512}}, {{Rule: "bytes", Labels: "s=304", Value: 0}}}
	parseOnEachMatcher(t, c.Rules, "web", len(lines), func(i int) string { return lines[i] }, func(i int) string { return lines[i] },
		func(t *testing.T, i int, got []record) {
			if !slices.Equal(got, want[i]) {
				t.Errorf("%q: got %v, want %v", lines[i], got, want[i])
			}
		})
}
