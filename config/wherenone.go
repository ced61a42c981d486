package config

import (
	"regexp"
	"regexp/syntax"
)

// matchesNothing reports whether re matches no text at all, searched anywhere in any text:
// its program has no path from its start to its match. A path may pass an instruction
// that reads a character only when one can be read there, a ^ or \A only before any
// character is read, and no character can be read after a $ or \z. The other assertions
// (\b, \B, a multi-line ^ or $) are taken to hold, so that a regex this says matches
// nothing truly does ('a^b', '[^\x00-\x{10FFFF}]', 'x$y'), and one it lets pass may still
// match nothing ('(?m)a^b'): no rule that can count a line is warned of.
//
// A match may be searched from any place of a text, and one found from a later place is
// found from the start of the text that begins there, where ^ holds too: the search
// starts from the text's start alone.
func matchesNothing(re *regexp.Regexp) bool {
	tree, err := syntax.Parse(re.String(), syntax.Perl)
	if err != nil {
		return false
	}
	prog, err := syntax.Compile(tree.Simplify())
	if err != nil {
		return false
	}
	// A state is an instruction with what the path to it read: a character (past the
	// text's start), and a $ (at the text's end).
	type state struct {
		pc          uint32
		read, atEnd bool
	}
	seen := map[state]bool{}
	stack := []state{{pc: uint32(prog.Start)}}
	for len(stack) > 0 {
		s := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if seen[s] {
			continue
		}
		seen[s] = true
		next := s
		in := &prog.Inst[s.pc]
		next.pc = in.Out
		switch in.Op {
		case syntax.InstMatch:
			return false
		case syntax.InstFail:
			continue
		case syntax.InstAlt, syntax.InstAltMatch:
			alt := s
			alt.pc = in.Arg
			stack = append(stack, alt)
		case syntax.InstEmptyWidth:
			op := syntax.EmptyOp(in.Arg)
			if op&syntax.EmptyBeginText != 0 && s.read {
				continue
			}
			if op&syntax.EmptyEndText != 0 {
				next.atEnd = true
			}
		case syntax.InstRune:
			if len(in.Rune) == 0 || s.atEnd { // an empty class: no character is in it
				continue
			}
			next.read = true
		case syntax.InstRune1, syntax.InstRuneAny, syntax.InstRuneAnyNotNL:
			if s.atEnd {
				continue
			}
			next.read = true
		}
		// InstCapture and InstNop go on to Out as they are.
		stack = append(stack, next)
	}
	return true
}

// sameRegex reports whether a and b are one regex, written alike or not ('^5' and
// '^(?:5)'): their parse trees, simplified, are equal. A value matches both or neither.
func sameRegex(a, b *regexp.Regexp) bool {
	ta, err := syntax.Parse(a.String(), syntax.Perl)
	if err != nil {
		return false
	}
	tb, err := syntax.Parse(b.String(), syntax.Perl)
	if err != nil {
		return false
	}
	return ta.Simplify().Equal(tb.Simplify())
}
