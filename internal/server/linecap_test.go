package server

import (
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/prometheus/common/promslog"

	"github.com/logwindow/logwindow_exporter/internal/input/follow"
	"github.com/logwindow/logwindow_exporter/internal/server/status"
	"github.com/logwindow/logwindow_exporter/internal/testutil/metrictest"
)

// TestLineTesterAgreesWithFollowerAtTheCap writes lines about --input.max-line-bytes
// long, ended by LF or CRLF, to a followed file, and posts each, as the file holds it, to
// the line tester: the tester tells skipped exactly the lines the follower skips as too
// long. The follower counts a "\r" before the newline against the cap; the tester dropped
// it first, and showed a CRLF line of the cap read. A line the page's form sends ends in
// CRLF whatever was pasted (ends=browser): its "\r" is the browser's, and the line is
// judged as the file's LF line is.
func TestLineTesterAgreesWithFollowerAtTheCap(t *testing.T) {
	e := startExporter(t, false)
	coll := e.p.Collector()
	tester := httptest.NewServer(NewMux(e.p, coll, NewRegistry(coll), Options{Logger: promslog.NewNopLogger(), MetricsPath: "/metrics", LineTester: true}))
	t.Cleanup(tester.Close)
	const maxLine = follow.DefaultMaxLineBytes
	x := func(n int) string { return strings.Repeat("x", n) }
	for _, tc := range []struct {
		name string
		line string // as the file holds it, without its "\n"
		// browser posts the line as the page's form does: "\r" removed from line, then
		// sent with a CRLF and ends=browser.
		browser bool
		tooLong bool
	}{
		{"LF, of the cap", x(maxLine), false, false},
		{"CRLF, the cap with its CR", x(maxLine-1) + "\r", false, false},
		{"CRLF, of the cap without its CR", x(maxLine) + "\r", false, true},
		{"LF, past the cap", x(maxLine + 1), false, true},
		{"LF, of the cap, from the page's form", x(maxLine), true, false},
		{"LF, past the cap, from the page's form", x(maxLine + 1), true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := metrictest.Sum(e.scrape(), "logwindow_input_too_long_lines_total")
			e.appendLines(tc.line)
			followerSkipped := metrictest.Sum(e.scrape(), "logwindow_input_too_long_lines_total") > before
			if followerSkipped != tc.tooLong {
				t.Fatalf("the follower skipped the line as too long: %v, want %v", followerSkipped, tc.tooLong)
			}
			form := url.Values{"input": {"web"}, "lines": {tc.line + "\n"}}
			if tc.browser {
				form = url.Values{"input": {"web"}, "lines": {tc.line + "\r\n"}, status.EndsField: {status.EndsBrowser}}
			}
			resp, err := http.PostForm(tester.URL+status.ExplainPath, form)
			if err != nil {
				t.Fatal(err)
			}
			body, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			if err != nil || resp.StatusCode != http.StatusOK {
				t.Fatalf("HTTP %d, %v: %.300s", resp.StatusCode, err, body)
			}
			if n := strings.Count(string(body), `<div class="line">`); n != 1 {
				t.Fatalf("%d lines explained, want 1", n)
			}
			if testerSkipped := strings.Contains(string(body), "Skipped: the line is longer than"); testerSkipped != followerSkipped {
				t.Errorf("the line tester tells the line skipped: %v; the follower skipped it: %v", testerSkipped, followerSkipped)
			}
		})
	}
}
