package parser

import "bytes"

// logfmtExtractor reads the fields rules use from logfmt lines (key=value pairs; a value
// bare or double-quoted with JSON's escapes), in one pass, with the grammar of
// github.com/go-logfmt/logfmt's decoder: what it rejects is malformed here too (a
// differential fuzz test holds the two together). A key given twice keeps its last value;
// a key without '=' has an empty value.
type logfmtExtractor struct {
	keys []string // keys[i] fills slot i+1
}

func newLogfmtExtractor(keys []string) *logfmtExtractor {
	return &logfmtExtractor{keys: keys}
}

// extract reads line into caps (slot k at caps[2k:2k+2], -1 when absent): as the JSON
// extractor does, a value is captured where it is in line, one with escapes decoded into
// sc.vals as if that followed line (text.more), so no line is copied. It returns what caps
// index, and false when the line is not logfmt.
func (x *logfmtExtractor) extract(line []byte, caps []int, sc *scratch) (text, bool) {
	vals, ok := x.scan(line, sc.vals[:0], caps)
	sc.vals = vals
	if !ok {
		return text{}, false
	}
	return text{line, vals}, true
}

func (x *logfmtExtractor) scan(line, vals []byte, caps []int) ([]byte, bool) {
	for i := range caps {
		caps[i] = -1
	}
	i := 0
	for {
		for i < len(line) && line[i] <= ' ' {
			i++
		}
		if i >= len(line) {
			return vals, true
		}
		start, multibyte := i, false
		for i < len(line) && line[i] > ' ' && line[i] != '=' {
			switch c := line[i]; {
			case c == '"':
				return vals, false
			case c >= 0x80:
				multibyte = true
			}
			i++
		}
		key := line[start:i]
		if len(key) == 0 {
			return vals, false // a '=' with no key before it
		}
		if multibyte && bytes.ContainsRune(key, 0xFFFD) {
			return vals, false // go-logfmt refuses keys holding U+FFFD, invalid bytes included
		}
		slot := x.slot(key)
		if i >= len(line) || line[i] != '=' {
			setCapture(caps, slot, i, i)
			continue
		}
		i++ // '='
		if i >= len(line) || line[i] <= ' ' {
			setCapture(caps, slot, i, i)
			continue
		}
		if line[i] != '"' {
			vstart := i
			for i < len(line) && line[i] > ' ' {
				if line[i] == '=' || line[i] == '"' {
					return vals, false
				}
				i++
			}
			setCapture(caps, slot, vstart, i)
			continue
		}
		vstart, esc := i+1, false
		for i++; ; {
			// Control and multibyte bytes stop JSON's plain run too; here they are kept.
			if i = skipPlainASCII(line, i); i >= len(line) {
				return vals, false // unterminated quoted value
			}
			if c := line[i]; c == '"' {
				break
			} else if c == '\\' {
				esc = true
				i++
			}
			i++
		}
		inner := line[vstart:i]
		i++ // closing '"'
		if !esc {
			setCapture(caps, slot, vstart, i-1)
			continue
		}
		// go-logfmt decodes only values with escapes, and refuses those that do not
		// decode; a value no rule uses is decoded into spare room and forgotten.
		at := len(vals)
		decoded, ok := appendUnquoted(vals, inner, true)
		if !ok {
			return vals, false
		}
		if slot == 0 {
			continue
		}
		vals = decoded
		setCapture(caps, slot, len(line)+at, len(line)+len(vals))
	}
}

// slot is the slot of key, 0 when no rule uses it.
func (x *logfmtExtractor) slot(key []byte) int {
	for i, k := range x.keys {
		if len(k) == len(key) && k == string(key) {
			return i + 1
		}
	}
	return 0
}

// setCapture records the value from start to end in slot (when slot > 0).
func setCapture(caps []int, slot, start, end int) {
	if slot > 0 {
		caps[2*slot], caps[2*slot+1] = start, end
	}
}
