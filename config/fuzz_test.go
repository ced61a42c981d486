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
