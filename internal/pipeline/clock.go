package pipeline

import (
	"log/slog"
	"sync"
	"time"

	"github.com/logwindow/logwindow_exporter/internal/store"
)

// clock turns a time source into processing-time seconds. It starts at the first reading
// and moves by the difference between consecutive readings when that is positive. With
// time.Now the difference is monotonic, so a wall-clock step does not move it; a source
// that steps back (an injected clock) makes it stand still until the source moves on, and
// from there it moves with the source again. Processing time therefore never goes back,
// which the windows need: a series keeps its newest second, so an event placed an hour
// behind it would be dropped as late and reads would stay at that second for the hour.
//
// The wall clock it gives event-time rules is vetted against the monotonic one: a step of
// it is held (vet).
type clock struct {
	now func() time.Time
	// wallNow, when set, is the wall clock apart from now: a test steps it alone.
	wallNow func() time.Time
	// slept is how long the host has been suspended (see suspended; a test's own), and
	// sleptAt its value at the last reading of it. It is read only once the wall clock
	// has moved off the monotonic one by suspendedUnread since (drift), as a suspension
	// moves it: each reading costs three system calls, and the clock is read every read
	// of a file.
	slept   func() (time.Duration, bool)
	sleptAt time.Duration
	// drift is how far the wall clock moved off the monotonic one since slept was last
	// read, and lastWall the wall clock of the previous reading, from which it moved.
	drift    time.Duration
	lastWall time.Time
	log      *slog.Logger // nil: a one-shot's clock, which tells nothing
	mu       sync.Mutex   // readings are taken under it, so each difference is counted once
	last     time.Time    // the previous reading
	at       time.Time    // the processing time of the previous reading
	// wallAt is the wall clock the previous reading gave event-time rules.
	wallAt time.Time
	// While a step of the wall clock is held, step is how far the wall clock stands from
	// where wallAt moved on to with the monotonic clock, and held how long it has stood
	// off it (by any step).
	holding    bool
	step, held time.Duration
	// behind is set while a hold started by wallNotBefore lasts: the wall clock at the
	// start was behind the snapshot's, and one that comes to its course is taken at once.
	behind bool
	// elapsed is the monotonic time since the first reading; no step set right is told
	// of before quietUntil, so that a clock that flaps logs once a wallStepHold.
	elapsed, quietUntil time.Duration
}

// A step of the host's wall clock (NTP's, a hypervisor's on resume, date -s) moves the
// windows of every event-time rule: one ahead by more than a window empties it, as the
// idle expiry and the next line find the window's slots older than it, and a step back
// as far starts them over. A step undone soon after (a wrong time set right) would lose
// them all the same. As ntpd holds a large offset for its stepout before it steps, a step
// is taken only once the clock has stood off its course (by it and any steps after it)
// for wallStepHold on the monotonic clock; until then the wall clock given goes on from
// before it by the monotonic clock, and a line a writer on the host stamped by the
// stepped clock is judged against that (a step ahead's future).
const (
	wallStepHold = time.Minute
	// wallSlack is how far the wall clock may move from the monotonic one between two
	// readings and not be a step: NTP slews both alike, and the kernel's step back of
	// a leap second, one second, changes no window enough to be held.
	wallSlack = 2 * time.Second
	// suspendedMin is the least suspension of the host counted in the wall clock's course.
	suspendedMin = wallSlack / 2
	// suspendedUnread is how far the wall clock may move off the monotonic one before the
	// time the host was suspended is read again. Only a suspension, a step and a leap
	// second move it off (NTP slews both alike), and a suspension by exactly the time
	// suspended: one of suspendedMin is read at the reading that follows it, and shorter
	// ones left unread add up to less than suspendedUnread before they are, so that a
	// suspension counted once read is at most that longer than the one seen at that
	// reading, against wallSlack's two seconds. A step back between the same two
	// readings that cancels a suspension to within suspendedUnread leaves it unread:
	// neither is seen then, and the suspension is counted at the next reading of it,
	// however much later, as a step back of its length, held. Only a step back by the
	// time suspended does that, which nothing on Linux makes as part of a resume.
	suspendedUnread = 10 * time.Millisecond
)

func newClock(now, wall func() time.Time, log *slog.Logger) *clock {
	t := now()
	w := t
	if wall != nil {
		w = wall()
	}
	slept, _ := suspended()
	return &clock{now: now, wallNow: wall, slept: suspended, sleptAt: slept, lastWall: w.Round(0), log: log, last: t, at: t, wallAt: w.Round(0)}
}

// read returns the processing second and, from the same reading, the wall-clock second:
// event-time rules compare a line's own (wall-clock) time with the latter.
func (c *clock) read() (processing, wall int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := c.now()
	d := t.Sub(c.last)
	if d > 0 {
		c.at = c.at.Add(d)
		c.elapsed += d
	}
	c.last = t
	if c.wallNow != nil {
		t = c.wallNow()
	}
	// Without its monotonic reading: vet compares wall readings, where Sub of two
	// readings of time.Now compares their monotonic ones and would find no step.
	w := t.Round(0)
	c.drift += w.Sub(c.lastWall) - d
	c.lastWall = w
	// The wall clock runs on while the host is suspended, and Go's monotonic clock (Linux's
	// CLOCK_MONOTONIC) stands still: the wall clock's course counts the suspension too,
	// so that a laptop or VM resumed is no step held, its lines future for a minute. One
	// under suspendedMin is left to wallSlack, as the readings of the two clocks apart are.
	//
	// Of the time suspended since it was last read, only as much as the wall clock moved
	// off the monotonic one since (drift) is counted: the rest a step back cancelled, as
	// when a VM's clock is set back to the time it was suspended at, in a reading whose
	// wall clock then stayed on course and was given as it was. Left unread there, the
	// suspension counted whole at a later reading was a step back of its length, held a
	// minute (the wall clock given that far ahead) and then taken: a step back that was
	// not. A step back by less than a suspension read at once is taken so too, as part
	// of it.
	since := d
	if c.drift.Abs() >= suspendedUnread {
		if slept, ok := c.slept(); ok {
			if counted := min(slept-c.sleptAt, c.drift); counted >= suspendedMin {
				since += counted
			}
			c.sleptAt, c.drift = slept, 0
		}
	}
	return c.at.Unix(), c.vet(w, since).Unix()
}

// notBefore moves the processing time forward to second t if it is behind it: a restart
// goes on from the processing second of the snapshot it restored (store.Restored), not
// from a wall clock behind it, so that processing time does not go back across a restart
// either. It then runs that far ahead of the wall clock, which no sample shows: windows
// and the activity of label sets go by it, neither of which is exported as a time. It
// is held at most at store.LatestSecond, which a restore checks its seconds against:
// near the end of int64 the time moved on from t would wrap to negative seconds.
func (c *clock) notBefore(t int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	t = min(t, store.LatestSecond)
	if c.at.Unix() < t {
		c.at = time.Unix(t, 0)
	}
}

// wallNotBefore holds the wall clock given event-time rules at second t, the newest their
// restored series were added at (store.Restored.Wall), when the host's is behind it at
// the start, as a step back of the wall clock is held: a node without a clock of its own
// boots in the past, and read by it the snapshot's windows were behind their lines (by
// the longest window, empty) and a line stamped by the right clock future. From there it
// goes on by the monotonic clock until the host's clock comes to that course, or past
// it, which is taken at once (NTP setting it right: the time the exporter was down is
// known only then), or until it has stood behind for wallStepHold, which takes it as a
// step that stayed.
func (c *clock) wallNotBefore(t int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	t = min(t, store.LatestSecond)
	if c.wallAt.Unix() >= t {
		return
	}
	held := time.Unix(t, 0)
	if c.log != nil {
		c.log.Warn("the host's wall clock is behind the snapshot's lines of event-time rules: they go on from the snapshot's time by the monotonic clock until the clock is set right (taken at once) or has stood behind a minute (taken then, the windows read behind their lines)",
			"behind", held.Sub(c.wallAt))
	}
	c.holding, c.behind, c.step, c.held = true, true, c.wallAt.Sub(held), 0
	c.wallAt = held
}

// vet returns the wall clock to give event-time rules at a reading of it, wall, taken d
// after the previous reading on the monotonic clock, the host's suspension counted.
// Without a monotonic reading (an injected clock) d is the wall clock's own difference,
// and nothing is ever a step.
func (c *clock) vet(wall time.Time, d time.Duration) time.Time {
	course := c.wallAt.Add(d)
	off := wall.Sub(course)
	switch {
	case c.behind && off >= -wallSlack:
		if c.log != nil {
			c.log.Warn("the host's wall clock, behind the snapshot's lines at the start, was set right: event-time rules go by it from now on", "step", off, "held", c.held)
		}
		c.holding, c.behind = false, false
		c.wallAt = wall
	case off.Abs() <= wallSlack:
		if c.holding && c.log != nil && c.elapsed >= c.quietUntil {
			c.quietUntil = c.elapsed + wallStepHold
			c.log.Warn("the host's wall clock stepped and came back within a minute: event-time rules went on by the monotonic clock meanwhile, counting lines stamped by the stepped clock as future or late", "step", c.step, "lasted", c.held)
		}
		c.holding = false
		c.wallAt = wall
	case !c.holding:
		c.holding, c.step, c.held = true, off, 0
		c.wallAt = course
	default:
		// Held since the clock left its course, whatever steps it made since: one that
		// started the hold over would hold a clock stepped every half minute (a drifting
		// guest's, set by its hypervisor) ever further behind it.
		c.step, c.held = off, c.held+max(d, 0)
		c.wallAt = course
		if c.held >= wallStepHold {
			if c.log != nil {
				c.log.Warn("the host's wall clock stepped and stayed: event-time rules go by it from now on, and their windows move by the step", "step", c.step, "lasted", c.held)
			}
			c.holding, c.behind = false, false
			c.wallAt = wall
		}
	}
	return c.wallAt
}

func (c *clock) second() int64 {
	processing, _ := c.read()
	return processing
}

func (c *clock) wall() int64 {
	_, wall := c.read()
	return wall
}
