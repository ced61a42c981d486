package main

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/logwindow/logwindow_exporter/config"
)

// The README's quickstart: the command that starts it, the command that shows its windows,
// and the example of what that shows, between markers.
var (
	quickstartCommand = regexp.MustCompile(`(?m)^go run \. (.+)$`)
	quickstartGrep    = regexp.MustCompile(`(?m)^curl -s localhost:9907/metrics \| grep -E '([^']+)'$`)
	quickstartBlock   = regexp.MustCompile("(?s)(<!-- quickstart-scrape:[^\n]*-->\n```\n)(.*?)(```\n<!-- /quickstart-scrape -->)")
)

// TestReadmeQuickstart runs the README's quickstart as its command gives it, over every
// file its inputs follow, replayed (so at one instant, as the quickstart's windows are
// right after it started), keeps the lines the README's grep keeps, and compares them
// with the README's example. `go test -run TestReadmeQuickstart -update .` rewrites the
// example; review the diff.
func TestReadmeQuickstart(t *testing.T) {
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	command := quickstartCommand.FindSubmatch(readme)
	grep := quickstartGrep.FindSubmatch(readme)
	block := quickstartBlock.FindSubmatchIndex(readme)
	if command == nil || grep == nil || block == nil {
		t.Fatalf("README.md lacks the quickstart's command (%q), its grep (%q) or the example between its markers", command, grep)
	}
	args := strings.Fields(string(command[1]))
	var cfgPath string
	for _, a := range args {
		if p, ok := strings.CutPrefix(a, "--config.file="); ok {
			cfgPath = p
		}
	}
	cfg, err := config.Load(cfgPath)
	if err != nil {
		t.Fatalf("the quickstart's config: %v", err)
	}
	for _, in := range cfg.Inputs {
		files, err := filepath.Glob(in.Source())
		if err != nil || len(files) == 0 {
			t.Fatalf("input %q follows no bundled file (%v)", in.Name, err)
		}
		for _, f := range files {
			args = append(args, "--replay="+f)
		}
	}
	var stdout, stderr bytes.Buffer
	if code := run(args, &stdout, &stderr); code != 0 {
		t.Fatalf("%v: exit %d: %s", args, code, stderr.String())
	}
	keep, err := regexp.Compile(string(grep[1]))
	if err != nil {
		t.Fatalf("the README's grep: %v", err)
	}
	var got bytes.Buffer
	for line := range bytes.Lines(stdout.Bytes()) {
		if keep.Match(line) {
			got.Write(line)
		}
	}
	if got.Len() == 0 {
		t.Fatalf("the README's grep keeps nothing of the quickstart's scrape:\n%s", stdout.String())
	}
	want := readme[block[4]:block[5]]
	if *update {
		out := slices.Concat(readme[:block[4]], got.Bytes(), readme[block[5]:])
		if err := os.WriteFile("README.md", out, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	if !bytes.Equal(got.Bytes(), want) {
		t.Errorf("README.md's example is not what the quickstart shows; rerun with -update and review the diff.\n%s", firstDiff(got.Bytes(), want))
	}
}

// readmeTestCommand is the README's command that runs the tests.
var readmeTestCommand = regexp.MustCompile(`(?m)^go test .*$`)

// TestReadmeTestCommandIsCIs holds the README's test command to what CI runs: each part of
// its && list is a line of .ci/run, so that a reader who runs it runs CI's tests.
func TestReadmeTestCommandIsCIs(t *testing.T) {
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	ci, err := os.ReadFile(".ci/run")
	if err != nil {
		t.Fatal(err)
	}
	command := readmeTestCommand.Find(readme)
	if command == nil {
		t.Fatal("README.md has no go test command")
	}
	lines := strings.Split(string(ci), "\n")
	for _, part := range topLevelAnd(string(command)) {
		if !slices.Contains(lines, part) {
			t.Errorf("README.md's test command runs %q, which .ci/run does not", part)
		}
	}
}

// topLevelAnd splits a shell && list into its commands, a subshell's (cd dir && cmd) one.
func topLevelAnd(list string) []string {
	var parts []string
	depth, start := 0, 0
	for i := 0; i < len(list); i++ {
		switch {
		case list[i] == '(':
			depth++
		case list[i] == ')':
			depth--
		case depth == 0 && strings.HasPrefix(list[i:], "&&"):
			parts = append(parts, strings.TrimSpace(list[start:i]))
			start = i + 2
		}
	}
	return append(parts, strings.TrimSpace(list[start:]))
}
