package fastmatch

import (
	"fmt"
	"regexp/syntax"
	"slices"
	"unicode"
	"unicode/utf8"
)

// node is the tree the accepted subset is decided on. It is built from the
// simplified syntax tree, the same tree regexp compiles, and folds the shapes
// Simplify produces for counted repetition (x{2,5} = xx(?:x(?:x(?:x)?)?)?)
// back into single runs.
type node struct {
	kind   nodeKind
	lit    []byte // nLit
	set    []rune // nRun: normalised member ranges
	min    int    // nRun
	max    int    // nRun; -1 for no upper bound
	greedy bool   // nRun, nQuest, nStar, nPlus
	cap    int    // nCap: capture index
	assert syntax.EmptyOp
	subs   []*node
}

type nodeKind uint8

const (
	nLit    nodeKind = iota // a byte string compared as is
	nRun                    // min..max runes of one set
	nCap                    // a capture group around subs[0]
	nConcat                 // subs in order
	nAlt                    // subs in priority order
	nQuest                  // subs[0] or nothing
	nStar                   // subs[0] any number of times
	nPlus                   // subs[0] at least once
	nAssert                 // an empty-width assertion
)

var (
	anyNotNL = []rune{0, '\n' - 1, '\n' + 1, unicode.MaxRune}
	anyRune  = []rune{0, unicode.MaxRune}
)

// reject returns an error wrapping ErrUnsupported that says why.
func reject(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrUnsupported, fmt.Sprintf(format, args...))
}

// convert translates a simplified syntax tree.
func convert(re *syntax.Regexp) (*node, error) {
	greedy := re.Flags&syntax.NonGreedy == 0
	switch re.Op {
	case syntax.OpEmptyMatch:
		return &node{kind: nConcat}, nil
	case syntax.OpLiteral:
		// One run per rune; lower turns singleton runs back into byte strings.
		n := &node{kind: nConcat}
		for _, r := range re.Rune {
			set := []rune{r, r}
			if re.Flags&syntax.FoldCase != 0 {
				set = foldOrbit(r)
			}
			n.subs = append(n.subs, &node{kind: nRun, set: set, min: 1, max: 1, greedy: true})
		}
		return simplifyConcat(n), nil
	case syntax.OpCharClass:
		if len(re.Rune) == 0 {
			return nil, reject("empty character class")
		}
		return &node{kind: nRun, set: normRanges(slices.Clone(re.Rune)), min: 1, max: 1, greedy: true}, nil
	case syntax.OpAnyCharNotNL:
		return &node{kind: nRun, set: anyNotNL, min: 1, max: 1, greedy: true}, nil
	case syntax.OpAnyChar:
		return &node{kind: nRun, set: anyRune, min: 1, max: 1, greedy: true}, nil
	case syntax.OpBeginLine:
		return &node{kind: nAssert, assert: syntax.EmptyBeginLine}, nil
	case syntax.OpEndLine:
		return &node{kind: nAssert, assert: syntax.EmptyEndLine}, nil
	case syntax.OpBeginText:
		return &node{kind: nAssert, assert: syntax.EmptyBeginText}, nil
	case syntax.OpEndText:
		return &node{kind: nAssert, assert: syntax.EmptyEndText}, nil
	case syntax.OpWordBoundary:
		return &node{kind: nAssert, assert: syntax.EmptyWordBoundary}, nil
	case syntax.OpNoWordBoundary:
		return &node{kind: nAssert, assert: syntax.EmptyNoWordBoundary}, nil
	case syntax.OpCapture:
		sub, err := convert(re.Sub[0])
		if err != nil {
			return nil, err
		}
		return &node{kind: nCap, cap: re.Cap, subs: []*node{sub}}, nil
	case syntax.OpConcat, syntax.OpAlternate:
		n := &node{kind: nConcat}
		if re.Op == syntax.OpAlternate {
			n.kind = nAlt
		}
		for _, s := range re.Sub {
			sub, err := convert(s)
			if err != nil {
				return nil, err
			}
			n.subs = append(n.subs, sub)
		}
		if n.kind == nAlt {
			return n, nil
		}
		return simplifyConcat(n), nil
	case syntax.OpQuest, syntax.OpStar, syntax.OpPlus:
		sub, err := convert(re.Sub[0])
		if err != nil {
			return nil, err
		}
		return repeat(re.Op, greedy, sub)
	}
	return nil, reject("operator %v", re.Op)
}

// repeat builds ?, * or + over sub, as a single run where the run tries its
// counts in the same order as regexp's program would.
func repeat(op syntax.Op, greedy bool, sub *node) (*node, error) {
	if r, ok := singleRun(sub); ok && r.min == 1 {
		switch {
		case r.max == 1: // x? x* x+ over one rune
			n := &node{kind: nRun, set: r.set, min: 0, max: 1, greedy: greedy}
			switch op {
			case syntax.OpStar:
				n.max = -1
			case syntax.OpPlus:
				n.min, n.max = 1, -1
			}
			return n, nil
		case op == syntax.OpQuest && r.greedy == greedy:
			// (?:x{1,m})?, the nest Simplify makes of x{0,m}.
			return &node{kind: nRun, set: r.set, min: 0, max: r.max, greedy: greedy}, nil
		}
	}
	n := &node{kind: nQuest, greedy: greedy, subs: []*node{sub}}
	switch op {
	case syntax.OpStar:
		n.kind = nStar
	case syntax.OpPlus:
		n.kind = nPlus
	}
	if n.kind != nQuest && nullable(sub) {
		// regexp gives loops whose body can be empty a special shape
		// (golang.org/issue/46123); not worth proving equivalent.
		return nil, reject("repetition of an expression that can match empty")
	}
	return n, nil
}

// singleRun returns n as a run if it is one, possibly inside a one-item concat.
func singleRun(n *node) (*node, bool) {
	for n.kind == nConcat && len(n.subs) == 1 {
		n = n.subs[0]
	}
	return n, n.kind == nRun
}

// simplifyConcat flattens nested concatenations and merges a fixed run with
// a following run of the same set: xx(?:x(?:x)?)? becomes x{2,4}. A fixed
// prefix has no choices, so the merged run tries the same ends in the same order.
func simplifyConcat(n *node) *node {
	var flat []*node
	for _, s := range n.subs {
		if s.kind == nConcat {
			flat = append(flat, s.subs...)
		} else {
			flat = append(flat, s)
		}
	}
	var out []*node
	for _, s := range flat {
		if k := len(out); k > 0 && s.kind == nRun && out[k-1].kind == nRun {
			p := out[k-1]
			if p.min == p.max && slices.Equal(p.set, s.set) {
				m := &node{kind: nRun, set: s.set, min: p.min + s.min, max: -1, greedy: s.greedy}
				if s.max >= 0 {
					m.max = p.max + s.max
				}
				out[k-1] = m
				continue
			}
		}
		out = append(out, s)
	}
	if len(out) == 1 {
		return out[0]
	}
	return &node{kind: nConcat, subs: out}
}

// nullable reports whether n can match without consuming a rune.
func nullable(n *node) bool {
	switch n.kind {
	case nLit:
		return len(n.lit) == 0
	case nRun:
		return n.min == 0
	case nCap, nPlus:
		return nullable(n.subs[0])
	case nConcat:
		for _, s := range n.subs {
			if !nullable(s) {
				return false
			}
		}
		return true
	case nAlt:
		for _, s := range n.subs {
			if nullable(s) {
				return true
			}
		}
		return false
	}
	return true // nQuest, nStar, nAssert
}

// lower replaces fixed runs of one rune by byte strings and joins adjacent
// strings, so that literal text is compared with one bytes comparison.
// U+FFFD stays a run: regexp decodes every invalid byte as U+FFFD, so a
// literal U+FFFD matches bytes other than its own encoding.
func lower(n *node) *node {
	for i, s := range n.subs {
		n.subs[i] = lower(s)
	}
	if n.kind == nRun && n.min == n.max && n.min <= maxLitRepeat &&
		len(n.set) == 2 && n.set[0] == n.set[1] && n.set[0] != utf8.RuneError {
		var b []byte
		for range n.min {
			b = utf8.AppendRune(b, n.set[0])
		}
		return &node{kind: nLit, lit: b}
	}
	if n.kind != nConcat {
		return n
	}
	var out []*node
	for _, s := range n.subs {
		if k := len(out); k > 0 && s.kind == nLit && out[k-1].kind == nLit {
			out[k-1] = &node{kind: nLit, lit: append(slices.Clone(out[k-1].lit), s.lit...)}
			continue
		}
		out = append(out, s)
	}
	n.subs = out
	return n
}

// maxLitRepeat bounds how long a string lower makes of x{n}.
const maxLitRepeat = 64

// requiredLiteral returns the longest byte string every match contains:
// one from the top-level sequence, looking through capture groups.
func requiredLiteral(n *node) []byte {
	switch n.kind {
	case nLit:
		return n.lit
	case nCap:
		return requiredLiteral(n.subs[0])
	case nConcat:
		var best []byte
		for _, s := range n.subs {
			if l := requiredLiteral(s); len(l) > len(best) {
				best = l
			}
		}
		return best
	}
	return nil
}
