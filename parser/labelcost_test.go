package parser

import (
	"bytes"
	"math/rand/v2"
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
