package main

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/logwindow/logwindow_exporter/internal/testutil/doccmd"
)

// The commands docs/ shows in its sh blocks name a rule file and a log of the reader's
// own; they are run with the quickstart's, which stand for them.
var (
	docsOptional = regexp.MustCompile(`\s*\[[^]]*\]`)
	docsStandIns = strings.NewReplacer("rules.yaml", "examples/quickstart.yaml", "access.log", "examples/access.log")
)

// TestDocsCommands runs every logwindow_exporter command of docs/*.md's sh blocks (without
// the optional parts in brackets, a redirection read as the command's output) over the
// quickstart's rule file and sample log: each must exit 0.
func TestDocsCommands(t *testing.T) {
	docs, err := filepath.Glob("docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	ran := 0
	for _, doc := range docs {
		text, err := os.ReadFile(doc)
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range doccmd.Lines(text) {
			command, ok := strings.CutPrefix(line, "logwindow_exporter ")
			if !ok {
				continue
			}
			command, _, _ = strings.Cut(command, ">")
			args := strings.Fields(docsStandIns.Replace(docsOptional.ReplaceAllString(command, "")))
			t.Run(doc+": "+line, func(t *testing.T) {
				var stdout, stderr bytes.Buffer
				if code := run(args, &stdout, &stderr); code != 0 {
					t.Fatalf("%v: exit %d: %s", args, code, stderr.String())
				}
			})
			ran++
		}
	}
	if ran == 0 {
		t.Fatal("docs/*.md has no logwindow_exporter command in an sh block")
	}
}

// The --explain example of docs/operations.md: its rule file, then what the command prints.
var (
	explainExampleRules  = regexp.MustCompile("(?s)An example: [^\n]*\n\n```yaml\n(.*?)```\n")
	explainExampleOutput = regexp.MustCompile("(?s)```console\n\\$ logwindow_exporter (--config.file=rules.yaml --explain=(\\S+))\n(.*?)```\n")
	explainLine          = regexp.MustCompile(`(?m)^line \d+: (.*)$`)
	placedAt             = regexp.MustCompile(`placed at \S+`)
)

// TestDocsExplainExample runs the --explain example of docs/operations.md over its rule
// file and the lines it explains, and compares what it prints with the example's, but for
// the second the lines are placed at (the clock's).
func TestDocsExplainExample(t *testing.T) {
	doc, err := os.ReadFile("docs/operations.md")
	if err != nil {
		t.Fatal(err)
	}
	rules, out := explainExampleRules.FindSubmatch(doc), explainExampleOutput.FindSubmatch(doc)
	if rules == nil || out == nil {
		t.Fatalf("docs/operations.md lacks the --explain example's rule file (%q) or its output (%q)", rules, out)
	}
	dir := t.TempDir()
	var lines []byte
	for _, l := range explainLine.FindAllSubmatch(out[3], -1) {
		lines = append(append(lines, l[1]...), '\n')
	}
	if err := os.WriteFile(filepath.Join(dir, "rules.yaml"), rules[1], 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, string(out[2])), lines, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Chdir(dir)
	var stdout, stderr bytes.Buffer
	if code := run(strings.Fields(string(out[1])), &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	got := placedAt.ReplaceAll(bytes.TrimRight(stdout.Bytes(), "\n"), []byte("placed at T"))
	want := placedAt.ReplaceAll(bytes.TrimRight(out[3], "\n"), []byte("placed at T"))
	if !bytes.Equal(got, want) {
		t.Errorf("docs/operations.md's --explain example is not what the command prints:\n%s", firstDiff(got, want))
	}
}
