package follow

import "bytes"

// encodingSample is how many of a file's first bytes, without a byte order mark, tell
// UTF-16 by its NULs: a few characters of text.
const encodingSample = 16

// otherEncoding names the encoding of a file whose first bytes are head, when it is one
// in which a line's text is not its bytes (UTF-16 or UTF-32, by their byte order mark, or
// UTF-16 by a NUL every other byte: ASCII text in it); "" for UTF-8 and what cannot be
// told yet. sure says that more of the file's bytes would not change the answer.
func otherEncoding(head []byte) (encoding string, sure bool) {
	switch {
	case bytes.HasPrefix(head, []byte("\xff\xfe\x00\x00")):
		return "UTF-32LE", true
	case bytes.HasPrefix(head, []byte("\x00\x00\xfe\xff")):
		return "UTF-32BE", true
	case len(head) >= 4 && bytes.HasPrefix(head, []byte("\xff\xfe")):
		return "UTF-16LE", true
	case bytes.HasPrefix(head, []byte("\xfe\xff")):
		return "UTF-16BE", true
	case len(head) < encodingSample:
		// "\xff\xfe" may begin UTF-32LE's mark.
		return "", false
	}
	return unmarkedEncoding(head)
}

// unmarkedEncoding is otherEncoding of text that has no byte order mark of its own: a
// wrapper's message, whose first bytes are whatever its writer wrote (binary that opens
// with FF FE is not UTF-16 for that), is UTF-16 by its NULs alone.
func unmarkedEncoding(head []byte) (encoding string, sure bool) {
	if len(head) < encodingSample {
		return "", false
	}
	// The first bytes of ASCII text in UTF-16 have a NUL every other byte and none
	// between; text of other scripts, fewer. UTF-8 text has no NUL.
	var nuls [2]int
	for i, c := range head[:encodingSample] {
		if c == 0 {
			nuls[i%2]++
		}
	}
	switch {
	case nuls[0] == 0 && nuls[1] >= encodingSample/4:
		return "UTF-16LE", true
	case nuls[1] == 0 && nuls[0] >= encodingSample/4:
		return "UTF-16BE", true
	}
	return "", true
}

// checkEncoding warns once of a file t whose first bytes say it is not UTF-8 (see
// otherEncoding), or those of its lines' own text (Options.Text; unmarkedEncoding): its
// lines are read as bytes, so every rule misses them, and the warnings of lines that fit
// no rule do not say why.
func (r *lineReader) checkEncoding(t *tracked, path string) {
	head := t.head[:t.headN]
	full := t.headN == headLen
	told := otherEncoding
	if r.text != nil {
		// The text a wrapper's lines hold (a CRI line's message), once its first
		// line tells where it starts; a first line longer than the head never does.
		text, found := r.text(head)
		if !found && !full {
			return
		}
		if found {
			head, told = text, unmarkedEncoding
		}
	}
	encoding, sure := told(head)
	t.encodingKnown = sure || full
	if encoding != "" {
		r.log.Warn("file is not UTF-8 but "+encoding+": its lines are read as bytes, which no rule's text matches; have its writer write UTF-8 (iconv -f "+encoding+" -t UTF-8 converts it)",
			"path", path, "encoding", encoding)
	}
}
