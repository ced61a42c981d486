// Package status serves the exporter's landing page: a server-rendered page (html/template,
// no script) with the inputs, the rules and their counts, the config and its last reload,
// the build, and a line tester that posts pasted lines to /-/explain and shows, for each,
// the same explanation as --explain.
//
// Every count on the page is read from the same registry /metrics exposes, at the time
// the page is rendered, so the page never says something the metrics do not.
package status

import (
	"bytes"
	"embed"
	"errors"
	"fmt"
	"html/template"
	"log/slog"
	"mime"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/version"

	"github.com/logwindow/logwindow_exporter/config"
	"github.com/logwindow/logwindow_exporter/internal/explain"
	"github.com/logwindow/logwindow_exporter/internal/pipeline"
	"github.com/logwindow/logwindow_exporter/internal/scrape"
)

// MaxExplainBody bounds a POST to /-/explain; a larger body is refused with 413. 256 KiB
// holds 100 lines of 2.6 KB. More would rarely be shown, since MaxExplainReply leaves out
// what its explanations cannot hold (each repeats the line, and what every rule read of
// it), while the work of explaining grows with every byte.
const MaxExplainBody = 256 << 10

// MaxExplainLines bounds how many pasted lines one POST explains; blank lines are skipped, uncounted.
const MaxExplainLines = 100

// MaxExplainReply bounds the reply to a POST to /-/explain: the explanations that would
// go past it are left out, with a note saying how many. 100 nginx lines explained against
// the example's 9 rules take 1.3 MB.
const MaxExplainReply = 2 << 20

// MaxExplainRequests is how many POSTs to /-/explain are served at once, reading their
// lines or writing their replies, each holding its connection; one more is answered 429.
// Two, so that one slow client does not shut out everyone else; of the two, one explains
// at a time.
const MaxExplainRequests = 2

// ExplainPath is where the line tester posts.
const ExplainPath = "/-/explain"

// Source is the running exporter as the page sees it.
type Source interface {
	// Config is the config in force.
	Config() *config.Config
	// Explain explains a line as input would count it now, without counting it. The line
	// keeps the "\r" that ended it before a newline, which counts against the line cap as
	// the input counts it.
	Explain(input string, line []byte) explain.Line
	// ReloadError is why the last reload was refused; nil when it applied.
	ReloadError() error
	// InputsNotRunning are the inputs of the config in force that did not start, whatever
	// reloads were refused since.
	InputsNotRunning() []pipeline.NotRunning
}

// WindowReader reads what each rule holds in its windows now: scrape.Collector.
type WindowReader interface {
	WindowSums() []scrape.WindowSums
}

// Options configure the page.
type Options struct {
	Name     string // the program's name, the page's title
	Source   Source
	Gatherer prometheus.Gatherer // the registry /metrics serves
	// Windows reads the rules' windows, as /metrics does; nil shows none.
	Windows     WindowReader
	MetricsPath string
	Logger      *slog.Logger
	// LineTester shows the line tester and serves ExplainPath; off, the page has no form
	// and ExplainPath answers 403.
	LineTester bool

	// Admit, when not nil, wraps the page's handler: the server's bound on the requests
	// in flight, each of which holds its page until it is written.
	Admit func(http.Handler) http.Handler

	// reading lets one request at a time gather the registry and read the rules' windows,
	// so that pages asked for at once cost a core and one gather at most, however many
	// there are.
	reading chan struct{}
}

//go:embed page.html
var files embed.FS

// page is the parsed page.html. It is parsed at its first use rather than at start-up,
// which it would otherwise slow by some 2,000 allocations for a page most exporters never
// serve; TestPageParses keeps a broken template from getting that far.
var page = sync.OnceValue(func() *template.Template { return template.Must(parsePage()) })

func parsePage() (*template.Template, error) {
	return template.New("page.html").Funcs(template.FuncMap{
		"join": strings.Join,
		// quote shows a label's value or a distinct text as Go quotes it, as --explain
		// does: bytes that are not text, and characters a browser would not show as they
		// are (a bidi override, a zero-width space), show too.
		"quote": strconv.Quote,
		// display shows a text as it is, or Go-quoted as quote when it holds such bytes.
		"display": explain.Display,
	}).ParseFS(files, "page.html")
}

// Register serves the page at / and the line tester at ExplainPath on mux.
func Register(mux *http.ServeMux, o Options) {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	o.reading = make(chan struct{}, 1)
	var landing http.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/" {
			http.NotFound(w, r)
			return
		}
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "Use GET.", http.StatusMethodNotAllowed)
			return
		}
		if v := o.view(r.Context(), "/"); v != nil {
			o.render(w, v)
		}
	})
	if o.Admit != nil {
		landing = o.Admit(landing)
	}
	mux.Handle("/", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// A HEAD (an uptime probe's) is answered the GET's headers at once: it reads
		// nothing, and waits for no page, for a body it does not send.
		if r.Method == http.MethodHead && r.URL.Path == "/" {
			pageHeader(w.Header())
			w.WriteHeader(http.StatusOK)
			return
		}
		landing.ServeHTTP(w, r)
	}))
	mux.Handle(ExplainPath, &lineTester{o: &o, admit: make(chan struct{}, MaxExplainRequests), explain: make(chan struct{}, 1)})
}

// lineTester serves ExplainPath. What it holds is bounded: admit bounds the requests
// read or written at once (each holds its lines and its reply), explain lets one of
// them use a CPU at a time, and the lines and the reply are bounded in size.
type lineTester struct {
	o       *Options
	admit   chan struct{}
	explain chan struct{}
}

func (lt *lineTester) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch {
	case !lt.o.LineTester:
		refuse(w, r, "The line tester is off: the exporter runs with --no-web.enable-line-tester.", http.StatusForbidden)
		return
	case r.Method != http.MethodPost:
		w.Header().Set("Allow", "POST")
		refuse(w, r, "Use POST, with the form fields input and lines.", http.StatusMethodNotAllowed)
		return
	case !isForm(r.Header.Get("Content-Type")):
		// ParseForm reads no other body: the lines would be taken for none given.
		w.Header().Set("Accept-Post", formType)
		refuse(w, r, fmt.Sprintf("Send the fields input and lines as a form (%s, as the page and curl --data-urlencode send them), not %q.",
			formType, r.Header.Get("Content-Type")), http.StatusUnsupportedMediaType)
		return
	case r.ContentLength > MaxExplainBody:
		// Refused unread: the server then closes the connection rather than read it.
		tooLong(w, r)
		return
	}
	select {
	case lt.admit <- struct{}{}:
		defer func() { <-lt.admit }()
	default:
		w.Header().Set("Retry-After", "1")
		refuse(w, r, "The line tester is busy with other requests: try again in a second.", http.StatusTooManyRequests)
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, MaxExplainBody)
	if err := r.ParseForm(); err != nil {
		switch {
		case errors.As(err, new(*http.MaxBytesError)):
			tooLong(w, r)
		case errors.Is(err, os.ErrDeadlineExceeded):
			http.Error(w, "The lines did not arrive within the read timeout.", http.StatusRequestTimeout)
		default:
			http.Error(w, "Bad form: "+err.Error(), http.StatusBadRequest)
		}
		return
	}
	if _, ok := r.PostForm["lines"]; !ok {
		// The page's form always sends the field, empty or not: a log posted as it is
		// (curl --data-binary @access.log) would otherwise read as no line given.
		http.Error(w, "The form has no field lines: send the lines URL-encoded in it (curl --data-urlencode lines@access.log).", http.StatusBadRequest)
		return
	}
	for _, field := range []string{"input", "lines", EndsField} {
		if n := len(r.PostForm[field]); n > 1 {
			// Get would read the first alone: the lines of a second file
			// (curl --data-urlencode lines@a.log --data-urlencode lines@b.log) would go
			// unexplained, unsaid.
			http.Error(w, fmt.Sprintf("The form has the field %s %d times: send it once (the lines of several files in one field, one per line).", field, n), http.StatusBadRequest)
			return
		}
	}
	if ends, ok := r.PostForm[EndsField]; ok && ends[0] != EndsBrowser {
		// Taken for lines as a file holds them, a misspelt value would have a line of the
		// page's form told skipped by the "\r" its browser added, with nothing said.
		http.Error(w, fmt.Sprintf("The form's field %s is %q: its one value is %q, which the page's form sends (its line ends are the browser's CRLF); leave it out for lines as a file holds them.", EndsField, ends[0], EndsBrowser), http.StatusBadRequest)
		return
	}
	input := r.PostForm.Get("input")
	if msg := checkInput(lt.o.Source.Config(), input); msg != "" {
		http.Error(w, msg, http.StatusBadRequest)
		return
	}
	select {
	case lt.explain <- struct{}{}:
	case <-r.Context().Done():
		return
	}
	v := lt.o.view(r.Context(), ExplainPath)
	if v == nil {
		<-lt.explain
		return
	}
	reply, err := lt.o.explainPage(v, input, r.PostForm.Get("lines"), r.PostForm.Get(EndsField) == EndsBrowser)
	<-lt.explain
	if err != nil {
		lt.o.Logger.Error("status page", "err", err)
		http.Error(w, "The status page failed: "+err.Error(), http.StatusInternalServerError)
		return
	}
	writePage(w, reply)
}

// EndsField and EndsBrowser are the form field, and its value, that the page's form sends
// to say that the line ends of its lines are the browser's: a browser sends every line end
// of a textarea as CRLF, whatever was pasted, so the "\r" before a newline is not the
// log's and does not count against --input.max-line-bytes. Without it, the lines are taken
// as a file holds them (curl --data-urlencode lines@access.log): a "\r" before a newline
// counts, as the follower counts it.
const EndsField, EndsBrowser = "ends", "browser"

// formType is the body the line tester reads: its form's, the one ParseForm parses.
const formType = "application/x-www-form-urlencoded"

// isForm reports whether contentType is formType, with any parameters.
func isForm(contentType string) bool {
	t, _, err := mime.ParseMediaType(contentType)
	return err == nil && t == formType
}

// inputNames are what the page's form offers to name an input by: a named input's name,
// and for an input without one its path or socket (config.Input.Label), since the inputs
// without a name share the name "" and their formats may differ.
func inputNames(cfg *config.Config) []string {
	var names []string
	for _, in := range cfg.Inputs {
		if l := in.Label(); l != "" && !slices.Contains(names, l) {
			names = append(names, l)
		}
	}
	return names
}

// checkInput is why the line tester cannot read a line of input, "" when it can: input
// names no input (inputNames), or is "" while several inputs have no name, which would
// leave whose formats read the line to the line.
func checkInput(cfg *config.Config, input string) string {
	names := inputNames(cfg)
	if input != "" && slices.Contains(names, input) {
		return ""
	}
	var unnamed []string
	for _, in := range cfg.Inputs {
		if in.Name == "" {
			unnamed = append(unnamed, in.Source())
		}
	}
	switch {
	case input == "" && len(unnamed) <= 1:
		return ""
	case input == "":
		return "Several inputs have no name: give the path or socket of the one whose formats are to read the lines as input, one of " +
			strings.Join(unnamed, ", ") + "."
	}
	msg := fmt.Sprintf("No input is named %q: ", input)
	if len(unnamed) <= 1 {
		msg += "leave input empty for a line of no named input"
		if len(names) == 0 {
			return msg + "."
		}
		msg += ", or "
	}
	return msg + "name one of " + strings.Join(names, ", ") + " (an input without a name by its path or socket)."
}

func tooLong(w http.ResponseWriter, r *http.Request) {
	refuse(w, r, "The lines are too long: at most "+size(MaxExplainBody)+" per request.", http.StatusRequestEntityTooLarge)
}

// refuse answers r with msg and code without reading its body (see LeaveBodyUnread).
func refuse(w http.ResponseWriter, r *http.Request, msg string, code int) {
	LeaveBodyUnread(w, r)
	http.Error(w, msg, code)
}

// LeaveBodyUnread is called by a handler that reads none of r's body: when r has one,
// the server closes the connection after the reply, at once. Else net/http would read up
// to 256 KiB of the body, before the reply and again after the handler, to reuse the
// connection: a client announcing a body and trickling it would hold its connection, and
// a place within --web.max-connections, until the read timeout. Past the read deadline
// set here what net/http tries to read fails at once, and "Connection: close" has it
// close the connection rather than keep it. HTTP/2 reads a stream's body apart from the
// connection's other streams: nothing to do.
func LeaveBodyUnread(w http.ResponseWriter, r *http.Request) {
	if r.ProtoMajor != 1 || r.ContentLength == 0 {
		return
	}
	w.Header().Set("Connection", "close")
	_ = http.NewResponseController(w).SetReadDeadline(time.Now())
}

// errReplyFull is what a cappedBuffer's Write returns once the reply would pass its cap.
var errReplyFull = errors.New("the reply is full")

// cappedBuffer holds at most room more bytes; a Write that does not fit writes nothing.
type cappedBuffer struct {
	bytes.Buffer
	room int
}

func (b *cappedBuffer) Write(p []byte) (int, error) {
	if len(p) > b.room {
		return 0, errReplyFull
	}
	b.room -= len(p)
	return b.Buffer.Write(p)
}

// explainPage is the page v with the explanations of lines as input reads them, within
// MaxExplainReply: the page is laid out first with its notes at their longest, and the
// lines are explained and rendered one by one into what room is left. The first line
// that does not fit, and every line after it, are left out unexplained and counted. The
// lines are repeated in the form only when they take at most half the reply (html
// escaping can make them five times as long). With browserEnds, the "\r" before each
// newline is the browser's (EndsBrowser), and dropped; else the line keeps it, for Explain
// to count against the cap as the follower does.
func (o *Options) explainPage(v *view, input, lines string, browserEnds bool) ([]byte, error) {
	v.Tested = true
	// What is echoed into the form must be valid UTF-8; the explanations show the lines
	// as they came, escaped where they are not.
	v.Input, v.Lines = strings.ToValidUTF8(input, "\uFFFD"), strings.ToValidUTF8(lines, "\uFFFD")
	v.Clipped, v.LeftOut = true, MaxExplainLines
	var base bytes.Buffer
	if err := page().Execute(&base, v); err != nil {
		return nil, err
	}
	if base.Len() > MaxExplainReply/2 {
		v.Lines, v.EchoLeftOut = "", true
		base.Reset()
		if err := page().Execute(&base, v); err != nil {
			return nil, err
		}
	}
	v.Clipped, v.LeftOut = false, 0
	room := MaxExplainReply - base.Len()
	n := 0
	for line := range strings.SplitSeq(lines, "\n") {
		// A blank line is no line to explain, and counts toward no bound: the newline
		// that ends a file's last line, or the blank lines of a paste from a terminal,
		// would otherwise have 100 lines told clipped with every one of them explained.
		if line == "" || line == "\r" {
			continue
		}
		if browserEnds {
			line = strings.TrimSuffix(line, "\r")
		}
		if n == MaxExplainLines {
			v.Clipped = true
			break
		}
		n++
		if v.LeftOut > 0 {
			v.LeftOut++
			continue
		}
		out := cappedBuffer{room: room}
		err := page().ExecuteTemplate(&out, "line", o.Source.Explain(input, []byte(line)))
		switch {
		case errors.Is(err, errReplyFull):
			v.LeftOut = 1
			continue
		case err != nil:
			return nil, err
		}
		room = out.room
		// Safe HTML: the page's own template escaped it.
		v.Explained = append(v.Explained, template.HTML(out.String()))
	}
	var reply bytes.Buffer
	reply.Grow(MaxExplainReply - room)
	if err := page().Execute(&reply, v); err != nil {
		return nil, err
	}
	return reply.Bytes(), nil
}

// render writes the page for v, or a plain error when the template fails (nothing is
// sent before the page is complete).
func (o *Options) render(w http.ResponseWriter, v *view) {
	var buf bytes.Buffer
	if err := page().Execute(&buf, v); err != nil {
		o.Logger.Error("status page", "err", err)
		http.Error(w, "The status page failed: "+err.Error(), http.StatusInternalServerError)
		return
	}
	writePage(w, buf.Bytes())
}

// writePage answers with page. The page runs no script and loads nothing (its policy
// says so, should an escape ever fail), may not be framed by another site's page, which
// could overlay the form, and is kept by no cache: it is the state of one moment, and the
// tester's reply holds the lines pasted, which may hold what a log should not leave.
func writePage(w http.ResponseWriter, page []byte) {
	pageHeader(w.Header())
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(page)
}

// pageHeader sets the header of a page in h (see writePage). The policy is added beside
// one the web config's http_server_config.headers set already, which a browser enforces
// too: set over it, the page dropped what the operator asked for (a report-uri).
func pageHeader(h http.Header) {
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Add("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'")
	h.Set("Cache-Control", "no-store")
}

// size is a byte count as the page and the errors say it: "256 KiB", "2 MiB".
func size(n int) string {
	if n >= 1<<20 && n%(1<<20) == 0 {
		return strconv.Itoa(n>>20) + " MiB"
	}
	return strconv.Itoa(n>>10) + " KiB"
}

// version is what the page says of the build.
func buildInfo() []pair {
	return []pair{
		{"version", version.Version}, {"revision", version.GetRevision()}, {"branch", version.Branch},
		{"build user", version.BuildUser}, {"build date", version.BuildDate}, {"go", version.GoVersion},
	}
}
