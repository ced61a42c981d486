package parser

import (
	"bytes"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/logwindow/logwindow_exporter/config"
)

// TestLongTemplateRendersTheCap: a label template of many references to a capture as long
// as the line renders what its value keeps (MaxLabelValueLen bytes, made valid UTF-8 and
// cut at a character), and no more: it rendered every reference whole, on every line, so
// that 100 references to a 60 KB capture wrote 6 MB a line (a config of 20,000 took 10 s
// and 2.7 GB for 20 lines). The value is the one the whole rendering gives, for values of
// one, two, three and four byte characters and invalid bytes, whatever their offset; a top
// label (an item shown as a label) likewise.
func TestLongTemplateRendersTheCap(t *testing.T) {
	const refs = 100
	var tmpl config.Template
	for range refs {
		tmpl = append(tmpl, config.TemplatePart{Literal: "-", Capture: -1}, config.TemplatePart{Capture: 1})
	}
	// want is the value of the whole rendering: valid UTF-8, cut at a character.
	want := func(v string) string {
		full := validLabel(strings.Repeat("-"+v, refs))
		end := min(len(full), MaxLabelValueLen)
		for end < len(full) && !utf8.RuneStart(full[end]) {
			end--
		}
		return full[:end]
	}
	for _, unit := range []string{"x", "é", "€", "😀", "\xff", "a\xe2\x82", "\xf0\x9f\x98"} {
		for offset := range 4 {
			v := strings.Repeat("y", offset) + strings.Repeat(unit, 60000/len(unit))
			line := []byte(v)
			m := &match{src: text{line: line}, caps: []int{0, len(line), 0, len(line)}}
			s := newScratch(sizes{labels: 1, items: 1})
			s.render([]config.Template{tmpl}, nil, m, false)
			if got := string(s.labels[0]); got != want(v) {
				t.Errorf("%q at %d: label %.40q... of %d bytes, want %.40q... of %d", unit, offset, got, len(got), want(v), len(want(v)))
			}
			s.renderItems([]config.Item{{Template: tmpl, Label: true}}, nil, nil, m, false)
			if got := string(s.items[0]); got != want(v) {
				t.Errorf("%q at %d: top label %.40q... of %d bytes, want %.40q... of %d", unit, offset, got, len(got), want(v), len(want(v)))
			}
			if n := max(cap(s.key), cap(s.itemText)); n > 4*labelRender {
				t.Fatalf("%q at %d: rendering one value of %d bytes grew a buffer to %d bytes", unit, offset, MaxLabelValueLen, n)
			}
		}
	}
}

// TestLabelCapMatchesFullRendering: a label value rendered only up to the cap is the
// whole rendering made a label value (invalid bytes as U+FFFD unless the values are known
// valid, cut at MaxLabelValueLen on a character's start), for random templates of
// literals and captures around the cap's length, of characters of one to four bytes,
// combining marks, invalid bytes and sequences cut short. Rendering no more than the cap
// (a value known valid kept with a character cut short at its end) fails it.
func TestLabelCapMatchesFullRendering(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	valid := []string{"a", "é", "€", "😀", "\u0300", "-"}
	invalid := []string{"\xff", "\xe2\x82", "\xf0\x9f\x98", "\x80", "\xc3", "\xed\xa0\x80"}
	// gen makes at least n bytes, of valid UTF-8 only when onlyValid.
	gen := func(n int, onlyValid bool) []byte {
		var b []byte
		for len(b) < n {
			if onlyValid || r.IntN(3) > 0 {
				b = append(b, valid[r.IntN(len(valid))]...)
			} else {
				b = append(b, invalid[r.IntN(len(invalid))]...)
			}
		}
		return b
	}
	for i := range 1500 {
		knownValid := i%2 == 1
		var line []byte
		caps := []int{0, 0}
		captures := 1 + r.IntN(4)
		for range captures {
			lo := len(line)
			line = append(line, gen(r.IntN(MaxLabelValueLen+100), knownValid)...)
			caps = append(caps, lo, len(line))
		}
		caps[1] = len(line)
		var tmpl config.Template
		for range 1 + r.IntN(6) {
			if r.IntN(2) == 0 {
				tmpl = append(tmpl, config.TemplatePart{Literal: string(gen(r.IntN(MaxLabelValueLen+100), true)), Capture: -1})
			} else {
				tmpl = append(tmpl, config.TemplatePart{Capture: 1 + r.IntN(captures)})
			}
		}
		m := &match{src: text{line: line}, caps: caps}
		full := appendTemplate(nil, tmpl, m)
		if !knownValid {
			full = appendValidUTF8(nil, full)
		}
		want := full[:capLen(full)]
		s := newScratch(sizes{labels: 1, items: 1})
		s.render([]config.Template{tmpl}, nil, m, knownValid)
		if !bytes.Equal(s.labels[0], want) {
			t.Fatalf("case %d: label of %d bytes, want %d:\n%q\nwant\n%q", i, len(s.labels[0]), len(want), s.labels[0], want)
		}
		s.renderItems([]config.Item{{Template: tmpl, Label: true}}, nil, nil, m, knownValid)
		if !bytes.Equal(s.items[0], want) {
			t.Fatalf("case %d: top label of %d bytes, want %d:\n%q\nwant\n%q", i, len(s.items[0]), len(want), s.items[0], want)
		}
	}
}

// FuzzLabelTemplate: a label's template rendered up to the cap (appendLabel) gives the
// value the whole rendering gives once made valid UTF-8 and cut at the cap: the value of
// any line, literals and captures (of the line, of decoded text past it, not taking part),
// repeated past the cap, whatever the template; a label shown as a top value too, and an
// item that is no label is rendered whole. plan gives the template's parts, a byte each:
// a literal (cut from lits at the byte) or a capture. Seeds: testdata/fuzz.
func FuzzLabelTemplate(f *testing.F) {
	f.Add("GET /index.html", "-é", []byte{0, 1, 4, 2, 3, 9}, uint8(100), true)
	f.Add("\xe2\x82\xac\xff", "\xf0\x9f", []byte{0, 4, 0, 14, 3, 4}, uint8(255), false)
	f.Add("😀x", "", []byte{1}, uint8(200), true)
	f.Add("ab\xf0\x9f\x98", "x\xe2", []byte{2, 9, 2, 9, 2}, uint8(255), false)
	f.Fuzz(func(t *testing.T, line, lits string, plan []byte, repeat uint8, valid bool) {
		// Lines of a few KB reach the cap; longer ones only slow the whole rendering down.
		line, lits = line[:min(len(line), 64)], lits[:min(len(lits), 64)]
		long := []byte(strings.Repeat(line, int(repeat)+1))
		more := []byte(strings.Repeat(lits, int(repeat)/2+1))
		n, half := len(long), len(long)/2
		for utf8.Valid(long) && half > 0 && !utf8.RuneStart(long[half]) {
			half--
		}
		// Captures 0 to 4: the line, its halves (of valid text cut at a character, as a
		// regex cuts it), the decoded text past it, one not taking part.
		caps := []int{0, n, 0, half, half, n, n, n + len(more), -1, -1}
		m := &match{src: text{line: long, more: more}, caps: caps}
		var tmpl config.Template
		for i, b := range plan[:min(len(plan), 2*100)] {
			if c := int(b % 6); c < 5 {
				tmpl = append(tmpl, config.TemplatePart{Capture: c})
			} else {
				at := int(b) % (len(lits) + 1)
				tmpl = append(tmpl, config.TemplatePart{Literal: lits[at:] + lits[:at] + strconv.Itoa(i), Capture: -1})
			}
		}
		// The parser says valid only of a line and literals that are.
		valid = valid && utf8.Valid(long) && utf8.Valid(more) && literalsValid([]config.Template{tmpl}, nil)
		full := appendTemplate(nil, tmpl, m)
		want := validLabel(string(full))
		want = want[:capLen(want)]
		s := newScratch(sizes{labels: 2, items: 3})
		s.render([]config.Template{tmpl, tmpl}, nil, m, valid)
		for i, got := range s.labels[:2] {
			if string(got) != want {
				t.Fatalf("label %d: %q, the whole rendering %q makes %q", i, got, full, want)
			}
		}
		// Two values of three times labelRender bytes each at most (an invalid byte is
		// three once valid), the buffer grown for them: never the whole rendering. A label
		// of one capture is that capture, made valid whole, as long as the line at most.
		if c := cap(s.key); oneCapture(tmpl) < 0 && c > 16*labelRender {
			t.Fatalf("rendering two values of %d bytes grew the key's buffer to %d bytes", MaxLabelValueLen, c)
		}
		items := []config.Item{{Template: tmpl, Label: true}, {Template: tmpl}, {Template: tmpl, Label: true}}
		s.renderItems(items, nil, nil, m, valid)
		for i, got := range s.items[:3] {
			if w := map[bool]string{true: want, false: string(full)}[items[i].Label]; string(got) != w {
				t.Fatalf("item %d (label %v): %q, want %q", i, items[i].Label, got, w)
			}
		}
	})
}
