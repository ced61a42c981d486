package status

import (
	"bytes"
	"io"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
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
		{"form", "application/x-www-form-urlencoded", "input=web&lines=a", http.StatusOK, `<code>l="a"</code>`},
		{"form with a charset", "application/x-www-form-urlencoded; charset=utf-8", "input=web&lines=a", http.StatusOK, `<code>l="a"</code>`},
		{"form of no named input", "application/x-www-form-urlencoded", "input=&lines=a", http.StatusOK, `<code>l="a"</code>`},
		{"multipart form", mw.FormDataContentType(), multi.String(), http.StatusUnsupportedMediaType, "application/x-www-form-urlencoded"},
		{"JSON", "application/json", `{"input": "web", "lines": "a"}`, http.StatusUnsupportedMediaType, "application/json"},
		{"no content type", "", "input=web&lines=a", http.StatusUnsupportedMediaType, "application/x-www-form-urlencoded"},
		{"unknown input", "application/x-www-form-urlencoded", "input=wbe&lines=a", http.StatusBadRequest, `"wbe"`},
		{"form without lines", "application/x-www-form-urlencoded", "input=web", http.StatusBadRequest, "lines"},
		{"log posted as it is (curl --data-binary @access.log)", "application/x-www-form-urlencoded", `10.0.0.1 - - [14/Nov/2023:22:13:20 +0000] "GET / HTTP/1.1" 200 1`, http.StatusBadRequest, "--data-urlencode lines@"},
		{"empty lines", "application/x-www-form-urlencoded", "input=web&lines=", http.StatusOK, "No line was given"},
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
