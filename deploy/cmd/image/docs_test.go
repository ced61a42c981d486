package main

import (
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/logwindow/logwindow_exporter/internal/testutil/doccmd"
)

// imageCommand is a `go run ./cmd/image` command of a document's sh block, its arguments up
// to the line's end or a shell operator.
var imageCommand = regexp.MustCompile(`go run \./cmd/image((?: [^&|;#]*)?)`)

// TestDocsCommands parses the arguments of every `go run ./cmd/image` command the
// documents show, $(cat ../VERSION) read as the tree's version: each must be a command
// line the command takes.
func TestDocsCommands(t *testing.T) {
	version, err := os.ReadFile(filepath.Join(src, "VERSION"))
	if err != nil {
		t.Fatal(err)
	}
	expand := strings.NewReplacer("$(cat ../VERSION)", strings.TrimSpace(string(version)))
	ran := 0
	for _, doc := range []string{"docs/operations.md", "deploy/README.md", "deploy/helm/logwindow-exporter/README.md"} {
		text, err := os.ReadFile(filepath.Join(src, doc))
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range doccmd.Lines(text) {
			m := imageCommand.FindStringSubmatch(expand.Replace(line))
			if m == nil {
				continue
			}
			args := strings.Fields(m[1])
			t.Run(doc+": "+strings.Join(args, " "), func(t *testing.T) {
				if _, err := parseArgs(args, io.Discard); err != nil {
					t.Errorf("%q: %v", args, err)
				}
			})
			ran++
		}
	}
	if ran == 0 {
		t.Fatal("no document shows a go run ./cmd/image command")
	}
}
