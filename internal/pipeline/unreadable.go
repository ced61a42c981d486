package pipeline

import "time"

// unreadableMinLines is how many lines an input must have read since the last look for none
// of them being readable to be told of: a few odd lines (a startup banner, a stray
// error) are not a format that is not the file's.
const unreadableMinLines = 10

// unreadableLogEvery is how often, at most, an input none of whose lines could be read is
// logged again while it goes on.
const unreadableLogEvery = time.Hour

// unreadable is what warnUnreadable keeps of an input between its looks.
type unreadable struct {
	// read and unread are the input's counts at the last look.
	read, unread uint64
	// logged is when the episode going on was last logged (zero: none is going on).
	logged time.Time
}

// warnUnreadable logs each input none of whose lines read since the last look could be
// read as it says: not of its log format (nor matched by a rule's regex), not CRI lines on
// a wrapper: cri input, or not the JSON or logfmt its fields rules read. Its counters say
// so (logwindow_input_unmatched_lines_total, logwindow_input_malformed_lines_total), but
// the rules count zeros meanwhile, which a log line should make loud. Lines that were read
// and that no rule matched are not told of: they are also what rules that filter
// (where:) leave, and, of an input without a log format, what rules that match rare lines
// leave. It is logged when it starts and again at most every unreadableLogEvery while it
// goes on; a look that finds lines read ends it. It looks at counters the inputs keep
// anyway, so the lines pay nothing for it. Start's goroutine calls it every expireEvery.
func (p *Pipeline) warnUnreadable() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.stopped {
		return
	}
	// The shards of an input are one input to the user.
	type counts struct {
		read, unread uint64
		source       string
	}
	gen := p.gen.Load()
	now := map[string]*counts{}
	for _, in := range p.inputs {
		c := now[in.label]
		if c == nil {
			c = &counts{source: in.source}
			now[in.label] = c
		}
		c.read += in.landed.Load()
		c.unread += in.malformed.Load()
		if ci := gen.input(in.source); ci.LogFormat != nil || len(ci.LogFormats) > 0 {
			c.unread += in.unfit.Load()
		}
	}
	if p.unreadable == nil {
		p.unreadable = map[string]*unreadable{}
	}
	for label := range p.unreadable {
		if now[label] == nil {
			delete(p.unreadable, label)
		}
	}
	at := p.opts.Now()
	for label, c := range now {
		m := p.unreadable[label]
		if m == nil {
			m = &unreadable{}
			p.unreadable[label] = m
		}
		read, unread := c.read-m.read, c.unread-m.unread
		if c.read < m.read || c.unread < m.unread || unread > read {
			// A reload replaced a shard, whose counts started again, or gave the input a
			// log format, whose lines not of it count from before.
			read, unread = 0, 0
		}
		m.read, m.unread = c.read, c.unread
		switch {
		case read < unreadableMinLines:
			// Too few to tell; an episode going on goes on.
		case unread < read:
			m.logged = time.Time{}
		case m.logged.IsZero() || at.Sub(m.logged) >= unreadableLogEvery:
			m.logged = at
			p.opts.Logger.Warn("none of the lines the input read lately could be read as it says (not of its log_format, not CRI lines on a wrapper: cri input, or not the JSON or logfmt its fields rules read): its rules count nothing of them; --explain=FILE says where a line stops fitting (logged again at most once an hour while it goes on)",
				"input", label, "source", c.source, "lines", read)
		}
	}
}
