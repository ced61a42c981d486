// Package configcheck is --config.check: the rule file, and what the start checks of the
// flags before it serves, by the start's own checks, so that OK means the exporter would
// start.
package configcheck

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strconv"
	"strings"

	"github.com/prometheus/exporter-toolkit/web"

	"github.com/logwindow/logwindow_exporter/config"
	"github.com/logwindow/logwindow_exporter/internal/pipeline"
	"github.com/logwindow/logwindow_exporter/internal/server"
)

// Run is --config.check of the rule file cfg loaded from file (loadErr when it did not),
// and of what else of the flags the start refuses before it serves: the rule file as
// --config.watch reads it (watchErr when it refused a file the load took), the web config
// of --web.config.file and the listen addresses, each by the start's own check, so that
// OK means the exporter would start. Each error and warning goes to stderr, all of them
// in one run (and the lines of the samples, when the rule file loaded); it returns the
// exit code, 0 with the summary on stdout when there is no error. sampleOpts' SeriesMaxBytes
// is the memory bound the start would keep, which the rules' budgets are checked against.
func Run(cfg *config.Config, loadErr, watchErr error, file string, webFlags *web.FlagConfig, samples []string, sampleOpts pipeline.Options, stdout, stderr io.Writer) int {
	failed := loadErr != nil || watchErr != nil
	if watchErr != nil && loadErr == nil {
		// The watch reads the file the load read: when the load failed, its error tells
		// the file's trouble, and the watch's would say it again.
		fmt.Fprintln(stderr, watchErr)
	}
	if loadErr != nil {
		fmt.Fprintln(stderr, loadErr)
	} else {
		for _, w := range append(pipeline.StartWarnings(cfg, sampleOpts.SeriesMaxBytes), pipeline.SocketProblems(cfg)...) {
			fmt.Fprintf(stderr, "%s: warning: %s\n", file, w)
		}
		for _, w := range config.Warnings(cfg) {
			fmt.Fprintln(stderr, w)
		}
	}
	if f := webFlags.WebConfigFile; f != nil && *f != "" {
		if err := server.CheckWebConfig(*f, slog.New(warningLines{w: stderr, file: *f})); err != nil {
			fmt.Fprintln(stderr, err)
			failed = true
		}
	}
	if err := server.CheckListenAddresses(webFlags); err != nil {
		fmt.Fprintln(stderr, err)
		failed = true
	}
	built := loadErr == nil
	if built {
		if err := pipeline.Build(cfg, sampleOpts); err != nil {
			fmt.Fprintln(stderr, err)
			failed, built = true, false
		}
	}
	if built && len(samples) > 0 {
		if err := pipeline.Sample(cfg, samples, sampleOpts); err != nil {
			fmt.Fprintln(stderr, err)
			failed = true
		}
	}
	if failed {
		return 1
	}
	fmt.Fprintf(stdout, "%s: %s, %s: OK\n", file, counted(len(cfg.Rules), "rule"), counted(len(cfg.Inputs), "input"))
	return 0
}

// counted writes n of noun as a reader says it: "1 input", "0 inputs", "9 rules".
func counted(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// warningLines writes the warnings logged to it as --config.check writes the rule file's,
// a line each, "<file>: warning: <message> (key=value, ...)": what the start logs of the
// web config reads as the check's own output, not as a log line among it.
type warningLines struct {
	w    io.Writer
	file string
	// attrs are those of With, their keys qualified by the groups of WithGroup before it.
	attrs []slog.Attr
	group string
}

// Enabled takes the warnings (the start's checks log none above): what the start logs as
// information is not the check's to say.
func (h warningLines) Enabled(_ context.Context, l slog.Level) bool { return l >= slog.LevelWarn }

// Handle writes r's line.
func (h warningLines) Handle(_ context.Context, r slog.Record) error {
	attrs := slices.Clone(h.attrs)
	r.Attrs(func(a slog.Attr) bool {
		attrs = append(attrs, h.qualified(a))
		return true
	})
	var line strings.Builder
	fmt.Fprintf(&line, "%s: warning: %s", h.file, r.Message)
	sep := " ("
	for _, a := range attrs {
		v := a.Value.Resolve().String()
		if v == "" || strings.ContainsAny(v, " ,()\"") {
			v = strconv.Quote(v)
		}
		line.WriteString(sep + a.Key + "=" + v)
		sep = ", "
	}
	if len(attrs) > 0 {
		line.WriteString(")")
	}
	line.WriteString("\n")
	_, err := io.WriteString(h.w, line.String())
	return err
}

// WithAttrs is h with attrs on every line.
func (h warningLines) WithAttrs(attrs []slog.Attr) slog.Handler {
	h.attrs = slices.Clone(h.attrs)
	for _, a := range attrs {
		h.attrs = append(h.attrs, h.qualified(a))
	}
	return h
}

// WithGroup is h with the keys of the attributes after it qualified by name.
func (h warningLines) WithGroup(name string) slog.Handler {
	h.group += name + "."
	return h
}

func (h warningLines) qualified(a slog.Attr) slog.Attr {
	a.Key = h.group + a.Key
	return a
}
