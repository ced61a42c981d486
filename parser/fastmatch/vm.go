package fastmatch

import (
	"bytes"
	"encoding/binary"
	"math"
	"regexp/syntax"
	"unicode/utf8"
)

type result uint8

const (
	matched result = iota
	noMatch
	giveUp // budget or stack exhausted: the caller asks regexp
)

// frame is one entry of the backtracking stack. Positions are int32 to keep
// the stack small; longer lines go to regexp.
type frame struct {
	kind frameKind
	pc   int32 // alt: where to resume; run: the run's pc; restore: the capture slot
	pos  int32 // alt: where to resume; run: the current end; restore: the old value
	lo   int32 // greedy run: the lowest end (min runes); lazy run: runes taken so far
	from int32 // greedy run: where the run began, so that steps back land on rune starts
}

type frameKind uint8

const (
	fAlt     frameKind = iota // the other branch of a split
	fGreedy                   // a greedy run that can give back runes
	fLazy                     // a lazy run that can take more runes
	fRestore                  // a capture slot to restore on the way back
)

// stackSize bounds the backtracking stack, which lives in Match's frame.
// Usual log expressions need a handful of entries; more goes to regexp.
const stackSize = 64

// exec runs the program at every candidate start, leftmost first, as regexp does.
func (m *Matcher) exec(line []byte, caps []int, budget int) result {
	if len(line) >= math.MaxInt32 {
		return giveUp
	}
	var stack [stackSize]frame
	prog := m.prog
	caps = caps[:m.ncap]
	for start := 0; ; start += runeWidth(line, start) {
		switch {
		case m.prefix != nil:
			i := bytes.Index(line[start:], m.prefix)
			if i < 0 {
				return noMatch
			}
			start += i
		case m.start != nil:
			for !m.start.at(line, start) {
				if start >= len(line) {
					return noMatch
				}
				start += runeWidth(line, start)
				budget--
			}
		}
		copy(caps, m.unset)
		caps[0] = start
		sp, choices := 0, 0 // choices: alt and run frames on the stack
		pc, pos := 0, start
	run:
		for {
			budget--
			if budget < 0 {
				return giveUp
			}
			in := &prog[pc]
			switch in.op {
			case opLit:
				var ok bool
				if len(in.lit) <= 8 && len(line)-pos >= 8 {
					ok = binary.LittleEndian.Uint64(line[pos:])&in.litMask == in.litWord
				} else {
					ok = bytes.HasPrefix(line[pos:], in.lit)
				}
				if ok {
					pos += len(in.lit)
					goto next
				}
			case opRun:
				cls := in.cls
				p := pos
				if in.scan == scanBytes && (in.greedy || in.poss) {
					// max is bounded only for ASCII-only classes, where
					// bytes are runes.
					lim := len(line)
					if in.max < lim-p {
						lim = p + in.max
					}
					if cls.noHigh {
						p = cls.spanASCII(line, p, lim)
					} else {
						p = cls.span(line, p, lim)
					}
					budget -= p - pos
					lo := pos + in.min
					if cls.high && in.min == 1 && p > pos && line[pos] >= utf8.RuneSelf {
						// The one rune the run needs may be wider than a byte.
						lo = pos + runeWidth(line, pos)
					}
					if p < lo {
						break // backtrack
					}
					if !in.poss && p > lo {
						if sp == len(stack) {
							return giveUp
						}
						stack[sp] = frame{kind: fGreedy, pc: int32(pc), pos: int32(p), lo: int32(lo), from: int32(pos)}
						sp++
						choices++
					}
					pos = p
					goto next
				}
				n := 0
				for ; n < in.min; n++ {
					w := cls.step(line, p)
					if w == 0 {
						break
					}
					p += w
				}
				if n < in.min {
					break // backtrack
				}
				lo := p
				if in.greedy || in.poss {
					for ; n < in.max; n++ {
						w := cls.step(line, p)
						if w == 0 {
							break
						}
						p += w
					}
					budget -= p - pos
				}
				if !in.poss && (in.greedy && p > lo || !in.greedy && n < in.max) {
					if sp == len(stack) {
						return giveUp
					}
					if in.greedy {
						stack[sp] = frame{kind: fGreedy, pc: int32(pc), pos: int32(p), lo: int32(lo), from: int32(pos)}
					} else {
						stack[sp] = frame{kind: fLazy, pc: int32(pc), pos: int32(p), lo: int32(n)}
					}
					sp++
					choices++
				}
				pos = p
				goto next
			case opCap:
				goto next
			case opSplit:
				if in.peek != nil {
					if in.peek.at(line, pos) {
						pc = in.x
					} else {
						pc = in.y
					}
					continue
				}
				if sp == len(stack) {
					return giveUp
				}
				stack[sp] = frame{kind: fAlt, pc: int32(in.y), pos: int32(pos)}
				sp++
				choices++
				pc = in.x
				continue
			case opJmp:
				pc = in.x
				continue
			case opAssert:
				if assertHolds(in.assert, line, pos) {
					goto next
				}
			case opMatch:
				caps[1] = pos
				return matched
			}
			// Backtrack to the newest choice, undoing captures on the way.
			for sp > 0 {
				sp--
				f := &stack[sp]
				switch f.kind {
				case fRestore:
					caps[f.pc] = int(f.pos)
					continue
				case fAlt:
					choices--
					pc, pos = int(f.pc), int(f.pos)
					continue run
				case fGreedy:
					in := &prog[f.pc]
					end, lo := int(f.pos), int(f.lo)
					ok := false
					for !ok && end > lo {
						if in.cls.noHigh {
							end--
						} else {
							_, w := utf8.DecodeLastRune(line[f.from:end])
							end -= w
						}
						switch {
						case in.follow == nil:
							ok = true
						case in.followBytes:
							ok = in.follow.tbl[line[end]] != 0
						default:
							ok = in.follow.at(line, end)
						}
					}
					budget -= int(f.pos) - end
					if !ok {
						choices--
						continue
					}
					if end > lo {
						f.pos = int32(end)
						sp++
					} else {
						choices--
					}
					pc, pos = int(f.pc)+1, end
					continue run
				case fLazy:
					in := &prog[f.pc]
					end, n := int(f.pos), int(f.lo)
					ok := false
					if in.followBytes {
						lim := len(line)
						if in.max-n < lim-end {
							lim = end + in.max - n
						}
						from := end
						for !ok && end < lim && in.cls.tbl[line[end]] != 0 {
							end++
							if end < len(line) {
								ok = in.follow.tbl[line[end]] != 0
							} else {
								ok = in.follow.eof
							}
						}
						n += end - from
					} else {
						for !ok && n < in.max {
							w := in.cls.step(line, end)
							if w == 0 {
								break
							}
							end += w
							n++
							ok = in.follow == nil || in.follow.at(line, end)
						}
					}
					budget -= end - int(f.pos)
					if !ok {
						choices--
						continue
					}
					if n < in.max {
						f.pos, f.lo = int32(end), int32(n)
						sp++
					} else {
						choices--
					}
					pc, pos = int(f.pc)+1, end
					continue run
				}
			}
			break
		next:
			// The capture marks right after a step that succeeded are set here rather
			// than each in a step of its own: a usual log regex has as many of them as
			// it has other steps. (An opCap reached by a jump has itself in caps.) With no
			// choice to come back to, the old values need not be saved.
			if len(in.caps) > 0 {
				if choices == 0 {
					for _, x := range in.caps {
						caps[x] = pos
					}
				} else {
					if sp+len(in.caps) > len(stack) {
						return giveUp
					}
					for _, x := range in.caps {
						stack[sp] = frame{kind: fRestore, pc: int32(x), pos: int32(caps[x])}
						sp++
						caps[x] = pos
					}
				}
			}
			pc = in.next
		}
		if m.anchored {
			return noMatch
		}
		if m.lead != nil {
			from := start
			for start < len(line) {
				w := m.lead.step(line, start)
				if w == 0 {
					break
				}
				start += w
			}
			budget -= start - from
		}
		if start >= len(line) {
			return noMatch
		}
	}
}

// runeWidth is the width regexp steps over at pos (1 at the end, where the
// caller stops anyway).
func runeWidth(line []byte, pos int) int {
	if pos >= len(line) || line[pos] < utf8.RuneSelf {
		return 1
	}
	_, w := utf8.DecodeRune(line[pos:])
	return w
}

// assertHolds evaluates an empty-width assertion the way regexp does from
// the runes before and after pos. Only ASCII bytes can be '\n' or word
// characters, and an ASCII byte always decodes as itself, so looking at the
// neighbouring bytes is exact.
func assertHolds(op syntax.EmptyOp, line []byte, pos int) bool {
	switch op {
	case syntax.EmptyBeginText:
		return pos == 0
	case syntax.EmptyEndText:
		return pos == len(line)
	case syntax.EmptyBeginLine:
		return pos == 0 || line[pos-1] == '\n'
	case syntax.EmptyEndLine:
		return pos == len(line) || line[pos] == '\n'
	}
	boundary := (pos > 0 && isWordByte(line[pos-1])) != (pos < len(line) && isWordByte(line[pos]))
	return boundary == (op == syntax.EmptyWordBoundary)
}

func isWordByte(b byte) bool {
	return b < utf8.RuneSelf && syntax.IsWordChar(rune(b))
}
