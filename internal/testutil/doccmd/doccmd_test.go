package doccmd

import (
	"slices"
	"testing"
)

func TestLines(t *testing.T) {
	cases := []struct {
		name string
		doc  string
		want []string
	}{
		{"none", "text\n```yaml\na: b\n```\n", nil},
		{"one block", "```sh\ncd deploy\ngo run ./cmd/image -o x\n```\n", []string{"cd deploy", "go run ./cmd/image -o x"}},
		{"continued", "```sh\ncmd -a \\\n  -b\n\n```\n", []string{"cmd -a    -b"}},
		{"two blocks, others left out", "```sh\na\n```\n```console\n$ b\n```\n```sh\nc\n```\n", []string{"a", "c"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := Lines([]byte(c.doc)); !slices.Equal(got, c.want) {
				t.Errorf("Lines = %q, want %q", got, c.want)
			}
		})
	}
}
