package status

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"testing/synctest"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/logwindow/logwindow_exporter/config"
	"github.com/logwindow/logwindow_exporter/internal/explain"
)

// testMux serves the page of one input named web over src.
func testMux(t testing.TB, src Source, lineTester bool) *http.ServeMux {
	t.Helper()
	mux := http.NewServeMux()
	Register(mux, Options{Name: "test", Source: src, Gatherer: prometheus.NewRegistry(), MetricsPath: "/metrics", LineTester: lineTester})
	return mux
}

func testConfig(t testing.TB) *config.Config {
	t.Helper()
	cfg, err := config.Parse([]byte("inputs: [{name: web, path: /x.log}]\nrules: [{name: r, match: 'x'}]\n"), "rules.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// post sends a form to the line tester and returns the recorded answer.
func post(mux http.Handler, body string) *httptest.ResponseRecorder {
	req := httptest.NewRequest(http.MethodPost, ExplainPath, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	rec := httptest.NewRecorder()
	mux.ServeHTTP(rec, req)
	return rec
}

// TestLineTesterOff: switched off, the page has no form and a POST is refused, saying why.
func TestLineTesterOff(t *testing.T) {
	src := &fakeSource{cfg: testConfig(t)}
	mux := testMux(t, src, false)
	rec := httptest.NewRecorder()
	mux.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/", nil))
	if rec.Code != http.StatusOK {
		t.Fatalf("GET /: HTTP %d", rec.Code)
	}
	for _, s := range []string{"<form", ExplainPath, "Line tester"} {
		if strings.Contains(rec.Body.String(), s) {
			t.Errorf("the page holds %q with the line tester off", s)
		}
	}
	rec = post(mux, "input=web&lines=x")
	if rec.Code != http.StatusForbidden || !strings.Contains(rec.Body.String(), "--no-web.enable-line-tester") {
		t.Errorf("POST: HTTP %d %.300q, want 403 naming the flag", rec.Code, rec.Body)
	}
	if src.input != "" {
		t.Errorf("a line was explained with the line tester off")
	}
}

// blockingSource explains a line only once the test lets it: each line is sent to entered
// as its explanation starts, which ends when release is closed.
type blockingSource struct {
	fakeSource
	entered chan string
	release chan struct{}
}

func (b *blockingSource) Explain(input string, line []byte) explain.Line {
	b.entered <- string(line)
	<-b.release
	return b.fakeSource.Explain(input, line)
}

// TestLineTesterBusy: two requests are served at once, one of them explaining while the
// other waits its turn; a third is refused with 429 and a Retry-After, explaining nothing.
// Once they are done the tester serves again.
func TestLineTesterBusy(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := &blockingSource{fakeSource: fakeSource{cfg: testConfig(t)}, entered: make(chan string, 10), release: make(chan struct{})}
		mux := testMux(t, src, true)
		replies := make(chan *httptest.ResponseRecorder, MaxExplainRequests+1)
		for i := range MaxExplainRequests {
			go func() { replies <- post(mux, fmt.Sprintf("input=web&lines=line%d", i)) }()
		}
		synctest.Wait()
		if n := len(src.entered); n != 1 {
			t.Errorf("%d lines explained at once, want 1", n)
		}
		go func() { replies <- post(mux, "input=web&lines=third") }()
		synctest.Wait()
		select {
		case rec := <-replies:
			if rec.Code != http.StatusTooManyRequests || rec.Header().Get("Retry-After") == "" || !strings.Contains(rec.Body.String(), "busy") {
				t.Errorf("a third request at once: HTTP %d, Retry-After %q, %.300q; want 429 with Retry-After", rec.Code, rec.Header().Get("Retry-After"), rec.Body)
			}
		default:
			t.Errorf("a third request at once waits instead of being refused")
		}
		close(src.release)
		for range MaxExplainRequests {
			if rec := <-replies; rec.Code != http.StatusOK {
				t.Errorf("an admitted request: HTTP %d", rec.Code)
			}
		}
		if rec := post(mux, "input=web&lines=after"); rec.Code != http.StatusOK {
			t.Errorf("after the others: HTTP %d", rec.Code)
		}
		synctest.Wait()
		close(src.entered)
		var explained []string
		for line := range src.entered {
			explained = append(explained, line)
		}
		slices.Sort(explained)
		if want := []string{"after", "line0", "line1"}; !slices.Equal(explained, want) {
			t.Errorf("explained %q, want %q", explained, want)
		}
	})
}

// hostileLine is 10,000 quotes and 400 '<': html escaping makes it five times as long.
var hostileLine = strings.Repeat(`"`, 10000) + strings.Repeat("<", 400)

// hostileForm is the form of n hostile lines, unencoded as a client may send it.
func hostileForm(n int) string {
	return "input=web&lines=" + strings.Repeat(hostileLine+"\n", n)
}

var leftOutNote = regexp.MustCompile(`<p class="bad" id="left-out">(\d+) more lines are not explained: the reply is kept within 2 MiB`)

// TestExplainReplyCap posts the lines that made a 15.8 MB reply: as many as fit in the
// body bound, and a megabyte of them. The reply stays within MaxExplainReply, and says
// how many lines it left out; the lines explained are not cut.
func TestExplainReplyCap(t *testing.T) {
	src := &fakeSource{cfg: testConfig(t)}
	mux := testMux(t, src, true)
	fit := MaxExplainBody / (len(hostileLine) + 1)
	t.Run("within the body bound", func(t *testing.T) {
		rec := post(mux, hostileForm(fit))
		body := rec.Body.String()
		if rec.Code != http.StatusOK {
			t.Fatalf("HTTP %d: %.300s", rec.Code, body)
		}
		if rec.Body.Len() > MaxExplainReply {
			t.Errorf("reply of %d bytes, over the cap of %d", rec.Body.Len(), MaxExplainReply)
		}
		m := leftOutNote.FindStringSubmatch(body)
		if m == nil {
			t.Fatalf("no note of the lines left out in %d bytes", len(body))
		}
		left, _ := strconv.Atoi(m[1])
		shown := strings.Count(body, `<div class="line">`)
		if shown == 0 || shown+left != fit {
			t.Errorf("%d lines shown and %d left out, want %d in all, some shown", shown, left, fit)
		}
		if strings.Count(body, "&lt;&lt;&lt;&lt;</pre>") != shown {
			t.Errorf("a line shown is cut")
		}
		if !strings.Contains(body, "The lines posted are not repeated here") {
			t.Errorf("the lines are echoed in the form")
		}
		t.Logf("%d of %d lines shown in %d bytes", shown, fit, rec.Body.Len())
	})
	t.Run("a megabyte", func(t *testing.T) {
		rec := post(mux, hostileForm(100))
		if rec.Code != http.StatusRequestEntityTooLarge || rec.Body.Len() > 200 {
			t.Errorf("HTTP %d, %d bytes; want 413", rec.Code, rec.Body.Len())
		}
	})
	t.Run("normal lines are echoed", func(t *testing.T) {
		rec := post(mux, "input=web&lines="+url.QueryEscape("GET / 200\nGET /x 500"))
		if body := rec.Body.String(); rec.Code != http.StatusOK || !strings.Contains(body, "GET /x 500</textarea>") || leftOutNote.MatchString(body) {
			t.Errorf("HTTP %d: %.2000s", rec.Code, body)
		}
	})
}

// explainCodes are the answers a POST to the line tester may get from one client alone.
var explainCodes = []int{http.StatusOK, http.StatusBadRequest, http.StatusMethodNotAllowed, http.StatusRequestEntityTooLarge, http.StatusUnsupportedMediaType}

// FuzzExplainForm sends the line tester arbitrary bodies, content types and methods, with
// a length or without (chunked): it must not panic, must answer one of explainCodes and
// stay within the reply cap.
func FuzzExplainForm(f *testing.F) {
	f.Add(http.MethodPost, "application/x-www-form-urlencoded", []byte("input=web&lines=a%0Ab"), true)
	f.Add(http.MethodPost, "application/x-www-form-urlencoded", []byte(hostileForm(MaxExplainBody/(len(hostileLine)+1))), false)
	f.Add(http.MethodPost, "application/x-www-form-urlencoded", []byte(hostileForm(3)), true)
	f.Add(http.MethodPost, "application/x-www-form-urlencoded", []byte(strings.Repeat("\n", 1000)), true)
	src := &fakeSource{cfg: testConfig(f)}
	mux := testMux(f, src, true)
	f.Fuzz(func(t *testing.T, method, contentType string, body []byte, sized bool) {
		var r io.Reader = bytes.NewReader(body)
		if !sized {
			r = io.MultiReader(r) // hides the length: the request has none
		}
		req, err := http.NewRequest(method, ExplainPath, r)
		if err != nil {
			return // not a method a client can send
		}
		req.Header.Set("Content-Type", contentType)
		rec := httptest.NewRecorder()
		mux.ServeHTTP(rec, req)
		if !slices.Contains(explainCodes, rec.Code) {
			t.Errorf("HTTP %d: %.300s", rec.Code, rec.Body)
		}
		if rec.Body.Len() > MaxExplainReply {
			t.Errorf("reply of %d bytes, over the cap of %d", rec.Body.Len(), MaxExplainReply)
		}
	})
}
