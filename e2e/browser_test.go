package e2e

import (
	"bufio"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/logwindow/logwindow_exporter/internal/testutil/await"
	"github.com/logwindow/logwindow_exporter/internal/testutil/testexec"
)

// browser drives a headless Chromium over the DevTools protocol on a pipe
// (--remote-debugging-pipe: JSON messages ended by a NUL byte, commands on the browser's
// fd 3, answers and events on its fd 4), so no WebSocket client is needed.
type browser struct {
	t       *testing.T
	proc    *testexec.Proc
	w       *os.File
	session string

	mu      sync.Mutex
	nextID  int
	waiting map[int]chan cdpMessage
	events  chan cdpMessage
}

type cdpMessage struct {
	ID        int             `json:"id,omitempty"`
	Method    string          `json:"method,omitempty"`
	Params    json.RawMessage `json:"params,omitempty"`
	Result    json.RawMessage `json:"result,omitempty"`
	Error     *struct{ Message string }
	SessionID string `json:"sessionId,omitempty"`
}

// chromiumPath finds Debian's chromium (see testexec.LookTools), or chromium-browser as
// Ubuntu names it.
func chromiumPath(t *testing.T) string {
	t.Helper()
	if _, err := exec.LookPath("chromium"); err != nil {
		if p, err := exec.LookPath("chromium-browser"); err == nil {
			return p
		}
	}
	return testexec.LookTools(t, "Debian: apt-get install chromium", "chromium")["chromium"]
}

// startBrowser starts headless Chromium with one page, attached, whose console and errors
// are reported as events.
func startBrowser(t *testing.T) *browser {
	bin := chromiumPath(t)
	toBrowser, ourEnd, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	fromBrowser, theirEnd, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	// Not t.TempDir: Chromium's helpers may still write to the profile for a moment after
	// the browser has exited, which makes the testing package's own removal fail the test.
	profile, err := os.MkdirTemp("", "chromium-profile-")
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
		"--disable-extensions", "--disable-background-networking", "--remote-debugging-pipe",
		"--user-data-dir="+profile, "--window-size=1280,1000", "about:blank")
	cmd.ExtraFiles = []*os.File{toBrowser, theirEnd} // fd 3 and fd 4
	proc, err := testexec.Start(cmd)
	if err != nil {
		t.Fatal(err)
	}
	toBrowser.Close()
	theirEnd.Close()
	b := &browser{t: t, proc: proc, w: ourEnd, waiting: map[int]chan cdpMessage{}, events: make(chan cdpMessage, 1024)}
	t.Cleanup(func() {
		ourEnd.Close()
		_ = proc.Stop(testexec.StopTimeout)
		_ = syscall.Kill(-proc.Cmd.Process.Pid, syscall.SIGKILL) // helpers left in the group
		removeProfile(t, profile)
	})
	go b.read(fromBrowser)

	var target struct{ TargetID string }
	// Chromium's first start on a fresh machine builds its caches before it answers, which
	// took over 30 s on a loaded two-core machine: every wait on it ends at await.Deadline.
	b.call("", "Target.createTarget", map[string]any{"url": "about:blank"}, &target)
	var attached struct{ SessionID string }
	b.call("", "Target.attachToTarget", map[string]any{"targetId": target.TargetID, "flatten": true}, &attached)
	b.session = attached.SessionID
	for _, domain := range []string{"Page", "Runtime", "Log"} {
		b.call(b.session, domain+".enable", nil, nil)
	}
	return b
}

// removeProfile removes Chromium's profile directory, trying again for a few seconds
// while a departing helper process still writes into it; what cannot be removed is logged.
func removeProfile(t *testing.T, dir string) {
	var err error
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		if err = os.RemoveAll(dir); err == nil || time.Now().After(deadline) {
			break
		}
	}
	if err != nil {
		t.Logf("chromium profile left behind: %v", err)
	}
}

func (b *browser) read(r *os.File) {
	defer r.Close()
	in := bufio.NewReader(r)
	for {
		raw, err := in.ReadBytes(0)
		if err != nil {
			close(b.events)
			return
		}
		var m cdpMessage
		if json.Unmarshal(raw[:len(raw)-1], &m) != nil {
			continue
		}
		if m.ID != 0 {
			b.mu.Lock()
			ch := b.waiting[m.ID]
			delete(b.waiting, m.ID)
			b.mu.Unlock()
			if ch != nil {
				ch <- m
			}
			continue
		}
		select {
		case b.events <- m:
		default: // a flood of events the test does not read is dropped, not blocking answers
		}
	}
}

// call sends a command and decodes its result into out (when not nil).
func (b *browser) call(session, method string, params any, out any) {
	b.t.Helper()
	b.mu.Lock()
	b.nextID++
	id := b.nextID
	ch := make(chan cdpMessage, 1)
	b.waiting[id] = ch
	b.mu.Unlock()
	req := map[string]any{"id": id, "method": method, "params": params}
	if session != "" {
		req["sessionId"] = session
	}
	msg, err := json.Marshal(req)
	if err != nil {
		b.t.Fatal(err)
	}
	if _, err := b.w.Write(append(msg, 0)); err != nil {
		b.t.Fatalf("%s: %v", method, err)
	}
	select {
	case m := <-ch:
		if m.Error != nil {
			b.t.Fatalf("%s: %s", method, m.Error.Message)
		}
		if out != nil {
			if err := json.Unmarshal(m.Result, out); err != nil {
				b.t.Fatalf("%s: %v", method, err)
			}
		}
	case <-await.After(b.t):
		b.t.Fatalf("%s: no answer from chromium", method)
	}
}

// problems are the console errors, uncaught exceptions and dialogs seen so far.
func (b *browser) waitFor(method string, problems *[]string) {
	b.t.Helper()
	deadline := await.After(b.t)
	for {
		select {
		case m, ok := <-b.events:
			if !ok {
				b.t.Fatal("chromium exited")
			}
			if p := problem(m); p != "" {
				*problems = append(*problems, p)
			}
			if m.Method == method {
				return
			}
		case <-deadline:
			b.t.Fatalf("no %s from chromium", method)
		}
	}
}

// noProblems fails the test if the browser reported problems, or reports any in the
// events that arrive within 200 ms: a console error may come after the page loaded.
func (b *browser) noProblems(problems []string) {
	b.t.Helper()
	time.Sleep(200 * time.Millisecond) // let late console events arrive before the last look
	b.drain(&problems)
	if len(problems) > 0 {
		b.t.Errorf("the browser reported:\n%s", strings.Join(problems, "\n"))
	}
}

// drain collects the problems among the events that have arrived.
func (b *browser) drain(problems *[]string) {
	for {
		select {
		case m, ok := <-b.events:
			if !ok {
				return
			}
			if p := problem(m); p != "" {
				*problems = append(*problems, p)
			}
		default:
			return
		}
	}
}

// problem describes an event that a clean page never causes: a console error or warning,
// a browser log entry of level error or warning (a failed resource, a refused CSP), an
// exception, a dialog (alert() run by injected script).
func problem(m cdpMessage) string {
	var p struct {
		Type             string
		Entry            struct{ Level, Text, URL string }
		Args             []struct{ Value any }
		Message          string
		ExceptionDetails struct{ Text string }
	}
	_ = json.Unmarshal(m.Params, &p)
	switch m.Method {
	case "Runtime.consoleAPICalled":
		if p.Type == "error" || p.Type == "warning" || p.Type == "assert" {
			return fmt.Sprintf("console.%s %v", p.Type, p.Args)
		}
	case "Log.entryAdded":
		if p.Entry.Level == "error" || p.Entry.Level == "warning" {
			return fmt.Sprintf("log %s: %s %s", p.Entry.Level, p.Entry.Text, p.Entry.URL)
		}
	case "Runtime.exceptionThrown":
		return "exception: " + p.ExceptionDetails.Text
	case "Page.javascriptDialogOpening":
		return "dialog: " + p.Message
	}
	return ""
}

// navigate loads url and waits for its load event.
func (b *browser) navigate(url string, problems *[]string) {
	b.t.Helper()
	b.call(b.session, "Page.navigate", map[string]any{"url": url}, nil)
	b.waitFor("Page.loadEventFired", problems)
}

// eval runs a JavaScript expression in the page (DevTools evaluation; the page itself runs
// no script) and decodes its JSON-able value into out.
func (b *browser) eval(expr string, out any) {
	b.t.Helper()
	var r struct {
		Result           struct{ Value json.RawMessage }
		ExceptionDetails *struct{ Text string }
	}
	b.call(b.session, "Runtime.evaluate", map[string]any{"expression": expr, "returnByValue": true}, &r)
	if r.ExceptionDetails != nil {
		b.t.Fatalf("%s: %s", expr, r.ExceptionDetails.Text)
	}
	if out != nil {
		if err := json.Unmarshal(r.Result.Value, out); err != nil {
			b.t.Fatalf("%s: %v (%s)", expr, err, r.Result.Value)
		}
	}
}

// paste types text into the element matching selector as a paste would insert it.
func (b *browser) paste(selector, text string) {
	b.t.Helper()
	b.eval(fmt.Sprintf("document.querySelector(%q).focus()", selector), nil)
	b.call(b.session, "Input.insertText", map[string]any{"text": text}, nil)
}

// screenshot writes the whole page as a PNG into $LOGWINDOW_ARTIFACTS (when set) or the
// test's temporary directory, and returns the path.
func (b *browser) screenshot(name string) string {
	b.t.Helper()
	var shot struct{ Data string }
	b.call(b.session, "Page.captureScreenshot", map[string]any{"format": "png", "captureBeyondViewport": true}, &shot)
	png, err := base64.StdEncoding.DecodeString(shot.Data)
	if err != nil {
		b.t.Fatal(err)
	}
	dir := os.Getenv("LOGWINDOW_ARTIFACTS")
	if dir == "" {
		dir = b.t.TempDir()
	} else if err := os.MkdirAll(dir, 0o755); err != nil {
		b.t.Fatal(err)
	}
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, png, 0o644); err != nil {
		b.t.Fatal(err)
	}
	b.t.Logf("screenshot: %s", path)
	return path
}
