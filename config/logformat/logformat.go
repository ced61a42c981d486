// Package logformat compiles a web server's access log format into what reads its lines:
// an nginx log_format line or an Apache LogFormat string (or a preset of either) becomes a
// regex of the usual log shape, one named group per variable, each variable's value
// stopping at the first character of the text that follows it; an nginx JSON object
// template written with escape=json becomes the JSON fields each variable fills. It also
// names the captures derived from some variables ($request's method, target, path and
// protocol; $status's class). It is data for config: nothing here runs on log lines.
package logformat

import (
	"errors"
	"fmt"
	"regexp"
	"regexp/syntax"
	"slices"
	"strings"
	"unicode/utf8"
)

// Server is the web server whose format a Format is.
type Server uint8

const (
	// Nginx formats are log_format lines ($variables).
	Nginx Server = iota
	// Apache formats are mod_log_config strings (%directives).
	Apache
)

// Escape is how the server escapes a variable's value in its lines, and what it writes for
// a value it does not have.
type Escape uint8

const (
	// EscapeDefault is nginx's default: '"', '\', control and non-ASCII bytes as \xHH, and
	// "-" for a variable without a value.
	EscapeDefault Escape = iota
	// EscapeJSON is nginx's escape=json: JSON string escapes, nothing for no value.
	EscapeJSON
	// EscapeNone is nginx's escape=none: values as they are, nothing for no value.
	EscapeNone
	// EscapeApache is mod_log_config's: \" \\ \n \t ... and \xhh, "-" for no value.
	EscapeApache
	// EscapeEither is a JSON template given without its escaping, read as text: a value
	// may hold the escapes of EscapeDefault or of EscapeJSON, which never overlap (the one
	// writes a backslash as \x5C, the other writes no \x), and "-" reads as no value.
	EscapeEither
)

// EscapeNames are the values of nginx's escape= parameter, indexed by Escape.
var EscapeNames = []string{"default", "json", "none"}

// ParseEscape reads a value of nginx's escape= parameter.
func ParseEscape(s string) (Escape, bool) {
	i := slices.Index(EscapeNames, s)
	return Escape(i), i >= 0
}

// String names the escaping as nginx's escape= does ("apache" for Apache's).
func (e Escape) String() string {
	switch {
	case int(e) < len(EscapeNames):
		return EscapeNames[e]
	case e == EscapeEither:
		return "default or json"
	}
	return "apache"
}

// Format is a compiled log format. Exactly one of Regex and Fields is set.
type Format struct {
	Server Server
	// Preset is the preset's name when the format is one, else empty; Text is the format
	// string (a preset's own).
	Preset string
	Text   string
	// Directive is the name of the nginx log_format directive the format was given as.
	Directive string
	Escape    Escape
	// Regex reads a whole line of the format; a line may end before the variables the
	// format ends with, each after a space (see compileText). Its group k is
	// Captures[k-1].
	Regex    string
	Captures []Capture
	// Pieces are the format's literal text and variables in line order, what Regex is
	// written from: a line can be cut by them without running the regex.
	Pieces []Piece
	// Fields are the captures of a JSON object template: the line is read as JSON.
	Fields []Field
	// Unquoted are the variables of a JSON object template written without quotes that
	// nginx may write as what is no JSON value (nothing, "-", a list of upstreams, text),
	// as written: a line where it does is no JSON, and no rule reads it.
	Unquoted []string
	// Derived are the captures computed from others, numbered after Captures (or Fields).
	Derived []Derived
	// Clashes are the variables a line is read by but that are not captured, their
	// capture's name being an earlier variable's that writes another value (Apache's
	// %{%d}t and %{%D}t are both t__d): a rule reads the earlier one. A variable written
	// twice alike is no clash: both write one value.
	Clashes []Clash
}

// Clash is a variable of a text format left without a capture of its own (Format.Clashes).
type Clash struct {
	// Var is the variable as written, At its offset in Text.
	Var string
	At  int
	// Name is the capture's name, which Of, as written, has.
	Name string
	Of   string
}

// Capture is one variable of a text format: a group of its regex.
type Capture struct {
	// Name is the capture's name: an nginx variable's own, an Apache directive's letter
	// (with its argument, lower-cased: %{Referer}i is i_referer; named apart from another
	// of its name by its request or condition: s_original).
	Name string
	// Var is the variable as written in the format ($status, %>s), for messages.
	Var string
	// Escaped: the server escapes the value (see Escape); nginx's built-in log variables
	// ($status, $request_time, ...) are written as they are.
	Escaped bool
	// Next is the text that follows the variable in the format, empty at its end.
	Next string
	// List: nginx writes one value per upstream tried (", " between them, " : " after an
	// internal redirect), as for $upstream_response_time.
	List bool
	// DashZero: the server writes a zero as "-", which is then no missing value but 0
	// (Apache's %b, the size in the Common Log Format).
	DashZero bool
}

// Piece is one piece of a text format: literal text, or the value of a variable, whose
// regex its kind tells (Regex is the pieces' regexes in order).
type Piece struct {
	Kind PieceKind
	// Lit is a literal piece's text.
	Lit string
	// Stop is the character an Until or UntilEscaped value stops at: the first of the text
	// after it, a space at the end of the format.
	Stop rune
	// Group is a value's group in Regex (Captures[Group-1]); 0 for a variable the format
	// repeats, read again but not captured, and for one of Clashes.
	Group int
	// Optional: the piece (a space before a variable the format ends with) starts a part
	// the line may leave out, with everything after it.
	Optional bool
	// Spaces are the spaces a Spaced value holds.
	Spaces int
	// Pattern is a Strftime value's regex.
	Pattern string
	// Fewest: a Joined value takes the fewest of its items the rest of the line fits
	// with, not the most (see fewestItems).
	Fewest bool
	// Words: an Until value stopping at a space may hold spaces itself, the value being
	// words joined by single spaces, the fewest the rest of the line fits with
	// (`(?:[^ ]* )*?[^ ]*`): a line whose value has none reads as it would without.
	Words bool
}

// PieceKind is what a piece of a text format reads.
type PieceKind uint8

const (
	// PieceLiteral is the piece's Lit.
	PieceLiteral PieceKind = iota
	// PieceRest is the rest of the line, up to a newline (`.*`).
	PieceRest
	// PieceUntil is any text without Stop (`[^s]*`).
	PieceUntil
	// PieceUntilEscaped is text up to a Stop that is not in an escape sequence of the
	// format's Escape; every backslash in it starts one (`[^s\\]*(?:e[^s\\]*)*`).
	PieceUntilEscaped
	// PieceList is an upstream list: items without ' ' or ',', each after ", " or " : ".
	PieceList
	// PieceSpaced is Spaces+1 words and the spaces between them ($time_local's two, an
	// Apache strftime time's).
	PieceSpaced
	// PieceBracketed is '[', text without ']', and ']' (Apache's %t), whatever follows.
	PieceBracketed
	// PieceJoined is items without ' ' joined by ", " (X-Forwarded-For's addresses).
	PieceJoined
	// PieceStrftime is an Apache time of a strftime format some of whose conversions pad
	// a number of one digit with a space (%e, %k, %l, %_d, ...), before a space: the
	// times the format writes (Pattern), whose spaces are not always as many.
	PieceStrftime
)

// Field is one variable of a JSON object template.
type Field struct {
	Name string
	Var  string
	// Path is the keys leading to the value, outermost first.
	Path []string
}

// DeriveKind is what a derived capture computes from its source.
type DeriveKind uint8

const (
	// RequestMethod, RequestURI, URI and ServerProtocol split a request line ("GET
	// /a?b HTTP/1.1"): its method, its target, the target without the query, and its
	// protocol. A line whose first word is not a method (a request nginx could not parse)
	// gives none of them.
	RequestMethod DeriveKind = iota
	RequestURI
	URI
	ServerProtocol
	// StatusClass is a status's first digit followed by "xx".
	StatusClass
)

// Derived is a capture computed from another capture of the format.
type Derived struct {
	Name string
	From string
	Kind DeriveKind
}

// derivedNames are the names of the derived captures by kind, the same for both servers.
var derivedNames = []string{"request_method", "request_uri", "uri", "server_protocol", "status_class"}

// JSON reports whether the format reads its lines as JSON.
func (f *Format) JSON() bool { return f.Regex == "" }

// Names are the capture names of the format, derived ones last.
func (f *Format) Names() []string {
	var out []string
	for _, c := range f.Captures {
		out = append(out, c.Name)
	}
	for _, fl := range f.Fields {
		out = append(out, fl.Name)
	}
	for _, d := range f.Derived {
		out = append(out, d.Name)
	}
	return out
}

// Var returns how the variable behind a capture is written in the format ($status, %>s,
// or the source's for a derived capture); "" when the format has no such capture.
func (f *Format) Var(capture string) string {
	for _, c := range f.Captures {
		if c.Name == capture {
			return c.Var
		}
	}
	for _, fl := range f.Fields {
		if fl.Name == capture {
			return fl.Var
		}
	}
	for _, d := range f.Derived {
		if d.Name == capture {
			return f.Var(d.From)
		}
	}
	return ""
}

// Next is the text that follows a capture's variable in the format ("" for none, at the
// end, or for a JSON format).
func (f *Format) Next(capture string) string {
	for _, c := range f.Captures {
		if c.Name == capture {
			return c.Next
		}
	}
	return ""
}

// List reports whether a capture is one value per upstream tried (Capture.List); a JSON
// format's field is when its variable is such a list, which an escape=json template
// writes in one string.
func (f *Format) List(capture string) bool {
	for _, c := range f.Captures {
		if c.Name == capture {
			return c.List
		}
	}
	for _, fl := range f.Fields {
		if fl.Name == capture {
			return f.Server == Nginx && slices.Contains(nginxLists, fl.Name)
		}
	}
	return false
}

// Key is the config key of the format's kind: log_format or apache_log_format.
func (f *Format) Key() string {
	if f.Server == Apache {
		return "apache_log_format"
	}
	return "log_format"
}

// Describe names the format for messages: its preset, its directive's name, or its text.
func (f *Format) Describe() string {
	switch {
	case f.Preset != "":
		return f.Preset
	case f.Directive != "":
		return f.Directive
	}
	return f.Text
}

// Time layouts of the time variables: what timestamp: needs no layout for.
const (
	// LayoutTimeLocal is nginx's $time_local and Apache's %t without its brackets.
	LayoutTimeLocal = "02/Jan/2006:15:04:05 -0700"
	// LayoutISO8601 is nginx's $time_iso8601.
	LayoutISO8601 = "2006-01-02T15:04:05-07:00"
)

// Time tells how a capture of the format reads as a time: with a Go layout, or as seconds
// since the epoch (unix, nginx's $msec). ok is false for a capture that is not a time.
func (f *Format) Time(capture string) (layout string, unix, ok bool) {
	name := capture
	if f.Var(capture) == "" || slices.ContainsFunc(f.Derived, func(d Derived) bool { return d.Name == capture }) {
		return "", false, false
	}
	switch {
	case f.Server == Nginx && name == "time_local":
		return LayoutTimeLocal, false, true
	case f.Server == Nginx && name == "time_iso8601":
		return LayoutISO8601, false, true
	case f.Server == Nginx && name == "msec":
		return "", true, true
	case f.Server == Apache && name == "t" && f.Var(capture) == "%t":
		return "[" + LayoutTimeLocal + "]", false, true
	case f.Server == Apache && slices.Contains(apacheSeconds, f.Var(capture)):
		return "", true, true
	}
	return "", false, false
}

// apacheSeconds are Apache's times in seconds since the epoch: its own sec (of the
// request's start, or its end) and strftime's %s, which glibc writes so. No layout reads
// them; msec and usec are not seconds.
var apacheSeconds = []string{"%{sec}t", "%{begin:sec}t", "%{end:sec}t", "%{%s}t"}

// Equal reports whether two formats read lines alike.
func (f *Format) Equal(g *Format) bool {
	return f.Server == g.Server && f.Text == g.Text && f.Escape == g.Escape
}

// Error is a format that does not compile: what is wrong, and at which byte of the text.
type Error struct {
	Offset int
	Msg    string
}

func (e *Error) Error() string {
	return fmt.Sprintf("at byte %d: %s", e.Offset, e.Msg)
}

// maxFormat bounds a format's text: the longest real ones are a few hundred bytes, and
// the compiled regex grows with it.
const maxFormat = 8 << 10

// token is a piece of a format: literal text, or a variable.
type token struct {
	lit string
	v   *variable
	at  int // its offset in the format
}

// variable is a variable of a format as its tokenizer read it.
type variable struct {
	name, text string
	// key tells variables of one name apart that write different values: an nginx
	// variable's name, an Apache directive's letter, argument, request and condition.
	key     string
	escaped bool
	// original: an Apache directive reads the original request of an internal redirect,
	// not the final one; condition is the statuses it is written for as part of a name
	// ("" for every status).
	original  bool
	condition string
	// bracketed: the value is in brackets and holds none, whatever follows it (Apache's %t).
	bracketed bool
	// list: nginx writes one value per upstream tried, joined by ", " (or " : " after an
	// internal redirect).
	list bool
	// joined: the value is items joined by ", " (X-Forwarded-For, one address per proxy),
	// which it holds out of quotes too.
	joined bool
	// spaces are how many spaces the value holds: one for $time_local, those a strftime
	// format writes for Apache's %{...}t.
	spaces int
	// strftime is the regex of the times of Apache's %{...}t whose strftime format pads
	// a number with a space, which makes their spaces more on some times than on others;
	// empty for any other.
	strftime string
	// lead is the character the value starts with when it is not empty (Apache's %q
	// starts with '?'), so a variable right before it stops there; 0 when unknown.
	lead rune
	// dashZero: the value "-" is a zero (Capture.DashZero).
	dashZero bool
	// words: the value may hold spaces out of quotes, which its server does not escape,
	// where any client writes it: the user name of an Authorization header, sent to any
	// server (nginx's $remote_user, Apache's %u), a request's path decoded (a %20 in it:
	// nginx's $uri and $document_uri, Apache's %U), the request line, whose spaces every
	// request has (nginx's $request, Apache's %r).
	words bool
}

// checkText refuses a format the regex it compiles to could not hold.
func checkText(text string) error {
	if len(text) > maxFormat {
		return &Error{maxFormat, fmt.Sprintf("the format is longer than %d bytes", maxFormat)}
	}
	for i, r := range text {
		if r == utf8.RuneError {
			if _, w := utf8.DecodeRuneInString(text[i:]); w == 1 {
				return &Error{i, "the format is not valid UTF-8"}
			}
		}
	}
	return nil
}

// compileText builds the regex of a text format from its tokens, and its captures.
//
// The variables a format ends with, each after a space, may be missing from a line, which
// then reads them as empty: formats grow at their end ($request_time, then
// $upstream_response_time after combined), and the lines of the smaller format still fit
// the larger one. Nothing may follow the format: text after it is no part of a line the
// format writes (with escape=none, a quote in a value could make it look like fields).
func compileText(f *Format, toks []token) error {
	tail := len(toks)
	for tail >= 2 && toks[tail-1].v != nil && toks[tail-2].v == nil && strings.HasSuffix(toks[tail-2].lit, " ") {
		if lit := toks[tail-2]; lit.lit != " " {
			// The text before the trailing variables ends with their space: `" ` is `"`
			// and the space the next variable comes after.
			toks = slices.Insert(slices.Clone(toks), tail-1, token{lit: " ", at: lit.at + len(lit.lit) - 1})
			toks[tail-2].lit = lit.lit[:len(lit.lit)-1]
			tail++
		}
		tail -= 2
	}
	first := map[string]*variable{}
	for i, t := range toks {
		if k := strings.IndexByte(t.lit, '\n'); k >= 0 {
			// A log's lines are read one at a time. The quoted pieces of a directive
			// pasted over lines without its keyword are the likely source.
			return &Error{t.at + k, "the format has a line break, which no line of a log has, so no line could fit it; " +
				"if it is the quoted pieces of a log_format directive, give the directive whole (log_format NAME '...' '...';)"}
		}
		if t.v == nil {
			f.Pieces = append(f.Pieces, Piece{Kind: PieceLiteral, Lit: t.lit, Optional: i >= tail})
			continue
		}
		next := ""
		if i+1 < len(toks) {
			switch nv := toks[i+1].v; {
			case nv == nil:
				next = toks[i+1].lit
			case nv.lead != 0:
				next = string(nv.lead)
			default:
				return &Error{toks[i+1].at, fmt.Sprintf("%s follows %s with no text between them, so where one ends cannot be told from the line", nv.text, t.v.text)}
			}
		}
		p := valuePiece(t.v, next, f.Escape)
		switch had := first[t.v.name]; {
		case had == nil:
			first[t.v.name] = t.v
			f.Captures = append(f.Captures, Capture{Name: t.v.name, Var: t.v.text, Escaped: t.v.escaped, Next: next, List: t.v.list, DashZero: t.v.dashZero})
			p.Group = len(f.Captures)
		case had.key != t.v.key:
			// Read but not captured, as a variable written again is.
			f.Clashes = append(f.Clashes, Clash{Var: t.v.text, At: t.at, Name: t.v.name, Of: had.text})
		}
		f.Pieces = append(f.Pieces, p)
	}
	if len(f.Captures) == 0 {
		return &Error{0, "the format has no variable, so there is nothing to capture"}
	}
	fewestItems(f.Pieces)
	wordsAfterFixed(f)
	f.Regex = piecesRegex(f)
	return checkRegex(f.Regex, toks, tail)
}

// fewestItems makes each value of items joined by ", " (X-Forwarded-For out of quotes)
// take the fewest of them the rest of the line fits with, where no value read to the end
// of the line follows it. An item nginx writes may end with a comma (a client's header
// "203.0.113.7,", or an empty one of several: "203.0.113.7, "), and then the ", " after
// it is the space before the next variable: "203.0.113.7, 0.005 0.004" is that value
// followed by $request_time and $upstream_response_time, where the most items would make
// 0.005 an address and move 0.004 into $request_time. A line of the format has all of
// its variables, which the fewest items leave to them; only a line of a shorter format
// (one that ends before the variables the format ends with) has an address taken for
// them. A value read to the end of the line (a header out of quotes) would take every
// item but the first: there the value takes the most.
func fewestItems(pieces []Piece) {
	rest := false
	for i := len(pieces) - 1; i >= 0; i-- {
		switch pieces[i].Kind {
		case PieceRest:
			rest = true
		case PieceJoined:
			pieces[i].Fewest = !rest
		}
	}
}

// wordsAfterFixed keeps the spaces of a value that may hold them (Words) to one that no
// value before it could end elsewhere: under the regex's leftmost-first semantics the
// earlier value's choice comes first, and X-Forwarded-For out of quotes before Apache's %u
// (`%{X-Forwarded-For}i %l %u %t`) would give the user its last address, where the user
// holding no space reads the line as its server wrote it. So a format has one at most,
// which formatscan reads by the value's first word and, when the line does not fit so,
// by its next ends. A value read again, not captured (Group 0), is one word: its ends
// have no slot of the captures to be read from. A format whose regex has a choice the next
// character does not decide (Undecided) is read by its regex, not formatscan: there the
// value is one word, as the regex's search of every end of a crafted one would cost a
// line the square of its length.
func wordsAfterFixed(f *Format) {
	free := f.Undecided() != nil
	for i := range f.Pieces {
		p := &f.Pieces[i]
		switch {
		case p.Words && p.Group == 0:
			p.Words = false
		case p.Words:
			p.Words = !free
			free = true
		case p.Kind == PieceJoined || p.Kind == PieceList || p.Kind == PieceStrftime || p.Kind == PieceRest:
			free = true
		}
	}
}

// Undecided says why some choice of the format's regex is not decided by the next
// character of a line, nil when every one is: a reader of its pieces that runs each value
// to its stop character (parser/formatscan) then cannot read its lines as the regex does.
func (f *Format) Undecided() error {
	for i := range f.Pieces {
		if err := undecided(f.Pieces, i); err != nil {
			return err
		}
	}
	return nil
}

// undecided is Undecided of piece i of pieces.
func undecided(pieces []Piece, i int) error {
	p := pieces[i]
	var next *Piece
	if i+1 < len(pieces) {
		next = &pieces[i+1]
	}
	switch {
	case p.Kind == PieceLiteral:
		// regexp reads an invalid byte as U+FFFD, which a literal U+FFFD then matches.
		if strings.ContainsRune(p.Lit, utf8.RuneError) {
			return errors.New("its text holds U+FFFD")
		}
		return nil
	case p.Kind == PieceBracketed:
		return nil // it ends at its own ']', whatever follows
	case p.Kind == PieceStrftime:
		// A space in it may be the padding of a number or the format's own: which,
		// only the characters after it tell.
		return errors.New("a time of a strftime format pads a number with a space")
	case p.Kind == PieceRest && next != nil:
		return errors.New("text follows a value read to the end of the line")
	case next != nil && next.Kind != PieceLiteral:
		// A value stopping where the next value starts (Apache's %U%q): the regex may
		// give it back part of its text.
		return errors.New("a value follows another with no text between them")
	case next != nil && !strings.HasPrefix(next.Lit, string(stopOf(p))):
		return errors.New("a value's stop character does not start the text after it")
	case p.Stop == utf8.RuneError:
		return errors.New("a value stops at U+FFFD")
	case p.Kind == PieceUntilEscaped && p.Stop == '\\':
		// The backslash may end the value or start an escape: which, only what follows
		// tells.
		return errors.New("an escaped value stops at a backslash")
	}
	return nil
}

// stopOf is the character the value piece p stops at.
func stopOf(p Piece) rune {
	if p.Kind == PieceUntil || p.Kind == PieceUntilEscaped {
		return p.Stop
	}
	return ' '
}

// MisfitRegex is the regex a line that fits no Regex is explained by (how far it fits, and
// where it stops): Regex with each value that may hold spaces (Piece.Words) read as one
// word, as the server writes it for nearly every line. Regex itself fits farther into
// such a value than the line's mistake, which a value of more words could reach: a line
// without its request's quote would be said to stop in $remote_user.
func (f *Format) MisfitRegex() string {
	if !slices.ContainsFunc(f.Pieces, func(p Piece) bool { return p.Words }) {
		return f.Regex
	}
	g := *f
	g.Pieces = slices.Clone(f.Pieces)
	for i := range g.Pieces {
		g.Pieces[i].Words = false
	}
	return piecesRegex(&g)
}

// piecesRegex writes the regex of a text format from its pieces: each optional piece
// opens a group closed at the end of the line.
func piecesRegex(f *Format) string {
	var b strings.Builder
	b.WriteString("^")
	optional := 0
	for _, p := range f.Pieces {
		if p.Optional {
			b.WriteString("(?:")
			optional++
		}
		switch {
		case p.Kind == PieceLiteral:
			b.WriteString(regexp.QuoteMeta(p.Lit))
		case p.Group == 0:
			fmt.Fprintf(&b, "(?:%s)", p.valueRegex(f.Escape))
		default:
			fmt.Fprintf(&b, "(?P<%s>%s)", f.Captures[p.Group-1].Name, p.valueRegex(f.Escape))
		}
	}
	b.WriteString(strings.Repeat(")?", optional))
	b.WriteString("$")
	return b.String()
}

// checkRegex refuses a regex that Go's regexp would not compile, though its pieces are all
// valid: each variable a format ends with nests the rest of the line one group deeper, and
// regexp refuses nesting past a fixed depth (a few hundred such variables). The message
// names what regexp refused, not the regex, which may be kilobytes long.
func checkRegex(re string, toks []token, tail int) error {
	_, err := syntax.Parse(re, syntax.Perl)
	if err == nil {
		return nil
	}
	var se *syntax.Error
	if !errors.As(err, &se) {
		return &Error{0, fmt.Sprintf("its regex does not compile: %v", err)}
	}
	if se.Code == syntax.ErrNestingDepth && tail < len(toks) {
		return &Error{toks[tail].at, fmt.Sprintf("the format ends with %d variables each after a space, which a line may leave out; "+
			"reading them nests its regex deeper than Go's regexp allows (%s): put text other than a space between some of them",
			(len(toks)-tail)/2, se.Code)}
	}
	return &Error{0, fmt.Sprintf("its regex does not compile: %s", se.Code)}
}

// escapeRegex is the regex of one escape sequence a server writes in an escaped value: every
// backslash in such a value starts one (the server escapes a backslash too).
// escapeChars are the characters an escape sequence may hold: a value stopping at another
// character never needs to read its escapes whole.
var (
	escapeRegex = map[Escape]string{
		EscapeDefault: `\\x[0-9A-F]{2}`,          // ngx_http_log_escape
		EscapeJSON:    `\\(?:u[0-9A-F]{4}|[^u])`, // ngx_escape_json
		EscapeApache:  `\\(?:x[0-9a-f]{2}|[^x])`, // ap_escape_logitem
		EscapeEither:  `\\(?:x[0-9A-F]{2}|u[0-9A-F]{4}|[^xu])`,
	}
	escapeChars = map[Escape]string{
		EscapeDefault: `\x0123456789ABCDEF`,
		EscapeJSON:    `\"/bfnrtu0123456789ABCDEF`,
		EscapeApache:  `\"nrtbvx0123456789abcdef`,
		EscapeEither:  `\"/bfnrtux0123456789ABCDEF`,
	}
)

// SequenceLen is the length of the escape sequence of esc at the start of v (a
// backslash), 0 when none starts there: the sequences escapeRegex matches, read by code
// for a scanner that cuts a line without the regex.
func (esc Escape) SequenceLen(v []byte) int {
	if len(v) < 2 {
		return 0
	}
	c := v[1]
	switch {
	case c == 'x' && esc != EscapeJSON:
		return hexEscape(v, 2, esc != EscapeApache)
	case esc == EscapeDefault:
		return 0
	case c == 'u' && (esc == EscapeJSON || esc == EscapeEither):
		return hexEscape(v, 4, true)
	}
	// Any other character, as a rune: regexp reads an invalid byte as one U+FFFD.
	_, w := utf8.DecodeRune(v[1:])
	return 1 + w
}

// hexEscape is the length of the escape of n hex digits (upper or lower case) after a
// backslash and a letter at the start of v, 0 when they are not there.
func hexEscape(v []byte, n int, upper bool) int {
	if len(v) < 2+n {
		return 0
	}
	for _, c := range v[2 : 2+n] {
		if !(c >= '0' && c <= '9' || upper && c >= 'A' && c <= 'F' || !upper && c >= 'a' && c <= 'f') {
			return 0
		}
	}
	return 2 + n
}

// valuePiece is the piece of a variable's value followed by the text next ("" at the end
// of the format).
//
// A value stops at the first character of next that is not part of an escape sequence:
// nginx and Apache write a '"' in a value escaped, so a quoted value never holds the quote
// that ends it. An upstream list stops at a space that does not separate its items. At the
// end of the format an escaped value (a header, which may hold spaces) reads to the end of
// the line, any other stops at a space, so a line with more fields does not fit.
func valuePiece(v *variable, next string, esc Escape) Piece {
	if v.bracketed {
		return Piece{Kind: PieceBracketed}
	}
	if next == "" && v.escaped && !v.list {
		return Piece{Kind: PieceRest}
	}
	stop := ' '
	if next != "" {
		stop, _ = utf8.DecodeRuneInString(next)
	}
	switch {
	case v.list && stop == ' ':
		return Piece{Kind: PieceList}
	case v.strftime != "" && stop == ' ':
		return Piece{Kind: PieceStrftime, Pattern: v.strftime}
	case v.spaces > 0 && stop == ' ':
		return Piece{Kind: PieceSpaced, Spaces: v.spaces}
	case v.joined && stop == ' ':
		return Piece{Kind: PieceJoined}
	}
	if _, ok := escapeRegex[esc]; ok && v.escaped && strings.ContainsRune(escapeChars[esc], stop) {
		return Piece{Kind: PieceUntilEscaped, Stop: stop}
	}
	return Piece{Kind: PieceUntil, Stop: stop, Words: v.words && stop == ' ' && next != ""}
}

// valueRegex is the regex of a value piece in a format of escaping esc.
func (p Piece) valueRegex(esc Escape) string {
	switch p.Kind {
	case PieceBracketed:
		return `\[[^\]]*\]`
	case PieceRest:
		return `.*`
	case PieceList:
		return `[^ ,]*(?:(?:, | : )[^ ,]*)*`
	case PieceSpaced:
		return `[^ ]*` + strings.Repeat(` [^ ]*`, p.Spaces)
	case PieceJoined:
		if p.Fewest {
			return `(?:[^ ]*, )*?[^ ]*`
		}
		return `(?:[^ ]*, )*[^ ]*`
	case PieceStrftime:
		return p.Pattern
	case PieceUntilEscaped:
		return fmt.Sprintf(`[^%s\\]*(?:%s[^%[1]s\\]*)*`, classRune(p.Stop), escapeRegex[esc])
	}
	if p.Words {
		return `(?:[^ ]* )*?[^ ]*`
	}
	return fmt.Sprintf(`[^%s]*`, classRune(p.Stop))
}

// classRune writes r for a regex character class, readably: the class is shown when a line
// does not fit.
func classRune(r rune) string {
	switch {
	case r == ' ' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_':
		return string(r)
	case r > ' ' && r < utf8.RuneSelf && r != 0x7f:
		return `\` + string(r) // any ASCII punctuation may be escaped
	}
	return fmt.Sprintf(`\x{%x}`, r)
}

// derive adds the derived captures of the format's request and status variables, unless
// the format has a capture of that name itself.
func derive(f *Format, request, status string) {
	names := f.Names()
	has := func(n string) bool { return slices.Contains(names, n) }
	if has(request) {
		for k := RequestMethod; k <= ServerProtocol; k++ {
			if !has(derivedNames[k]) {
				f.Derived = append(f.Derived, Derived{Name: derivedNames[k], From: request, Kind: k})
			}
		}
	}
	if has(status) && !has(derivedNames[StatusClass]) {
		f.Derived = append(f.Derived, Derived{Name: derivedNames[StatusClass], From: status, Kind: StatusClass})
	}
}
