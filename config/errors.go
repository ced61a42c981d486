package config

import (
	"fmt"
	"slices"
	"sort"
	"strings"
)

// Problem is one thing wrong with a config file.
type Problem struct {
	// Line is the 1-based line of the offending key; 0 when the problem is about the file
	// as a whole (empty file, unreadable file).
	Line int
	// Subject names what the problem is in (`rule "x"`, `input "nginx"`, `global`); empty
	// for the file as a whole.
	Subject string
	// Msg says what is wrong, in plain words, starting with the key path inside Subject.
	Msg string
}

// Error lists every problem found in one config file, so a user fixes them all in one pass
// instead of one per run.
type Error struct {
	File     string
	Problems []Problem
}

// Error renders one problem per line as `file:line: subject: message`, the shape editors and
// CI logs turn into links.
func (e *Error) Error() string {
	var b strings.Builder
	for i, p := range e.Problems {
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(e.File)
		if p.Line > 0 {
			fmt.Fprintf(&b, ":%d", p.Line)
		}
		b.WriteString(": ")
		if p.Subject != "" {
			b.WriteString(p.Subject)
			b.WriteString(": ")
		}
		b.WriteString(p.Msg)
	}
	return b.String()
}

// problems collects Problems while a file is decoded; checks go on after a problem so that
// every independent mistake is reported in one run.
type problems struct {
	list []Problem
}

func (ps *problems) add(line int, subject, format string, args ...any) {
	ps.list = append(ps.list, Problem{Line: line, Subject: subject, Msg: fmt.Sprintf(format, args...)})
}

// err returns nil when nothing was found, else an *Error with the problems in file order
// (checks run in several passes; sorting makes the report read top to bottom).
func (ps *problems) err(file string) error {
	if len(ps.list) == 0 {
		return nil
	}
	sort.SliceStable(ps.list, func(i, j int) bool { return ps.list[i].Line < ps.list[j].Line })
	return &Error{File: file, Problems: ps.list}
}

// suggest returns ` (did you mean "x"?)` when one candidate is a likely typo of word, else
// "". A distance of at most a third of the word (and at most 2) catches transpositions and
// dropped letters without proposing unrelated names; a candidate that differs only in
// case is the likeliest (a log format's captures are nginx's lowercase names).
func suggest(word string, candidates []string) string {
	best, bestDist := "", 3
	if i := slices.IndexFunc(candidates, func(c string) bool { return c != word && strings.EqualFold(c, word) }); i >= 0 {
		best, bestDist = candidates[i], 0 // no typo beats it
	}
	limit := len(word) / 3
	for _, c := range candidates {
		d := editDistance(word, c)
		if d < bestDist && d <= limit && d > 0 {
			best, bestDist = c, d
		}
	}
	if best == "" {
		return ""
	}
	return fmt.Sprintf(" (did you mean %q?)", best)
}

// editDistance is the optimal string alignment distance (Levenshtein plus adjacent
// transposition, the most common typo).
func editDistance(a, b string) int {
	prev2 := make([]int, len(b)+1)
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(b)]
}
