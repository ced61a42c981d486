package formatscan

import (
	"errors"
	"regexp"
	"testing"

	"github.com/logwindow/logwindow_exporter/config/logformat"
)

// FuzzScanner compiles any text as an nginx format (with each escaping) or an Apache one,
// and reads any line with its scanner: where the scanner is built, it must agree with
// regexp on the format's regex, the same fit and the same captures, and decide the line
// itself unless it takes more than maxItems reads (see sameAsRegexp).
func FuzzScanner(f *testing.F) {
	for _, name := range sortedKeys(logformat.NginxPresets) {
		f.Add(name, uint8(0), false, `10.0.0.1 - - [01/Mar/2024:12:00:00 +0000] "GET / HTTP/1.1" 200 1 "-" "ua \"x\" \x5C" 0.002 0.001, 0.002 : 0.003`)
	}
	f.Add(logformat.NginxPresets["upstreaminfo"], uint8(0), false, `10.0.0.1 - - [01/Mar/2024:12:00:00 +0000] "GET / HTTP/1.1" 200 1 "-" "ua" 90 0.002 [a] [b] 10.1.0.5:8080, 10.1.0.6:80 : 10.0.0.9:80 1, 2 0.001, 0.002 502, 200 x`)
	f.Add(`$remote_addr "$http_user_agent" ${status}x$msec`, uint8(1), false, `1.2.3.4 "a \"b\" \u0001" 200x1.5`)
	f.Add("combined", uint8(0), true, `::1 - - [01/Mar/2024:12:00:00 +0000] "GET /\x41 HTTP/1.1" 200 - "-" "\é \xzz"`)
	f.Add(`%t%q %{X}i`, uint8(0), true, "[x]?a=b c d")
	f.Add(`$upstream_addr $a;$b`, uint8(0), false, "p : q;r")
	f.Add(`$http_x_forwarded_for - $status`, uint8(0), false, "a, - 200")
	f.Add(`$remote_addr $http_x_forwarded_for $request_time $upstream_response_time`, uint8(0), false, "1.2.3.4 a, b, 0.1 0.2, 0.3")
	f.Add(`$remote_addr $http_x_forwarded_for $status $host`, uint8(0), false, "1.2.3.4 a, b, 200 h x")
	f.Add(`%{X-Forwarded-For}i %{%Y-%m-%d %H:%M}t %>s`, uint8(0), true, "a, b 2024-03-01 12:00 200")
	f.Fuzz(func(t *testing.T, text string, escape uint8, apache bool, line string) {
		var fm *logformat.Format
		var err error
		if apache {
			fm, err = logformat.ParseApache(text)
		} else {
			fm, err = logformat.ParseNginx(text, []logformat.Escape{logformat.EscapeDefault, logformat.EscapeJSON, logformat.EscapeNone, logformat.EscapeEither}[escape%4])
		}
		if err != nil || fm.JSON() || len(fm.Captures) > 64 {
			return // regexp's time on formats of hundreds of variables would stall the fuzzer
		}
		re := regexp.MustCompile(fm.Regex)
		s, err := Compile(fm, regexpMatcher{regexp.MustCompile(fm.MisfitRegex())})
		if errors.Is(err, ErrUnsupported) {
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		sameAsRegexp(t, fm, s, re, nil, []byte(line))
	})
}
