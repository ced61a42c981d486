package main

import (
	"bytes"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/logwindow/logwindow_exporter/internal/testutil/doccmd"
	"github.com/logwindow/logwindow_exporter/internal/testutil/testexec"
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

// yamlBlock is a Markdown yaml block, its fence's indentation in the first group.
var yamlBlock = regexp.MustCompile("(?ms)^( *)```yaml\n(.*?)^ *```")

// docsYAMLNotRules are the yaml blocks of the documents that are no rule file, by their
// first line, with why they are not loaded.
var docsYAMLNotRules = map[string]string{
	"global:    # defaults every rule inherits":      "the file's outline, its four keys empty",
	"# web.yml, passed as --web.config.file=web.yml": "a web config, its hash elided",
}

// docsYAMLContext is what a block of docs stands in a rule file with: the input its rules
// read (a block without inputs:, or a rule's keys alone) and a rule of the inputs it shows
// (a block without rules:).
const (
	docsYAMLInput = "inputs:\n  - name: nginx\n    path: %s\n    log_format: combined\n"
	docsYAMLRule  = "rules:\n  - name: docs_example\n    match: '.'\n"
)

// docsTableDelimiter is the line under a Markdown table's header: its cells of dashes.
var docsTableDelimiter = regexp.MustCompile(`^\|(\s*:?-+:?\s*\|)+$`)

// TestDocsTableRows holds each row of README.md's and docs/*.md's tables to one line
// between pipes: a row's text wrapped onto the next line is cut there, Markdown taking
// the rest for rows of their own, a sentence broken across the table.
func TestDocsTableRows(t *testing.T) {
	docs, err := filepath.Glob("docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	rows := 0
	for _, doc := range append([]string{"README.md"}, docs...) {
		text, err := os.ReadFile(doc)
		if err != nil {
			t.Fatal(err)
		}
		table, fenced := false, false
		for i, line := range strings.Split(string(text), "\n") {
			// A table of a list item is indented.
			line = strings.TrimSpace(line)
			switch {
			case strings.HasPrefix(line, "```"):
				table, fenced = false, !fenced
			case fenced:
			case docsTableDelimiter.MatchString(line):
				table = true
			case line == "":
				table = false
			case table && strings.HasPrefix(line, "|") && strings.HasSuffix(line, "|"):
				rows++
			case table:
				t.Errorf("%s:%d: a table's row is cut at a line's end: %.80q", doc, i+1, line)
			}
		}
	}
	if rows == 0 {
		t.Fatal("no table row of the documents was checked")
	}
}

// TestDocsYAMLBlocks loads every yaml block of README.md and docs/*.md as --config.check
// does: a whole rule file as it is, a block of some of its keys with the rest (an input of
// nginx's combined format named nginx, configuration.md's patterns, a rule), a rule's list
// item under rules:, a rule's keys in a rule. Each must load: a reader copies them.
func TestDocsYAMLBlocks(t *testing.T) {
	conf, err := os.ReadFile("docs/configuration.md")
	if err != nil {
		t.Fatal(err)
	}
	patterns := regexp.MustCompile("(?ms)^```yaml\n(patterns:\n.*?)^```").FindSubmatch(conf)
	if patterns == nil {
		t.Fatal("docs/configuration.md has no yaml block of patterns:")
	}
	docs, err := filepath.Glob("docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	log := filepath.Join(dir, "access.log")
	if err := os.WriteFile(log, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	input := fmt.Sprintf(docsYAMLInput, log)
	skipped := map[string]bool{}
	loaded := 0
	for _, doc := range append([]string{"README.md"}, docs...) {
		text, err := os.ReadFile(doc)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range yamlBlock.FindAllSubmatchIndex(text, -1) {
			indent := string(text[m[2]:m[3]])
			var block strings.Builder
			for line := range strings.Lines(string(text[m[4]:m[5]])) {
				block.WriteString(strings.TrimPrefix(line, indent))
			}
			first, _, _ := strings.Cut(block.String(), "\n")
			if _, ok := docsYAMLNotRules[first]; ok {
				skipped[first] = true
				continue
			}
			file := block.String()
			switch {
			case strings.HasPrefix(first, "    "):
				file = "rules:\n  - name: docs_example\n" + file
			case strings.HasPrefix(first, "  - "):
				file = "rules:\n" + file
			}
			if !regexp.MustCompile(`(?m)^inputs:`).MatchString(file) {
				file = input + file
			}
			if !regexp.MustCompile(`(?m)^rules:`).MatchString(file) {
				file += docsYAMLRule
			}
			if strings.Contains(file, "%{") && !regexp.MustCompile(`(?m)^patterns:`).MatchString(file) {
				file = string(patterns[1]) + file
			}
			line := 1 + bytes.Count(text[:m[0]], []byte("\n"))
			t.Run(fmt.Sprintf("%s:%d", doc, line), func(t *testing.T) {
				path := filepath.Join(dir, fmt.Sprintf("block%d.yaml", loaded))
				if err := os.WriteFile(path, []byte(file), 0o644); err != nil {
					t.Fatal(err)
				}
				var stdout, stderr bytes.Buffer
				if code := run([]string{"--config.file=" + path, "--config.check"}, &stdout, &stderr); code != 0 {
					t.Errorf("the block does not load (exit %d):\n%s\nas the rule file\n%s", code, stderr.String(), file)
				}
			})
			loaded++
		}
	}
	for first, why := range docsYAMLNotRules {
		if !skipped[first] {
			t.Errorf("no yaml block begins %q (%s): drop it from docsYAMLNotRules", first, why)
		}
	}
	if loaded == 0 {
		t.Fatal("README.md and docs/*.md have no yaml block")
	}
}

// docsGoTest is a go test command a document shows in backquotes, with the directory a
// cd before it moves to.
var docsGoTest = regexp.MustCompile("`(?:cd (\\S+) && )?go test ([^`]*)`")

// testFuncs are the names of the tests, benchmarks and fuzz targets of the package in dir.
func testFuncs(t *testing.T, dir string) []string {
	files, err := filepath.Glob(filepath.Join(dir, "*_test.go"))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, f := range files {
		text, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range regexp.MustCompile(`(?m)^func ((?:Test|Benchmark|Fuzz)\w*)\(`).FindAllSubmatch(text, -1) {
			names = append(names, string(m[1]))
		}
	}
	return names
}

// shellWords splits a command line into its words, as a shell does with single quotes.
func shellWords(line string) []string {
	var words []string
	var word strings.Builder
	quoted, in := false, false
	for _, r := range line {
		switch {
		case r == '\'':
			quoted, in = !quoted, true
		case !quoted && (r == ' ' || r == '\n' || r == '\t'):
			if in {
				words = append(words, word.String())
				word.Reset()
			}
			in = false
		default:
			word.WriteRune(r)
			in = true
		}
	}
	if in {
		words = append(words, word.String())
	}
	return words
}

// TestDocsGoTestCommands holds every go test command of the documents that names its
// package and a -run or -bench pattern to that package: some test or benchmark of it must
// match, or the reader runs nothing and is told "no tests to run".
func TestDocsGoTestCommands(t *testing.T) {
	docs := []string{"README.md", "DESIGN.md", "deploy/README.md", "deploy/helm/logwindow-exporter/README.md", "bench/README.md", "bench/RESULTS.md"}
	more, err := filepath.Glob("docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	for _, doc := range append(docs, more...) {
		text, err := os.ReadFile(doc)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range docsGoTest.FindAllStringSubmatch(string(text), -1) {
			var pattern string
			var pkgs []string
			words := shellWords(m[2])
			for i := 0; i < len(words); i++ {
				switch w := words[i]; {
				case (w == "-run" && pattern == "" || w == "-bench") && i+1 < len(words):
					pattern = words[i+1] // -bench's, when given, says what runs
					i++
				case w == "." || strings.HasPrefix(w, "./") && !strings.HasSuffix(w, "/..."):
					pkgs = append(pkgs, filepath.Join(m[1], w))
				}
			}
			if len(pkgs) == 0 && m[1] != "" {
				pkgs = []string{m[1]} // go test without a package tests the directory's
			}
			top, _, _ := strings.Cut(pattern, "/")
			if top == "" || top == "^$" || len(pkgs) == 0 {
				continue
			}
			re, err := regexp.Compile(top)
			if err != nil {
				t.Errorf("%s: %s: %v", doc, m[0], err)
				continue
			}
			for _, pkg := range pkgs {
				if !slices.ContainsFunc(testFuncs(t, pkg), re.MatchString) {
					t.Errorf("%s: %s: no test or benchmark of %s matches %s", doc, m[0], pkg, top)
				}
				checked++
			}
		}
	}
	if checked == 0 {
		t.Fatal("no go test command of the documents was checked")
	}
}

// The flags --help lists (a line of its own, the short form or an indent before them), with
// the default shown after '=' when it is one and not a placeholder; and the flags of
// operations.md's table, each row's first cell.
var (
	helpFlag     = regexp.MustCompile(`(?m)^(?:  -\w, |      )--(?:\[no-\])?([a-z][\w.-]*)(?:=(\S+))?`)
	placeholder  = regexp.MustCompile(`^[A-Z]+$`)
	docsFlagsRow = regexp.MustCompile("(?m)^\\| `--(?:\\[no-\\])?([a-z][\\w.-]*)[^`]*` \\|([^|]*)\\|")
)

// TestDocsFlags holds operations.md's table of flags to what the built exporter's --help
// lists: every flag in both, and a default --help shows written in the table's cell.
func TestDocsFlags(t *testing.T) {
	bin := testexec.BuildExporter(t, false)
	out, err := exec.Command(bin, "--help").CombinedOutput()
	if err != nil {
		t.Fatalf("--help: %v\n%s", err, out)
	}
	defaults := map[string]string{}
	for _, m := range helpFlag.FindAllStringSubmatch(string(out), -1) {
		if m[1] != "help" {
			defaults[m[1]] = strings.Trim(m[2], `"`)
		}
	}
	doc, err := os.ReadFile("docs/operations.md")
	if err != nil {
		t.Fatal(err)
	}
	documented := map[string]string{}
	for _, m := range docsFlagsRow.FindAllStringSubmatch(string(doc), -1) {
		documented[m[1]] = m[2]
	}
	if len(defaults) < 20 {
		t.Fatalf("--help lists %d flags, too few to be read right:\n%s", len(defaults), out)
	}
	for _, name := range slices.Sorted(maps.Keys(defaults)) {
		cell, ok := documented[name]
		switch def := defaults[name]; {
		case !ok:
			t.Errorf("--%s is not in docs/operations.md's table of flags", name)
		case def != "" && !placeholder.MatchString(def) && !strings.Contains(cell, "`"+def+"`"):
			t.Errorf("--%s: the table's default %q does not say --help's %q", name, cell, def)
		}
	}
	for name := range documented {
		if _, ok := defaults[name]; !ok {
			t.Errorf("docs/operations.md's table has --%s, which --help does not list", name)
		}
	}
}
