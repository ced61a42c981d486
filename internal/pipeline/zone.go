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
// zoneSpan is warned of once per input and time read, per generation.
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
)

// zoneRun is what a goroutine reading an input saw of one time read's offsets from the
// wall clock: the run of them since they last moved by more than zoneSpread.
type zoneRun struct {
	// match is the session's number of the match the last sample was read for
	// (parser.Session.LastTime): a time no line read since is not sampled again.
	match uint64
	// since is the wall second of the run's first sample, lo and hi its least and
	// greatest offset (own time − wall), n its samples.
	since, lo, hi int64
	n             int
	// told: the run's offset was warned of, or found another goroutine had.
	told bool
}

// observe adds a sample, a line's own time minus the wall clock's second it was read at,
// to the run, and returns the offset the run has kept, a nonzero whole number of quarter
// hours, once it has lasted zoneSpan with zoneSamples samples; 0 otherwise.
func (r *zoneRun) observe(wall, offset int64) int64 {
	if r.told {
		return 0
	}
	if r.n == 0 || max(r.hi, offset)-min(r.lo, offset) > zoneSpread {
		r.since, r.lo, r.hi, r.n = wall, offset, offset, 1
		return 0
	}
	r.lo, r.hi, r.n = min(r.lo, offset), max(r.hi, offset), r.n+1
	if r.n < zoneSamples || wall-r.since < zoneSpan {
		return 0
	}
	mid := (r.lo + r.hi) / 2
	whole := roundTo(mid, zoneQuarter)
	if whole == 0 || max(r.hi-whole, whole-r.lo) > zoneSpread {
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
		if offset := z.observe(wall, unix-wall); offset != 0 {
			z.told = true
			// Once per input and time read, whichever of its shards or workers finds it.
			key := fmt.Sprintf("%s\x00%d", in.source, i)
			if _, told := b.gen.zonesTold.LoadOrStore(key, true); !told {
				in.warnZone(b, reads[i], offset)
			}
		}
	}
}

// warnZone tells that the lines of b's input the rules of a time read (by index) read are
// offset seconds from the wall clock.
func (in *stream) warnZone(b *binding, rules []int, offset int64) {
	var names []string
	ci := config.Input{Name: b.name} // b's input, as Rule.Reads knows it: by its name
	for _, i := range rules {
		if r := b.gen.cfg.Rules[i]; r.Reads(ci) {
			names = append(names, r.Name)
		}
	}
	by := time.Duration(offset) * time.Second
	// The zone whose local times, read as UTC, are that far from the clock.
	zone := "UTC" + time.Unix(0, 0).In(time.FixedZone("", int(offset))).Format("-07:00")
	if offset < 0 {
		in.log.Warn(zoneBehindMessage, "rules", strings.Join(names, ","), "behind", -by, "as_local_times_of", zone)
	} else {
		in.log.Warn(zoneAheadMessage, "rules", strings.Join(names, ","), "ahead", by, "as_local_times_of", zone)
	}
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
)
