package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/prometheus/common/promslog"
)

// TestTerminalText: what a terminal would act on rather than show (escape sequences, a
// carriage return that rewrites the line, C1 controls, bidi overrides, invalid UTF-8) is
// shown escaped; text, newlines and tabs pass as they are.
func TestTerminalText(t *testing.T) {
	cases := []struct{ in, want string }{
		{"input web: 3 of 4 lines fit\n", "input web: 3 of 4 lines fit\n"},
		{"tab\there, café, \uFFFD, a\\x1b\n", "tab\there, café, \uFFFD, a\\x1b\n"},
		{"\x1b]52;c;ZWNobw==\a \x1b[2J", `\u001b]52;c;ZWNobw==\u0007 \u001b[2J`},
		{"ok\rforged", `ok\u000dforged`},
		{"\u009b31m \u0085", `\u009b31m \u0085`},
		{"gol.\u202eexe \u2066x\u2069 \u200b \u2028", `gol.\u202eexe \u2066x\u2069 \u200b \u2028`},
		{"caf\xe9 \xff\xfe", `caf\xe9 \xff\xfe`},
		{"del\x7f, a tag \U000E0041", `del\u007f, a tag \udb40\udc41`},
		{"", ""},
	}
	for _, c := range cases {
		var b bytes.Buffer
		n, err := terminalText{&b}.Write([]byte(c.in))
		if err != nil || n != len(c.in) {
			t.Errorf("Write(%q) = %d, %v; want %d, nil", c.in, n, err, len(c.in))
		}
		if b.String() != c.want {
			t.Errorf("Write(%q) wrote %q, want %q", c.in, b.String(), c.want)
		}
	}
}

// TestOneShotStderrIsTerminalText: a file under a replayed glob may be named by whoever
// can write in its directory, and the one-shots name it on stderr (where a line stopped
// fitting, a file that could not be read). A name holding escape sequences (OSC 52 writes
// the clipboard of some terminals, CSI 2J clears the screen) reaches the terminal escaped.
func TestOneShotStderrIsTerminalText(t *testing.T) {
	dir := t.TempDir()
	hostile := "b\x1b]52;c;ZWNobyBwd25lZA==\x07\x1b[2J\r\u202e"
	if err := os.WriteFile(filepath.Join(dir, "a.log"), []byte("GET 200\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, hostile+".log"), []byte("GET 200\nnot a request\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	forged := "x\nlevel=error msg=forged.log"
	glob := filepath.Join(dir, "*.log")
	cfg := filepath.Join(dir, "rules.yaml")
	rules := "inputs: [{name: web, path: '" + glob + "'}]\nrules: [{name: reqs, match: '^(?P<m>[A-Z]+) \\d+$', labels: {m: '${m}'}}]\n"
	if err := os.WriteFile(cfg, []byte(rules), 0o644); err != nil {
		t.Fatal(err)
	}
	var out string
	// The glob and a file of it: the input read several, and its misfit names its file.
	args := []string{"--config.file=" + cfg, "--replay=" + glob, "--replay=" + filepath.Join(dir, "a.log")}
	for _, c := range []struct {
		name string
		code int
		want string
	}{
		// The summary names the file Go-quoted, as it would a newline in its name.
		{"misfit", 0, "first misfit at line 2 of " + strconv.Quote(filepath.Join(dir, hostile+".log"))},
		// A FIFO the glob matches cannot be read: the error names it Go-quoted.
		{"unreadable", 1, strconv.Quote(filepath.Join(dir, "d"+hostile+".log") + ": not a regular file but a named pipe (FIFO)")},
		// A newline in its name forges no line of stderr (a log line of another level).
		{"newline", 1, strconv.Quote(filepath.Join(dir, forged) + ": not a regular file but a named pipe (FIFO)")},
	} {
		name := map[string]string{"unreadable": "d" + hostile + ".log", "newline": forged}[c.name]
		if name != "" {
			if err := syscall.Mkfifo(filepath.Join(dir, name), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		var stdout, stderr bytes.Buffer
		code := run(args, &stdout, &stderr)
		if code != c.code || !strings.Contains(stderr.String(), c.want) {
			t.Errorf("%s: exit %d, want %d, with %q on stderr:\n%s", c.name, code, c.code, c.want, stderr.String())
		}
		out += stderr.String()
	}
	for _, line := range strings.Split(out, "\n") {
		if strings.HasPrefix(line, "level=error msg=forged") {
			t.Errorf("stderr holds a forged line:\n%s", out)
		}
	}
	for i, r := range out {
		if r != '\n' && r != '\t' && !unicode.IsGraphic(r) || r == utf8.RuneError {
			t.Errorf("stderr holds %U at byte %d:\n%q", r, i, out)
			break
		}
	}
}

// TestTerminalTextOfLogs: the logger's lines pass as they are in its text format (which
// quotes what a terminal would act on), and stay JSON with the same values in its JSON
// format, which leaves a DEL, bidi overrides and tag characters raw.
func TestTerminalTextOfLogs(t *testing.T) {
	value := "a\x1b[2J\r\x7f\u202e\U000E0041\u2028\xff"
	for _, format := range []string{"logfmt", "json"} {
		t.Run(format, func(t *testing.T) {
			// One line logged, then written through terminalText as the logger writes it:
			// two lines logged apart would differ in their times.
			var raw, escaped bytes.Buffer
			cfg := &promslog.Config{Format: promslog.NewFormat(), Writer: &raw}
			if err := cfg.Format.Set(format); err != nil {
				t.Fatal(err)
			}
			promslog.New(cfg).Info("following file", "path", value)
			if _, err := (terminalText{&escaped}).Write(raw.Bytes()); err != nil {
				t.Fatal(err)
			}
			out := escaped.String()
			for i, r := range out {
				if r != '\n' && r != '\t' && !unicode.IsGraphic(r) || r == utf8.RuneError {
					t.Fatalf("the log holds %U at byte %d: %q", r, i, out)
				}
			}
			if format == "logfmt" {
				if out != raw.String() {
					t.Errorf("escaped %q, want it unchanged: %q", out, raw.String())
				}
				return
			}
			var a, b struct{ Path string }
			if err := json.Unmarshal(raw.Bytes(), &a); err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(escaped.Bytes(), &b); err != nil || b != a {
				t.Errorf("escaped %s: %+v, %v; want %+v", out, b, err, a)
			}
		})
	}
}
