package parser

import (
	"bytes"
	"regexp"
	"regexp/syntax"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/logwindow/logwindow_exporter/config/logformat"
	"github.com/logwindow/logwindow_exporter/parser/fastmatch"
	"github.com/logwindow/logwindow_exporter/parser/formatscan"
)

// matcher is what Parse needs of a compiled regex. *fastmatch.Matcher has it as is.
type matcher interface {
	// Match reports whether line matches and fills caps like regexp.FindSubmatchIndex;
	// caps holds capsNeeded ints.
	Match(line []byte, caps []int) bool
}

// compiled pairs a matcher with the caps it needs.
type compiled struct {
	matcher
	ncap int // fastmatch always fills every group
	// viaRegexp: the plain-regexp fallback, which can skip capture work when not needed.
	viaRegexp bool
}

// capsNeeded is how many ints of caps Match must be given: fastmatch requires room for
// every group; the regexp fallback takes 0 when no one reads captures, which lets it use
// the allocation-free regexp.Match.
func (c compiled) capsNeeded(readsCaptures bool) int {
	if c.viaRegexp && !readsCaptures {
		return 0
	}
	return c.ncap
}

// only returns c recording only the groups keep reports true for, when its matcher can
// leave the others out (fastmatch, and a scanner's for the lines it hands to it); c itself
// otherwise. A scanner records every group: setting one costs it two stores.
func (c compiled) only(keep func(group int) bool) compiled {
	switch m := c.matcher.(type) {
	case *fastmatch.Matcher:
		c.matcher = m.Only(keep)
	case *formatscan.Scanner:
		c.matcher = m.WithRegex(compiled{matcher: m.Regex()}.only(keep).matcher)
	case lazyMatcher:
		c.matcher = lazily(func() matcher { return compiled{matcher: m.get()}.only(keep).matcher })
	}
	return c
}

// lazyMatcher is a matcher made at its first Match: the regex behind a log format's
// scanner, which reads nearly every line of its format itself: most runs never compile it.
type lazyMatcher struct{ get func() matcher }

func lazily(build func() matcher) lazyMatcher { return lazyMatcher{get: sync.OnceValue(build)} }

// Match makes the matcher on the first call, from any goroutine, and runs it.
func (l lazyMatcher) Match(line []byte, caps []int) bool { return l.get().Match(line, caps) }

// engine is what runs a group's regex: the fastest that reads it, or a slower one that
// tests and benchmarks compare it with.
type engine uint8

const (
	// viaRegexp is plain regexp.
	viaRegexp engine = iota
	// viaFastmatch is fastmatch, regexp for what fastmatch does not accept.
	viaFastmatch
	// viaScanner is the scanner of the log format whose regex it is, fastmatch (or regexp)
	// for any other regex and for the lines the scanner leaves undecided.
	viaScanner
)

// compile prefers the scanner of f (the log format re is the regex of, nil for none),
// then fastmatch, and falls back to regexp for what neither accepts.
func compile(re *regexp.Regexp, eng engine, f *logformat.Format) compiled {
	ncap := 2 * (re.NumSubexp() + 1)
	if eng >= viaScanner && f != nil && f.Regex == re.String() {
		// The scanner's regex reads a value of words as one word (formatscan.Compile).
		regex := lazily(func() matcher { return compile(regexp.MustCompile(f.MisfitRegex()), viaFastmatch, nil).matcher })
		if s, err := formatscan.Compile(f, regex); err == nil {
			return compiled{matcher: s, ncap: ncap}
		}
	}
	var c compiled
	if eng >= viaFastmatch {
		if m, err := fastmatch.FromRegexp(re); err == nil {
			c = compiled{matcher: m, ncap: ncap}
		}
	}
	if c.matcher == nil {
		// The fallback's prefilter is worked out only for a regex that takes it.
		c = compiled{matcher: &regexpMatcher{re: re, required: requiredLiteral(re)}, ncap: ncap, viaRegexp: true}
	}
	return c
}

// regexpMatcher runs regexp behind a literal prefilter.
type regexpMatcher struct {
	re       *regexp.Regexp
	required []byte // every match contains it; nil when the regex requires no literal
}

// Match runs the prefilter, then regexp; without caps it takes regexp's allocation-free
// Match.
func (m *regexpMatcher) Match(line []byte, caps []int) bool {
	if m.required != nil && !bytes.Contains(line, m.required) {
		return false
	}
	if len(caps) == 0 {
		return m.re.Match(line)
	}
	// regexp has no API filling a caller's slice: this allocates once per matched line.
	loc := m.re.FindSubmatchIndex(line)
	if loc == nil {
		return false
	}
	copy(caps, loc)
	return true
}

// requiredLiteral returns the longest byte string every match of re contains, or nil.
func requiredLiteral(re *regexp.Regexp) []byte {
	tree, err := syntax.Parse(re.String(), syntax.Perl)
	if err != nil {
		return nil
	}
	text, exact, required := literals(tree.Simplify())
	if exact {
		required = []string{text}
	}
	var best string
	for _, r := range required {
		if len(r) > len(best) {
			best = r
		}
	}
	if best == "" {
		return nil
	}
	return []byte(best)
}

// literals returns, for a node, the text it always matches exactly (exact, when it only
// ever matches that text) and the literal strings every match of it contains.
func literals(n *syntax.Regexp) (text string, exact bool, required []string) {
	switch n.Op {
	case syntax.OpLiteral:
		s := string(n.Rune)
		// A case-folded literal has no fixed bytes; U+FFFD in a regex also matches an
		// invalid byte, which bytes.Contains would not see.
		if n.Flags&syntax.FoldCase != 0 || strings.ContainsRune(s, utf8.RuneError) {
			return "", false, nil
		}
		return s, true, nil
	case syntax.OpEmptyMatch, syntax.OpBeginLine, syntax.OpEndLine, syntax.OpBeginText,
		syntax.OpEndText, syntax.OpWordBoundary, syntax.OpNoWordBoundary:
		return "", true, nil
	case syntax.OpCapture:
		return literals(n.Sub[0])
	case syntax.OpPlus:
		return atLeastOnce(n.Sub[0])
	case syntax.OpRepeat:
		if n.Min >= 1 {
			return atLeastOnce(n.Sub[0])
		}
	case syntax.OpConcat:
		// Adjacent exact parts join into one longer literal; any other part ends the run.
		var run strings.Builder
		exact = true
		for _, sub := range n.Sub {
			t, ex, req := literals(sub)
			if ex {
				run.WriteString(t)
				continue
			}
			exact = false
			if run.Len() > 0 {
				required = append(required, run.String())
				run.Reset()
			}
			required = append(required, req...)
		}
		if exact {
			return run.String(), true, nil
		}
		if run.Len() > 0 {
			required = append(required, run.String())
		}
		return "", false, required
	}
	return "", false, nil
}

// atLeastOnce is the literals of x+ and x{n,}: what one x requires, never exact.
func atLeastOnce(sub *syntax.Regexp) (string, bool, []string) {
	t, exact, req := literals(sub)
	if exact && t != "" {
		return "", false, []string{t}
	}
	return "", false, req
}
