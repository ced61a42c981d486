package store

import "math"

// Expire releases the wheels of series idle for longer than their rule's longest window
// and removes kept counters idle past the counter TTL, in every rule: processing-time
// rules at second processing, event-time rules at wall. Scrapes do not expire (a scrape
// changes nothing); the pipeline calls Expire now and then, and between two calls the
// budgets bound memory as before.
func (s *Set) Expire(processing, wall int64) {
	for i := range s.rules {
		r := &s.rules[i]
		now := processing
		if r.store.eventTime {
			now = wall
		}
		r.store.expire(now, r.budget.ttl)
	}
}

// stale reports whether s has something to expire at now: wheels that hold nothing (see
// wheels), a kept counter idle for longer than ttl, or a part last active ahead of now
// (see catchUp).
func (st *store) stale(s *Series, now, ttl int64) bool {
	if s.pinned {
		return false
	}
	kept := true
	for p := range s.parts {
		if st.steppedBack(p, now) {
			return true
		}
		if w := p.win.Load(); w != nil {
			if !w.Holds(now) {
				return true
			}
			kept = false
		}
	}
	return kept && ttl > 0 && s.last() < now-ttl
}

// What settle did to a series.
const (
	settledLive    = iota // it has had a line within its longest window
	settledKept           // it is a kept counter (maybe just now)
	settledRemoved        // it was idle for longer than the TTL
)

// settle releases the idle wheels of s and removes it if idle past ttl; the write locks
// are held and s is not pinned.
func (st *store) settle(s *Series, now, ttl int64) int {
	live := false
	for p := range s.parts {
		w := p.win.Load()
		if w == nil {
			continue
		}
		if !w.Holds(now) {
			p.win.Store(nil)
			st.charge(-w.Bytes())
		} else {
			live = true
		}
	}
	switch {
	case live:
		return settledLive
	case ttl > 0 && s.last() < now-ttl:
		st.remove(s)
		return settledRemoved
	}
	return settledKept
}

// steppedBack reports whether p was last active past every window ahead of now: the rule's
// clock stepped back since. The processing clock never does while the process lives, but
// starts at the wall clock's second, so a restored part may find it behind.
func (st *store) steppedBack(p *part, now int64) bool { return st.tooOld(p.last.Load(), now) }

// catchUp makes the parts last active before the rule's clock stepped back past every
// window active at now: the lines that made them came before the step, and they would
// otherwise stay until the clock caught up (plus the counter TTL), the newest in the
// eviction order all along. Moving them back by the step instead would keep their order,
// but could move a part with a line since the step (its last second is still the one
// before) back past that line. The write locks are held; it runs before a pass of settle
// over the series, which no scrape can foresee, so what a scrape shows after a step back
// depends on when Expire or a reap ran.
func (st *store) catchUp(now int64) {
	for _, s := range st.series {
		for p := range s.parts {
			if !s.pinned && st.steppedBack(p, now) {
				p.last.Store(now)
			}
		}
	}
}

// idlePastTTL is a cheap first test of gone for the write path: no line of shard's part
// of s is newer than ttl (gone then reads every part).
func (st *store) idlePastTTL(s *Series, shard uint8, now, ttl int64) bool {
	return ttl > 0 && !s.pinned && st.partIdlePastTTL(s, shard, now, ttl)
}

// partIdlePastTTL is idlePastTTL past its first tests, which are inlined.
func (st *store) partIdlePastTTL(s *Series, shard uint8, now, ttl int64) bool {
	if p := s.part(shard); p != nil && p.last.Load() >= now-ttl {
		return false
	}
	return st.gone(s, now, ttl)
}

// gone reports whether s is a kept counter idle past ttl at now, or would be one once
// expired: Expire removes it, and a reader leaves it out until then.
func (st *store) gone(s *Series, now, ttl int64) bool {
	if s.pinned || ttl <= 0 {
		return false
	}
	last := int64(math.MinInt64)
	for p := range s.parts {
		if w := p.win.Load(); w != nil && w.Holds(now) {
			return false
		}
		last = max(last, p.last.Load())
	}
	return last < now-ttl
}

// expire releases the wheels of every series idle for longer than its longest window and
// removes kept counters idle past ttl, under the write locks. Nothing reads a store
// differently before and after (readers judge staleness themselves), so it only returns
// memory.
func (st *store) expire(now, ttl int64) {
	lock := st.rlock()
	due := false
	for _, s := range st.series {
		if st.stale(s, now, ttl) {
			due = true
			break
		}
	}
	lock.RUnlock()
	if !due {
		return
	}
	st.lockAll()
	defer st.unlockAll()
	st.catchUp(now)
	for _, s := range st.series {
		if !s.pinned {
			st.settle(s, now, ttl)
		}
	}
}
