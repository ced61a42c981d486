package store

import "math"

// Expire releases the wheels of series idle for longer than their rule's longest window
// and removes kept counters idle past the counter TTL, in every rule: the windows of
// processing-time rules at second processing, of event-time rules at wall, and the
// counters of both by processing, the clock their activity goes by. Scrapes do not expire
// (a scrape changes nothing); the pipeline calls Expire now and then, and between two
// calls the budgets bound memory as before.
func (s *Set) Expire(processing, wall int64) {
	for i := range s.rules {
		r := &s.rules[i]
		now := processing
		if r.store.eventTime {
			now = wall
		}
		r.store.expire(now, processing, r.budget.ttl)
	}
}

// stale reports whether s has something to expire: wheels that hold nothing at now (see
// wheels), or a kept counter last active longer than ttl before active.
func (st *store) stale(s *Series, now, active, ttl int64) bool {
	if s.pinned {
		return false
	}
	kept := true
	for p := range s.parts {
		if w := p.win.Load(); w != nil {
			if !w.Holds(now) {
				return true
			}
			kept = false
		}
	}
	return kept && ttl > 0 && s.last() < active-ttl
}

// What settle did to a series.
const (
	settledLive    = iota // it has had a line within its longest window
	settledKept           // it is a kept counter (maybe just now)
	settledRemoved        // it was idle for longer than the TTL
)

// settle releases the wheels of s that hold nothing at now and removes it if it was last
// active longer than ttl before active; the write locks are held and s is not pinned.
func (st *store) settle(s *Series, now, active, ttl int64) int {
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
	case ttl > 0 && s.last() < active-ttl:
		st.remove(s)
		return settledRemoved
	}
	return settledKept
}

// idlePastTTL is a cheap first test of gone for the write path: no line of shard's part
// of s came within ttl before active (gone then reads every part).
func (st *store) idlePastTTL(s *Series, shard uint8, now, active, ttl int64) bool {
	return ttl > 0 && !s.pinned && st.partIdlePastTTL(s, shard, now, active, ttl)
}

// partIdlePastTTL is idlePastTTL past its first tests, which are inlined.
func (st *store) partIdlePastTTL(s *Series, shard uint8, now, active, ttl int64) bool {
	if p := s.part(shard); p != nil && p.last.Load() >= active-ttl {
		return false
	}
	return st.gone(s, now, active, ttl)
}

// gone reports whether s is a kept counter at now (or would be one once expired) last
// active longer than ttl before active: Expire removes it, and a reader leaves it out
// until then.
func (st *store) gone(s *Series, now, active, ttl int64) bool {
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
	return last < active-ttl
}

// expire releases the wheels of every series that hold nothing at now and removes kept
// counters last active longer than ttl before active, under the write locks. Nothing
// reads a store differently before and after (readers judge staleness themselves), so it
// only returns memory.
func (st *store) expire(now, active, ttl int64) {
	lock := st.rlock()
	due := false
	for _, s := range st.series {
		if st.stale(s, now, active, ttl) {
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
	for _, s := range st.series {
		if !s.pinned {
			st.settle(s, now, active, ttl)
		}
	}
}
