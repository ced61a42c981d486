package e2e

import (
	"bytes"
	"fmt"
	"html"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"

	"github.com/logwindow/logwindow_exporter/internal/testutil/testexec"
)

// statusRules: a rule per label set, a filter rule and an event-time rule, over one input.
const statusRules = `
global:
  windows: [1m, 5m]
inputs:
  - {name: web, path: %s, start_at: beginning}
patterns:
  LINE: '^(?P<method>[A-Z]+) (?P<path>/\S*) (?P<status>\d{3}) \[(?P<ts>[^\]]+)\]$'
rules:
  - name: http_requests
    match: '%{LINE}'
    labels: {method: '${method}', status: '${status}'}
  - name: http_server_errors
    match: '%{LINE}'
    where: {status: '^5'}
  - name: http_requests_by_time
    match: '%{LINE}'
    timestamp: {capture: ts, layout: '2006-01-02T15:04:05Z07:00'}
`

// startStatusExporter starts the built binary on a log of three lines, with the extra
// arguments.
func startStatusExporter(t *testing.T, bin string, o testexec.ServeOptions, args ...string) *testexec.Exporter {
	dir := t.TempDir()
	logPath := filepath.Join(dir, "web.log")
	now := time.Now().UTC().Format(time.RFC3339)
	log := fmt.Sprintf("GET / 200 [%s]\nGET /x 503 [%s]\nnot a request\n", now, now)
	if err := os.WriteFile(logPath, []byte(log), 0o644); err != nil {
		t.Fatal(err)
	}
	cfgPath := filepath.Join(dir, "rules.yaml")
	if err := os.WriteFile(cfgPath, []byte(strings.ReplaceAll(statusRules, "%s", logPath)), 0o644); err != nil {
		t.Fatal(err)
	}
	return testexec.StartExporterWith(t, o, bin, append([]string{"--config.file=" + cfgPath}, args...)...)
}

// TestStatusPageInBrowser loads the status page in headless Chromium, pastes a line into
// the line tester and reads what the page says of each rule; then a line holding a script.
// The page must load and answer with no console error, no failed resource and no CSP
// refusal, and run no script. Screenshots are written as artifacts.
func TestStatusPageInBrowser(t *testing.T) {
	b := startBrowser(t)
	bin := testexec.BuildExporter(t, testexec.Race)
	p := startStatusExporter(t, bin, testexec.ServeOptions{}, "--web.enable-lifecycle")
	p.WaitLines(t, 3)

	// The detector is live: a page that fails to load is reported.
	var problems []string
	b.navigate(p.URL()+"/no-such-page", &problems)
	time.Sleep(200 * time.Millisecond)
	if b.drain(&problems); len(problems) == 0 {
		t.Fatal("a 404 page gave no console error: the detector sees nothing")
	}
	problems = nil
	b.navigate(p.URL()+"/", &problems)
	var page struct {
		Title    string
		Rules    [][]string
		Inputs   [][]string
		Reload   string
		File     string
		Unsafe   int
		Scripts  int
		Sections []string
	}
	b.eval(`({
		title: document.title,
		rules: [...document.querySelectorAll('#rules ~ table')[0].rows].slice(1).map(r => [0, 1, 2, 3, 4, 5, 9].map(i => (r.cells[i] || {innerText: ''}).innerText.trim().replaceAll('\n', ' / '))),
		inputs: [...document.querySelectorAll('#inputs ~ table')[0].rows].slice(1).map(r => [r.cells[0].textContent.trim(), r.cells[2].textContent.trim(), r.cells[4].textContent.trim()]),
		reload: document.querySelector('#config ~ p').textContent,
		file: document.querySelector('#config ~ p code').textContent,
		scripts: document.scripts.length,
		sections: [...document.querySelectorAll('h2')].map(h => h.id),
	})`, &page)
	// Each rule says what it computes, its value in its 5m window now and the regex it runs,
	// its pattern expanded, then as written.
	const counts = "counts lines; per window: matched lines, per-second rate"
	regex := `^(?P<method>[A-Z]+) (?P<path>/\S*) (?P<status>\d{3}) \[(?P<ts>[^\]]+)\]$`
	reads := "(?:" + regex + ") / as written %{LINE}"
	wantRules := [][]string{
		{"http_requests", counts, "2", "none", "2 / 10000", "2 / matched lines in 5m", reads},
		{"http_server_errors", counts, "1", "none", "1 / 10000", "1 / matched lines in 5m", reads},
		{"http_requests_by_time", counts + "; by the line's ts", "2", "none", "1 / 10000", "2 / matched lines in 5m", reads},
	}
	if fmt.Sprint(page.Rules) != fmt.Sprint(wantRules) {
		t.Errorf("rules table:\n got %q\nwant %q", page.Rules, wantRules)
	}
	if want := [][]string{{"web", "1", "3"}}; fmt.Sprint(page.Inputs) != fmt.Sprint(want) {
		t.Errorf("inputs table (input, files followed, lines): got %q, want %q", page.Inputs, want)
	}
	if !strings.Contains(page.Reload, "loaded, last success") {
		t.Errorf("config section says %q", page.Reload)
	}
	if fmt.Sprint(page.Sections) != "[tester inputs rules config build]" || page.Scripts != 0 {
		t.Errorf("sections %v, %d scripts", page.Sections, page.Scripts)
	}
	b.screenshot("status-page.png")

	// A pasted line: the tester shows each rule's outcome, the labels of the counting one.
	line := "POST /api/orders 502 [" + time.Now().UTC().Format(time.RFC3339) + "]"
	b.paste("textarea[name=lines]", line)
	b.eval(`document.querySelector('form button').click()`, nil)
	b.waitFor("Page.loadEventFired", &problems)
	var result struct {
		URL  string
		Text string
		Rows [][]string
	}
	b.eval(`({
		url: location.pathname,
		text: document.querySelector('#results pre').textContent,
		rows: [...document.querySelectorAll('#results tr.rule')].map(r => [r.dataset.rule, r.dataset.outcome, (r.querySelector('.labels') || {textContent: ''}).textContent]),
	})`, &result)
	wantRows := [][]string{
		{"http_requests", "counted", `method="POST", status="502"`},
		{"http_server_errors", "counted", ""},
		{"http_requests_by_time", "counted", ""},
	}
	if result.URL != "/-/explain" || result.Text != line || fmt.Sprint(result.Rows) != fmt.Sprint(wantRows) {
		t.Errorf("line tester: at %s, line %q, rows\n got %q\nwant %q", result.URL, result.Text, result.Rows, wantRows)
	}
	b.screenshot("line-tester.png")

	// A line holding markup is shown as text: no script runs, no element is made of it.
	attack := `GET /<script>alert(1)</script><img src=x onerror=alert(2)> 200 [x]`
	b.eval(`document.querySelector('textarea[name=lines]').value = ''`, nil)
	b.paste("textarea[name=lines]", attack)
	b.eval(`document.querySelector('form button').click()`, nil)
	b.waitFor("Page.loadEventFired", &problems)
	var shown struct {
		Text          string
		Scripts, Imgs int
		Outcome       string
	}
	b.eval(`({
		text: document.querySelector('#results pre').textContent,
		scripts: document.scripts.length,
		imgs: document.images.length,
		outcome: document.querySelector('#results tr.rule').dataset.outcome,
	})`, &shown)
	if shown.Text != attack || shown.Scripts != 0 || shown.Imgs != 0 {
		t.Errorf("markup in a line: shown as %q, %d scripts, %d images in the page", shown.Text, shown.Scripts, shown.Imgs)
	}
	if shown.Outcome != "no_match" {
		t.Errorf("the attack line's first rule: outcome %q, want no_match (the path holds spaces)", shown.Outcome)
	}

	// A reload of a broken file is refused, and the page says why: each problem with its
	// line, as text, even where the file holds markup.
	broken := "rules:\n  - name: broken\n    match: '(?P<x'\n  - name: typo\n    matc: '<img src=x onerror=alert(3)>'\n"
	if err := os.WriteFile(page.File, []byte(broken), 0o644); err != nil {
		t.Fatal(err)
	}
	resp, err := http.Post(p.URL()+"/-/reload", "", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("POST /-/reload of a broken file: HTTP %d, want 400", resp.StatusCode)
	}
	b.navigate(p.URL()+"/", &problems)
	var refused struct {
		Reload, Errors string
		Elements, Imgs int
	}
	b.eval(`({
		reload: document.querySelector('#config ~ p').textContent,
		errors: (document.querySelector('#reload-errors') || {textContent: ''}).textContent,
		elements: document.querySelectorAll('#reload-errors *').length,
		imgs: document.images.length,
	})`, &refused)
	if !strings.Contains(refused.Reload, "the last reload was refused") {
		t.Errorf("config section says %q", refused.Reload)
	}
	for _, want := range []string{page.File + `:3: rule "broken": match: invalid regex`, page.File + `:5: rule "typo": unknown key "matc"`} {
		if !strings.Contains(refused.Errors, want) {
			t.Errorf("the reload errors lack %q:\n%s", want, refused.Errors)
		}
	}
	if refused.Elements != 0 || refused.Imgs != 0 {
		t.Errorf("the reload errors made %d elements, %d images", refused.Elements, refused.Imgs)
	}
	b.screenshot("reload-refused.png")

	b.noProblems(problems)
}

// TestLineTesterCapInBrowser pastes into the line tester, in headless Chromium, lines
// about --input.max-line-bytes long, ended by LF as a terminal's copy ends them: the
// browser sends each line end of the text box as CRLF, and the page's form says so
// (ends=browser), so a line of the cap is shown read, as its input reads it, and one a
// byte longer skipped. Told nothing, the tester counted the browser's "\r" against the
// cap and showed the line of the cap skipped. A CRLF pasted reaches the text box as LF:
// the line of the cap with its "\r" is shown read, as the follower reads it.
func TestLineTesterCapInBrowser(t *testing.T) {
	b := startBrowser(t)
	bin := testexec.BuildExporter(t, testexec.Race)
	const maxLine = 40
	p := startStatusExporter(t, bin, testexec.ServeOptions{}, fmt.Sprintf("--input.max-line-bytes=%d", maxLine))
	var problems []string
	b.navigate(p.URL()+"/", &problems)
	lines := []string{strings.Repeat("a", maxLine), strings.Repeat("b", maxLine+1), strings.Repeat("c", maxLine-1) + "\r"}
	b.paste("textarea[name=lines]", strings.Join(lines, "\n")+"\n")
	b.eval(`document.querySelector('form button').click()`, nil)
	b.waitFor("Page.loadEventFired", &problems)
	var shown [][2]any
	b.eval(`[...document.querySelectorAll('#results .line')].map(d => [d.querySelector('pre').textContent, d.textContent.includes('Skipped: the line is longer than')])`, &shown)
	want := [][2]any{{lines[0], false}, {lines[1], true}, {strings.TrimSuffix(lines[2], "\r"), false}}
	if fmt.Sprint(shown) != fmt.Sprint(want) {
		t.Errorf("lines shown, skipped or not:\n got %v\nwant %v", shown, want)
	}
	b.noProblems(problems)
}

// TestStatusPageNotFramed loads, in headless Chromium, another site's page that frames the
// status page: the browser must refuse to show it (the page's frame-ancestors), so that
// no page can overlay the line tester's form with its own.
func TestStatusPageNotFramed(t *testing.T) {
	b := startBrowser(t)
	bin := testexec.BuildExporter(t, testexec.Race)
	p := startStatusExporter(t, bin, testexec.ServeOptions{})
	// Another origin: the same address, another port.
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprintf(w, `<!DOCTYPE html><title>other</title><iframe id="f" src="%s/"></iframe>`, p.URL())
	}))
	defer other.Close()

	var problems []string
	b.navigate(other.URL, &problems)
	var tree struct {
		FrameTree struct {
			ChildFrames []struct {
				Frame struct{ URL, UnreachableURL string }
			}
		}
	}
	b.call(b.session, "Page.getFrameTree", nil, &tree)
	if n := len(tree.FrameTree.ChildFrames); n != 1 {
		t.Fatalf("the other page has %d frames, want 1", n)
	}
	frame := tree.FrameTree.ChildFrames[0].Frame
	if frame.URL == p.URL()+"/" {
		t.Errorf("the status page was shown in another site's frame (%+v)", frame)
	}
	time.Sleep(200 * time.Millisecond) // let late console events arrive
	b.drain(&problems)
	if !strings.Contains(strings.Join(problems, "\n"), "frame-ancestors") {
		t.Errorf("the browser did not say it refused the frame by frame-ancestors; it reported:\n%s", strings.Join(problems, "\n"))
	}
}

// TestLineTesterHTTP posts to /-/explain with curl-like requests through the real
// exporter-toolkit server with basic auth: what /metrics needs, the tester needs; bodies
// past the bound get 413; invalid UTF-8 and markup come back escaped; a line ahead of the
// clock is reported as future.
func TestLineTesterHTTP(t *testing.T) {
	const user, password = "prometheus", "s3cret"
	bin := testexec.BuildExporter(t, testexec.Race)
	hash, err := bcrypt.GenerateFromPassword([]byte(password), 4)
	if err != nil {
		t.Fatal(err)
	}
	webConfig := filepath.Join(t.TempDir(), "web.yml")
	if err := os.WriteFile(webConfig, fmt.Appendf(nil, "basic_auth_users:\n  %s: %s\n", user, hash), 0o600); err != nil {
		t.Fatal(err)
	}
	p := startStatusExporter(t, bin, testexec.ServeOptions{User: user, Password: password}, "--web.config.file="+webConfig)
	post := func(auth bool, body io.Reader) (int, string) {
		t.Helper()
		req, err := http.NewRequest(http.MethodPost, p.URL()+"/-/explain", body)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		if auth {
			req.SetBasicAuth(user, password)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("POST /-/explain: %v", err)
		}
		defer resp.Body.Close()
		out, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(out)
	}
	form := func(line string) io.Reader {
		return strings.NewReader(url.Values{"input": {"web"}, "lines": {line}}.Encode())
	}
	future := time.Now().Add(time.Hour).UTC().Format(time.RFC3339)

	cases := []struct {
		name     string
		auth     bool
		body     io.Reader
		code     int
		contains []string
		lacks    []string
	}{
		{"no password", false, form("GET / 200 [x]"), http.StatusUnauthorized, nil, []string{"<table"}},
		{"10 MiB", true, io.MultiReader(strings.NewReader("input=web&lines="), bytes.NewReader(bytes.Repeat([]byte("a"), 10<<20))),
			http.StatusRequestEntityTooLarge, []string{"too long"}, nil},
		{"invalid UTF-8", true, strings.NewReader("input=web&lines=GET+%2F%FF%FE+200+%5Bx%5D"), http.StatusOK,
			[]string{html.EscapeString(`"GET /\xff\xfe 200 [x]"`), "invalid UTF-8"}, []string{"\xff"}},
		{"markup", true, form(`GET /<script>alert(1)</script> 200 [x]`), http.StatusOK,
			[]string{"GET /&lt;script&gt;alert(1)&lt;/script&gt; 200 [x]"}, []string{"<script>"}},
		{"future", true, form("GET / 200 [" + future + "]"), http.StatusOK,
			[]string{`data-rule="http_requests_by_time" data-outcome="counted"`, "future</span>: ahead of the clock"}, nil},
		{"late", true, form("GET / 200 [2001-01-01T00:00:00Z]"), http.StatusOK,
			[]string{"late</span>: older than every window"}, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code, body := post(c.auth, c.body)
			if code != c.code {
				t.Fatalf("HTTP %d, want %d: %.300s", code, c.code, body)
			}
			for _, s := range c.contains {
				if !strings.Contains(body, s) {
					t.Errorf("the answer lacks %q", s)
				}
			}
			for _, s := range c.lacks {
				if strings.Contains(body, s) {
					t.Errorf("the answer holds %q", s)
				}
			}
		})
	}
	t.Run("page needs the password too", func(t *testing.T) {
		resp, err := http.Get(p.URL() + "/")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("GET / without a password: HTTP %d", resp.StatusCode)
		}
	})
}
