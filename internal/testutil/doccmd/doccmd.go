// Package doccmd finds the shell commands a document shows, for the tests that run them
// (or check them) as the document gives them.
package doccmd

import (
	"regexp"
	"strings"
)

// shBlock is a Markdown sh block.
var shBlock = regexp.MustCompile("(?s)```sh\n(.*?)```\n")

// Lines returns the lines of doc's sh blocks, in order, each trimmed of its indentation
// and with the lines it continues (ending in a backslash) joined to it by a space.
func Lines(doc []byte) []string {
	var out []string
	for _, block := range shBlock.FindAllSubmatch(doc, -1) {
		text := strings.ReplaceAll(string(block[1]), "\\\n", " ")
		for line := range strings.Lines(text) {
			if line = strings.TrimSpace(line); line != "" {
				out = append(out, line)
			}
		}
	}
	return out
}
