package exporter

import (
	"github.com/logwindow/logwindow_exporter/parser"
)

// Sink feeds one goroutine's parser events into a Set. It implements parser.Sink.
//
// A Sink is bound to the Set that made it, because parser.Event.Rule indexes the rules of
// one config: the caller pairs a Sink with the parser built from the same config and, on
// a reload, switches to a new pair, never a parser of one config with a Sink of another.
// A Sink is not safe for concurrent use; give each input goroutine its own.
type Sink struct {
	rules []ruleEntry
	now   int64
}

// NewSink returns a Sink writing to s.
func (s *Set) NewSink() *Sink {
	return &Sink{rules: s.rules}
}

// SetNow sets the processing time, in Unix seconds, of the events that follow. Calling it
// once per batch of lines rather than per line keeps the clock off the per-line path.
func (k *Sink) SetNow(now int64) { k.now = now }

// Event adds a matched line to its series: at its own time when it has one, else now.
func (k *Sink) Event(e *parser.Event) {
	r := &k.rules[e.Rule]
	at := k.now
	if e.HasTime {
		at = e.Time
	}
	r.store.observe(e.Key, e.Labels, k.now, at, e.Value, r.limit)
}

// Drop counts a line the parser matched but could not turn into an event.
func (k *Sink) Drop(rule int, why parser.DropReason) {
	var r reason
	switch why {
	case parser.NoValue:
		r = reasonNoValue
	case parser.BadNumber:
		r = reasonBadNumber
	case parser.BadTimestamp:
		r = reasonBadTimestamp
	default:
		return
	}
	k.rules[rule].store.drops[r].Add(1)
}
