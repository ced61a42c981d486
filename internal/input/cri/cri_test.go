package cri

import (
	"cmp"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/logwindow/logwindow_exporter/internal/input/cri/critest"
)

// out is what Feed made of a line, as text.
type out struct {
	msg, time string
	r         Result
}

// feed feeds j the lines of source and returns what it made of them; a line
// "dropped <head>" is one the reader skipped for its length (Dropped), which it counted.
func feed(j *Joiner, source string, lines []string) []out {
	var got []out
	for _, l := range lines {
		if head, ok := strings.CutPrefix(l, "dropped "); ok {
			j.Dropped(source, []byte(head))
			continue
		}
		msg, time, r := j.Feed(source, []byte(l))
		got = append(got, out{string(msg), string(time), r})
	}
	return got
}

func TestFeed(t *testing.T) {
	for _, tc := range []struct {
		name  string
		max   int
		lines []string
		want  []out
	}{
		{"full line", 100, []string{"2024-03-01T12:00:00.123456789Z stdout F hello world"},
			[]out{{"hello world", "2024-03-01T12:00:00.123456789Z", Complete}}},
		{"empty message", 100, []string{"2024-03-01T12:00:00Z stdout F", "2024-03-01T12:00:00Z stdout F "},
			[]out{{"", "2024-03-01T12:00:00Z", Complete}, {"", "2024-03-01T12:00:00Z", Complete}}},
		{"parts joined, time of the last", 100, []string{"t1 stdout P hel", "t2 stdout P lo ", "t3 stdout F world"},
			[]out{{"", "", Partial}, {"", "", Partial}, {"hello world", "t3", Complete}}},
		{"streams interleave", 100, []string{"t1 stdout P a", "t1 stderr P x", "t2 stderr F y", "t2 stdout F b"},
			[]out{{"", "", Partial}, {"", "", Partial}, {"xy", "t2", Complete}, {"ab", "t2", Complete}}},
		{"tag with more flags", 100, []string{"t1 stdout P:x a", "t2 stdout F:x b"},
			[]out{{"", "", Partial}, {"ab", "t2", Complete}}},
		{"joined past the cap", 5, []string{"t1 stdout P abc", "t2 stdout P def", "t3 stdout F g", "t4 stdout F ok"},
			[]out{{"", "", Partial}, {"", "", Partial}, {"", "", TooLong}, {"ok", "t4", Complete}}},
		{"last part past the cap", 5, []string{"t1 stdout P abc", "t2 stdout F def"},
			[]out{{"", "", Partial}, {"", "", TooLong}}},
		{"not cri", 100, []string{"plain line", "t1 stdout X msg", "", "t1 stdout"},
			[]out{{"", "", Malformed}, {"", "", Malformed}, {"", "", Malformed}, {"", "", Malformed}}},
		// No runtime writes a stream name that long: such a line is not one, and its name
		// is not kept for the message it would start.
		{"stream name past MaxStreamBytes", 100, []string{"t1 " + strings.Repeat("s", MaxStreamBytes+1) + " P a", "t2 " + strings.Repeat("s", MaxStreamBytes) + " F b"},
			[]out{{"", "", Malformed}, {"b", "t2", Complete}}},
		// A part the reader dropped: the rest of its message goes with it, uncounted.
		{"reader dropped a part", 5, []string{"dropped t1 stdout P aaaaaaa", "t2 stdout P bb", "t3 stdout F part2", "t4 stdout F ok"},
			[]out{{"", "", Partial}, {"", "", Discarded}, {"ok", "t4", Complete}}},
		{"reader dropped a middle part", 5, []string{"t1 stdout P ab", "dropped t2 stdout P cccccccc", "t3 stdout F d"},
			[]out{{"", "", Partial}, {"", "", Discarded}}},
		{"reader dropped a part past the joiner's cap", 5, []string{"t1 stdout P abcd", "t2 stdout P efgh", "dropped t3 stdout P cccccccc", "t4 stdout F d"},
			[]out{{"", "", Partial}, {"", "", Partial}, {"", "", Discarded}}},
		{"reader dropped the last part", 5, []string{"t1 stdout P ab", "dropped t2 stdout F cccccccc", "t3 stdout F next"},
			[]out{{"", "", Partial}, {"next", "t3", Complete}}},
		{"reader dropped a whole message", 5, []string{"dropped t1 stdout F cccccccc", "t2 stdout F next"},
			[]out{{"next", "t2", Complete}}},
		{"other streams go on", 5, []string{"t1 stderr P x", "dropped t1 stdout P aaaaaaa", "t2 stderr F y", "t3 stdout F z"},
			[]out{{"", "", Partial}, {"xy", "t2", Complete}, {"", "", Discarded}}},
		{"head too short to tell", 5, []string{"t1 stdout P ab", "dropped t2 stdo", "t3 stdout F c"},
			[]out{{"", "", Partial}, {"abc", "t3", Complete}}},
		// A container that writes a UTF-8 byte order mark at its start (a .NET or
		// PowerShell console) has it open its first message: it says how the text is
		// written, and is no text of the message (a JSON object after it is no JSON). One
		// amid a message (in a part after its first) is the message's.
		{"byte order mark opening a message", 100, []string{"t1 stdout F \ufeff{\"a\":1}", "t2 stdout F \ufeff", "t3 stdout F \ufeff\ufeffx"},
			[]out{{`{"a":1}`, "t1", Complete}, {"", "t2", Complete}, {"\ufeffx", "t3", Complete}}},
		{"byte order mark opening a message in parts", 100, []string{"t1 stdout P \ufeffhel", "t2 stdout P \ufeffl", "t3 stdout F o"},
			[]out{{"", "", Partial}, {"", "", Partial}, {"hel\ufefflo", "t3", Complete}}},
		{"byte order mark opening a message after another's parts", 100, []string{"t1 stderr P x", "t2 stdout F \ufeffok", "t3 stderr F y"},
			[]out{{"", "", Partial}, {"ok", "t2", Complete}, {"xy", "t3", Complete}}},
		{"half a byte order mark", 100, []string{"t1 stdout F \xef\xbbx"},
			[]out{{"\xef\xbbx", "t1", Complete}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			j := New(tc.max)
			if got := feed(j, "f", tc.lines); !slices.Equal(got, tc.want) {
				t.Errorf("got %q\nwant %q", got, tc.want)
			}
			if j.n != 0 || len(j.pending) != 0 || j.HeldBytes() != 0 {
				t.Errorf("%d messages, %d files, %d bytes held after every message ended", j.n, len(j.pending), j.HeldBytes())
			}
		})
	}
}

// Release forgets one file's messages and nothing else, and says how many of them no
// count took (all but the one whose part the reader skipped and counted); the file's next
// last part is a message of its own.
func TestRelease(t *testing.T) {
	j := New(100)
	for _, l := range []string{"t1 stdout P a1 ", "t1 stderr P a2 "} {
		j.Feed("a", []byte(l))
	}
	j.Dropped("a", []byte("t1 other P skipped"))
	j.Feed("b", []byte("t1 stdout P b1 "))
	if n := j.Release("a"); n != 2 {
		t.Errorf("Release of a file with two messages joined and one counted skipped: %d uncounted, want 2", n)
	}
	if n := j.Release("none"); n != 0 {
		t.Errorf("Release of a file with no message: %d uncounted, want 0", n)
	}
	type out struct {
		msg string
		r   Result
	}
	var got []out
	for _, fl := range [][2]string{{"a", "t2 stdout F x"}, {"a", "t2 stderr F y"}, {"b", "t2 stdout F z"}} {
		msg, _, r := j.Feed(fl[0], []byte(fl[1]))
		got = append(got, out{string(msg), r})
	}
	if want := []out{{"x", Complete}, {"y", Complete}, {"b1 z", Complete}}; !slices.Equal(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
	if j.HeldBytes() != 0 {
		t.Errorf("%d bytes held after every message ended", j.HeldBytes())
	}
}

// Messages cut into P parts at random points, stdout and stderr interleaved, come out as
// the same messages in the same order per stream as when each is one F line.
func TestRandomSplits(t *testing.T) {
	r := rand.New(rand.NewPCG(14, 2))
	for round := range 200 {
		var lines []string
		var want []string
		for i := range 50 {
			msg := strings.Repeat(fmt.Sprintf("m%d.%d ", round, i), r.IntN(20))
			want = append(want, msg)
			stream := []string{"stdout", "stderr"}[i%2]
			lines = append(lines, critest.Split(r, "2024-03-01T12:00:00Z", stream, msg)...)
		}
		j := New(1 << 20)
		var got []string
		for _, l := range lines {
			msg, _, res := j.Feed("f", []byte(l))
			if res == Complete {
				got = append(got, string(msg))
			}
		}
		// Streams alternate message by message and each is whole before the next starts,
		// so the order of completion is the order written.
		if !slices.Equal(got, want) {
			t.Fatalf("round %d: got %q\nwant %q", round, got, want)
		}
	}
}

// FuzzFeed: any sequence of lines (split on newlines) never panics, and no joined message
// passes the cap (a single F line's message is shorter than the line, which the follower
// caps). A line that starts with '!' is given to Dropped instead, one that is "~" releases
// the file, one that is "^" restarts a twin Joiner (one made anew is given what it was in
// the middle of: Pending, Resume), which must make of every line what the Joiner that
// never restarted makes; lines alternate between two files. HeldBytes stays what each
// holds. Seeds: testdata/fuzz/FuzzFeed.
func FuzzFeed(f *testing.F) {
	f.Add("t1 stdout P ab\nt1 stderr P x\n!t1 stdout P yyyy\n^\n^\nt2 stderr F y\nt2 stdout P c\nt3 stdout F d\nt3 stdout F e", uint8(3))
	f.Fuzz(func(t *testing.T, lines string, max uint8) {
		j, twin := New(int(max)), New(int(max))
		for i, l := range strings.Split(lines, "\n") {
			source := []string{"f", "g"}[i%2]
			if head, ok := strings.CutPrefix(l, "!"); ok {
				j.Dropped(source, []byte(head))
				twin.Dropped(source, []byte(head))
				continue
			}
			switch l {
			case "~":
				j.Release(source)
				twin.Release(source)
				continue
			case "^":
				twin = restarted(twin)
				continue
			}
			msg, time, r := j.Feed(source, []byte(l))
			if r == Complete && len(msg) > int(max) && len(msg) >= len(l) {
				t.Fatalf("joined message of %d bytes past the cap %d", len(msg), max)
			}
			if tmsg, ttime, tr := twin.Feed(source, []byte(l)); string(tmsg) != string(msg) || string(ttime) != string(time) || tr != r {
				t.Fatalf("line %q: %q %q %v, restarted %q %q %v", l, msg, time, r, tmsg, ttime, tr)
			}
			if held := recount(j); j.HeldBytes() != held {
				t.Fatalf("HeldBytes %d, holding %d", j.HeldBytes(), held)
			}
			if held := recount(twin); twin.HeldBytes() != held {
				t.Fatalf("restarted: HeldBytes %d, holding %d", twin.HeldBytes(), held)
			}
		}
		if joining := j.n - skipping(j); j.n > MaxTracked || joining > MaxPending {
			t.Fatalf("%d tracked, %d of them joined", j.n, joining)
		}
		for _, j := range []*Joiner{j, twin} {
			j.Release("f")
			j.Release("g")
			if j.HeldBytes() != 0 || j.n != 0 {
				t.Fatalf("%d bytes, %d messages held after releasing every file", j.HeldBytes(), j.n)
			}
		}
	})
}

// restarted is a Joiner of j's cap made anew and given what j was in the middle of, as a
// restart gives it.
func restarted(j *Joiner) *Joiner {
	next := New(j.max)
	for source, part := range j.Pending() {
		next.Resume(source, part)
	}
	return next
}

// A Joiner given back (Resume) what another was in the middle of (Pending) goes on as
// that one would have: the next parts of its messages, in any stream, end them. Resumed,
// a message is bound as its parts are when fed: past a smaller cap, refused the memory
// or a place, it is dropped whole and counted once (TooLong at its last part).
func TestResume(t *testing.T) {
	const limit = 100
	for _, tc := range []struct {
		name          string
		before, after []string
		// max is the cap of the Joiner resumed (limit when 0); room, when not nil, its Bound;
		// busy, messages being joined already when it resumes.
		max  int
		room func(n int64) bool
		busy int
		want []out
	}{
		{name: "streams interleaved", before: []string{"t1 stdout P a", "t1 stderr P x", "t2 stdout P b"},
			after: []string{"t3 stderr F y", "t4 stdout F c"},
			want:  []out{{"xy", "t3", Complete}, {"abc", "t4", Complete}}},
		{name: "an empty part", before: []string{"t1 stdout P"}, after: []string{"t2 stdout F a"},
			want: []out{{"a", "t2", Complete}}},
		{name: "skipped past the cap", before: []string{"t1 stdout P " + strings.Repeat("a", limit), "t2 stdout P b"},
			after: []string{"t3 stdout F c", "t4 stdout F next"},
			want:  []out{{"", "", TooLong}, {"next", "t4", Complete}}},
		{name: "a part dropped by the reader", before: []string{"t1 stdout P a", "dropped t2 stdout P bbb"},
			after: []string{"t3 stdout P c", "t4 stdout F d", "t5 stdout F next"},
			want:  []out{{"", "", Partial}, {"", "", Discarded}, {"next", "t5", Complete}}},
		{name: "past a smaller cap", before: []string{"t1 stdout P abcd"}, max: 3,
			after: []string{"t2 stdout F e", "t3 stdout F f"},
			want:  []out{{"", "", TooLong}, {"f", "t3", Complete}}},
		{name: "refused the memory", before: []string{"t1 stdout P abcd"}, room: func(int64) bool { return false },
			after: []string{"t2 stdout F e", "t3 stdout F f"},
			want:  []out{{"", "", TooLong}, {"f", "t3", Complete}}},
		{name: "refused a place", before: []string{"t1 stdout P abcd"}, busy: MaxPending,
			after: []string{"t2 stdout F e", "t3 stdout F f"},
			want:  []out{{"", "", TooLong}, {"f", "t3", Complete}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			j := New(limit)
			feed(j, "f", tc.before)
			next := New(cmp.Or(tc.max, limit))
			next.Bound(tc.room)
			for i := range tc.busy {
				next.Feed(fmt.Sprint("busy", i), []byte("t1 stdout P a"))
			}
			for source, part := range j.Pending() {
				next.Resume(source, part)
			}
			if held := recount(next); next.HeldBytes() != held {
				t.Errorf("HeldBytes %d, holding %d", next.HeldBytes(), held)
			}
			if got := feed(next, "f", tc.after); !slices.Equal(got, tc.want) {
				t.Errorf("got %q\nwant %q", got, tc.want)
			}
			for i := range tc.busy {
				next.Release(fmt.Sprint("busy", i))
			}
			if next.n != 0 || next.HeldBytes() != 0 {
				t.Errorf("%d messages, %d bytes held after every message ended", next.n, next.HeldBytes())
			}
		})
	}
}

// recount is what HeldBytes should say of j, and checks j.n and j.skipped.
func recount(j *Joiner) int64 {
	held, n := int64(0), 0
	for _, streams := range j.pending {
		held += sourceOverhead
		for name, s := range streams {
			held += int64(streamOverhead + len(name) + cap(s.buf))
			n++
		}
	}
	if n != j.n || skipping(j) != j.skipped {
		return -1
	}
	return held
}

// skipping counts the messages j tracks without joining them.
func skipping(j *Joiner) int {
	n := 0
	for _, streams := range j.pending {
		for _, s := range streams {
			if s.overflow {
				n++
			}
		}
	}
	return n
}

// Past MaxPending messages being joined, a message refused a place is dropped whole and
// counted once, at its last part; only past as many more it is counted part by part, its
// last part a message of its own.
func TestPendingCap(t *testing.T) {
	j := New(100)
	open := func(from, to int) {
		for i := from; i < to; i++ {
			if _, _, r := j.Feed(fmt.Sprint("f", i), []byte("t1 stdout P a")); r != Partial {
				t.Fatalf("opening message %d: %v", i, r)
			}
		}
	}
	feed := func(source string) []Result {
		var got []Result
		for _, l := range []string{"t1 stdout P a", "t1 stdout P b", "t1 stdout P c", "t2 stdout F d"} {
			_, _, r := j.Feed(source, []byte(l))
			got = append(got, r)
		}
		return got
	}
	open(0, MaxPending)
	if got, want := feed("refused"), []Result{Partial, Partial, Partial, TooLong}; !slices.Equal(got, want) {
		t.Errorf("a message refused a place: %v, want %v", got, want)
	}
	if j.n != MaxPending {
		t.Errorf("%d messages tracked after the refused one ended, want %d", j.n, MaxPending)
	}
	open(MaxPending, MaxTracked)
	if skipped := skipping(j); skipped != MaxPending {
		t.Errorf("%d of the messages past MaxPending skipped, want %d", skipped, MaxPending)
	}
	if got, want := feed("untracked"), []Result{TooLong, TooLong, TooLong, Complete}; !slices.Equal(got, want) {
		t.Errorf("past MaxTracked: %v, want %v", got, want)
	}
	if msg, _, r := j.Feed("f0", []byte("t2 stdout F z")); r != Complete || string(msg) != "az" {
		t.Errorf("a message joined before the cap: %q %v", msg, r)
	}
}

// Under a bound on what it holds (Bound), a Joiner joins the messages that fit and drops
// the others whole, each counted once; none of their parts passes for a message, and what
// it holds stays within the bound. Messages of 40 files are cut at random (critest.Split)
// and their parts interleaved.
func TestBound(t *testing.T) {
	const bound = 2_000
	r := rand.New(rand.NewPCG(7, 11))
	j := New(1 << 20)
	j.Bound(func(n int64) bool { return j.HeldBytes()+n <= bound })
	type file struct {
		source string
		lines  []string
	}
	var files []file
	written := map[string]bool{}
	for f := range 40 {
		var lines []string
		for m := range 20 {
			msg := fmt.Sprintf("<%d.%d:%s>", f, m, strings.Repeat("x", r.IntN(200)))
			written[msg] = true
			lines = append(lines, critest.Split(r, "t", "stdout", msg)...)
		}
		files = append(files, file{fmt.Sprint("f", f), lines})
	}
	joined, dropped := 0, 0
	for len(files) > 0 {
		k := r.IntN(len(files))
		f := &files[k]
		msg, _, res := j.Feed(f.source, []byte(f.lines[0]))
		if f.lines = f.lines[1:]; len(f.lines) == 0 {
			files = slices.Delete(files, k, k+1)
		}
		switch res {
		case Complete:
			if !written[string(msg)] {
				t.Fatalf("%q is not a message written", msg)
			}
			joined++
		case TooLong:
			dropped++
		}
		if held := j.HeldBytes() - int64(len(j.pending)*sourceOverhead+j.n*(streamOverhead+len("stdout"))); held > bound {
			t.Fatalf("holding %d bytes of messages, past the bound %d", held, bound)
		}
	}
	if joined+dropped != len(written) || joined == 0 || dropped == 0 {
		t.Errorf("%d messages joined and %d dropped of %d: want each once, some of both", joined, dropped, len(written))
	}
}

// A Part no Feed could have made (a forged or damaged snapshot's) is not kept, nor
// charged: a stream name Feed does not read, past MaxStreamBytes or with a space in it,
// was held whatever its length, bounded only by the snapshot's size.
func TestResumeUnreadableStream(t *testing.T) {
	for _, tc := range []struct {
		name   string
		stream string
		kept   bool
	}{
		{"stdout", "stdout", true},
		{"longest", strings.Repeat("s", MaxStreamBytes), true},
		{"empty", "", false},
		{"past MaxStreamBytes", strings.Repeat("s", MaxStreamBytes+1), false},
		{"a megabyte", strings.Repeat("s", 1<<20), false},
		{"with a space", "std out", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			j := New(100)
			j.Resume("f", Part{Stream: tc.stream, Joined: []byte("ab")})
			if held := recount(j); j.HeldBytes() != held {
				t.Errorf("HeldBytes %d, holding %d", j.HeldBytes(), held)
			}
			if kept := j.n == 1; kept != tc.kept {
				t.Fatalf("kept %v (%d bytes held), want %v", kept, j.HeldBytes(), tc.kept)
			}
			if !tc.kept && j.HeldBytes() != 0 {
				t.Errorf("%d bytes held for a message not kept", j.HeldBytes())
			}
			if tc.kept {
				if got := feed(j, "f", []string{"t2 " + tc.stream + " F c"}); !slices.Equal(got, []out{{"abc", "t2", Complete}}) {
					t.Errorf("its last part: %q", got)
				}
			}
		})
	}
}

// Resume says which messages it kept, and why not the others: past MaxTracked messages
// in progress, none (Untracked), whose last parts are then read as whole messages; one
// of a stream of its file in progress already (Held), which stays as it was; one of a
// stream no line names (Unreadable). Its caller counts the first parts so lost.
func TestResumePastMaxTracked(t *testing.T) {
	const over = 3
	j := New(100)
	for i := range MaxTracked + over {
		got := j.Resume(fmt.Sprint("f", i), Part{Stream: "stdout", Joined: []byte("a")})
		if want := map[bool]Resumed{true: Kept, false: Untracked}[i < MaxTracked]; got != want {
			t.Fatalf("message %d: %v, want %v", i, got, want)
		}
	}
	if got := feed(j, fmt.Sprint("f", MaxTracked), []string{"t2 stdout F b"}); !slices.Equal(got, []out{{"b", "t2", Complete}}) {
		t.Errorf("the last part of one not kept: %q", got)
	}
	if got := j.Resume("f0", Part{Stream: "stdout", Joined: []byte("again")}); got != Held {
		t.Errorf("a message of a stream being joined already: %v, want %v", got, Held)
	}
	if got := feed(j, "f0", []string{"t2 stdout F b"}); !slices.Equal(got, []out{{"ab", "t2", Complete}}) {
		t.Errorf("the message of f0's stdout given back first, at its last part: %q, want it as it was", got)
	}
	if got := j.Resume("f0", Part{Stream: "std out", Joined: []byte("a")}); got != Unreadable {
		t.Errorf("a message of a stream no line names: %v, want %v", got, Unreadable)
	}
}

// Past MaxPending messages in progress, some skipped, a restart joins the same messages
// whatever order they are given back in: a skipped one given back first took the place
// of one being joined, which was then dropped as too long.
func TestResumeOrderPastMaxPending(t *testing.T) {
	const skipped = 10
	j := New(100)
	source := func(i int) string { return fmt.Sprint("f", i) }
	for i := range MaxPending + skipped {
		j.Feed(source(i), []byte("t1 stdout P a"))
	}
	var parts []struct {
		source string
		part   Part
	}
	for source, part := range j.Pending() {
		parts = append(parts, struct {
			source string
			part   Part
		}{source, Part{Stream: part.Stream, Joined: slices.Clone(part.Joined), Skipped: part.Skipped, Counted: part.Counted}})
	}
	// The skipped first: the order a map may give them in.
	slices.SortStableFunc(parts, func(a, b struct {
		source string
		part   Part
	}) int {
		return cmp.Compare(btoi(!a.part.Skipped), btoi(!b.part.Skipped))
	})
	next := New(100)
	for _, p := range parts {
		next.Resume(p.source, p.part)
	}
	for i := range MaxPending + skipped {
		want, _, wr := j.Feed(source(i), []byte("t2 stdout F b"))
		got, _, gr := next.Feed(source(i), []byte("t2 stdout F b"))
		if string(got) != string(want) || gr != wr {
			t.Fatalf("message %d: %q %v after the restart, %q %v without it", i, got, gr, want, wr)
		}
	}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}
