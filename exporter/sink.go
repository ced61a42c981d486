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
	rules            []ruleEntry
	processing, wall int64
}

// NewSink returns a Sink writing to s.
func (s *Set) NewSink() *Sink {
	return &Sink{rules: s.rules}
}

// SetNow sets, in Unix seconds, the clocks the events that follow are placed and judged by,
// until the next call. An event without a time of its own is placed at processing. An
// event with one (HasTime) is placed at it and judged late or future against wall, the
// clock its time comes from. They must be the clocks the Collector reads, Now and Wall, so
// that a series is written and read on one clock.
func (k *Sink) SetNow(processing, wall int64) { k.processing, k.wall = processing, wall }

// Event adds a matched line to its series: at its own time when it has one, else at the
// processing second.
func (k *Sink) Event(e *parser.Event) {
	r := &k.rules[e.Rule]
	now, at := k.processing, k.processing
	if e.HasTime {
		now, at = k.wall, e.Time
	}
	r.store.observe(e.Key, e.Labels, now, at, e.Value, r.budget, false)
}

// Drop counts a line the parser matched but could not turn into an event.
func (k *Sink) Drop(rule int, why parser.DropReason) {
	if int(why) < numParserReasons {
		k.rules[rule].store.parserDrops[why].Add(1)
	}
}
