package follow

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"
	"unicode/utf16"

	"github.com/logwindow/logwindow_exporter/internal/testutil/syncbuf"
)

// utf16Text is s in UTF-16, little-endian or big-endian, without a byte order mark.
func utf16Text(s string, bigEndian bool) []byte {
	var b []byte
	for _, u := range utf16.Encode([]rune(s)) {
		if bigEndian {
			b = append(b, byte(u>>8), byte(u))
		} else {
			b = append(b, byte(u), byte(u>>8))
		}
	}
	return b
}

// A file written in UTF-16 (PowerShell's Out-File, a Windows tool's log copied over) has
// its lines read as bytes, each with a NUL between its characters, which no rule's text
// matches: it is logged at warning once, naming the file and its encoding, by its byte
// order mark or by the NULs of every other byte of its first bytes. Files of UTF-8, and
// too few bytes to tell, are not.
func TestUTF16FileWarned(t *testing.T) {
	const lines = "GET /index.html 200 5ms\nGET /about 404 1ms\n"
	for _, tc := range []struct {
		name, text, encoding string
	}{
		{"UTF-16LE with its mark", "\xff\xfe" + string(utf16Text(lines, false)), "UTF-16LE"},
		{"UTF-16BE with its mark", "\xfe\xff" + string(utf16Text(lines, true)), "UTF-16BE"},
		{"UTF-16LE without a mark", string(utf16Text(lines, false)), "UTF-16LE"},
		{"UTF-16BE without a mark", string(utf16Text(lines, true)), "UTF-16BE"},
		{"UTF-16LE of other scripts", "\xff\xfe" + string(utf16Text("Grüße, 世界\n", false)), "UTF-16LE"},
		{"UTF-32LE with its mark", "\xff\xfe\x00\x00" + "G\x00\x00\x00E\x00\x00\x00T\x00\x00\x00\n\x00\x00\x00", "UTF-32LE"},
		{"UTF-8", lines, ""},
		{"UTF-8 with its mark", "\xef\xbb\xbf" + lines, ""},
		{"UTF-8 of other scripts", "Grüße, 世界, Ελλάδα, привет мир\n", ""},
		{"a few NULs in UTF-8", "a\x00b c\x00d e f g h i j k l\n", ""},
		{"too short to tell", string(utf16Text("GET\n", false)), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "app.log")
			if err := os.WriteFile(path, []byte(tc.text), 0o644); err != nil {
				t.Fatal(err)
			}
			var log bytes.Buffer
			if _, err := ReadToEnd(Options{Path: path, Logger: timelessLogger(&log)}, func(string, []byte) {}); err != nil {
				t.Fatal(err)
			}
			want := ""
			if tc.encoding != "" {
				want = fmt.Sprintf(`level=WARN msg="file is not UTF-8 but %s: its lines are read as bytes, which no rule's text matches; have its writer write UTF-8 (iconv -f %s -t UTF-8 converts it)" input=web path=%s encoding=%s`+"\n", tc.encoding, tc.encoding, path, tc.encoding)
			}
			if got := log.String(); got != want {
				t.Errorf("log:\n%s\nwant:\n%s", got, want)
			}
		})
	}
}

// A follower warns of a UTF-16 file once, however many reads its lines come in, and of
// one followed from its end by its first bytes, which it did not read as lines.
func TestUTF16FileWarnedOnce(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "app.log")
	if err := os.WriteFile(path, append([]byte("\xff\xfe"), utf16Text("started\n", false)...), 0o644); err != nil {
		t.Fatal(err)
	}
	var log syncbuf.Buffer
	var read atomic.Int64
	start(t, Options{Path: path, Logger: timelessLogger(&log), PollInterval: 5 * time.Millisecond},
		func(string, []byte) { read.Add(1) })
	w, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	// A "\n" of UTF-16LE is followed by its NUL: the follower takes what it reads from
	// the file's end for the rest of a line, and the first line written after is no line.
	for i := range 3 {
		if _, err := w.Write(utf16Text(fmt.Sprintf("line %d\n", i), false)); err != nil {
			t.Fatal(err)
		}
		waitFor(t, "the line read", func() bool { return read.Load() >= int64(i) })
	}
	if got := strings.Count(log.String(), "file is not UTF-8 but UTF-16LE"); got != 1 {
		t.Errorf("%d warnings, want 1:\n%s", got, log.String())
	}
}

// A file truncated and written again in UTF-16 (its writer started over in another
// encoding) is warned of as a new one is: its first bytes before the truncation, which
// said UTF-8, no longer say anything of it.
func TestUTF16AfterTruncationWarned(t *testing.T) {
	path := filepath.Join(t.TempDir(), "app.log")
	if err := os.WriteFile(path, []byte("GET /index.html 200 5ms\nGET /about 404 1ms\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var log syncbuf.Buffer
	var read atomic.Int64
	f := start(t, Options{Path: path, FromBeginning: true, Logger: timelessLogger(&log), PollInterval: 5 * time.Millisecond},
		func(string, []byte) { read.Add(1) })
	waitFor(t, "the UTF-8 lines read", func() bool { return read.Load() == 2 })
	if err := os.WriteFile(path, append([]byte("\xff\xfe"), utf16Text("GET / 200\n", false)...), 0o644); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the truncation", func() bool { return f.Stats().Truncations == 1 })
	waitFor(t, "the UTF-16 line read", func() bool { return read.Load() == 3 })
	if got := strings.Count(log.String(), "file is not UTF-8 but UTF-16LE"); got != 1 {
		t.Errorf("%d warnings, want 1:\n%s", got, log.String())
	}
}

// A file whose lines wrap text of their own (Options.Text: a CRI line's message) is told
// by that text: lines of UTF-16 behind a prefix of ASCII are warned of, lines of UTF-8
// are not; a first line that never tells where its text starts (longer than the bytes
// kept of the file's head) has the file told by its bytes as they are.
func TestWrappedTextEncoding(t *testing.T) {
	// The wrapper: "W " opens a line, its text follows.
	wrapped := func(head []byte) ([]byte, bool) {
		line, _, whole := bytes.Cut(head, []byte("\n"))
		if rest, ok := bytes.CutPrefix(line, []byte("W ")); ok {
			return head[len(line)-len(rest):], true
		}
		return head, whole
	}
	never := func([]byte) ([]byte, bool) { return nil, false }
	for _, tc := range []struct {
		name, text string
		wrapper    func([]byte) ([]byte, bool)
		warned     bool
	}{
		{"UTF-16 behind the wrapper", "W " + string(utf16Text("GET /index.html 200 5ms", false)) + "\nW \x00" + string(utf16Text("GET / 200", false)) + "\n", wrapped, true},
		{"UTF-8 behind the wrapper", "W GET /index.html 200 5ms\nW GET / 200\n", wrapped, false},
		// A message's first bytes are the writer's, not the file's byte order mark:
		// binary that opens with FF FE is no UTF-16 unless its NULs say so.
		{"FF FE opening binary behind the wrapper", "W \xff\xfe\x01junk\nW GET /index.html 200 5ms\nW GET / 200\n", wrapped, false},
		{"FF FE opening UTF-16 behind the wrapper", "W \xff\xfe" + string(utf16Text("GET /index.html 200 5ms", false)) + "\n", wrapped, true},
		{"UTF-16 without the wrapper", string(utf16Text("GET /index.html 200 5ms\n", false)), wrapped, true},
		{"the text never found, UTF-16", string(utf16Text(strings.Repeat("GET /index.html 200 5ms ", 40)+"\n", false)), never, true},
		{"the text never found, UTF-8", strings.Repeat("GET /index.html 200 5ms ", 60) + "\n", never, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "app.log")
			if err := os.WriteFile(path, []byte(tc.text), 0o644); err != nil {
				t.Fatal(err)
			}
			var log bytes.Buffer
			if _, err := ReadToEnd(Options{Path: path, Logger: timelessLogger(&log), Text: tc.wrapper, MaxLineBytes: 4096}, func(string, []byte) {}); err != nil {
				t.Fatal(err)
			}
			if got := strings.Count(log.String(), "file is not UTF-8 but UTF-16LE"); got != map[bool]int{true: 1}[tc.warned] {
				t.Errorf("warned %d times, want %v:\n%s", got, tc.warned, log.String())
			}
		})
	}
}
