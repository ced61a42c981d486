package storage

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/logwindow/logwindow_exporter/internal/testutil/await"
)

// testSections are what the tests write: sections with records of every size, an empty
// section and an empty record, a name repeated.
var testSections = []struct {
	name    string
	records []string
}{
	{"rules", []string{"first", "", strings.Repeat("x", 300), "last"}},
	{"empty", nil},
	{"files", []string{"/var/log/a.log\x00123"}},
	{"rules", []string{"again"}},
}

// fill writes testSections.
func fill(w *Writer) error {
	for _, s := range testSections {
		if err := w.Section(s.name); err != nil {
			return err
		}
		for _, r := range s.records {
			if err := w.Record([]byte(r)); err != nil {
				return err
			}
		}
	}
	return nil
}

// check reports whether snap holds exactly testSections.
func check(snap *Snapshot) error {
	if len(snap.Sections) != len(testSections) {
		return fmt.Errorf("%d sections, want %d", len(snap.Sections), len(testSections))
	}
	for i, s := range snap.Sections {
		var got []string
		for r := range s.Records() {
			got = append(got, string(r))
		}
		if s.Name != testSections[i].name || !slices.Equal(got, testSections[i].records) {
			return fmt.Errorf("section %d: %q %q, want %q %q", i, s.Name, got, testSections[i].name, testSections[i].records)
		}
	}
	return nil
}

// written returns the bytes of a snapshot of testSections.
func written(t testing.TB) []byte {
	dir := t.TempDir()
	if err := Write(dir, fill); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, FileName))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestRoundTrip reads back what was written, and when, in a directory with only the
// snapshot in it; a second write replaces the first.
func TestRoundTrip(t *testing.T) {
	dir := t.TempDir()
	if err := Write(dir, func(w *Writer) error {
		w.Section("old")
		return w.Record([]byte("gone"))
	}); err != nil {
		t.Fatal(err)
	}
	if err := Write(dir, fill); err != nil {
		t.Fatal(err)
	}
	snap, err := Read(dir, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	if err := check(snap); err != nil {
		t.Fatal(err)
	}
	if s, ok := snap.Section("rules"); !ok || s.Name != "rules" {
		t.Errorf("Section(rules): %v %v", s, ok)
	}
	if _, ok := snap.Section("old"); ok {
		t.Error("the first snapshot's section is still there")
	}
	if fi, err := os.Stat(filepath.Join(dir, FileName)); err != nil || !snap.Written.Equal(fi.ModTime()) {
		t.Errorf("Written %v, want the file's modification time (%v, %v)", snap.Written, fi, err)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 || entries[0].Name() != FileName {
		t.Errorf("directory holds %v, want the snapshot alone", entries)
	}
}

// TestRefused refuses every snapshot that is not one this package wrote whole, with the
// error that says why.
func TestRefused(t *testing.T) {
	good := written(t)
	otherVersion := slices.Clone(good)
	binary.LittleEndian.PutUint32(otherVersion[len(magic):], Version+1)
	for _, tc := range []struct {
		name string
		b    []byte
		most int64
		want error
	}{
		{"empty", nil, 1 << 20, ErrCorrupt},
		{"not a snapshot", []byte("hello, world, this is text"), 1 << 20, ErrCorrupt},
		{"other version", otherVersion, 1 << 20, ErrVersion},
		{"other version, truncated", otherVersion[:len(magic)+4], 1 << 20, ErrVersion},
		{"too large", good, int64(len(good) - 1), ErrTooLarge},
		{"trailing bytes", append(slices.Clone(good), 0), 1 << 20, ErrCorrupt},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, FileName), tc.b, 0o600); err != nil {
				t.Fatal(err)
			}
			if _, err := Read(dir, tc.most); !errors.Is(err, tc.want) {
				t.Fatalf("Read: %v, want %v", err, tc.want)
			}
		})
	}
	t.Run("exactly the size allowed", func(t *testing.T) {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, FileName), good, 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := Read(dir, int64(len(good))); err != nil {
			t.Fatal(err)
		}
		if _, err := Read(dir, math.MaxInt64); err != nil {
			t.Fatalf("no bound: %v", err)
		}
	})
	t.Run("none", func(t *testing.T) {
		if _, err := Read(t.TempDir(), 1<<20); !errors.Is(err, fs.ErrNotExist) {
			t.Fatalf("Read: %v, want fs.ErrNotExist", err)
		}
	})
}

// TestTruncated refuses the snapshot cut at every byte, and with every bit flipped: as
// corrupt, or, for the bits of the version, as of another version.
func TestTruncated(t *testing.T) {
	good := written(t)
	for n := range len(good) {
		if _, err := Parse(good[:n]); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("cut at %d of %d: %v, want ErrCorrupt", n, len(good), err)
		}
	}
	for i := range 8 * len(good) {
		b := slices.Clone(good)
		b[i/8] ^= 1 << (i % 8)
		want := ErrCorrupt
		if i/8 >= len(magic) && i/8 < len(magic)+4 {
			want = ErrVersion
		}
		if _, err := Parse(b); !errors.Is(err, want) {
			t.Fatalf("bit %d flipped: %v, want %v", i, err, want)
		}
	}
}

// TestWriteFails leaves the last snapshot in place and no temporary file when the
// directory cannot be written to or the caller's fill fails.
func TestWriteFails(t *testing.T) {
	t.Run("directory is a file", func(t *testing.T) {
		file := filepath.Join(t.TempDir(), "file")
		if err := os.WriteFile(file, nil, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := Write(file, fill); err == nil {
			t.Fatal("Write into a file succeeded")
		}
		if err := Write(filepath.Join(file, "sub"), fill); err == nil {
			t.Fatal("Write under a file succeeded")
		}
	})
	t.Run("fill fails", func(t *testing.T) {
		dir := t.TempDir()
		if err := Write(dir, fill); err != nil {
			t.Fatal(err)
		}
		boom := errors.New("boom")
		err := Write(dir, func(w *Writer) error {
			w.Section("rules")
			w.Record([]byte("half"))
			return boom
		})
		if !errors.Is(err, boom) {
			t.Fatalf("Write: %v, want the fill's error", err)
		}
		snap, err := Read(dir, 1<<20)
		if err != nil {
			t.Fatal(err)
		}
		if err := check(snap); err != nil {
			t.Fatalf("the last snapshot changed: %v", err)
		}
		if tmps, _ := filepath.Glob(filepath.Join(dir, tmpPrefix+"*")); len(tmps) != 0 {
			t.Fatalf("temporary files left: %v", tmps)
		}
	})
	t.Run("record outside a section", func(t *testing.T) {
		if err := Write(t.TempDir(), func(w *Writer) error { return w.Record([]byte("x")) }); err == nil {
			t.Fatal("a record outside a section was written")
		}
	})
	// Of its own directory only, whatever glob characters its name holds: another
	// directory's, which a glob of the name matches, is another exporter's, perhaps the
	// snapshot it is writing.
	for _, name := range []string{"storage", "a?[b]", "a[b"} {
		t.Run("stale temporary files of "+name, func(t *testing.T) {
			parent := t.TempDir()
			dir, other := filepath.Join(parent, name), filepath.Join(parent, "axb")
			for _, d := range []string{dir, other} {
				if err := os.Mkdir(d, 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(d, tmpPrefix+"123"), []byte("cut short"), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			if err := Write(dir, fill); err != nil {
				t.Fatal(err)
			}
			if _, err := os.Stat(filepath.Join(dir, tmpPrefix+"123")); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("stale temporary file: %v, want it removed", err)
			}
			if _, err := os.Stat(filepath.Join(other, tmpPrefix+"123")); err != nil {
				t.Errorf("another directory's temporary file: %v, want it kept", err)
			}
		})
	}
}

// TestSetAside renames a bad snapshot to a name of its own, keeping the newest three set
// aside: two set aside within a second (a crash loop) both stay, and so does the newest
// when the clock went back (the order is the set-asides', not the clock's), and those an
// earlier build named by their second alone count in the three, as the oldest.
func TestSetAside(t *testing.T) {
	start := time.Unix(1_700_000_000, 0)
	for _, tc := range []struct {
		name string
		// before are the names set aside already; at is the clock at each set-aside.
		before []string
		at     []time.Time
		// want is what is left, newest first: a set-aside's number (its content) or a
		// name of before.
		want []string
	}{{
		name: "an hour apart",
		at:   []time.Time{start, start.Add(time.Hour), start.Add(2 * time.Hour), start.Add(3 * time.Hour), start.Add(4 * time.Hour)},
		want: []string{"4", "3", "2"},
	}, {
		name: "within one second",
		at:   []time.Time{start, start, start},
		want: []string{"2", "1", "0"},
	}, {
		name: "the clock gone back",
		at:   []time.Time{start.Add(3 * time.Hour), start.Add(2 * time.Hour), start.Add(time.Hour), start},
		want: []string{"3", "2", "1"},
	}, {
		name:   "an earlier build's",
		before: []string{"snapshot.bad-1700000100", "snapshot.bad-1700000050"},
		at:     []time.Time{start, start},
		want:   []string{"1", "0", "snapshot.bad-1700000100"},
	}, {
		// A name no set-aside is given (a number one more would overflow) is another
		// file's, kept and passed over, not the newest.
		name:   "a number past the last",
		before: []string{"snapshot.bad-9223372036854775807-1"},
		at:     []time.Time{start, start, start, start},
		want:   []string{"3", "2", "1", "snapshot.bad-9223372036854775807-1"},
	}, {
		// Names SetAside does not write, though their numbers read as its, are other
		// files': kept, not counted.
		name:   "numbers not written so",
		before: []string{"snapshot.bad-+1-5", "snapshot.bad-01-5", "snapshot.bad-1-05", "snapshot.bad-+5", "snapshot.bad-05"},
		at:     []time.Time{start, start, start, start},
		want:   []string{"3", "2", "1", "snapshot.bad-+1-5", "snapshot.bad-01-5", "snapshot.bad-1-05", "snapshot.bad-+5", "snapshot.bad-05"},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			for _, name := range tc.before {
				if err := os.WriteFile(filepath.Join(dir, name), []byte(name), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			var names []string
			for i, at := range tc.at {
				if err := os.WriteFile(filepath.Join(dir, FileName), []byte(strconv.Itoa(i)), 0o600); err != nil {
					t.Fatal(err)
				}
				name, err := SetAside(dir, at)
				if err != nil {
					t.Fatal(err)
				}
				if !strings.HasPrefix(filepath.Base(name), FileName+".bad-") || slices.Contains(names, name) {
					t.Errorf("set aside as %s, after %v", name, names)
				}
				names = append(names, name)
			}
			entries, err := os.ReadDir(dir)
			if err != nil {
				t.Fatal(err)
			}
			var left []string
			for _, e := range entries {
				b, err := os.ReadFile(filepath.Join(dir, e.Name()))
				if err != nil {
					t.Fatal(err)
				}
				left = append(left, string(b))
			}
			slices.Sort(left)
			want := slices.Sorted(slices.Values(tc.want))
			if !slices.Equal(left, want) {
				t.Errorf("left %q, want %q", left, want)
			}
			if b, _ := os.ReadFile(names[len(names)-1]); string(b) != strconv.Itoa(len(names)-1) {
				t.Errorf("newest set aside %s holds %q", names[len(names)-1], b)
			}
		})
	}
	if _, err := SetAside(t.TempDir(), start); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("SetAside without a snapshot: %v", err)
	}
}

// TestParseSetAside: the names SetAside writes, and earlier builds wrote, are read back;
// no other name is, though its numbers would read the same.
func TestParseSetAside(t *testing.T) {
	for _, tc := range []struct {
		name  string
		n, at int64
		ok    bool
	}{
		{"snapshot.bad-1-1700000000", 1, 1700000000, true},
		{"snapshot.bad-12-0", 12, 0, true},
		{"snapshot.bad-1--5", 1, -5, true},
		{"snapshot.bad-9223372036854775806-9223372036854775807", math.MaxInt64 - 1, math.MaxInt64, true},
		{"snapshot.bad-1700000100", 0, 1700000100, true},
		{"snapshot.bad-0", 0, 0, true},
		{"snapshot.bad--5", 0, -5, true},
		{"snapshot.bad-+1-5", 0, 0, false},
		{"snapshot.bad-01-5", 0, 0, false},
		{"snapshot.bad-1-05", 0, 0, false},
		{"snapshot.bad-1-+5", 0, 0, false},
		{"snapshot.bad-1--0", 0, 0, false},
		{"snapshot.bad-0-5", 0, 0, false},
		{"snapshot.bad--1-5", 0, 0, false},
		{"snapshot.bad-9223372036854775807-1", 0, 0, false},
		{"snapshot.bad-+5", 0, 0, false},
		{"snapshot.bad-05", 0, 0, false},
		{"snapshot.bad--0", 0, 0, false},
		{"snapshot.bad-", 0, 0, false},
		{"snapshot.bad-1-", 0, 0, false},
		{"snapshot.bad-1-5-6", 0, 0, false},
		{"snapshot.bad-1-5.tmp", 0, 0, false},
		{"snapshot", 0, 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, ok := parseSetAside(tc.name)
			if ok != tc.ok || ok && (b.n != tc.n || b.at != tc.at || b.name != tc.name) {
				t.Errorf("parseSetAside(%q) = %+v, %v; want n %d, at %d, %v", tc.name, b, ok, tc.n, tc.at, tc.ok)
			}
		})
	}
}

// FuzzParseSetAside: a name parses only as the very name written for its numbers, and
// every name SetAside writes (n from 1 on, any second) or an earlier build wrote (a second
// alone) parses to its numbers.
func FuzzParseSetAside(f *testing.F) {
	f.Add("snapshot.bad-1-1700000000", int64(1), int64(1700000000))
	f.Add("snapshot.bad-+1-5", int64(math.MaxInt64), int64(-5))
	f.Add("snapshot.bad--05", int64(0), int64(0))
	f.Fuzz(func(t *testing.T, name string, n, at int64) {
		if b, ok := parseSetAside(name); ok {
			want := fmt.Sprintf("%s.bad-%d-%d", FileName, b.n, b.at)
			if b.n == 0 {
				want = fmt.Sprintf("%s.bad-%d", FileName, b.at)
			}
			if b.n < 0 || b.n == math.MaxInt64 || want != name || b.name != name {
				t.Fatalf("parseSetAside(%q) = %+v, the name of %q", name, b, want)
			}
		}
		legacy := fmt.Sprintf("%s.bad-%d", FileName, at)
		if b, ok := parseSetAside(legacy); !ok || b.n != 0 || b.at != at {
			t.Fatalf("parseSetAside(%q) = %+v, %v", legacy, b, ok)
		}
		if n <= 0 || n == math.MaxInt64 {
			return
		}
		written := fmt.Sprintf("%s.bad-%d-%d", FileName, n, at)
		if b, ok := parseSetAside(written); !ok || b.n != n || b.at != at {
			t.Fatalf("parseSetAside(%q) = %+v, %v", written, b, ok)
		}
		if got := (setAside{n: n, at: at}).fileName(); got != written {
			t.Fatalf("set aside %d at %d as %q, want %q", n, at, got, written)
		}
	})
}

// FuzzParse parses any bytes without panicking; what parses writes back to a snapshot
// that parses to the same sections.
func FuzzParse(f *testing.F) {
	f.Add(written(f))
	f.Add([]byte(magic + "\x01\x00\x00\x00\x02\x00\x00\x00\x00\x00"))
	f.Fuzz(func(t *testing.T, b []byte) {
		snap, err := Parse(b)
		if err != nil {
			return
		}
		dir := t.TempDir()
		if err := Write(dir, func(w *Writer) error {
			for _, s := range snap.Sections {
				w.Section(s.Name)
				for r := range s.Records() {
					w.Record(r)
				}
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		again, err := Read(dir, int64(len(b))+1<<20)
		if err != nil {
			t.Fatal(err)
		}
		if fmt.Sprint(sections(again)) != fmt.Sprint(sections(snap)) {
			t.Fatalf("rewritten %q, want %q", sections(again), sections(snap))
		}
	})
}

func sections(s *Snapshot) [][]string {
	var out [][]string
	for _, sec := range s.Sections {
		rs := []string{sec.Name}
		for r := range sec.Records() {
			rs = append(rs, string(r))
		}
		out = append(out, rs)
	}
	return out
}

// A snapshot that is not a regular file is refused as corrupt, at once, and can be set
// aside: a FIFO blocked the start for good (its open waits for a writer), a device (a
// link to /dev/zero) was read until memory ran out when no bound was given, a
// directory failed every start and every write until a person removed it.
func TestNotARegularFile(t *testing.T) {
	for _, tc := range []struct {
		name string
		make func(path string) error
	}{
		{"fifo", func(path string) error { return mkfifo(path) }},
		{"device", func(path string) error { return os.Symlink("/dev/zero", path) }},
		{"directory", func(path string) error { return os.Mkdir(path, 0o700) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := tc.make(filepath.Join(dir, FileName)); err != nil {
				t.Skip(err)
			}
			done := make(chan error, 1)
			go func() {
				_, err := Read(dir, math.MaxInt64)
				done <- err
			}()
			err, ok := await.Receive(t, done)
			if !ok {
				t.Fatal("Read still waiting")
			}
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("Read: %v, want ErrCorrupt", err)
			}
			if _, err := SetAside(dir, time.Unix(1_700_000_000, 0)); err != nil {
				t.Fatal(err)
			}
			if err := Write(dir, fill); err != nil {
				t.Fatalf("the first snapshot after it was set aside: %v", err)
			}
		})
	}
}

// TestSpilled: records added to a Spill are written by Writer.Spilled as Record writes
// them, in whatever order and subset they are asked for: in the order added, each once;
// out of order; some left out, with gaps past the spill's buffer; records larger than
// it. The spill leaves no file in the directory, whether the snapshot is committed or
// not.
func TestSpilled(t *testing.T) {
	big := strings.Repeat("b", 3*spillBuffer+5)
	added := []string{"a", "", big, "c", strings.Repeat("d", spillBuffer), "e", big + "f", "g"}
	for _, tc := range []struct {
		name string
		pick []int
	}{
		{"in order", []int{0, 1, 2, 3, 4, 5, 6, 7}},
		{"backwards", []int{7, 6, 5, 4, 3, 2, 1, 0}},
		{"gaps", []int{0, 3, 5, 7}},
		{"twice", []int{1, 7, 1, 2, 2}},
		{"none", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			sp, err := NewSpill(dir)
			if err != nil {
				t.Fatal(err)
			}
			var spans []Span
			for _, rec := range added {
				span, err := sp.Add([]byte(rec))
				if err != nil {
					t.Fatal(err)
				}
				spans = append(spans, span)
			}
			var picked []Span
			var want []string
			for _, i := range tc.pick {
				picked = append(picked, spans[i])
				want = append(want, added[i])
			}
			if err := Write(dir, func(w *Writer) error {
				w.Section("spilled")
				w.Record([]byte("before"))
				if err := w.Spilled(sp, picked); err != nil {
					return err
				}
				return w.Record([]byte("after"))
			}); err != nil {
				t.Fatal(err)
			}
			if err := sp.Close(); err != nil {
				t.Fatal(err)
			}
			snap, err := Read(dir, 1<<30)
			if err != nil {
				t.Fatal(err)
			}
			got := slices.Collect(snap.Sections[0].Records())
			want = append(append([]string{"before"}, want...), "after")
			if len(got) != len(want) {
				t.Fatalf("%d records, want %d", len(got), len(want))
			}
			for i := range got {
				if string(got[i]) != want[i] {
					t.Errorf("record %d: %d bytes %.10q, want %d bytes %.10q", i, len(got[i]), got[i], len(want[i]), want[i])
				}
			}
			if entries, err := os.ReadDir(dir); err != nil || len(entries) != 1 {
				t.Errorf("directory holds %v (%v), want the snapshot alone", entries, err)
			}
		})
	}
}

// TestSpillAborted: a snapshot aborted leaves neither its file nor its spill behind.
func TestSpillAborted(t *testing.T) {
	dir := t.TempDir()
	sp, err := NewSpill(dir)
	if err != nil {
		t.Fatal(err)
	}
	span, err := sp.Add([]byte("rec"))
	if err != nil {
		t.Fatal(err)
	}
	failed := errors.New("failed")
	if err := Write(dir, func(w *Writer) error {
		w.Section("spilled")
		w.Spilled(sp, []Span{span})
		return failed
	}); !errors.Is(err, failed) {
		t.Fatalf("Write: %v, want %v", err, failed)
	}
	if err := sp.Close(); err != nil {
		t.Fatal(err)
	}
	if entries, err := os.ReadDir(dir); err != nil || len(entries) != 0 {
		t.Errorf("directory holds %v (%v), want nothing", entries, err)
	}
}
