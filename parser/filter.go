package parser

import (
	"bytes"
	"regexp"
	"regexp/syntax"
	"slices"
	"unicode/utf8"
)

// A where filter runs on one short capture (a status code, a method) for every rule on
// every matched line, where starting any regex engine costs more than the test itself.
// The shapes filters are usually written in are therefore decided directly on the bytes,
// with regexp's meaning (an invalid byte reads as U+FFFD); any other regex runs on a
// matcher.

type filterKind uint8

const (
	viaMatcher   filterKind = iota
	hasPrefix               // ^lit
	hasSuffix               // lit$
	equals                  // ^lit$
	containsLit             // lit
	firstRuneIn             // ^[class]
	anyButNL                // . : some rune other than \n
	nonEmptyText            // (?s). : some rune
)

type filter struct {
	kind  filterKind
	lit   []byte
	class []rune // firstRuneIn: sorted inclusive ranges, as syntax.Regexp.Rune
	m     compiled
	ncap  int
}

// newFilter compiles a where regex, deciding its shape on the simplified syntax tree.
func newFilter(re *regexp.Regexp, eng engine) filter {
	tree, err := syntax.Parse(re.String(), syntax.Perl)
	if err == nil {
		if f, ok := shape(tree.Simplify()); ok {
			return f
		}
	}
	m := compile(re, eng, nil)
	return filter{kind: viaMatcher, m: m, ncap: m.capsNeeded(false)}
}

func shape(n *syntax.Regexp) (filter, bool) {
	switch n.Op {
	case syntax.OpLiteral:
		if lit, ok := plainLiteral(n); ok {
			return filter{kind: containsLit, lit: lit}, true
		}
	case syntax.OpAnyCharNotNL:
		return filter{kind: anyButNL}, true
	case syntax.OpAnyChar:
		return filter{kind: nonEmptyText}, true
	case syntax.OpConcat:
		subs := n.Sub
		begin := subs[0].Op == syntax.OpBeginText
		end := subs[len(subs)-1].Op == syntax.OpEndText
		if begin {
			subs = subs[1:]
		}
		if end {
			subs = subs[:len(subs)-1]
		}
		if len(subs) != 1 {
			break
		}
		if lit, ok := plainLiteral(subs[0]); ok {
			switch {
			case begin && end:
				return filter{kind: equals, lit: lit}, true
			case begin:
				return filter{kind: hasPrefix, lit: lit}, true
			case end:
				return filter{kind: hasSuffix, lit: lit}, true
			}
		}
		if begin && !end && subs[0].Op == syntax.OpCharClass {
			return filter{kind: firstRuneIn, class: slices.Clone(subs[0].Rune)}, true
		}
	}
	return filter{}, false
}

// plainLiteral returns a literal's bytes when they match only themselves: not case-folded,
// and without U+FFFD, which in a regex also matches an invalid byte.
func plainLiteral(n *syntax.Regexp) ([]byte, bool) {
	if n.Op != syntax.OpLiteral || n.Flags&syntax.FoldCase != 0 || slices.Contains(n.Rune, utf8.RuneError) {
		return nil, false
	}
	return []byte(string(n.Rune)), true
}

// match reports whether the regex matches v; caps is room for a matcher's groups.
func (f *filter) match(v []byte, caps []int) bool {
	switch f.kind {
	case hasPrefix:
		return bytes.HasPrefix(v, f.lit)
	case hasSuffix:
		return bytes.HasSuffix(v, f.lit)
	case equals:
		return bytes.Equal(v, f.lit)
	case containsLit:
		return bytes.Contains(v, f.lit)
	case firstRuneIn:
		if len(v) == 0 {
			return false
		}
		r := rune(v[0])
		if r >= utf8.RuneSelf {
			r, _ = utf8.DecodeRune(v)
		}
		for i := 0; i+1 < len(f.class); i += 2 {
			if f.class[i] <= r && r <= f.class[i+1] {
				return true
			}
		}
		return false
	case anyButNL:
		// Any byte but a newline starts a rune other than \n (an invalid one reads as U+FFFD).
		for _, c := range v {
			if c != '\n' {
				return true
			}
		}
		return false
	case nonEmptyText:
		return len(v) > 0
	}
	return f.m.Match(v, caps[:f.ncap])
}
