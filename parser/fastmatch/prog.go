package fastmatch

import (
	"encoding/binary"
	"regexp/syntax"
	"unicode/utf8"
)

// inst is one step of the matcher's program, a coarser cousin of
// syntax.Inst: a run consumes many runes of one class in one step.
type inst struct {
	op     opcode
	greedy bool
	// poss marks a run that never gives back what it consumed: the analysis
	// proved that no shorter (or, when lazy, no other) count can lead to a match.
	poss   bool
	scan   scanMode // opRun
	assert syntax.EmptyOp
	x, y   int // opSplit: preferred and other target; opJmp: x; opCap: slot in x
	min    int // opRun
	max    int // opRun; maxInt when unbounded
	lit    []byte
	// litWord and litMask (opLit of at most 8 bytes): lit as a little-endian word and the
	// bytes of it that count, so that a literal is compared with one load where the line
	// has 8 bytes left, rather than by a call.
	litWord, litMask uint64
	// caps and next (opLit, opRun, opAssert, opCap): the slots of the opCaps that
	// directly follow (for an opCap, its own first), which the matcher sets as part of
	// this step, and the pc after them.
	caps []int
	next int
	set  []rune // opRun: the class as ranges, for the analysis
	cls  *class // opRun
	// peek (opSplit): when set, the two branches cannot start on the same
	// rune, and the rune at the current position decides: x if it is in peek.
	peek *class
	// follow (opRun, not poss): the runes the rest of the pattern can start
	// with; ends where it cannot start are skipped without trying them.
	follow *class
	// followBytes: the run's ends can be found byte by byte with follow's
	// table, because one of the two classes has no non-ASCII member (so no
	// end can fall inside a multi-byte rune) and follow needs no decoding.
	followBytes bool
}

type opcode uint8

const (
	opLit opcode = iota
	opRun
	opCap
	opSplit
	opJmp
	opAssert
	opMatch
)

// scanMode says how much a run must decode to find where it stops.
type scanMode uint8

const (
	// scanBytes: the class takes all or none of the non-ASCII runes, so the
	// run stops at an ASCII byte (or a non-ASCII one, for none) and a byte
	// table decides; counts are byte counts when the class is ASCII-only.
	scanBytes scanMode = iota
	// scanRunes: decode every non-ASCII rune and count runes.
	scanRunes
)

const maxInt = int(^uint(0) >> 1)

// maxProg bounds the program so the quadratic compile-time analysis stays cheap.
const maxProg = 2000

type compiler struct {
	prog []inst
}

func (c *compiler) emit(i inst) int {
	c.prog = append(c.prog, i)
	return len(c.prog) - 1
}

func (c *compiler) compile(n *node) error {
	if len(c.prog) > maxProg {
		return reject("program longer than %d steps", maxProg)
	}
	switch n.kind {
	case nLit:
		i := inst{op: opLit, lit: n.lit}
		if len(n.lit) <= 8 {
			var w [8]byte
			copy(w[:], n.lit)
			i.litWord = binary.LittleEndian.Uint64(w[:])
			i.litMask = ^uint64(0) >> (64 - 8*len(n.lit))
		}
		c.emit(i)
	case nRun:
		i := inst{op: opRun, min: n.min, max: n.max, greedy: n.greedy, set: n.set, cls: newClass(runeSet{ranges: n.set})}
		if i.max < 0 {
			i.max = maxInt
		}
		c.emit(i)
	case nCap:
		c.emit(inst{op: opCap, x: 2 * n.cap})
		if err := c.compile(n.subs[0]); err != nil {
			return err
		}
		c.emit(inst{op: opCap, x: 2*n.cap + 1})
	case nConcat:
		for _, s := range n.subs {
			if err := c.compile(s); err != nil {
				return err
			}
		}
	case nAlt:
		var jumps []int
		for i, s := range n.subs {
			split := -1
			if i < len(n.subs)-1 {
				split = c.emit(inst{op: opSplit})
				c.prog[split].x = split + 1
			}
			if err := c.compile(s); err != nil {
				return err
			}
			if split >= 0 {
				jumps = append(jumps, c.emit(inst{op: opJmp}))
				c.prog[split].y = len(c.prog)
			}
		}
		for _, j := range jumps {
			c.prog[j].x = len(c.prog)
		}
	case nQuest:
		split := c.emit(inst{op: opSplit})
		if err := c.compile(n.subs[0]); err != nil {
			return err
		}
		c.branch(split, split+1, len(c.prog), n.greedy)
	case nStar:
		split := c.emit(inst{op: opSplit})
		if err := c.compile(n.subs[0]); err != nil {
			return err
		}
		c.emit(inst{op: opJmp, x: split})
		c.branch(split, split+1, len(c.prog), n.greedy)
	case nPlus:
		body := len(c.prog)
		if err := c.compile(n.subs[0]); err != nil {
			return err
		}
		split := c.emit(inst{op: opSplit})
		c.branch(split, body, split+1, n.greedy)
	case nAssert:
		c.emit(inst{op: opAssert, assert: n.assert})
	}
	return nil
}

// branch sets a split's targets: more before less when greedy.
func (c *compiler) branch(split, more, less int, greedy bool) {
	if greedy {
		c.prog[split].x, c.prog[split].y = more, less
	} else {
		c.prog[split].x, c.prog[split].y = less, more
	}
}

// first returns an over-approximation of the runes a match can consume first
// when it continues at pc: every path through empty-width steps either
// consumes a rune in the set, or reaches the end assertion (eof), or reaches
// the match without consuming (all). Other assertions only narrow paths, so
// passing through them keeps the approximation safe.
func first(prog []inst, pc int) runeSet {
	var s runeSet
	seen := make([]bool, len(prog))
	var walk func(pc int)
	walk = func(pc int) {
		for !seen[pc] {
			seen[pc] = true
			in := &prog[pc]
			switch in.op {
			case opLit:
				r, _ := utf8.DecodeRune(in.lit)
				s.union(runeSet{ranges: []rune{r, r}})
				return
			case opRun:
				s.union(runeSet{ranges: in.set})
				if in.min > 0 {
					return
				}
				pc++
			case opCap:
				pc++
			case opJmp:
				pc = in.x
			case opSplit:
				walk(in.x)
				pc = in.y
			case opAssert:
				if in.assert == syntax.EmptyEndText {
					s.eof = true
					return
				}
				pc++
			case opMatch:
				s.all = true
				return
			}
		}
	}
	walk(pc)
	return s
}

// anchoredAt reports whether every path from pc asserts the beginning of the
// text before consuming or matching, so only position 0 can start a match.
func anchoredAt(prog []inst, pc int, seen []bool) bool {
	for !seen[pc] {
		seen[pc] = true
		in := &prog[pc]
		switch in.op {
		case opCap:
			pc++
		case opJmp:
			pc = in.x
		case opSplit:
			if !anchoredAt(prog, in.x, seen) {
				return false
			}
			pc = in.y
		case opAssert:
			if in.assert == syntax.EmptyBeginText {
				return true
			}
			pc++
		default:
			return false
		}
	}
	return true // a cycle of empty steps cannot reach a match
}

// fuseCaps gives each step that moves on to the next one the capture marks that follow
// it, so that the matcher sets them without a step of their own.
func fuseCaps(prog []inst) {
	for pc := range prog {
		in := &prog[pc]
		switch in.op {
		case opLit, opRun, opAssert, opCap:
			if in.op == opCap {
				in.caps = []int{in.x}
			}
			in.next = pc + 1
			for prog[in.next].op == opCap {
				in.caps = append(in.caps, prog[in.next].x)
				in.next++
			}
		}
	}
}

// analyse decides, once per program, where the matcher may skip
// backtracking. Runs are visited last to first because a run's decision may
// rest on the run after it.
func analyse(prog []inst) {
	for pc := len(prog) - 1; pc >= 0; pc-- {
		in := &prog[pc]
		switch in.op {
		case opSplit:
			fx, fy := first(prog, in.x), first(prog, in.y)
			if !intersects(fx, fy) {
				in.peek = newClass(fx)
			}
		case opRun:
			follow := first(prog, pc+1)
			in.poss = !intersects(runeSet{ranges: in.set}, follow) || absorbed(prog, pc)
			if !in.poss && !follow.all {
				in.follow = newClass(follow)
			}
			in.scan = scanRunes
			if in.cls.noHigh || in.cls.high && in.max == maxInt && in.min <= 1 {
				in.scan = scanBytes
			}
			in.followBytes = in.follow != nil && in.scan == scanBytes &&
				in.follow.hi == nil && (in.cls.noHigh || in.follow.noHigh)
		}
	}
}

// absorbed reports whether the greedy run at pc is followed, past capture
// marks only, by a possessive unbounded run with no minimum whose class
// contains this one's. Whatever this run gives back, the next run takes
// again and stops at the same place, so the rest of the pattern sees the same
// position: if the first try fails, every shorter one fails too. (Capture
// values differ between the tries but cannot change success.)
func absorbed(prog []inst, pc int) bool {
	if !prog[pc].greedy {
		return false
	}
	next := pc + 1
	for prog[next].op == opCap {
		next++
	}
	n := &prog[next]
	return n.op == opRun && n.poss && n.min == 0 && n.max == maxInt &&
		rangesSubset(prog[pc].set, n.set)
}
