package config

import (
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"
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
// every independent mistake is reported in one run, up to maxProblems of them.
type problems struct {
	list []Problem
	// dropped counts the problems found past maxProblems.
	dropped int
	// suggested is the work spent on suggestions (suggest), in cells of editDistance.
	suggested int
	// listed are the problems in list: a part of the file decoded more than once (a rule
	// repeated by an alias, - *anchor) finds its mistakes again, which are reported once.
	listed map[Problem]bool
}

// maxProblems bounds the problems reported of one file: a file of thousands of mistakes
// would take its time and memory to word them all, and no one reads past the first.
const maxProblems = 1000

func (ps *problems) add(line int, subject, format string, args ...any) {
	if ps.full() {
		ps.dropped++
		return
	}
	p := newProblem(line, subject, format, args)
	if ps.listed[p] {
		return
	}
	if ps.listed == nil {
		ps.listed = map[Problem]bool{}
	}
	ps.listed[p] = true
	ps.list = append(ps.list, p)
}

// maxShownBytes bounds the text a message repeats of one thing (a value, a key, a regex,
// a name): a file may hold values of megabytes, a message naming one would be as large,
// and a file's problems are all listed together (--config.check, the log, the status
// page), up to maxProblems of them.
const maxShownBytes = 1024

// newProblem is the Problem of format and args at line, about subject: a text among args (a
// string, an error's) or a subject past maxShownBytes is shown as its start and how long
// it is; an error's as its start and its end, which says what is wrong with the value it
// quotes (`"unixgram:///…": a unix socket's path is at most 107 bytes`).
func newProblem(line int, subject, format string, args []any) Problem {
	shown := args
	for i, a := range args {
		var s any
		switch a := a.(type) {
		case string:
			if len(a) > maxShownBytes {
				s = clipped(a)
			}
		case error:
			if text := a.Error(); len(text) > maxShownBytes {
				s = elided(text)
			}
		}
		if s == nil {
			continue
		}
		if &shown[0] == &args[0] {
			shown = slices.Clone(args) // the caller's
		}
		shown[i] = s
	}
	if len(subject) > maxShownBytes {
		subject = fmt.Sprint(clipped(subject))
	}
	return Problem{Line: line, Subject: subject, Msg: fmt.Sprintf(format, shown...)}
}

// clipped is a text past maxShownBytes as a message shows it: its start (in quotes for
// %q), then how long the whole is, `"GET /aaaa"… (15728640 bytes)`.
type clipped string

// Format writes c as its start; a precision (%.40q) bounds it already, and is kept.
func (c clipped) Format(f fmt.State, verb rune) {
	if p, ok := f.Precision(); ok {
		fmt.Fprintf(f, "%.*"+string(verb), p, string(c))
		return
	}
	start := string(c[:runeStartAt(string(c), maxShownBytes)])
	if verb == 'q' {
		start = strconv.Quote(start)
	}
	fmt.Fprintf(f, "%s… (%d bytes)", start, len(c))
}

// elided is text past maxShownBytes as its first and last maxShownBytes/2 bytes or so, and
// how many are left out between them.
func elided(text string) string {
	head, tail := runeStartAt(text, maxShownBytes/2), runeStartAt(text, len(text)-maxShownBytes/2)
	return fmt.Sprintf("%s…(%d bytes left out)…%s", text[:head], tail-head, text[tail:])
}

// runeStartAt is the start of the letter of s at byte i (0 < i < len(s)): a text cut there
// is not cut within a letter.
func runeStartAt(s string, i int) int {
	for i > 0 && !utf8.RuneStart(s[i]) {
		i--
	}
	return i
}

// warn adds a warning, what Warnings says of a config that loads.
func (d *decoder) warn(line int, subject, format string, args ...any) {
	d.warned = append(d.warned, newProblem(line, subject, format, args))
}

// full reports whether maxProblems are found: a check may skip wording another.
func (ps *problems) full() bool { return len(ps.list) >= maxProblems }

// maxSuggestCells bounds the work of the suggestions of one file: each compares a word
// with every name it might be a typo of, and thousands of mistakes among thousands of
// names would compare each with each.
const maxSuggestCells = 50_000_000

// suggest is the package's suggest, within maxSuggestCells for the file: past them, and
// once the problems are full, it suggests nothing.
func (ps *problems) suggest(word string, candidates []string) string {
	cells := 0
	for _, c := range candidates {
		cells += (len(word) + 1) * (len(c) + 1)
	}
	if ps.full() || ps.suggested+cells > maxSuggestCells {
		return ""
	}
	ps.suggested += cells
	return suggest(word, candidates)
}

// err returns nil when nothing was found, else an *Error with the problems in file order
// (checks run in several passes; sorting makes the report read top to bottom), and how
// many more were found when they passed maxProblems.
func (ps *problems) err(file string) error {
	if len(ps.list) == 0 {
		return nil
	}
	sort.SliceStable(ps.list, func(i, j int) bool { return ps.list[i].Line < ps.list[j].Line })
	if ps.dropped > 0 {
		ps.list = append(ps.list, Problem{Msg: fmt.Sprintf("and %d more problems, not listed", ps.dropped)})
	}
	return &Error{File: file, Problems: ps.list}
}

// maxListed bounds the names a message lists: a file of thousands of names would repeat
// them all in each of thousands of messages that name one, gigabytes of them.
const maxListed = 20

// listing joins names with ", ": the first maxListed of them, then how many more there are.
func listing(names []string) string {
	if len(names) <= maxListed {
		return strings.Join(names, ", ")
	}
	return strings.Join(names[:maxListed], ", ") + fmt.Sprintf(", and %d more", len(names)-maxListed)
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
		if diff := len(word) - len(c); diff >= bestDist || -diff >= bestDist {
			// The distance is at least the difference in length: a key of megabytes is
			// not compared letter by letter with every known one.
			continue
		}
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
