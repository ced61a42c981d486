package status

import (
	"bytes"
	"io"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/logwindow/logwindow_exporter/config"
)

// TestLineTesterRefusesWhatItCannotRead posts to the line tester over a socket what a
// careless client sends: the lines in a body that is not a URL-encoded form (curl -F, a
// JSON body, none), a form without the field lines (a log posted as it is), or lines for
// an input the config has not. Each is refused, saying what was wrong, rather than
// answered 200 with "No line was given" or explained as another input.
func TestLineTesterRefusesWhatItCannotRead(t *testing.T) {
	var multi bytes.Buffer
	mw := multipart.NewWriter(&multi)
	_ = mw.WriteField("input", "web")
	_ = mw.WriteField("lines", "a line")
	_ = mw.Close()
	cases := []struct {
		name, contentType, body string
		code                    int
		contains                string
	}{
		{"form", "application/x-www-form-urlencoded", "input=web&lines=a", http.StatusOK, `<code>l=&#34;a&#34;</code>`},
		{"form with a charset", "application/x-www-form-urlencoded; charset=utf-8", "input=web&lines=a", http.StatusOK, `<code>l=&#34;a&#34;</code>`},
		{"form of no named input", "application/x-www-form-urlencoded", "input=&lines=a", http.StatusOK, `<code>l=&#34;a&#34;</code>`},
		{"multipart form", mw.FormDataContentType(), multi.String(), http.StatusUnsupportedMediaType, "application/x-www-form-urlencoded"},
		{"JSON", "application/json", `{"input": "web", "lines": "a"}`, http.StatusUnsupportedMediaType, "application/json"},
		{"no content type", "", "input=web&lines=a", http.StatusUnsupportedMediaType, "application/x-www-form-urlencoded"},
		{"unknown input", "application/x-www-form-urlencoded", "input=wbe&lines=a", http.StatusBadRequest, `"wbe"`},
		{"form without lines", "application/x-www-form-urlencoded", "input=web", http.StatusBadRequest, "lines"},
		{"log posted as it is (curl --data-binary @access.log)", "application/x-www-form-urlencoded", `10.0.0.1 - - [14/Nov/2023:22:13:20 +0000] "GET / HTTP/1.1" 200 1`, http.StatusBadRequest, "--data-urlencode lines@"},
		{"empty lines", "application/x-www-form-urlencoded", "input=web&lines=", http.StatusOK, "No line was given"},
		// Each would be read first alone: the second file's lines left out, unsaid.
		{"lines twice (curl --data-urlencode lines@a.log --data-urlencode lines@b.log)", "application/x-www-form-urlencoded", "input=web&lines=a&lines=b", http.StatusBadRequest, "lines 2 times"},
		{"input twice", "application/x-www-form-urlencoded", "input=web&input=wbe&lines=a", http.StatusBadRequest, "input 2 times"},
		// Taken for no ends=browser, a line of the cap would be told skipped, unsaid.
		{"ends misspelt", "application/x-www-form-urlencoded", "input=web&lines=a&ends=Browser", http.StatusBadRequest, `ends is "Browser"`},
		{"ends empty", "application/x-www-form-urlencoded", "input=web&lines=a&ends=", http.StatusBadRequest, `ends is ""`},
		{"ends twice", "application/x-www-form-urlencoded", "input=web&lines=a&ends=browser&ends=browser", http.StatusBadRequest, "ends 2 times"},
		{"ends of the page's form", "application/x-www-form-urlencoded", "input=web&lines=a&ends=browser", http.StatusOK, `<code>l=&#34;a&#34;</code>`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			src := &fakeSource{cfg: testConfig(t), input: "none"}
			srv := httptest.NewServer(testMux(t, src, true))
			defer srv.Close()
			req, err := http.NewRequest(http.MethodPost, srv.URL+ExplainPath, strings.NewReader(c.body))
			if err != nil {
				t.Fatal(err)
			}
			if c.contentType != "" {
				req.Header.Set("Content-Type", c.contentType)
			}
			resp, err := srv.Client().Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			if err != nil {
				t.Fatal(err)
			}
			if resp.StatusCode != c.code || !strings.Contains(string(body), c.contains) {
				t.Errorf("HTTP %d %.300q; want %d with %q", resp.StatusCode, body, c.code, c.contains)
			}
			if c.code != http.StatusOK && src.input != "none" {
				t.Errorf("lines explained for a request refused with HTTP %d", resp.StatusCode)
			}
		})
	}
}

// Inputs without a name share the name "", whose formats may differ: the form offers each
// by its path or socket, and the tester reads a line of the one it names; "" is refused
// while it could be several.
func TestLineTesterNamesUnnamedInputs(t *testing.T) {
	for _, tc := range []struct {
		name, inputs string
		page         []string // what the page's form has
		posts        map[string]int
	}{
		{"two without a name", "[{name: web, path: /x.log}, {path: /a.log}, {syslog: 'udp://127.0.0.1:5140'}]",
			[]string{`<option value="web">web</option>`, `<option value="/a.log">/a.log</option>`, `<option value="udp://127.0.0.1:5140">udp://127.0.0.1:5140</option>`},
			map[string]int{"web": http.StatusOK, "/a.log": http.StatusOK, "udp://127.0.0.1:5140": http.StatusOK, "": http.StatusBadRequest, "/b.log": http.StatusBadRequest}},
		{"one without a name", "[{name: web, path: /x.log}, {path: /a.log}]",
			[]string{`<option value="/a.log">/a.log</option>`},
			map[string]int{"/a.log": http.StatusOK, "": http.StatusOK}},
		{"all named", "[{name: web, path: /x.log}]",
			[]string{`<option value="">(unnamed input)</option>`},
			map[string]int{"web": http.StatusOK, "": http.StatusOK, "/x.log": http.StatusBadRequest}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := config.Parse([]byte("inputs: "+tc.inputs+"\nrules: [{name: r, match: 'x'}]\n"), "rules.yaml")
			if err != nil {
				t.Fatal(err)
			}
			src := &fakeSource{cfg: cfg}
			mux := testMux(t, src, true)
			rec := httptest.NewRecorder()
			mux.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/", nil))
			for _, want := range tc.page {
				if !strings.Contains(rec.Body.String(), want) {
					t.Errorf("the page has no %s", want)
				}
			}
			if strings.Contains(rec.Body.String(), "(unnamed input)") != (tc.name == "all named") {
				t.Errorf("the page offers (unnamed input) with inputs %s", tc.inputs)
			}
			for input, code := range tc.posts {
				src.input = "none"
				rec := post(mux, "input="+url.QueryEscape(input)+"&lines=a")
				if rec.Code != code {
					t.Errorf("input %q: HTTP %d %.200q, want %d", input, rec.Code, rec.Body.String(), code)
				}
				if code == http.StatusOK && src.input != input {
					t.Errorf("input %q: the line explained for input %q", input, src.input)
				}
				// An empty input is no way out where it is refused too.
				if code != http.StatusOK && tc.posts[""] != http.StatusOK && strings.Contains(rec.Body.String(), "leave input empty") {
					t.Errorf("input %q: %q advises an empty input, which is refused", input, rec.Body.String())
				}
			}
		})
	}
}

// TestLineTesterCountsLines posts lines as files and pastes end them: a newline after the
// last, blank lines between. Blank lines are skipped and count toward no bound, so 100
// lines of a file are all explained and not told clipped.
func TestLineTesterCountsLines(t *testing.T) {
	lines := func(n int, sep string) string { return strings.Repeat("x"+sep, n) }
	for _, c := range []struct {
		name, lines string
		explained   int
		clipped     bool
	}{
		{"100 lines, the last ended", lines(MaxExplainLines, "\n"), MaxExplainLines, false},
		{"100 lines ended by CRLF", lines(MaxExplainLines, "\r\n"), MaxExplainLines, false},
		{"100 lines between blank ones", "\n\n" + lines(MaxExplainLines, "\n\n"), MaxExplainLines, false},
		{"101 lines", lines(MaxExplainLines+1, "\n"), MaxExplainLines, true},
		{"101 lines between blank ones", lines(MaxExplainLines+1, "\n\r\n"), MaxExplainLines, true},
		{"blank lines only", "\n\r\n\n", 0, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			mux := testMux(t, &fakeSource{cfg: testConfig(t)}, true)
			rec := post(mux, "input=web&lines="+url.QueryEscape(c.lines))
			if rec.Code != http.StatusOK {
				t.Fatalf("HTTP %d: %.300s", rec.Code, rec.Body)
			}
			body := rec.Body.String()
			if n := strings.Count(body, `<div class="line">`); n != c.explained {
				t.Errorf("%d lines explained, want %d", n, c.explained)
			}
			if clipped := strings.Contains(body, "Only the first"); clipped != c.clipped {
				t.Errorf("told clipped: %v, want %v", clipped, c.clipped)
			}
		})
	}
}

// TestPageFormSaysItsLineEnds: the page's form sends EndsBrowser, since a browser sends
// every line end of a textarea as CRLF whatever was pasted; without it the tester would
// count that "\r" against the line cap and tell an LF line of the cap skipped.
func TestPageFormSaysItsLineEnds(t *testing.T) {
	mux := testMux(t, &fakeSource{cfg: testConfig(t)}, true)
	rec := httptest.NewRecorder()
	mux.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/", nil))
	if want := `<input type="hidden" name="` + EndsField + `" value="` + EndsBrowser + `">`; !strings.Contains(rec.Body.String(), want) {
		t.Errorf("the page's form has no %s", want)
	}
}
