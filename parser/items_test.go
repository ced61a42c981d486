package parser

import (
	"strings"
	"testing"

	"github.com/logwindow/logwindow_exporter/config"
)

// itemSink keeps the items of each event as strings.
type itemSink struct{ got [][]string }

func (s *itemSink) Event(e *Event) {
	var items []string
	for _, it := range e.Items {
		items = append(items, string(it))
	}
	s.got = append(s.got, items)
}

func (s *itemSink) Drop(int, DropReason) {}

// TestItems: a rule's items are rendered per line next to its labels, from regex and
// logfmt captures alike: an item shown as a label is made valid UTF-8 and capped as a
// label value, any other keeps its full bytes.
func TestItems(t *testing.T) {
	c := mustParse(t, `
inputs:
  - {name: text, path: /x/text.log}
  - {name: kv, path: /x/kv.log, format: logfmt}
rules:
  - name: re
    inputs: [text]
    match: '^(?P<client>\S*) (?P<path>\S*)$'
    labels: {client: 'c-${client}', path: '${path}'}
  - name: kv
    inputs: [kv]
    fields: {client: client, path: path}
    labels: {client: 'c-${client}', path: '${path}'}
`)
	for _, r := range c.Rules {
		// Labels are sorted by name: client, then path. The path item is a label.
		r.Items = []config.Item{{Template: r.Labels[0].Template}, {Template: r.Labels[1].Template, Label: true}}
	}
	p, err := New(c.Rules)
	if err != nil {
		t.Fatal(err)
	}
	long := strings.Repeat("x", MaxLabelValueLen+10)
	for _, tc := range []struct {
		name, client, path string
		want               []string
	}{
		{"plain", "1.2.3.4", "/a", []string{"c-1.2.3.4", "/a"}},
		{"empty", "", "", []string{"c-", ""}},
		{"long", long, long, []string{"c-" + long, long[:MaxLabelValueLen]}},
		{"invalid UTF-8", "a\xffb", "/\xfe", []string{"c-a\xffb", "/\uFFFD"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, in := range []struct{ input, line string }{
				{"text", tc.client + " " + tc.path},
				{"kv", "client=" + tc.client + " path=" + tc.path},
			} {
				var s itemSink
				p.Parse(in.input, []byte(in.line), &s)
				if len(s.got) != 1 || strings.Join(s.got[0], "|") != strings.Join(tc.want, "|") {
					t.Errorf("%s: items %q, want %q", in.input, s.got, tc.want)
				}
			}
		})
	}
}
