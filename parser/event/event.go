// Package event is the contract between the parser, which makes events of log lines, and
// the store, which counts them: the event of a rule matching a line, how its label set is
// encoded as a key, and why a matched line may give no event. It imports nothing of the
// exporter's, so that either side can change without the other.
package event

// Event is one rule matching one line. The Event and every slice in it belong to the
// parser and are valid only during the call that receives it: a receiver keeping a label
// set must copy it (the store does when it creates a series), and looking up
// m[string(e.Key)] does not allocate.
type Event struct {
	// Rule is the index of the rule in the slice the parser was built from.
	Rule int
	// Key is the label values in rule order joined by KeySep.
	Key []byte
	// Labels are the label values in the rule's label order, the values Key joins: valid
	// UTF-8 (invalid bytes replaced by U+FFFD) and capped in length by the parser.
	Labels [][]byte
	// Items are the rule's items rendered, in the rule's order; nil without items.
	Items [][]byte
	// Value is 1 for counting rules, else the number read from the value capture.
	Value float64
	// Time is the line's own time in Unix seconds, set when HasTime (event-time rules).
	Time    int64
	HasTime bool
}

// KeySep joins the label values of Event.Key. It is a byte valid UTF-8 never holds, so two
// different label sets never share a key. The store builds the keys of series no line
// made (overflow, initial label sets) with it: one definition, so those keys and the
// parser's can never drift apart.
const KeySep = "\xff"

// DropReason says why a matched line produced no event for a rule.
type DropReason uint8

const (
	// NoValue: the value capture is empty, did not participate, or is "-" (nginx's "none").
	NoValue DropReason = iota
	// BadNumber: the value capture is not a finite number.
	BadNumber
	// BadTimestamp: the timestamp capture does not parse with the rule's layout, or names
	// a zone abbreviation the rule's location has no offset for.
	BadTimestamp
	// Negative: the value capture is a number below zero. A value rule sums non-negative
	// quantities: its _total is a counter, and logs write -1 for "unknown" (HAProxy's
	// timers of an aborted request), which would pollute sums, means and quantiles.
	Negative

	// NumDropReasons is the number of reasons above, which run from 0: the size of an
	// array indexed by DropReason. A new reason goes before it.
	NumDropReasons int = iota
)

// String gives the reason as a label value of the exporter's drop counter.
func (r DropReason) String() string {
	switch r {
	case NoValue:
		return "no_value"
	case BadNumber:
		return "bad_number"
	case BadTimestamp:
		return "bad_timestamp"
	case Negative:
		return "negative"
	}
	return "unknown"
}
