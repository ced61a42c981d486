// Package input is what every source of lines has in common: the handler it feeds and the
// interface and statistics through which the pipeline runs it and the exposition reports
// on it. A kind of input (a followed file or glob, a syslog socket) lives in a package
// below this one and never touches the exposition: it fills Stats, which the exposition
// reads by name.
package input

// Handler receives one line. source is the file it was read from, or empty for a line
// that came by socket; line is valid only during the call and holds no newline. Calls of
// one input come from one goroutine, in order; a Handler that blocks holds up its input,
// which is the backpressure.
type Handler func(source string, line []byte)

// Input is one running source of lines.
type Input interface {
	// Ready reports whether the input has opened what it reads (a warm start, a bound
	// socket), so that its lines are being counted.
	Ready() bool
	// Stats is a snapshot of its counters.
	Stats() Stats
	// Stop ends the input and waits until its Handler is no longer called.
	Stop()
}

// Stats are an input's counters in terms every kind shares; a kind leaves at zero what
// does not apply to it. The pipeline adds what it counts itself (MalformedLines,
// Unmatched, joined CRI messages past the line cap in TooLong).
type Stats struct {
	// LinesRead counts lines handed to the Handler; TooLong those skipped for their length.
	LinesRead uint64
	TooLong   uint64
	// Rotations counts files that left their path (renamed, deleted or replaced); what
	// they still hold or receive is read all the same.
	Rotations uint64
	// Truncations counts files found shorter than what was read, or rewritten under the
	// read offset; they are read again from offset 0.
	Truncations uint64
	// Errors counts failures to watch, list, stat, open or read, and symlinks refused
	// (once per episode; each is retried), or to receive.
	Errors uint64
	// ErrorsByReason splits Errors by what failed, for a kind that tells (nil
	// otherwise): a few fixed reasons per kind, each present even at zero, so
	// that the exposition shows every series from the start.
	ErrorsByReason map[string]uint64
	// Polling is true when change events could not be set up, so that only the poll sees
	// changes.
	Polling bool
	// Backfilling counts the files whose warm start (the windows filled from what
	// precedes their end at start) is still to run: readiness waits for it a while only.
	Backfilling int
	// Files has one entry per path being read, sorted by path.
	Files []FileStats
	// Counters are what the input's kind counts beyond what every kind shares, each
	// described by the kind (a socket's datagrams).
	Counters []Counter
	// MalformedLines counts lines the input's fields rules could not read, or that are not
	// of its wrapper's format; Unmatched the lines of its format that no rule matched;
	// Unread the lines of files whose chosen candidate format no rule reads
	// (parser.Session.Unread), which are not Unmatched.
	MalformedLines uint64
	Unmatched      uint64
	Unread         uint64
	// Formats counts, for an input with candidate log formats, the files being read by
	// the name of the format chosen for them; for a glob of one log format, under
	// parser.NoFormat only, those whose first lines fit it not (nil when there are none).
	Formats map[string]int
}

// Arrivals is implemented by an input kind whose counters include what came in to be
// its lines (a socket's datagrams received, and those lost before they became lines):
// Arrivals returns those counters alone, as Stats does. A caller that counts the lines
// read itself, after the input handed them on, loads them after those lines, so that no
// look finds more lines read than came in.
type Arrivals interface {
	Arrivals() []Counter
}

// FileStats describes what is being read under one path.
type FileStats struct {
	Path string
	// BytesBehind is what those files hold beyond what was handed on: the lag of a slow
	// consumer.
	BytesBehind int64
}

// Counter is one count of an input kind's own: the self-metric family it is a sample of
// (its name and HELP, and at most one label besides the input's, with its value), so that
// the exposition reports it without knowing the kind.
type Counter struct {
	Name, Help        string
	Label, LabelValue string
	Value             uint64
}
