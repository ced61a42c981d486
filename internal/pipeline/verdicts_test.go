package pipeline

import (
	"maps"
	"slices"
	"testing"

	"github.com/logwindow/logwindow_exporter/parser"
)

// A file of a glob of one log format is of no format once its first MaxHeld lines fit not,
// or fewer and it went quiet (but for an nginx image's start-up lines alone), until a line
// of it fits; a file one of whose first lines fit is not judged again; a file closed, or a
// format changed by a reload, is forgotten.
func TestVerdicts(t *testing.T) {
	v := newVerdicts()
	v.judgeBy("combined")
	lines := func(path string, fit bool, n int) {
		for range n {
			v.line(path, []byte("12:00:00 INFO served / in 5ms"), fit)
		}
	}
	for _, step := range []struct {
		name string
		do   func()
		none []string
	}{
		{"too few to tell", func() { lines("a", false, parser.MaxHeld-1) }, nil},
		{"interleaved with a file that fits", func() { lines("b", true, 1); lines("b", false, parser.MaxHeld) }, nil},
		{"of no format", func() { lines("a", false, 1) }, []string{"a"}},
		{"another", func() { lines("c", false, parser.MaxHeld); lines("a", false, 3) }, []string{"a", "c"}},
		{"a line fits", func() { lines("a", true, 1) }, []string{"c"}},
		{"and never again", func() { lines("a", false, 2*parser.MaxHeld) }, []string{"c"}},
		{"closed", func() { v.closed("c") }, nil},
		{"read again under its path", func() { lines("c", false, parser.MaxHeld) }, []string{"c"}},
		{"the same format after a reload", func() { v.judgeBy("combined") }, []string{"c"}},
		{"another format", func() { v.judgeBy("common"); lines("a", false, parser.MaxHeld) }, []string{"a"}},
		{"quiet after fewer lines", func() { lines("d", false, 3); v.settle("d") }, []string{"a", "d"}},
		{"start-up lines alone, quiet", func() {
			v.line("e", []byte("/docker-entrypoint.sh: Configuration complete; ready for start up"), false)
			v.settle("e")
		}, []string{"a", "d"}},
		{"start-up lines alone past MaxHeld", func() {
			for range parser.MaxHeld + 1 {
				v.line("g", []byte("20-envsubst-on-templates.sh: Running envsubst on /etc/nginx/templates/a.conf.template to /etc/nginx/conf.d/a.conf"), false)
			}
			v.settle("g")
		}, []string{"a", "d"}},
		{"a line of another kind after them", func() { lines("g", false, 1) }, []string{"a", "d", "g"}},
		{"as many start-up lines as the bound, quiet", func() {
			for range parser.MaxStartupLines {
				v.line("h", []byte("/docker-entrypoint.sh: Launching /docker-entrypoint.d/30-tune-worker-processes.sh"), false)
			}
			v.settle("h")
		}, []string{"a", "d", "g"}},
		{"one more", func() {
			v.line("h", []byte("/docker-entrypoint.sh: Launching /docker-entrypoint.d/30-tune-worker-processes.sh"), false)
		}, []string{"a", "d", "g", "h"}},
		{"a line of its format after them", func() { lines("h", true, 1) }, []string{"a", "d", "g"}},
		{"a file that fits, quiet", func() { lines("f", true, 1); v.settle("f") }, []string{"a", "d", "g"}},
		{"a line of its format after quiet", func() { lines("d", true, 1) }, []string{"a", "g"}},
		{"no rule reads the input", func() { v.judgeBy("") }, nil},
	} {
		step.do()
		if got := v.noFormatFiles(); !slices.Equal(got, step.none) {
			t.Errorf("%s: files of no format %q, want %q", step.name, got, step.none)
		}
		var want map[string]int
		if len(step.none) > 0 {
			want = map[string]int{parser.NoFormat: len(step.none)}
		}
		if got := v.formats(); !maps.Equal(got, want) {
			t.Errorf("%s: formats %v, want %v", step.name, got, want)
		}
	}
}
