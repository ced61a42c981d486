package pipeline

import (
	"fmt"
	"strings"
	"time"

	"github.com/logwindow/logwindow_exporter/config"
)

// A log of local times read by a layout without a zone is read as UTC: its lines are
// placed by its zone's offset away from the clock, behind it west of Greenwich (in no
// window shorter than the offset, and not late either) and ahead east of it (each one
// future). Nothing else tells of it, so the lines an input reads as they are written are
// watched for it: a run of their own times that stays a whole number of quarter hours
// (every UTC offset in use is one) from the wall clock, give or take zoneSpread, for
// zoneSpan is warned of once per input and time read, per generation, whatever runs of
// other offsets come between its samples (senders in several zones).
const (
	zoneQuarter = 15 * 60
	// zoneSpan is how long, in seconds of the wall clock, a run lasts before it is
	// judged: longer than zoneSpread, so that a log's old lines (read from its beginning,
	// or after a stop), which stand still while the clock moves, are never a run, and
	// long enough to see the lines of a quiet log come in.
	zoneSpan = 5 * 60
	// zoneSpread is how far the offsets of one run may differ: a writer's buffering
	// and a log's times of a request's start hold lines back by a few seconds to a
	// minute.
	zoneSpread = 2 * 60
	// zoneSamples is the fewest reads of new lines a run has.
	zoneSamples = 5
	// zoneMixSamples is the fewest another run has for its lines to be mixed with a run's:
	// fewer than zoneSamples, as the run judged may have had the first of their turns.
	zoneMixSamples = 3
)

// zoneRun is what a goroutine reading an input saw of one time read's offsets from the
// wall clock: the runs of them, each since its offsets last moved by more than
// zoneSpread. It keeps several, so that the lines of senders in several zones that one
// socket or file interleaves (syslog's) are runs of their own, not each other's end.
type zoneRun struct {
	// match is the session's number of the match the last sample was read for
	// (parser.Session.LastTime): a time no line read since is not sampled again.
	match uint64
	runs  [zoneRuns]offsetRun
	// told: the run's offset was warned of, or found another goroutine had.
	told bool
}

// zoneRuns is how many runs of offsets a zoneRun keeps: the zones of the senders one
// input mixes, one of them on time; a sample that fits none takes the place of another
// (runOf).
const zoneRuns = 4

// offsetRun is a run of offsets: since is the wall second of its first sample and last
// of its newest, lo and hi its least and greatest offset (own time − wall), n its samples
// (0: no run).
type offsetRun struct {
	since, last, lo, hi int64
	n                   int
}

// observe adds a sample, a line's own time minus the wall clock's second it was read at,
// to the run it fits, and returns the offset that run has kept, a nonzero whole number
// of quarter hours, once it has lasted zoneSpan with zoneSamples samples, and the offset
// of another run of zoneMixSamples sampled within zoneSpan (lines of another zone, or on
// time, mixed with them: mixed true); 0 otherwise. A run that took over from another
// (a writer set to its local times) was sampled since the other's last sample for
// zoneSpan, so the other is not mixed with it.
func (r *zoneRun) observe(wall, offset int64) (whole, other int64, mixed bool) {
	if r.told {
		return 0, 0, false
	}
	run := r.runOf(wall, offset)
	if run.n == 0 || max(run.hi, offset)-min(run.lo, offset) > zoneSpread {
		*run = offsetRun{since: wall, last: wall, lo: offset, hi: offset, n: 1}
		return 0, 0, false
	}
	run.lo, run.hi, run.last, run.n = min(run.lo, offset), max(run.hi, offset), wall, run.n+1
	if run.n < zoneSamples || wall-run.since < zoneSpan {
		return 0, 0, false
	}
	if whole = run.whole(); whole == 0 {
		return 0, 0, false
	}
	for i := range r.runs {
		if o := &r.runs[i]; o != run && o.n >= zoneMixSamples && wall-o.last < zoneSpan {
			return whole, roundTo((o.lo+o.hi)/2, zoneQuarter), true
		}
	}
	return whole, 0, false
}

// runOf is the run a sample of offset at second wall fits, else the one it takes the
// place of: an empty one, else the one sampled least recently if that was zoneSpan ago
// (its sender stopped, or changed its zone), else the one of fewest samples, started
// last of those. Taking the one sampled least recently, the lines of more zones than
// zoneRuns in turn had each take the place of the run the next was in, and no run ever
// lasted: those that came first now do.
func (r *zoneRun) runOf(wall, offset int64) *offsetRun {
	var empty, oldest, fewest *offsetRun
	for i := range r.runs {
		o := &r.runs[i]
		switch {
		case o.n == 0:
			if empty == nil {
				empty = o
			}
			continue
		case max(o.hi, offset)-min(o.lo, offset) <= zoneSpread:
			return o
		}
		if oldest == nil || o.last < oldest.last {
			oldest = o
		}
		if fewest == nil || o.n < fewest.n || o.n == fewest.n && o.since >= fewest.since {
			fewest = o
		}
	}
	switch {
	case empty != nil:
		return empty
	case wall-oldest.last >= zoneSpan:
		return oldest
	}
	return fewest
}

// whole is the whole number of quarter hours the run's offsets are, give or take
// zoneSpread; 0 if none.
func (o *offsetRun) whole() int64 {
	whole := roundTo((o.lo+o.hi)/2, zoneQuarter)
	if max(o.hi-whole, whole-o.lo) > zoneSpread {
		return 0
	}
	return whole
}

// roundTo is x rounded to the nearest multiple of q, halves away from zero.
func roundTo(x, q int64) int64 {
	if x < 0 {
		return -roundTo(-x, q)
	}
	return (x + q/2) / q * q
}

// watchZones samples, after b's lines of a read (or batch) were parsed at the wall second
// given, the time each time read of b's rules gave last, when a line read it since. Only
// the goroutines reading an input's lines as they come call it: a warm start and a replay
// parse with sessions of their own. It costs the parse nothing (the session remembers the
// last time of each to parse lines of one second once) and a read a few comparisons per
// time read.
func (in *stream) watchZones(b *binding, wall int64) {
	reads := b.gen.parser.TimeRules()
	if len(reads) == 0 {
		return
	}
	if b.zones == nil {
		b.zones = make([]zoneRun, len(reads))
	}
	for i := range reads {
		unix, match, ok := b.parse.LastTime(i)
		z := &b.zones[i]
		if !ok || match == z.match {
			continue
		}
		z.match = match
		if offset, other, mixed := z.observe(wall, unix-wall); offset != 0 {
			z.told = true
			// Once per input and time read, whichever of its shards or workers finds it.
			key := fmt.Sprintf("%s\x00%d", in.source, i)
			if _, told := b.gen.zonesTold.LoadOrStore(key, true); !told {
				in.warnZone(b, reads[i], offset, other, mixed)
			}
		}
	}
}

// warnZone tells that the lines of b's input the rules of a time read (by index) read are
// offset seconds from the wall clock, and, mixed, others other seconds.
func (in *stream) warnZone(b *binding, rules []int, offset, other int64, mixed bool) {
	var names []string
	ci := config.Input{Name: b.name} // b's input, as Rule.Reads knows it: by its name
	for _, i := range rules {
		if r := b.gen.cfg.Rules[i]; r.Reads(ci) {
			names = append(names, r.Name)
		}
	}
	by := time.Duration(offset) * time.Second
	attrs := []any{"rules", strings.Join(names, ","), "behind", -by, "as_local_times_of", asLocalTimesOf(offset)}
	msg := zoneBehindMessage
	if offset > 0 {
		attrs[2], attrs[3] = "ahead", by
		msg = zoneAheadMessage
	}
	if mixed {
		attrs = append(attrs, "others_as_local_times_of", asLocalTimesOf(other))
		msg = zoneMixedMessage
	}
	in.log.Warn(msg, attrs...)
}

// asLocalTimesOf names the zone whose local times, read as UTC, are offset seconds from
// the clock.
func asLocalTimesOf(offset int64) string {
	return "UTC" + time.Unix(0, 0).In(time.FixedZone("", int(offset))).Format("-07:00")
}

const (
	zoneFix = "give the rules' timestamp: location: the time zone the log is written in " +
		"(an IANA name, e.g. America/New_York), or a layout that reads the offset its lines carry (-0700); " +
		"a writer whose clock is off by as much is set right instead"
	// zoneBehindMessage and zoneAheadMessage are the warnings of watchZones.
	zoneBehindMessage = "timestamp: the lines' own times stay a whole UTC offset behind the host's clock, " +
		"as a log's local times read as UTC by a layout without a zone are; no window shorter than the offset holds them: " + zoneFix
	zoneAheadMessage = "timestamp: the lines' own times stay a whole UTC offset ahead of the host's clock, " +
		"as a log's local times read as UTC by a layout without a zone are; each is counted as future, at the second it is read: " + zoneFix
	// zoneMixedMessage is the warning of watchZones when others of the lines are at
	// another offset: one location: cannot read them all.
	zoneMixedMessage = "timestamp: some of the lines' own times stay a whole UTC offset from the host's clock and others at another, " +
		"as the local times of writers in several zones (syslog senders) read by a layout without a zone are; " +
		"the lines behind the clock are in no window shorter than their offset, those ahead are counted as future: " +
		"have the writers write their UTC offset and read it with the layout (-0700), or UTC, or give each zone's lines an input of its own with its location:"
)
