package follow

import (
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/logwindow/logwindow_exporter/config"
)

// rotatedSuffix is the rest of a rotated name after its base, written as one pattern:
// logrotate's number; its seconds since 1970; a date, then optionally an hour, minute
// and second, then optionally a number; or a month or a week, then optionally a number.
var rotatedSuffix = regexp.MustCompile(`^(\.[0-9]+|-[0-9]{10}|[-._][0-9]{4}[-._]?(0[1-9]|1[0-2])[-._]?(0[1-9]|[12][0-9]|3[01])` +
	`([-._:]?([01][0-9]|2[0-3])([-._:]?[0-5][0-9]([-._:]?[0-5][0-9])?)?)?(\.[0-9]+)?` +
	`|[-._][0-9]{4}[-._]?W?(0[1-9]|[1-4][0-9]|5[0-3])(\.[0-9]+)?)$`)

var numberExt = regexp.MustCompile(`^\.[0-9]+$`)

// naiveRotated is rotatedName written plainly: name is base with a rotated suffix, or,
// with logrotate's extension, base's stem with one and then base's extension (not one of
// digits alone).
func naiveRotated(base, name string) bool {
	if strings.HasPrefix(name, base) && rotatedSuffix.MatchString(name[len(base):]) {
		return true
	}
	ext := filepath.Ext(base)
	stem := base[:len(base)-len(ext)]
	if len(ext) < 2 || numberExt.MatchString(ext) || stem == "" || !strings.HasSuffix(name, ext) {
		return false
	}
	inner := name[:len(name)-len(ext)]
	return strings.HasPrefix(inner, stem) && rotatedSuffix.MatchString(inner[len(stem):])
}

// FuzzRotatedName: whatever a directory lists beside a path's base (any bytes, not UTF-8,
// the base itself, a prefix of it), rotatedName never panics and says what the pattern
// of a rotated name says, and a rotated name's base is among those rotatedBases gives for
// it, by which a restart looks it up. Seeds: TestRotatedName's, and testdata/fuzz.
func FuzzRotatedName(f *testing.F) {
	for _, s := range [][2]string{
		{"access.log", "access.log.1"},
		{"access.log", "access.log-20240301"},
		{"0.log", "0.log.20240301-120000"},
		{"access.log", "access.log.1.gz"},
		{"access.log", "access.log."},
		{"access.log", "access.log"},
		{"access.log", "access.lo"},
		{"a.log", "a.log.\xff1"},
		{"a.log", "a.log\xae1"},
		{"", ".1"},
		{"a\xff", "a\xff_9"},
		{"worker-1", "worker-1-2"},
		{"worker-1", "worker-1-20240301"},
		{"access.log", "access.log-20240301_13:05"},
		{"access.log", "access.log-2024030112.301"},
		{"access.log", "access.log-20240301-1230.1"},
		{"access.log", "access.log-1709294400"},
		{"access.log", "access.log-20240231"},
		{"access.log", "access.log-2024-W09"},
		{"access.log", "access.log-202403.1"},
		{"access.log", "access-20240301.log"},
		{"access.log", "access.1.log"},
		{"a.1", "a.2.1"},
	} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, base, name string) {
		got := rotatedName(base, name)
		if want := naiveRotated(base, name); got != want {
			t.Fatalf("rotatedName(%q, %q) = %v, the naive pattern says %v", base, name, got, want)
		}
		if got && !slices.Contains(rotatedBases(name), base) {
			t.Fatalf("rotatedBases(%q) = %q, which lacks %q", name, rotatedBases(name), base)
		}
	})
}

// FuzzOtherEncoding: otherEncoding never panics, and what it is sure of, more of the
// file's bytes do not change: it is asked again as each read adds to a file's first bytes
// until it is sure, and warns once. A byte order mark of UTF-16 or UTF-32 is named
// whatever follows it, UTF-8's (and UTF-8 text: no NUL) never.
func FuzzOtherEncoding(f *testing.F) {
	for _, s := range []string{
		"", "\xff", "\xff\xfe", "\xff\xfe\x00", "\xff\xfe\x00\x00", "\xff\xfe\x00\x01", "\xfe\xff\x00a",
		"\x00\x00\xfe\xff", "\x00\x00\xfe", "\xef\xbb\xbf{\"a\":1}\n",
		"a\x00b\x00c\x00d\x00e\x00f\x00g\x00h\x00", "\x00a\x00b\x00c\x00d\x00e\x00f\x00g\x00h",
		"\xff\xfea\x00b\x00c\x00d\x00e\x00f\x00g\x00", "127.0.0.1 - - [01/Mar/2024:12:00:00 +0000] \"GET / HTTP/1.1\" 200 1\n",
	} {
		f.Add([]byte(s), uint8(len(s)/2))
	}
	f.Fuzz(func(t *testing.T, head []byte, at uint8) {
		cut := min(int(at), len(head))
		early, sure := otherEncoding(head[:cut])
		all, allSure := otherEncoding(head)
		if sure && (early != all || !allSure) {
			t.Fatalf("%q: sure of %q after %d bytes, %q (sure %v) after all", head, early, cut, all, allSure)
		}
		if len(head) >= encodingSample && !allSure {
			t.Fatalf("%q: not sure after %d bytes", head, len(head))
		}
		var want string
		switch {
		case len(head) >= 4 && string(head[:4]) == "\xff\xfe\x00\x00":
			want = "UTF-32LE"
		case len(head) >= 4 && string(head[:4]) == "\x00\x00\xfe\xff":
			want = "UTF-32BE"
		case len(head) >= 4 && string(head[:2]) == "\xff\xfe":
			want = "UTF-16LE"
		case len(head) >= 2 && string(head[:2]) == "\xfe\xff":
			want = "UTF-16BE"
		}
		if want != "" && all != want {
			t.Fatalf("%q: %q, its byte order mark says %q", head, all, want)
		}
		if want == "" && allSure && all != "" && !hasNUL(head[:encodingSample]) {
			t.Fatalf("%q: %q without a byte order mark or a NUL", head, all)
		}
	})
}

// hasNUL reports whether b holds a NUL byte.
func hasNUL(b []byte) bool {
	for _, c := range b {
		if c == 0 {
			return true
		}
	}
	return false
}

// FuzzNamesAgreesWithGlob: Names says of a path what the glob of the pattern says when
// the path is all there is (a tree of its directories and itself): named exactly when
// listed. A snapshot's position is taken as its input's by Names, and read; one the glob
// would never list is a file out of the input's. Seeds: TestNames's, and testdata/fuzz.
func FuzzNamesAgreesWithGlob(f *testing.F) {
	for _, s := range [][2]string{
		{"/var/log/pods/*/*/*.log", "/var/log/pods/web/nginx/0.log"},
		{"/var/log/pods/*/*/*.log", "/var/log/pods/web/0.log"},
		{"/var/log//pods/./*/*.log", "/var/log/pods/web/0.log"},
		{"./logs/*.log", "logs/a.log"},
		{"*.log", "a.log"},
		{"/var/log/pods/*/*.log", "/var/log/pods/../secret.log"},
		{"logs/[a-c]?.log", "logs/b1.log"},
		{`logs/\*.log`, "logs/*.log"},
	} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, pattern, path string) {
		if !config.IsGlob(pattern) || path == "" || path != filepath.Clean(path) || strings.ContainsRune(pattern+path, 0) {
			return
		}
		if _, err := filepath.Match(pattern, ""); err != nil {
			return // Options.normalize refuses it
		}
		for _, elem := range strings.Split(path, "/") {
			if elem == "." || elem == ".." {
				return // no listing gives it; TestNames has Names refuse it
			}
		}
		// The tree: each directory of path lists the next element, the last path itself.
		tree := map[string][]string{}
		for p := path; ; {
			dir := filepath.Dir(p)
			tree[dir] = []string{filepath.Base(p)}
			if dir == p || dir == "." || dir == "/" {
				break
			}
			p = dir
		}
		list := func(dir string) ([]string, error) {
			dir = filepath.Clean(dir)
			if names, ok := tree[dir]; ok {
				return names, nil
			}
			if dir == path {
				return nil, syscall.ENOTDIR
			}
			return nil, fs.ErrNotExist
		}
		matches, _ := glob(pattern, list)
		if listed := slices.Contains(matches, path); Names(pattern, path) != listed {
			t.Fatalf("Names(%q, %q) = %v, the glob lists %q", pattern, path, !listed, matches)
		}
	})
}

// maxFuzzContent and maxFuzzPieces bound FuzzLines's inputs (its file's bytes, the sizes
// it is written in): past a line too long for the largest cap, and a few pieces.
const maxFuzzContent, maxFuzzPieces = 300, 16

// FuzzLines: whatever a file holds, written in pieces of the fuzzer's sizes each read by a
// pass of the fuzzer's budget, then ended, the reader hands on what splitting the whole
// file at its newlines gives: every line of at most the cap, without a "\r" before its
// newline, and the last one whether or not it ends in one; it counts each longer line as
// too long once, drops a UTF-8 byte order mark that opens the file, and has handed all of
// the file on, but for NUL bytes that end it (minZeros or more, those its last reads
// found), which are held back as space preallocated (zeros): no text.
func FuzzLines(f *testing.F) {
	f.Add([]byte("a\r\nbb\n\nccc"), []byte{2, 0, 9}, uint8(2))
	f.Add([]byte("\xef\xbb\xbfx\n\xef\xbb\xbfy\n"), []byte{0, 1, 0}, uint8(4))
	f.Add([]byte("0123456789\n01\n0123456789"), []byte{3, 3, 3, 3}, uint8(5))
	f.Add([]byte("\xff\xfea\x00\n\x00"), []byte{}, uint8(1))
	f.Fuzz(func(t *testing.T, content, pieces []byte, max uint8) {
		// The fuzzer minimizes each input that finds new code before it goes on, trying
		// what removing every run of its bytes leaves (n²/2 runs of n bytes), and shows no
		// progress meanwhile: at a few thousand inputs a second, one of a few hundred bytes
		// stopped it for a minute (-fuzzminimizetime), again and again. Longer inputs find
		// nothing more (a line too long is one of 1+max bytes, at most 257).
		if len(content) > maxFuzzContent || len(pieces) > maxFuzzPieces {
			return
		}
		// A file in memory (tmpfs), new for each input: one on disk, truncated at each,
		// had the last input's writes waited for (ext4), a millisecond or more an input.
		fd, err := unix.MemfdCreate("a.log", unix.MFD_CLOEXEC)
		if err != nil {
			t.Fatal(err)
		}
		const path = "a.log"
		out := os.NewFile(uintptr(fd), path)
		defer out.Close()
		in := out
		o, err := Options{Path: path, MaxLineBytes: 1 + int(max)}.normalize()
		if err != nil {
			t.Fatal(err)
		}
		var c counters
		var got []string
		r := newLineReader(o, func(_ string, line []byte) { got = append(got, string(line)) }, &c, nil)
		file := &tracked{f: in, path: path}
		rest := content
		for i := 0; len(rest) > 0; i++ {
			n := len(rest)
			if i < len(pieces) {
				n = min(n, 1+int(pieces[i]))
			}
			if _, err := out.Write(rest[:n]); err != nil {
				t.Fatal(err)
			}
			rest = rest[n:]
			budget := int64(math.MaxInt64)
			if i < len(pieces) {
				budget = 1 + int64(pieces[len(pieces)-1-i])
			}
			if _, _, err := r.pass(file, path, budget); err != nil {
				t.Fatal(err)
			}
		}
		for atEOF := false; !atEOF; {
			if _, atEOF, err = r.pass(file, path, math.MaxInt64); err != nil {
				t.Fatal(err)
			}
		}
		r.finish(file, path)
		done := file.done.Load()
		if done > int64(len(content)) {
			t.Fatalf("%q: position %d at the end", content, done)
		}
		if held := content[done:]; len(held) > 0 && (len(held) < minZeros || strings.Trim(string(held), "\x00") != "") {
			t.Fatalf("%q: position %d at the end, before %q: no NULs held back", content, done, held)
		}

		var want []string
		var tooLong uint64
		lines := strings.Split(strings.TrimPrefix(string(content[:done]), "\xef\xbb\xbf"), "\n")
		if lines[len(lines)-1] == "" {
			lines = lines[:len(lines)-1] // the file ends with a newline, or is empty
		}
		for _, l := range lines {
			if len(l) > o.MaxLineBytes {
				tooLong++
				continue
			}
			want = append(want, strings.TrimSuffix(l, "\r"))
		}
		if !slices.Equal(got, want) || c.tooLong.Load() != tooLong || c.lines.Load() != uint64(len(want)) {
			t.Fatalf("cap %d, %q: handed on %q (%d counted), %d too long; want %q, %d too long",
				o.MaxLineBytes, content, got, c.lines.Load(), c.tooLong.Load(), want, tooLong)
		}
	})
}
