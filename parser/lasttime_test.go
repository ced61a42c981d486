package parser

import (
	"bytes"
	"reflect"
	"testing"
)

// A session tells the time each time read of its rules gave last, and whether a line read
// it since, without a call per line: rules reading one capture alike share a time read.
func TestLastTime(t *testing.T) {
	c := mustParse(t, `
rules:
  - name: a
    match: '^(?P<t>[^ ]+) (?P<s>[0-9]+)'
    timestamp: {capture: t, layout: '2006-01-02T15:04:05Z07:00'}
  - name: b
    match: '^(?P<t>[^ ]+) (?P<s>[0-9]+)'
    where: {s: '^5'}
    timestamp: {capture: t, layout: '2006-01-02T15:04:05Z07:00'}
  - name: other
    match: '^(?P<t>[^ ]+) x$'
    timestamp: {capture: t, layout: '2006-01-02T15:04:05Z07:00'}
  - name: untimed
    match: 'y'
`)
	p, err := New(c.Rules)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := p.TimeRules(), [][]int{{0, 1}, {2}}; !reflect.DeepEqual(got, want) {
		t.Fatalf("TimeRules() = %v, want %v", got, want)
	}
	s := p.NewSession()
	var sink nopSink
	if _, _, ok := s.LastTime(0); ok {
		t.Error("a time before any line")
	}
	steps := []struct {
		line    string
		read    []bool  // whether each time read read the line
		unix    []int64 // then the last time of each
		ok      []bool
		comment string
	}{
		{"2024-03-01T12:00:00Z 200", []bool{true, false}, []int64{mar1, 0}, []bool{true, false}, "the first line"},
		{"2024-03-01T12:00:00Z 500", []bool{true, false}, []int64{mar1, 0}, []bool{true, false}, "the same second, read once for two rules"},
		{"y", []bool{false, false}, []int64{mar1, 0}, []bool{true, false}, "a line without a time"},
		{"2024-03-01T12:00:05Z x", []bool{false, true}, []int64{mar1, mar1 + 5}, []bool{true, true}, "the other time"},
		{"nonsense 200", []bool{true, false}, []int64{mar1, mar1 + 5}, []bool{false, true}, "a time that does not parse"},
	}
	var last [2]uint64
	for _, st := range steps {
		s.ParseWrapped("", []byte(st.line), nil, &sink)
		for i := range 2 {
			unix, match, ok := s.LastTime(i)
			if read := match != last[i]; read != st.read[i] {
				t.Errorf("%s: time %d read = %v, want %v", st.comment, i, read, st.read[i])
			}
			last[i] = match
			if ok != st.ok[i] || ok && unix != st.unix[i] {
				t.Errorf("%s: time %d = %d, %v; want %d, %v", st.comment, i, unix, ok, st.unix[i], st.ok[i])
			}
		}
	}
}

// TestSameTime holds sameTime to string equality for texts of every length up to 40, equal
// and with any one byte changed, and for texts of two lengths.
func TestSameTime(t *testing.T) {
	for n := range 41 {
		a := make([]byte, n)
		for i := range a {
			a[i] = byte('0' + i%10)
		}
		b := bytes.Clone(a)
		if !sameTime(a, b) {
			t.Fatalf("%q: not the same as itself", a)
		}
		if n > 0 && sameTime(a, b[:n-1]) {
			t.Fatalf("%q: the same as %q", a, b[:n-1])
		}
		for i := range b {
			b[i] ^= 0x40
			if sameTime(a, b) {
				t.Fatalf("%q: the same as %q", a, b)
			}
			b[i] ^= 0x40
		}
	}
}

// TestTimeCacheOwnsItsText reads lines into one buffer, as a tailer does, each over the
// last: the cached time's text must be a copy, not the buffer the next line overwrites,
// or a time of the same length would seem the same and keep the last one's. The times are
// of 20, 22 and 30 bytes, below and within the lengths compared by words.
func TestTimeCacheOwnsItsText(t *testing.T) {
	c := mustParse(t, `
rules:
  - name: a
    match: '^(?P<t>[^ ]+) (?P<s>[0-9]+)'
    timestamp: {capture: t, layout: '2006-01-02T15:04:05Z07:00'}
`)
	p, err := New(c.Rules)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		first, next string
		want        int64 // the next line's time (the first is at mar1)
	}{
		{"2024-03-01T12:00:00Z 200", "2024-03-01T12:00:07Z 200", mar1 + 7},
		{"2024-03-01T12:00:00.5Z 200", "2024-03-01T12:00:09.5Z 200", mar1 + 9},
		{"2024-03-01T12:00:00.123456789Z 200", "2024-03-01T12:00:01.123456789Z 200", mar1 + 1},
	} {
		s := p.NewSession()
		var sink nopSink
		buf := []byte(tc.first)
		s.ParseWrapped("", buf, nil, &sink)
		if unix, _, ok := s.LastTime(0); !ok || unix != mar1 {
			t.Fatalf("%q: time %d, %v", tc.first, unix, ok)
		}
		copy(buf, tc.next)
		s.ParseWrapped("", buf, nil, &sink)
		if unix, _, ok := s.LastTime(0); !ok || unix != tc.want {
			t.Errorf("%q read over %q in its buffer: time %d, %v; want %d", tc.next, tc.first, unix, ok, tc.want)
		}
	}
}
