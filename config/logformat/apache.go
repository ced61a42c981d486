package logformat

import (
	"cmp"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"
)

// ApachePresets are the formats apache_log_format: may name instead of giving the string:
// the nicknames of Apache's default httpd.conf.
var ApachePresets = map[string]string{
	"common":   `%h %l %u %t "%r" %>s %b`,
	"combined": `%h %l %u %t "%r" %>s %b "%{Referer}i" "%{User-agent}i"`,
}

// ParseApache compiles a mod_log_config format: a preset's name, or the format string
// (as in httpd.conf, where \" stands for a quote). A directive's capture is named after
// its letter (%h is h, %>s is s), and one with an argument after both, the argument lower
// case with _ for what is not a letter or digit (%{User-agent}i is i_user_agent). Where
// directives of one name write different values, apacheNames names them apart.
func ParseApache(text string) (*Format, error) {
	// A format given in a YAML block (apache_log_format: |) ends with the block's line
	// break, which is not the format's: no line of a log has one.
	text = strings.TrimRight(text, "\r\n")
	// A directive's format, in quotes after its other arguments, would fit no line.
	switch strings.ToLower(firstWord(text)) {
	case "logformat":
		return nil, &Error{len(text) - len(strings.TrimLeft(text, " \t")), "this is Apache's LogFormat directive, which names a format: give only its format string, the text between its quotes"}
	case "customlog":
		return nil, &Error{len(text) - len(strings.TrimLeft(text, " \t")), "this is Apache's CustomLog directive, which names the log file and its format: give only its format string, the text between its quotes (or the LogFormat of the nickname it names)"}
	}
	f := &Format{Server: Apache, Text: text, Escape: EscapeApache}
	// Space around a nickname is no part of it, as a log_format: preset's is not; a
	// format string keeps its spaces, which Apache writes.
	if name := strings.TrimSpace(text); ApachePresets[name] != "" {
		f.Preset, f.Text = name, ApachePresets[name]
	}
	if err := checkText(f.Text); err != nil {
		return nil, err
	}
	toks, err := apacheTokens(f.Text)
	if err != nil {
		return nil, err
	}
	apacheNames(toks)
	if err := compileText(f, toks); err != nil {
		return nil, err
	}
	derive(f, "r", "s")
	return f, nil
}

// ApachePasted reports whether a trimmed format string s is LogFormat's format argument
// as httpd.conf has it: in double quotes, with its own quotes escaped inside (\"), perhaps
// with the nickname after it, which it returns. mod_log_config writes such quotes, so a
// format that starts and ends with a quoted field is taken for pasted only with the
// escapes, which a format not copied from inside quotes has no need of.
func ApachePasted(s string) (nickname string, ok bool) {
	if !strings.HasPrefix(s, `"`) {
		return "", false
	}
	end := -1
	for i := 1; i < len(s); i++ {
		if s[i] == '\\' {
			i++
			continue
		}
		if s[i] == '"' {
			end = i
			break
		}
	}
	if end < 0 || !strings.Contains(s[1:end], `\"`) {
		return "", false
	}
	rest := s[end+1:]
	if rest == "" {
		return "", true
	}
	if !strings.HasPrefix(rest, " ") && !strings.HasPrefix(rest, "\t") {
		return "", false
	}
	rest = strings.TrimSpace(rest)
	return rest, nicknameWord().MatchString(rest)
}

// nicknameWord is a LogFormat nickname as httpd.conf's default and its users write them,
// compiled for the first LogFormat line with one.
var nicknameWord = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_-]*$`) })

// firstWord is text's first word when another follows it: the name of the httpd.conf
// directive text would be.
func firstWord(text string) string {
	if f := strings.Fields(text); len(f) > 1 {
		return f[0]
	}
	return ""
}

// apacheTokens splits a mod_log_config format into text and directives:
// %[conditions][<>][{argument}]letter, with %% a literal %.
func apacheTokens(text string) ([]token, error) {
	var toks []token
	var lit strings.Builder
	litAt := 0
	flush := func() {
		if lit.Len() > 0 {
			toks = append(toks, token{lit: lit.String(), at: litAt})
			lit.Reset()
		}
	}
	for i := 0; i < len(text); {
		c := text[i]
		switch {
		case c == '\\' && i+1 < len(text):
			// httpd.conf's escapes inside a quoted LogFormat (\" and \\), and mod_log_config's
			// own (\\, \n, \r, \t), which copies any other backslash as it is, the character
			// after it read as any other (\%h is a backslash and %h).
			if lit.Len() == 0 {
				litAt = i
			}
			switch e := text[i+1]; e {
			case 'n':
				lit.WriteByte('\n')
			case 'r':
				lit.WriteByte('\r')
			case 't':
				lit.WriteByte('\t')
			case '"', '\\':
				lit.WriteByte(e)
			default:
				lit.WriteByte(c)
				i--
			}
			i += 2
		case c == '%' && strings.HasPrefix(text[i:], "%%"):
			if lit.Len() == 0 {
				litAt = i
			}
			lit.WriteByte('%')
			i += 2
		case c == '%':
			v, n, err := apacheDirective(text[i:])
			if err != nil {
				err.Offset += i
				return nil, err
			}
			flush()
			toks = append(toks, token{v: v, at: i})
			i += n
		default:
			if lit.Len() == 0 {
				litAt = i
			}
			lit.WriteByte(c)
			i++
		}
	}
	flush()
	return toks, nil
}

// apacheLetters are the directives mod_log_config, mod_logio and mod_ssl know (mod_ssl's
// %{VAR}x and %{version}c are in its default ssl_request_log format); apacheEscaped those
// whose text mod_log_config escapes (ap_escape_logitem: \" \\ \n and \xhh) and writes as
// "-" when it has none. The others are numbers, addresses, times and mod_ssl's values, which
// it writes as they are. apacheTwoLetters follow a ^: the trailers, escaped, and mod_logio's
// time to the first byte, a number.
const (
	apacheLetters = "aABbcCDefhHiIklLmnoOpPqrRsStTuUvVxX"
	apacheEscaped = "CefhHilmnoqrRuUvV"
)

var apacheTwoLetters = []string{"ti", "to", "FB"}

// apacheOriginal are the directives that read the original request of an internal
// redirect unless < or > says otherwise (mod_log_config registers them so); every other
// reads the final one.
const apacheOriginal = "DLrRsTU"

// apacheFolded are the directives (by their letter, ti and to for ^ti and ^to) whose
// argument Apache reads whatever its case: the name of an entry of one of its tables
// (headers, trailers, notes, environment), of a cookie, or a keyword (%{ms}T's unit,
// %{local}p's port, %{tid}P's id). Two that differ only so write one value.
var apacheFolded = []string{"C", "e", "i", "n", "o", "p", "P", "T", "ti", "to"}

// apacheDirective reads the directive at the start of s and its length. Its modifiers
// are read as mod_log_config's parse_log_item reads them, in any order: the last < or >
// says which request it reads, each ! negates its condition, and its condition is the
// statuses listed (none: every status).
func apacheDirective(s string) (*variable, int, *Error) {
	i := 1
	arg := ""
	request := byte(0)
	negated := false
	var statuses []string
	for i < len(s) {
		switch c := s[i]; {
		case c == '<' || c == '>':
			request = c
			i++
			continue
		case c == '!':
			negated = !negated
			i++
			continue
		case c == ',':
			i++
			continue
		case c >= '0' && c <= '9':
			j := i
			for j < len(s) && s[j] >= '0' && s[j] <= '9' {
				j++
			}
			statuses = append(statuses, s[i:j])
			i = j
			continue
		case c == '{':
			end := strings.IndexByte(s[i:], '}')
			if end < 0 {
				return nil, 0, &Error{i, "the closing } of the directive's argument is missing"}
			}
			arg = s[i+1 : i+end]
			i += end + 1
			continue
		}
		break
	}
	var letter string
	switch {
	case strings.HasPrefix(s[i:], "^") && len(s) >= i+3 && slices.Contains(apacheTwoLetters, s[i+1:i+3]):
		letter = s[i+1 : i+3]
	case strings.HasPrefix(s[i:], "^"):
		return nil, 0, &Error{i, fmt.Sprintf("%%%s is not a directive of mod_log_config or mod_logio (%%^ti, %%^to, %%^FB)", s[i:min(len(s), i+3)])}
	case i < len(s) && strings.IndexByte(apacheLetters, s[i]) >= 0:
		letter = s[i : i+1]
	case i < len(s):
		return nil, 0, &Error{i, fmt.Sprintf("%%%c is not a directive of mod_log_config", s[i])}
	default:
		return nil, 0, &Error{i, "the directive has no letter"}
	}
	n := i + len(letter)
	if len(letter) == 2 {
		n++
	}
	v := &variable{name: letter, text: s[:n], escaped: letter == "ti" || letter == "to" || len(letter) == 1 && strings.Contains(apacheEscaped, letter)}
	if arg != "" {
		v.name += "_" + argName(arg)
	}
	v.original = request == '<' || request == 0 && len(letter) == 1 && strings.Contains(apacheOriginal, letter)
	v.condition = apacheCondition(statuses, negated)
	argKey := arg
	if slices.Contains(apacheFolded, letter) {
		argKey = strings.ToLower(arg)
	}
	v.key = fmt.Sprintf("%s{%s}%t %s", letter, argKey, v.original, v.condition)
	switch {
	case letter == "t" && arg != "":
		v.spaces = strftimeSpaces(arg)
		if re, padded := strftimeRegex(arg); padded {
			v.strftime = re
		}
	case letter == "i" && strings.EqualFold(arg, "X-Forwarded-For"):
		v.joined = true
	case letter == "u" || letter == "U" || letter == "r":
		v.words = true
	case letter == "b" && v.condition == "":
		// "In CLF format, i.e. a '-' rather than a 0 when no bytes are sent" (its
		// documentation): a response without a body, of the original request or the
		// final one too (%<b, %>b). A %b with a condition (%!200b) writes "-" for a
		// status it does not log too, which is no zero.
		v.dashZero = true
	}
	switch v.text {
	case "%t":
		v.bracketed = true
	case "%q":
		v.lead = '?'
	}
	return v, n, nil
}

// ApacheDurationUnit is the unit a directive v, as written (%D, %{ms}T), writes a duration
// in: "seconds", "milliseconds" or "microseconds"; "" for a directive that writes none.
// mod_log_config reads %T's unit whatever its case, and writes an unknown one as it is.
func ApacheDurationUnit(v string) string {
	if v == "" {
		return ""
	}
	letter := v[len(v)-1:]
	arg := ""
	if open, end := strings.IndexByte(v, '{'), strings.LastIndexByte(v, '}'); open >= 0 && end > open {
		arg = strings.ToLower(v[open+1 : end])
	}
	switch {
	case letter == "D" || strings.HasSuffix(v, "^FB"):
		return "microseconds"
	case letter != "T":
	case arg == "" || arg == "s":
		return "seconds"
	case arg == "ms":
		return "milliseconds"
	case arg == "us":
		return "microseconds"
	}
	return ""
}

// apacheCondition is the condition of a directive as part of a capture name: its
// statuses in ascending order, each once, after not_ when it is negated (%!304,200s is
// not_200_304); "" for a directive without one, which writes its value for every status.
func apacheCondition(statuses []string, negated bool) string {
	if len(statuses) == 0 {
		return ""
	}
	for i, st := range statuses {
		if st = strings.TrimLeft(st, "0"); st == "" {
			st = "0"
		}
		statuses[i] = st
	}
	slices.SortFunc(statuses, func(a, b string) int { return cmp.Or(cmp.Compare(len(a), len(b)), strings.Compare(a, b)) })
	name := strings.Join(slices.Compact(statuses), "_")
	if negated {
		name = "not_" + name
	}
	return name
}

// apacheNames names apart the directives of a format whose captures would share a name
// but whose values differ: of the original request and of the final one (%s and %>s,
// %<U and %U), or with conditions that differ (%s and %!200s). One of the original
// request is named with _original after its name where the format has one of the final
// request (%s is s_original beside %>s, which stays s: so the status and its class are the
// final request's, as they are of common and combined), and one with a condition with the
// condition after that where the format has the directive with another condition or none
// (%!200s is s_not_200 beside %s). Where that leaves the name to none of them (%200s
// %404s, each with a condition), the first keeps it, as it had it before directives were
// named apart: a rule written then still loads and reads the same directive. A directive
// written twice alike writes one value and keeps one name: the second is read but not
// captured, as nginx's variables are.
func apacheNames(toks []token) {
	type names struct {
		final      bool
		conditions map[string]bool
		// first is the key of the name's first directive; kept, whether one keeps the name.
		first string
		kept  bool
	}
	of := map[string]*names{}
	base := make([]string, len(toks))
	for i, t := range toks {
		if t.v == nil {
			continue
		}
		base[i] = t.v.name
		n := of[t.v.name]
		if n == nil {
			n = &names{conditions: map[string]bool{}, first: t.v.key}
			of[t.v.name] = n
		}
		n.final = n.final || !t.v.original
		n.conditions[t.v.condition] = true
	}
	for i, t := range toks {
		if t.v == nil {
			continue
		}
		n := of[base[i]]
		if t.v.original && n.final {
			t.v.name += "_original"
		}
		if t.v.condition != "" && len(n.conditions) > 1 {
			t.v.name += "_" + t.v.condition
		}
		n.kept = n.kept || t.v.name == base[i]
	}
	for i, t := range toks {
		if t.v != nil && !of[base[i]].kept && t.v.key == of[base[i]].first {
			t.v.name = base[i]
		}
	}
}

// strftimeSpaces is how many spaces the time of %{format}t holds: those of its strftime
// format and of the conversions that write some in the C locale (%c, %r, also as %Ec or
// %Or). A number padded with a space (%e, %k, %l, %_d, and the day of %c) is one more on
// the numbers of one digit: such a format's times are read by strftimeRegex. The
// formats of Apache's own (sec, msec, ..., begin: and end: before one) write none more.
func strftimeSpaces(format string) int {
	format = strings.TrimPrefix(strings.TrimPrefix(format, "begin:"), "end:")
	n := 0
	for i := 0; i < len(format); i++ {
		switch {
		case format[i] == ' ':
			n++
		case format[i] == '%' && i+1 < len(format):
			i++
			if (format[i] == 'E' || format[i] == 'O') && i+1 < len(format) {
				i++ // a modifier: the alternative form, the same in the C locale
			}
			switch format[i] {
			case 'c':
				n += 4 // Thu Mar  1 12:00:00 2024
			case 'r':
				n++ // 12:00:00 PM
			}
		}
	}
	return n
}

// argName is a directive's argument as part of a capture name.
func argName(arg string) string {
	var b strings.Builder
	for _, c := range strings.ToLower(arg) {
		if c >= 'a' && c <= 'z' || c >= '0' && c <= '9' {
			b.WriteRune(c)
		} else {
			b.WriteByte('_')
		}
	}
	return b.String()
}

// strftimeRegex is the regex of the times strftime writes for format (of %{format}t) in
// the C locale, and whether a conversion of it pads a number of one digit with a space
// (%e, %k, %l; %_d, %_H, ... with glibc's _ flag; the day of %c), which then writes " 5"
// where it writes "15": such a conversion reads as its two characters, which makes the
// value's spaces as many as the time has; any other as text without a space, as
// strftimeSpaces counts them.
func strftimeRegex(format string) (re string, padded bool) {
	format = strings.TrimPrefix(strings.TrimPrefix(format, "begin:"), "end:")
	var b, lit strings.Builder
	flush := func() {
		b.WriteString(regexp.QuoteMeta(lit.String()))
		lit.Reset()
	}
	for i := 0; i < len(format); i++ {
		if format[i] != '%' || i+1 == len(format) {
			lit.WriteByte(format[i])
			continue
		}
		i++
		flag := byte(0)
		if strings.IndexByte("_-0^#", format[i]) >= 0 && i+1 < len(format) {
			flag = format[i]
			i++
		}
		if (format[i] == 'E' || format[i] == 'O') && i+1 < len(format) {
			i++ // a modifier: the alternative form, the same in the C locale
		}
		conv := format[i]
		if conv == '%' {
			lit.WriteByte('%')
			continue
		}
		flush()
		switch {
		case conv == 'c':
			sub, _ := strftimeRegex("%a %b %e %H:%M:%S %Y")
			b.WriteString(sub)
			padded = true
		case conv == 'r':
			b.WriteString(`[^ ]* [^ ]*`) // 12:00:00 PM
		case flag == '_' && conv == 'j':
			b.WriteString(`(?:  [0-9]| [0-9]{2}|[0-9]{3})`)
			padded = true
		case flag != '-' && flag != '0' && strings.IndexByte("ekl", conv) >= 0,
			flag == '_' && strings.IndexByte("CdgHImMSUVWy", conv) >= 0:
			b.WriteString(`(?: [0-9]|[0-9]{2})`)
			padded = true
		default:
			b.WriteString(`[^ ]*`)
		}
	}
	flush()
	return b.String(), padded
}
