package main

import (
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/alecthomas/kingpin/v2"
)

// stickyWriter writes to w until a write fails, and keeps that first error.
type stickyWriter struct {
	w   io.Writer
	err error
}

func (s *stickyWriter) Write(p []byte) (int, error) {
	if s.err != nil {
		return 0, s.err
	}
	n, err := s.w.Write(p)
	s.err = err
	return n, err
}

// errorsKept hands kingpin the writes of its help and version text: it panics on an error
// of its help's template, so each write succeeds for it, its error kept by the
// stickyWriter alone.
type errorsKept struct{ s *stickyWriter }

func (e errorsKept) Write(p []byte) (int, error) {
	_, _ = e.s.Write(p)
	return len(p), nil
}

// routePrintingFlags has app print what its flags that print and end the run ask for to
// out, where kingpin's hidden flags (--help-long, --help-man, the completions) printed to
// os.Stdout, so that a lost write of them went unseen: the first of them is printed
// before kingpin's own actions run (errPrinted stops it), and --completion-bash's words,
// which kingpin prints after them, reach out through os.Stdout until end is called, once
// the parse returned. terminate is app's, which ends the run.
func routePrintingFlags(app *kingpin.Application, out *stickyWriter, versionText string, terminate func(int)) (end func()) {
	stop := func() {}
	app.PreAction(func(ctx *kingpin.ParseContext) error {
		if completionAsked(app) {
			e, err := completionsTo(errorsKept{out})
			if err != nil {
				out.err = err // told as a lost write: nothing could be printed
				terminate(0)
				return errPrinted
			}
			stop = e
			return nil
		}
		printed, err := printFlag(app, ctx, versionText, errorsKept{out})
		if err != nil || !printed {
			return err
		}
		terminate(0)
		return errPrinted
	})
	return func() { stop() }
}

// errPrinted ends kingpin's parse once printFlag printed what a flag asked for: its own
// actions, which print to os.Stdout, are not run.
var errPrinted = errors.New("printed")

// printTemplates are the templates kingpin prints its hidden flags' text with, by flag.
var printTemplates = map[string]string{
	"help-long":              kingpin.LongHelpTemplate,
	"help-man":               kingpin.ManPageTemplate,
	"completion-script-bash": kingpin.BashCompletionTemplate,
	"completion-script-zsh":  kingpin.ZshCompletionTemplate,
}

// printFlag prints to w, as kingpin would to os.Stdout, what the first of the flags of
// ctx that print and end the run asks for, --version or a hidden flag of printTemplates,
// and reports whether there was one: kingpin runs their actions in the order given, and
// the first ends the run. --help is kingpin's own, printed to its usage writer (w) once
// the actions ran, none of which printed; --completion-bash's words are
// completionsTo's.
func printFlag(app *kingpin.Application, ctx *kingpin.ParseContext, versionText string, w io.Writer) (bool, error) {
	for _, e := range ctx.Elements {
		f, ok := e.Clause.(*kingpin.FlagClause)
		if !ok {
			continue
		}
		name := f.Model().Name
		if name == "version" {
			_, err := fmt.Fprintln(w, versionText)
			return true, err
		}
		if tmpl, ok := printTemplates[name]; ok {
			return true, app.UsageForContextWithTemplate(ctx, 2, tmpl)
		}
	}
	return false, nil
}

// completionAsked reports whether app's parse completes words (--completion-bash): kingpin
// then runs no flag's action, prints the completions and ends the run.
func completionAsked(app *kingpin.Application) bool {
	f := app.GetFlag("completion-bash")
	return f != nil && f.Model().Value.String() == "true"
}

// completionsTo makes os.Stdout a pipe whose content is copied to w, until the returned
// end is called, which puts os.Stdout back and returns once all was copied. kingpin
// prints --completion-bash's words with fmt.Printf, to os.Stdout, past every writer of
// its application, and how it picks them is its own (unexported): the pipe lets its
// words through run's stdout, whose lost write is then seen, as they are, where a copy of
// its picking would drift from kingpin's. w never fails, so the pipe is read to its end
// and kingpin's write never blocks.
func completionsTo(w io.Writer) (end func(), err error) {
	r, pw, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	stdout := os.Stdout
	os.Stdout = pw
	copied := make(chan struct{})
	go func() {
		defer close(copied)
		_, _ = io.Copy(w, r)
	}()
	return func() {
		os.Stdout = stdout
		_ = pw.Close()
		<-copied
		_ = r.Close()
	}, nil
}
