package cri

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/logwindow/logwindow_exporter/internal/input/cri/critest"
)

func TestFeed(t *testing.T) {
	type out struct {
		msg, time string
		r         Result
	}
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
	} {
		t.Run(tc.name, func(t *testing.T) {
			j := New(tc.max)
			var got []out
			for _, l := range tc.lines {
				msg, time, r := j.Feed("f", []byte(l))
				got = append(got, out{string(msg), string(time), r})
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("got %q\nwant %q", got, tc.want)
			}
		})
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
// caps). Seeds: testdata/fuzz/FuzzFeed.
func FuzzFeed(f *testing.F) {
	f.Fuzz(func(t *testing.T, lines string, max uint8) {
		j := New(int(max))
		for _, l := range strings.Split(lines, "\n") {
			msg, _, r := j.Feed("f", []byte(l))
			if r == Complete && len(msg) > int(max) && len(msg) >= len(l) {
				t.Fatalf("joined message of %d bytes past the cap %d", len(msg), max)
			}
		}
		if len(j.pending) > MaxPending {
			t.Fatalf("%d pending", len(j.pending))
		}
	})
}
