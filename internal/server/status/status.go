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
	"html/template"
	"log/slog"
	"net/http"
	"strconv"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/version"

	"github.com/logwindow/logwindow_exporter/config"
	"github.com/logwindow/logwindow_exporter/internal/explain"
)

// MaxExplainBody bounds a POST to /-/explain; a larger body is refused with 413.
const MaxExplainBody = 1 << 20

// MaxExplainLines bounds how many pasted lines one POST explains.
const MaxExplainLines = 100

// ExplainPath is where the line tester posts.
const ExplainPath = "/-/explain"

// Source is the running exporter as the page sees it.
type Source interface {
	// Config is the config in force.
	Config() *config.Config
	// Explain explains a line as input would count it now, without counting it.
	Explain(input string, line []byte) explain.Line
}

// Options configure the page.
type Options struct {
	Name        string // the program's name, the page's title
	Source      Source
	Gatherer    prometheus.Gatherer // the registry /metrics serves
	MetricsPath string
	Logger      *slog.Logger
}

//go:embed page.html
var files embed.FS

var page = template.Must(template.New("page.html").Funcs(template.FuncMap{
	"join": strings.Join,
	// quote shows a distinct text as Go quotes it, so bytes that are not text show too.
	"quote": func(s *string) string { return strconv.Quote(*s) },
}).ParseFS(files, "page.html"))

// Register serves the page at / and the line tester at ExplainPath on mux.
func Register(mux *http.ServeMux, o Options) {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/" {
			http.NotFound(w, r)
			return
		}
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "Use GET.", http.StatusMethodNotAllowed)
			return
		}
		o.render(w, o.view(), http.StatusOK)
	})
	mux.HandleFunc(ExplainPath, func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			w.Header().Set("Allow", "POST")
			http.Error(w, "Use POST, with the form fields input and lines.", http.StatusMethodNotAllowed)
			return
		}
		r.Body = http.MaxBytesReader(w, r.Body, MaxExplainBody)
		if err := r.ParseForm(); err != nil {
			if mbe := (*http.MaxBytesError)(nil); errors.As(err, &mbe) {
				http.Error(w, "The lines are too long: at most 1 MiB per request.", http.StatusRequestEntityTooLarge)
				return
			}
			http.Error(w, "Bad form: "+err.Error(), http.StatusBadRequest)
			return
		}
		v := o.view()
		v.Tested = true
		input, lines := r.PostForm.Get("input"), r.PostForm.Get("lines")
		// What is echoed into the form must be valid UTF-8; the explanations show the
		// lines as they came, escaped where they are not.
		v.Input, v.Lines = strings.ToValidUTF8(input, "\uFFFD"), strings.ToValidUTF8(lines, "\uFFFD")
		for i, line := range strings.Split(strings.ReplaceAll(lines, "\r\n", "\n"), "\n") {
			if i == MaxExplainLines {
				v.Clipped = true
				break
			}
			if line == "" {
				continue
			}
			v.Results = append(v.Results, o.Source.Explain(input, []byte(line)))
		}
		o.render(w, v, http.StatusOK)
	})
}

// render writes the page for v, or a plain error when the template fails (nothing is
// sent before the page is complete).
func (o *Options) render(w http.ResponseWriter, v *view, code int) {
	var buf bytes.Buffer
	if err := page.Execute(&buf, v); err != nil {
		o.Logger.Error("status page", "err", err)
		http.Error(w, "The status page failed: "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'")
	w.WriteHeader(code)
	_, _ = w.Write(buf.Bytes())
}

// version is what the page says of the build.
func buildInfo() []pair {
	return []pair{
		{"version", version.Version}, {"revision", version.GetRevision()}, {"branch", version.Branch},
		{"build user", version.BuildUser}, {"build date", version.BuildDate}, {"go", version.GoVersion},
	}
}
