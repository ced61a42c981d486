package parser

import (
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
