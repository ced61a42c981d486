package config

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/logwindow/logwindow_exporter/windows"
)

// FuzzParse feeds the loader random YAML: it must never panic, and it must either reject
// the input with problems that each name a place, or return a config whose rules are all
// compiled.
func FuzzParse(f *testing.F) {
	seeds, _ := filepath.Glob("testdata/*/*.yaml")
	seeds = append(seeds, "../example-rules.yaml")
	for _, s := range seeds {
		data, err := os.ReadFile(s)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Add([]byte("rules: &a [*a]"))
	f.Add([]byte("rules:\n  - {<<: [{name: a}, {match: x}]}\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := Parse(data, "fuzz.yaml")
		checkLoaded(t, c, err, "fuzz.yaml")
	})
}

// FuzzLoad is FuzzParse through the file system, as the command line, a reload and
// --config.check load a config: the fuzzed YAML is written to a file and Load reads it.
// Its seed corpus (testdata/fuzz/FuzzLoad) holds configs that once panicked.
func FuzzLoad(f *testing.F) {
	f.Add([]byte("rules:\n  - {name: a, match: x}\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		path := filepath.Join(t.TempDir(), "rules.yaml")
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		c, err := Load(path)
		checkLoaded(t, c, err, path)
	})
}

// checkLoaded checks what a load returned: either an *Error whose every problem names
// file, or a config whose rules are all compiled.
func checkLoaded(t *testing.T, c *Config, err error, file string) {
	t.Helper()
	if err != nil {
		if c != nil {
			t.Fatal("config returned with an error")
		}
		var cerr *Error
		if !errors.As(err, &cerr) || len(cerr.Problems) == 0 {
			t.Fatalf("error %v is not an *Error with problems", err)
		}
		for _, line := range strings.Split(err.Error(), "\n") {
			if !strings.HasPrefix(line, file) {
				t.Fatalf("problem %q does not name the file", line)
			}
		}
		return
	}
	if len(c.Rules) == 0 {
		t.Fatal("valid config without rules")
	}
	withinLimits(t, c)
	for _, r := range c.Rules {
		if _, err := windows.NewLayout(r.Windows, r.Options()); err != nil {
			t.Fatalf("rule %q loads but its wheels cannot be built: %v", r.Name, err)
		}
		if r.Regexp == nil || r.Fingerprint == "" || len(r.Windows) == 0 || r.Help == "" {
			t.Fatalf("rule %q not fully compiled: %+v", r.Name, r)
		}
		if r.IsValueRule() != (r.ValueName != "") {
			t.Fatalf("rule %q: value capture %d for value %q", r.Name, r.ValueCapture, r.ValueName)
		}
	}
}

// withinLimits checks that what a loaded config holds is within the limits, counted as
// decoded (aliases and merge keys expanded), not as written.
func withinLimits(t *testing.T, c *Config) {
	t.Helper()
	over := func(what string, n, limit int) {
		if n > limit {
			t.Fatalf("loaded with %d %s, over the %d limit", n, what, limit)
		}
	}
	over("rules", len(c.Rules), maxRules)
	over("inputs", len(c.Inputs), maxInputs)
	over("patterns", len(c.Patterns), maxPatterns)
	over("global windows", len(c.Global.Windows), maxWindows)
	for _, in := range c.Inputs {
		over("log_format candidates", len(in.LogFormats), maxCandidates)
	}
	for _, r := range c.Rules {
		over("bytes of a rule name", len(r.Name), maxNameBytes)
		over("bytes of help", len(r.Help), maxHelpBytes)
		over("windows", len(r.Windows), maxWindows)
		over("labels", len(r.Labels), maxLabels)
		over("rewrites", len(r.Rewrites), maxRewrites)
		over("quantiles", len(r.Quantiles), maxQuantiles)
		over("buckets", len(r.Buckets), maxBuckets)
		over("initial label sets", len(r.Initial), maxInitial)
		for _, l := range r.Labels {
			over("bytes of a label name", len(l.Name), maxNameBytes)
			over("references of a label's template", refs(l.Template), maxTemplateRefs)
			over("literal bytes of a label's template", literalBytes(l.Template), maxTemplateBytes)
		}
		for _, it := range r.Items {
			over("references of an item's template", refs(it.Template), maxTemplateRefs)
			over("literal bytes of an item's template", literalBytes(it.Template), maxTemplateBytes)
		}
	}
}

// refs counts a template's references to captures.
func refs(t Template) int {
	n := 0
	for _, p := range t {
		if p.Capture >= 0 {
			n++
		}
	}
	return n
}

// literalBytes counts the bytes of a template's literal text.
func literalBytes(t Template) int {
	n := 0
	for _, p := range t {
		n += len(p.Literal)
	}
	return n
}

// FuzzWrappedItemNotBlamed: the check of a comma missing in a bracketed list blames no
// file that loads with the same item quoted: an input's name with spaces, written over
// lines or not, anchored and aliased, after a byte order mark, a multi-byte character or
// on lines ended by \r\n or \r.
func FuzzWrappedItemNotBlamed(f *testing.F) {
	for layout := range 128 {
		f.Add("api web", uint8(layout))
	}
	f.Add("a b c d", uint8(1))
	f.Fuzz(func(t *testing.T, name string, layout uint8) {
		words := strings.Fields(name)
		if len(words) < 2 || strings.Join(words, " ") != name || strings.Trim(name, " abcdefghijklmnopqrstuvwxyz0123456789") != "" {
			t.Skip("a name of plain words")
		}
		item := name
		if layout&1 != 0 {
			item = strings.Join(words, "\n      ")
		}
		defined, listed := `"`+name+`"`, "["+item+"]"
		if layout&8 != 0 {
			defined, listed = "&n "+defined, "[*n]"
		}
		match := "x"
		if layout&64 != 0 {
			match = "é"
		}
		file := func(listed string) []byte {
			text := "inputs: [{name: " + defined + ", path: /a.log}]\nrules: [{name: r, match: '" + match + "', inputs: " + listed + "}]\n"
			if layout&16 != 0 {
				text = "{rules: [{name: r, match: '" + match + "', inputs: " + listed + "}],\n inputs: [{name: " + defined + ", path: /a.log}]}\n"
			}
			switch {
			case layout&4 != 0:
				text = strings.ReplaceAll(text, "\n", "\r\n")
			case layout&32 != 0:
				text = strings.ReplaceAll(text, "\n", "\r")
			}
			if layout&2 != 0 {
				text = "\ufeff" + text
			}
			return []byte(text)
		}
		quoted := listed
		if layout&8 == 0 {
			quoted = `["` + item + `"]`
		}
		if _, err := Parse(file(quoted), "rules.yaml"); err != nil {
			t.Skipf("quoted, the file does not load either: %v", err)
		}
		if _, err := Parse(file(listed), "rules.yaml"); err != nil {
			t.Errorf("%q: %v", file(listed), err)
		}
	})
}
