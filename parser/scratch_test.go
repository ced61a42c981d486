package parser

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"
	"unsafe"

	"github.com/logwindow/logwindow_exporter/config"
)

// TestScratchOwnLines makes scratches one after the other, as the inputs of a process do
// on their first lines, and checks that no cache line holds buffers of two of them: a
// shared line would be written by two cores on every line parsed.
func TestScratchOwnLines(t *testing.T) {
	for _, sz := range []sizes{
		{caps: 34, whereCaps: 2, labels: 3, items: 1, slots: 1},
		{caps: 1, whereCaps: 0, labels: 0, items: 0, slots: 0},
		{caps: 7, whereCaps: 5, labels: 11, items: 3, slots: 2},
	} {
		owner := map[uintptr]int{} // cache line → scratch
		for n := range 8 {
			s := newScratch(sz)
			for _, b := range scratchBuffers(s) {
				if b.bytes == 0 {
					t.Fatalf("%+v: scratch %d has a buffer %s without room", sz, n, b.name)
				}
				for line := b.addr / cacheLine; line <= (b.addr+b.bytes-1)/cacheLine; line++ {
					if other, ok := owner[line]; ok && other != n {
						t.Fatalf("%+v: %s of scratch %d shares a cache line with scratch %d", sz, b.name, n, other)
					}
					owner[line] = n
				}
			}
		}
	}
}

type buffer struct {
	name        string
	addr, bytes uintptr
}

func scratchBuffers(s *scratch) []buffer {
	return []buffer{
		bufferOf("caps", s.caps), bufferOf("whereCaps", s.whereCaps), bufferOf("key", s.key),
		bufferOf("ends", s.ends), bufferOf("labels", s.labels), bufferOf("itemText", s.itemText),
		bufferOf("itemEnds", s.itemEnds), bufferOf("items", s.items), bufferOf("fix", s.fix),
		bufferOf("times", s.times), bufferOf("vals", s.vals),
		bufferOf("jsonKey", s.jsonKey),
	}
}

func bufferOf[T any](name string, b []T) buffer {
	return buffer{name, uintptr(unsafe.Pointer(unsafe.SliceData(b[:cap(b)]))), uintptr(cap(b)) * unsafe.Sizeof(*new(T))}
}

// TestValuesAsIs checks the values given as their capture's bytes (asIs, the items
// renderItems and apply do not copy) against the same values rendered by copying, on adversarial
// and random captures: invalid UTF-8, values around the cap, empty and unset captures,
// captures in the line and past it (decoded values).
func TestValuesAsIs(t *testing.T) {
	atCap := strings.Repeat("a", MaxLabelValueLen-1)
	values := []string{"", "GET", "200", "é", "\xff", "a\xc3", atCap + "a", atCap + "é", atCap + "ab",
		strings.Repeat("é", MaxLabelValueLen), "\x00\x7f", "-"}
	values = append(values, randomValues(rand.New(rand.NewPCG(1, 2)), 200)...)
	items := []config.Item{
		{Template: config.Template{{Capture: 1}}, Label: true},
		{Template: config.Template{{Capture: 1}}},
		{Template: config.Template{{Literal: "x", Capture: -1}, {Capture: 1}}, Label: true},
		{Template: config.Template{{Capture: 2}}, Label: true},
	}
	direct := []int{1, 1, -1, 2}
	for i, v := range values {
		for _, more := range []bool{false, true} {
			// Capture 1 is v, in the line or past it; capture 2 did not take part.
			src, caps := text{line: []byte("<" + v + ">")}, []int{0, len(v) + 2, 1, len(v) + 1, -1, -1}
			if more {
				src = text{line: []byte("<>"), more: []byte(v)}
				caps = []int{0, 2, 2, 2 + len(v), -1, -1}
			}
			valid := utf8.ValidString(v) && isASCII([]byte(v))
			for _, known := range []bool{false, valid} {
				t.Run(fmt.Sprintf("%d/more=%t/valid=%t", i, more, known), func(t *testing.T) {
					s := newScratch(sizes{labels: 1, items: len(items)})
					m := &match{src, caps}
					s.render([]config.Template{{{Capture: 1}}}, nil, m, known)
					got := capture(&src, caps, 1)
					ok := asIs(got, known)
					if ok && (string(got) != string(s.key) || string(got) != string(s.labels[0])) {
						t.Errorf("label %q as is, rendered %q", got, s.key)
					}
					if !ok && utf8.ValidString(v) && len(v) <= MaxLabelValueLen {
						t.Errorf("label %q not given as is", v)
					}
					s.renderItems(items, nil, nil, m, known)
					want := slices.Clone(s.items)
					for k := range want {
						want[k] = slices.Clone(want[k])
					}
					s.renderItems(items, direct, nil, m, known)
					for k := range items {
						if string(s.items[k]) != string(want[k]) || cap(s.items[k]) != len(s.items[k]) {
							t.Errorf("item %d: %q (capacity %d), rendered %q", k, s.items[k], cap(s.items[k]), want[k])
						}
					}
					// A rule of one item gives it from apply as renderItems renders it.
					for k, it := range items {
						r := &rule{value: -1, oneLabel: -1, items: []config.Item{it}, itemCaptures: direct[k : k+1], oneItem: direct[k], itemSet: k, literalsValid: true}
						s.newMatch()
						var e Event
						s.apply(r, "", m, eventFunc(func(got *Event) { e = cloneEvent(got) }))
						if len(e.Items) != 1 || string(e.Items[0]) != string(want[k]) {
							t.Errorf("item %d from apply: %q, rendered %q", k, e.Items, want[k])
						}
					}
				})
			}
		}
	}
}

// TestRenderLabels checks render against a naive model of a label set (each value made
// valid UTF-8 as validLabel does, cut to the cap at a rune start, joined by
// KeySep) on sets of labels that are one capture each (appended in place) and the same
// labels as templates of more parts (appendTemplate), with adversarial and random values:
// invalid UTF-8, empty and unset captures, values around the cap, decoded values past the
// line.
func TestRenderLabels(t *testing.T) {
	atCap := strings.Repeat("a", MaxLabelValueLen-1)
	values := []string{"", "GET", "é", "\xff", "a\xc3", atCap + "a", atCap + "é", atCap + "ab",
		strings.Repeat("é", MaxLabelValueLen), "\x00\x7f", "-"}
	values = append(values, randomValues(rand.New(rand.NewPCG(5, 6)), 100)...)
	model := func(vs ...string) string {
		out := make([]string, len(vs))
		for i, v := range vs {
			v = validLabel(v)
			out[i] = v[:capLen(v)]
		}
		return strings.Join(out, KeySep)
	}
	one := func(c int) config.Template { return config.Template{{Capture: c}} }
	parts := func(c int) config.Template {
		return config.Template{{Literal: "", Capture: -1}, {Capture: c}, {Literal: "", Capture: -1}}
	}
	for i, v := range values {
		w := values[(i*7+3)%len(values)]
		// Capture 1 is v in the line, 2 is w past it, 3 did not take part.
		src := text{line: []byte("<" + v + ">"), more: []byte(w)}
		n := len(v) + 2
		caps := []int{0, n, 1, len(v) + 1, n, n + len(w), -1, -1}
		valid := isASCII([]byte(v)) && isASCII([]byte(w))
		for _, tc := range []struct {
			name   string
			labels func(func(int) config.Template) []config.Template
			want   string
		}{
			{"v", func(f func(int) config.Template) []config.Template { return []config.Template{f(1)} }, model(v)},
			{"v,w", func(f func(int) config.Template) []config.Template { return []config.Template{f(1), f(2)} }, model(v, w)},
			{"unset,w,v", func(f func(int) config.Template) []config.Template { return []config.Template{f(3), f(2), f(1)} }, model("", w, v)},
		} {
			for _, known := range []bool{false, valid} {
				for _, form := range []struct {
					name string
					f    func(int) config.Template
				}{{"one", one}, {"parts", parts}} {
					t.Run(fmt.Sprintf("%d/%s/%s/valid=%t", i, tc.name, form.name, known), func(t *testing.T) {
						labels := tc.labels(form.f)
						s := newScratch(sizes{labels: len(labels)})
						s.render(labels, nil, &match{src, caps}, known)
						if string(s.key) != tc.want {
							t.Errorf("key %q, want %q", s.key, tc.want)
						}
						if got := string(bytes.Join(s.labels[:len(labels)], []byte(KeySep))); got != tc.want {
							t.Errorf("labels join to %q, want %q", got, tc.want)
						}
					})
				}
			}
		}
	}
}

// TestRenderCaptures checks renderCaptures, which writes a label set of captures a word a
// value, against render on sets of two and three captures whose values are 0 to 9 bytes
// long (ASCII, multi-byte and invalid UTF-8), unset, or placed where the 8 bytes from
// their start may not be the text's to read (at the line's end, at the end of more's
// capacity): it must render what render does whenever it renders, cut each label to its
// length, render no set with a value not known valid or longer than a word, and render
// every set of valid values of at most 8 bytes whose words the text holds.
func TestRenderCaptures(t *testing.T) {
	values := []string{"", "a", "GET", "200", "2xx", "OPTIONS", "abcdefgh", "abcdefghi", "é", "\xff", "a\xc3"}
	values = append(values, randomValues(rand.New(rand.NewPCG(7, 8)), 40)...)
	r := rand.New(rand.NewPCG(9, 10))
	for i := range 4000 {
		// Captures 1 and 2 are in the line, 1 followed by at least 8 bytes and 2 by
		// none or a few; 3 and 4 are past it, 3 with room after it in more's capacity and
		// 4 at its end; 5 did not take part.
		v := make([]string, 5)
		for k := range 4 {
			v[k] = values[r.IntN(len(values))]
		}
		tail := strings.Repeat("-", r.IntN(4))
		line := "<" + v[0] + "|abcdefgh|" + v[1] + tail
		more := make([]byte, 0, len(v[2])+8+len(v[3]))
		more = append(append(append(more, v[2]...), "12345678"...), v[3]...)
		n := len(line)
		a := 1 + len(v[0])
		b := n - len(tail) - len(v[1])
		caps := []int{0, n, 1, a, b, b + len(v[1]), n, n + len(v[2]), n + len(v[2]) + 8, n + len(more), -1, -1}
		m := &match{text{line: []byte(line), more: more}, caps}
		set := make([]int, 2+r.IntN(2))
		for k := range set {
			set[k] = 1 + r.IntN(5)
		}
		labels := make([]config.Template, len(set))
		// Short values of captures 1, 3 and 5 are always rendered, long ones never;
		// those of 2 and 4 when the text holds their word.
		short, readable, want := true, true, make([]string, len(set))
		for k, c := range set {
			labels[k] = config.Template{{Capture: c}}
			want[k] = string(m.capture(c))
			short = short && len(want[k]) <= 8
			readable = readable && (c == 1 || c == 3 || c == 5)
		}
		for _, known := range []bool{false, true} {
			valid := known && isASCII([]byte(strings.Join(want, "")))
			ref := newScratch(sizes{labels: len(set)})
			ref.render(labels, nil, m, valid)
			s := newScratch(sizes{labels: len(set)})
			done := s.renderCaptures(set, m, valid)
			if done && (!valid || !short) || !done && valid && short && readable {
				t.Fatalf("%d: captures %v of %q, valid %t: rendered %t", i, set, want, valid, done)
			}
			if !done {
				continue
			}
			if string(s.key) != string(ref.key) {
				t.Fatalf("%d: captures %v: key %q, render's %q", i, set, s.key, ref.key)
			}
			for k := range set {
				if l := s.labels[k]; string(l) != string(ref.labels[k]) || cap(l) != len(l) {
					t.Fatalf("%d: captures %v: label %d %q (capacity %d), render's %q", i, set, k, l, cap(l), ref.labels[k])
				}
			}
		}
	}
}

// eventFunc is a Sink calling itself with each event; drops are not expected.
type eventFunc func(e *Event)

func (f eventFunc) Event(e *Event)       { f(e) }
func (f eventFunc) Drop(int, DropReason) { panic("unexpected drop") }

// randomValues makes n capture values of random pieces: ASCII, multi-byte runes, invalid
// and cut UTF-8, NUL, and a long piece, a few of which pass the label cap.
func randomValues(r *rand.Rand, n int) []string {
	pieces := []string{"a", " ", "é", "€", "\xff", "\xe2\x82", "\x00", strings.Repeat("z", 300)}
	values := make([]string, n)
	for i := range values {
		var b strings.Builder
		for range r.IntN(8) {
			b.WriteString(pieces[r.IntN(len(pieces))])
		}
		values[i] = b.String()
	}
	return values
}
