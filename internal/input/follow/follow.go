package follow

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fsnotify/fsnotify"
	"github.com/logwindow/logwindow_exporter/config"
	"github.com/logwindow/logwindow_exporter/internal/input"
	"github.com/logwindow/logwindow_exporter/internal/selfmetric"
)

// Defaults and limits of Options.
const (
	// DefaultMaxLineBytes is far above any sane access log line and small
	// enough to keep per input.
	DefaultMaxLineBytes = 64 << 10
	// DefaultRotationGrace covers a writer that reopens its log a few
	// seconds after the rename (nginx on USR1 from a postrotate script).
	DefaultRotationGrace = 5 * time.Second
	// DefaultPollInterval bounds the delay of what inotify does not report,
	// such as changes to files on network file systems.
	DefaultPollInterval = 250 * time.Millisecond
	// MaxMaxLineBytes bounds MaxLineBytes: the reader allocates a buffer of
	// that size per input, so a typo must not become gigabytes.
	MaxMaxLineBytes = 64 << 20
)

// passBudget is how many bytes one file may read before the others get their
// turn, so that one busy file cannot starve the rest of a glob.
const passBudget = 1 << 20

// Options says what to follow and how.
type Options struct {
	// Path is a file or a glob (filepath.Match syntax). A glob is expanded
	// again on every scan, so files that appear later are followed too.
	Path string
	// Glob, for ReadToEnd of a path that is one of a glob's matches (Matches), is that
	// glob: the file is read as ReadToEnd of the glob reads it, not through a symlink out
	// of the glob's root, and a link to nothing is no file.
	Glob string
	// FromBeginning reads the files that exist at Start from their first
	// byte (start_at: beginning); otherwise from their size at Start, or from
	// the next line when that size falls within one (a writer in the middle of
	// it): the line began before Start, and its rest is no line. Files that
	// appear later are always read from their first byte, so that none of
	// their first lines is skipped.
	FromBeginning bool
	// MaxLineBytes caps a line's length, newline excluded (0 means
	// DefaultMaxLineBytes). Longer lines are skipped and counted as TooLong.
	MaxLineBytes int
	// RotationGrace is how long a file that left its path must have been
	// idle before it is closed (0 means DefaultRotationGrace), so that a
	// writer that reopens late loses nothing.
	RotationGrace time.Duration
	// PollInterval is the period of the scan that runs whether or not
	// inotify is available (0 means DefaultPollInterval): the whole change
	// detection without inotify, a safety net with it, which comes every
	// quietPolls-th period while inotify covers the input (Follower.covers).
	PollInterval time.Duration
	// Logger receives the files followed, rotations, truncations and errors; nil
	// discards them. Its lines name the file (path); the caller's With names the input.
	Logger *slog.Logger
	// Backfill, when set, is called once for each file present at Start and positioned
	// at its end, with the file and that offset, from the reading goroutine before the
	// file's first line: the caller may read what precedes the offset (a warm start of
	// windows). Ready waits for it BackfillReadyWait at most, less Waited.
	Backfill func(path string, file io.ReaderAt, end int64)
	// Waited is how long the caller's start took before Start (the pipeline's wait for
	// the storage directory's lock): Ready's wait for Backfill counts it, so that the two
	// waits together stay within BackfillReadyWait plus the first scan, within the
	// startupProbe that polls readiness from the process's start.
	Waited time.Duration
	// Text, when set, is where the text of its own that a file's lines wrap starts
	// (a CRI line's message), found in the file's first bytes, head: the file's encoding
	// is told by that text, not by the wrapper's (see otherEncoding). found is false
	// while head does not tell yet; a first line that is not of the wrapper is text
	// whole (head).
	Text func(head []byte) (text []byte, found bool)
	// TooLong, when set, is called in the reading goroutine when a line longer than
	// MaxLineBytes is skipped, before any later line of its file is handed on, with
	// the line's first bytes (MaxLineBytes+1 of them at least, valid during the call
	// only): a caller that joins lines into messages (the parts of a CRI message)
	// learns that the message lost a part. It returns whether the line counts as too
	// long (Stats.TooLong): false for a line the caller would have skipped whatever its
	// length (of a CRI stream it does not read), which it counts itself.
	TooLong func(path string, head []byte) bool
	// Closed, when set, is called in the reading goroutine, after the last line handed
	// on under path, once no file is read under path any more: its last file was
	// closed after leaving its path (renamed away or deleted, then idle for the grace
	// period) or was renamed to another path of the glob; for every path read at Stop
	// (in Stop's goroutine, once the reading goroutine has ended); and by ReadToEnd
	// after each file. State kept per path (a CRI message being joined) can be
	// forgotten then: a later line under path comes from a file that appeared there
	// since. A rotated file closed while its successor is read under the same path does
	// not close the path: a message may go on in the successor.
	Closed func(path string)
	// Select, when set, keeps of a glob's matches only the paths it accepts, so that
	// several followers can share one glob's files. A file renamed to a path Select
	// refuses is read on there by the follower that read it (it looks for it among the
	// refused paths of the directories that changed); Claim keeps the follower whose
	// path it now is from reading it again.
	Select func(path string) bool
	// Claim, when set, is asked before a file is opened whether the follower may read
	// it (dev and ino identify it), and Release is told of each file claimed once the
	// follower stops reading it: the followers that share a glob claim from one set, so
	// that one file is read by one of them, wherever it is renamed within the glob.
	// ReadToEnd asks Claim too, once it opened a file, and releases nothing.
	Claim   func(dev, ino uint64) bool
	Release func(dev, ino uint64)
	// Resume, when not nil, is where an earlier follower of the input read its files up to
	// (Follower.Positions): a file present at Start is read from its position, or from its
	// start when it has none (it came after them), whatever FromBeginning says, and
	// without Backfill; a file of a position that left its path is found by its identity
	// in its directory and read to its end first (see position.go).
	Resume []Position
	// HandOver says that Resume holds the positions of followers this process stopped at
	// a reload to start this one instead, not those of a snapshot saved before the
	// process started: only what is logged of the files that left their path differs.
	HandOver bool
	// Taken is when Resume's positions were taken (zero: unknown). A path whose file of a
	// position is gone or rewritten (compressed after a second rotation, its inode taken
	// by the next file; truncated by copytruncate) has the files rotated away from it
	// after then read, as those after a file of a position found rotated are; none
	// written last before then is read.
	Taken time.Time
	// Hold, when set, is held while lines are handed on, a chunk at a time: a caller that
	// takes it exclusively sees no line being handed on, so that Positions and what the
	// handler made of the lines before them are one cut.
	Hold sync.Locker
	// At, when not nil, is set before each line handed on to where the line starts, for a
	// handler that may not be done with a line when it returns (it holds it, for a later
	// line to finish): Line.Position is where a follower resumed from Positions taken
	// meanwhile is to read it again from. It is the reading goroutine's, as the handler is.
	At *Line
	// Truncated, when not nil, is what the files an earlier follower of the input found
	// truncated lately held before (Follower.Truncated), taken with Resume: a file present
	// at Start without a position that is a copy of one is read from where that one was
	// read up to, as it is of a position's file (see position.go), and so is one a glob
	// finds within the rotation grace after Start (see copies.go). What one held unread
	// that its follower had not settled when it stopped (Truncation.Lost) is counted by
	// this one: past its own rotation grace without a copy, or what the copy lacks.
	Truncated []Truncation
	// Drained, when not nil, holds those of Resume's positions that were of files read to
	// their end after they had left their path (Follower.Drained, taken with Resume): one
	// not found is said gone at debug, as no line of it is known to be lost (the kubelet
	// compresses a container log's rotated file at its next rotation), not at info.
	Drained []Position
	// DrainedUnknown says that which of Resume's positions were drained is not known (a
	// snapshot written before Drained was kept): any file of a position not found, or
	// found rewritten, may have been read to its end, so it is said gone or rewritten at
	// debug, as not known to have lost lines, not at info as lost.
	DrainedUnknown bool
	// Left, when not nil, is where an earlier follower of the input read the files it
	// closed after they left their path (Follower.Left): one that comes back to a path
	// (a symlink retargeted back to it) is read on from there, as that follower would
	// have, a file present at Start without a position of Resume too. Without Resume it
	// may hold the positions of another input's follower too (Follower.Positions), of a
	// path the new input's replaces: a file present at Start that it read is read on
	// from there, not by FromBeginning.
	Left []Position
	// Started, when set, is called once by Start, after its first scan and before any
	// line is handed on, with where each file it found is read from (Positions then): a
	// caller that kept state with Positions taken before (a CRI message being joined) can
	// tell whether the files that state goes on in are read on from where it was kept.
	// With Later, the discovery goroutine calls it, and Positions waits for it.
	Started func(from []Position)
	// Later has Start return before its first scan, which the discovery goroutine then
	// makes (Left's placing, the first scan and Started) before it watches and the reader
	// reads, as Start would have: Ready is false until it is done, and Positions, Drained,
	// Left and Truncated wait for it (Scanned is closed then). A caller that holds a lock
	// others wait on while it starts followers (a reload's) so holds it for none of the
	// listing: a new glob over 5,000 files took one to two seconds to list, stat and open.
	Later bool
	// Found, when set, is called in the discovery goroutine when a scan after the first
	// opens a file to read at a path none of the follower's files is read under (a new
	// pod's log; not a log's next file, rotated in while its last is read), once the
	// follower reads it (Reads), with its path and identity.
	Found func(path string, dev, ino uint64)
	// Files, when not nil, bounds the files open at once, with the other followers that
	// share it: a file the bound keeps from being opened waits, counted as an open error
	// once and warned of with how many wait, and is opened by a later scan once a place
	// is free. The files of Resume's positions, at their paths or rotated away, are
	// opened whatever the bound, as their lines after the positions would be lost
	// otherwise, and so is a follower's first file, as its inotify instance is.
	Files *Files

	now      func() time.Time                    // a test clock for the grace period
	noNotify bool                                // tests force polling
	stat     func(*os.File) (os.FileInfo, error) // tests show what a write in progress looks like
	listed   func()                              // tests rename files between a listing and the looks
	list     func(dir string) ([]string, error)  // tests make a directory fail to list
	// readDir is os.ReadDir, which a restart finds the files of positions by: tests count
	// its listings.
	readDir func(dir string) ([]os.DirEntry, error)
	// look is os.Stat (follow) or os.Lstat: tests count what discovery looks at.
	look func(path string, follow bool) (os.FileInfo, error)
	// local is localFS: tests say which directories are on a network file system.
	local func(dir string) bool
	// Chunk, when set, is called in the reading goroutine after each read from a file
	// and before the lines it completed are handed on (up to the read buffer, 64 KiB by
	// default, some hundreds of lines): a handler that needs the time of a line's
	// arrival can read a clock once per chunk instead of once per line.
	Chunk func()
	// Lend, when set, is called while Hold is held, after the lines of a read were handed
	// on: it returns the buffer to read into next, of buf's length. Returning buf itself
	// gives it back; returning another keeps buf, whose lines the handler may then use
	// after it returned, and the reader never touches buf again. A handler that hands the
	// lines of a read to another goroutine so spares their copy.
	Lend func(buf []byte) []byte
	// Block, when set, is offered the complete lines a read brought, as one slice of the
	// read buffer ending in the last line's "\n", while Hold is held and before any of
	// them is handed on: it returns whether it took them all, which the handler then is
	// not given and Stats.LinesRead does not count, or none, to have them handed on one
	// by one. A caller that takes them goes through them and counts them there: counting
	// them here would be a pass over the read of its own. Like a line handed on, the
	// slice may be used after the call only when Lend takes the buffer. Lines are offered
	// so only while the buffer cannot hold a line too long to read (MaxLineBytes of
	// DefaultMaxLineBytes or more) and none is being skipped, so every line of the slice
	// is one the handler would have been given, but for the "\r" before a "\n" it strips
	// (TrimCR). A handler that hands a read's lines to another goroutine, which finds them
	// anyway, so spares the reading goroutine handing them on one by one.
	Block func(path string, lines []byte) bool
	// CaughtUp, when set, is called in the reading goroutine each time it has read every
	// file to its end, before it waits for more: a handler that hands lines to other
	// goroutines may take a share of what they have not started yet, rather than wait
	// idle while they finish alone.
	CaughtUp func()
}

// reason is what failed, the label of an error in Stats.ErrorsByReason.
type reason uint8

const (
	reasonWatch      reason = iota // inotify unavailable or failing, a directory that cannot be watched
	reasonList                     // a directory of a glob that cannot be listed
	reasonStat                     // a path that cannot be looked at (a symlink loop, EACCES on a directory)
	reasonOpen                     // a file that cannot be opened
	reasonNotRegular               // a FIFO, device or directory where a file is expected
	reasonRead                     // a file that cannot be read
	reasonSymlink                  // a symlink out of a glob's root, refused
	numReasons
)

var reasonNames = [numReasons]string{"watch", "list", "stat", "open", "not_regular", "read", "symlink"}

// failure is an error with the reason it is counted under.
type failure struct {
	reason reason
	err    error
}

func (e *failure) Error() string { return e.err.Error() }
func (e *failure) Unwrap() error { return e.err }

// reasonOf is the reason err is counted under, def when it does not say.
func reasonOf(err error, def reason) reason {
	if fe, ok := errors.AsType[*failure](err); ok {
		return fe.reason
	}
	return def
}

// counters are shared by the goroutines of one input and read by Stats.
type counters struct {
	lines, tooLong, rotations, truncations atomic.Uint64
	errors                                 [numReasons]atomic.Uint64
	// truncatedBytes are the bytes lost to truncations (Follower.lose).
	truncatedBytes atomic.Uint64
}

func (c *counters) fail(r reason) { c.errors[r].Add(1) }

func (c *counters) snapshot() input.Stats {
	s := input.Stats{
		LinesRead:      c.lines.Load(),
		TooLong:        c.tooLong.Load(),
		Rotations:      c.rotations.Load(),
		Truncations:    c.truncations.Load(),
		ErrorsByReason: make(map[string]uint64, numReasons),
	}
	for r := range numReasons {
		n := c.errors[r].Load()
		s.ErrorsByReason[reasonNames[r]] = n
		s.Errors += n
	}
	return s
}

func (o Options) normalize() (Options, error) {
	if o.Path == "" {
		return o, errors.New("follow: empty path")
	}
	if config.IsGlob(o.Path) {
		if _, err := filepath.Match(o.Path, ""); err != nil {
			return o, fmt.Errorf("follow: path %q: %w", o.Path, err)
		}
		for _, check := range []func(string) error{config.UnlistedElement, config.EmptyRange} {
			if err := check(o.Path); err != nil {
				return o, fmt.Errorf("follow: path %q %w", o.Path, err)
			}
		}
	}
	switch {
	case o.MaxLineBytes < 0 || o.MaxLineBytes > MaxMaxLineBytes:
		return o, fmt.Errorf("follow: max line bytes %d out of range 0..%d (0: default)", o.MaxLineBytes, MaxMaxLineBytes)
	case o.RotationGrace < 0:
		return o, fmt.Errorf("follow: negative rotation grace %s", o.RotationGrace)
	case o.PollInterval < 0:
		return o, fmt.Errorf("follow: negative poll interval %s", o.PollInterval)
	}
	if o.MaxLineBytes == 0 {
		o.MaxLineBytes = DefaultMaxLineBytes
	}
	if o.RotationGrace == 0 {
		o.RotationGrace = DefaultRotationGrace
	}
	if o.PollInterval == 0 {
		o.PollInterval = DefaultPollInterval
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.now == nil {
		o.now = time.Now
	}
	if o.stat == nil {
		o.stat = (*os.File).Stat
	}
	if o.list == nil {
		o.list = listDir
	}
	if o.readDir == nil {
		o.readDir = os.ReadDir
	}
	if o.look == nil {
		o.look = look
	}
	if o.local == nil {
		o.local = localFS
	}
	return o, nil
}

func look(path string, follow bool) (os.FileInfo, error) {
	if follow {
		return os.Stat(path)
	}
	return os.Lstat(path)
}

// expand lists the paths the input names now: the glob's matches, or the
// path itself, whether or not it exists, and the matches Select refused. unlisted
// holds the directories of a glob that could not be listed, with why.
func expand(o Options, list func(dir string) ([]string, error)) (paths, refused []string, unlisted map[string]error) {
	if !config.IsGlob(o.Path) {
		return []string{o.Path}, nil, nil
	}
	paths, unlisted = glob(o.Path, list)
	if o.Select != nil {
		var kept []string
		for _, p := range paths {
			if o.Select(p) {
				kept = append(kept, p)
			} else {
				refused = append(refused, p)
			}
		}
		paths = kept
	}
	return paths, refused, unlisted
}

// Follower follows one input until Stop.
type Follower struct {
	o Options
	h input.Handler
	r *lineReader
	w *fsnotify.Watcher // nil when polling
	c counters

	mu    sync.Mutex
	files []*tracked // in the order they were found: older files are read first
	byID  map[fileID]*tracked
	// pathsChanged counts changes to the paths of files: one added, removed or
	// renamed within the glob. The reader looks for paths no longer read only then.
	pathsChanged uint64

	// final is where the follower stopped (Positions after Stop), finalDrained its
	// files then drained (Drained after Stop); guarded by mu.
	final, finalDrained []Position
	// left is where the files closed after they left their path were read up to, the
	// newest maxLeft (leftOrder, oldest first), should one come back; guarded by mu.
	// leftLooked is how many there were after pruneLeft last looked for the gone ones.
	left       map[fileID]leftAt
	leftOrder  []fileID
	leftLooked int

	// Owned by the reading goroutine (and Stop after it).
	readPaths   map[string]bool // paths of the files in the reader's last look at them
	readChanged uint64          // pathsChanged at that look
	truncated   []truncation    // files found truncated lately, for judged; written under mu

	// Owned by the discovery goroutine (and Start before it).
	tree        tree
	lastScan    time.Time         // when discover last ran, on Options' clock
	failed      map[string]string // path → error already counted and logged
	watchFailed map[string]string // directory → error already counted and logged
	unlisted    map[string]string // directory of a glob → listing error already counted and logged
	atStart     map[fileID]int64  // size at Start of files present then, for start at end
	waiting     map[string]bool   // paths of the files waiting for a place (Options.Files)
	resume      *resume           // Options.Resume, until Start applied it
	// covered says that the last scan found inotify reporting every change the poll could
	// find (covers), and quiet how many polls since the last whole one were skipped so.
	covered bool
	quiet   int

	ready     atomic.Bool
	readyAt   time.Time    // the first scan's end on Options' clock, set before ready
	backfills atomic.Int64 // Backfill calls still due for files of the first scan
	stopping  atomic.Bool
	turns     atomic.Uint64 // turns of the reader over all files, for tests that must see one complete

	// whole asks the reader's next turn to look at every open file (poke); written holds
	// the paths Write events named since its last turn (nudge), which a turn without
	// whole looks at alone, with the files that need a look at every turn (lookAlways).
	whole     atomic.Bool
	writtenMu sync.Mutex
	written   map[string]bool
	taken     map[string]bool // the written of the turn, the room of the next written
	// again is the files the reader's last turn left with more to read, or skipped while
	// a file under their path had more: the next turn looks at them whatever woke it.
	// Owned by the reading goroutine.
	again map[*tracked]bool
	// turnFiles and turnPaths are the room of a turn's files and their paths, kept from
	// turn to turn: a write's turn costs no allocation. Owned by the reading goroutine.
	turnFiles []*tracked
	turnPaths []string

	// scanned is closed once the first scan is done (Options.Later).
	scanned chan struct{}

	stop     chan struct{}
	wake     chan struct{}
	stopOnce sync.Once
	wg       sync.WaitGroup
}

// Start opens and positions every file the input names now, then follows
// them in the background, handing h every complete line with the path of the
// file it was found in, without its "\n" and without a "\r" before it. A
// handler that blocks stalls the reading of its input; files keep being
// discovered meanwhile, so rotations during the stall lose nothing. Start
// fails only for invalid options; a missing or unreadable file is waited for.
//
// With Options.Later, Start returns before it opens any file, and the discovery
// goroutine does so first: a Stop meanwhile waits for that scan, whose positions it
// leaves, and no line is read.
func Start(opts Options, h input.Handler) (*Follower, error) {
	f, err := newFollower(opts, h)
	if err != nil {
		return nil, err
	}
	f.wg.Add(2)
	if !f.o.Later {
		f.first()
		go f.watchLoop()
		go f.readLoop()
		return f, nil
	}
	go func() {
		if len(f.o.Left) > 0 {
			f.placeLeft()
		}
		f.first()
		if f.stopping.Load() {
			f.wg.Add(-2)
			return
		}
		go f.readLoop()
		f.watchLoop()
	}()
	return f, nil
}

// first is the first scan, the files of Options.Resume found rotated away, and Started.
// With Options.Later, Scanned is closed once Started returned: what the caller's Started
// resumes (a CRI joiner's messages in parts) is one cut with Positions, as without Later,
// where Start returns after it, and a snapshot taken meanwhile has it.
func (f *Follower) first() {
	f.discover(true)
	f.resumeRotated()
	if f.o.Started != nil {
		f.o.Started(f.positionsNow())
	}
	if f.o.Later {
		close(f.scanned)
	}
}

// Scanned is closed once the first scan and Started are done: at once after Start, unless
// Options.Later has the discovery goroutine make them.
func (f *Follower) Scanned() <-chan struct{} { return f.scanned }

// Reads reports whether the follower reads the file of dev and ino now.
func (f *Follower) Reads(dev, ino uint64) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	_, ok := f.byID[fileID{dev: dev, ino: ino}]
	return ok
}

// newFollower is Start up to its first scan: tests drive the scans themselves.
func newFollower(opts Options, h input.Handler) (*Follower, error) {
	o, err := opts.normalize()
	if err != nil {
		return nil, err
	}
	if h == nil {
		return nil, errors.New("follow: nil handler")
	}
	f := &Follower{
		o:           o,
		h:           h,
		byID:        make(map[fileID]*tracked),
		tree:        newTree(o.Path),
		failed:      make(map[string]string),
		watchFailed: make(map[string]string),
		unlisted:    make(map[string]string),
		atStart:     make(map[fileID]int64),
		resume:      newResume(o.Resume, truncatedPositions(o.Truncated), o.Drained),
		readPaths:   make(map[string]bool),
		written:     make(map[string]bool),
		taken:       make(map[string]bool),
		again:       make(map[*tracked]bool),
		scanned:     make(chan struct{}),
		stop:        make(chan struct{}),
		wake:        make(chan struct{}, 1),
	}
	for _, p := range o.Left {
		f.remember(fileID{dev: p.Dev, ino: p.Ino}, leftAt{path: p.Path, off: p.Offset, head: p.Head})
	}
	if !o.Later {
		close(f.scanned) // Start makes it before it returns, a test its own
	}
	if len(o.Left) > 0 && !o.Later {
		f.placeLeft() // with Later, Start's goroutine places them, as it lists a directory each
	}
	for _, p := range o.Truncated {
		// A copy found after the start, within the rotation grace, is judged against them
		// too: the restart came between the truncation's read and the copy's find.
		if p.Offset > 0 {
			f.truncated = append(f.truncated, truncation{path: p.Path, id: fileID{dev: p.Dev, ino: p.Ino}, hash: p.Head, off: p.Offset, at: o.now(),
				seen: p.Seen, lost: p.Lost, settled: p.Lost <= 0})
		}
	}
	f.r = newLineReader(o, h, &f.c, &f.stopping)
	f.r.recheck = true
	if !o.noNotify {
		// fsnotify returns an error where nxadm/tail would exit: with the
		// per-user inotify instance limit reached, polling is all we have.
		w, err := fsnotify.NewWatcher()
		if err != nil {
			f.c.fail(reasonWatch)
			o.Logger.Warn("inotify unavailable, polling for changes", "path", o.Path, "interval", o.PollInterval, "err", err)
		} else {
			f.w = w
			o.Files.take(true)
		}
	}
	return f, nil
}

// BackfillReadyWait bounds how long Ready waits for the backfills, counted from the
// caller's start (Options.Waited before the first scan's end): a warm start of many large
// files may take minutes on a CPU limit, and a startupProbe on readiness (a minute, in the
// Helm chart) would kill the process and start the fill again in a loop. Past it the
// backfills go on in the background (Stats.Backfilling).
const BackfillReadyWait = 30 * time.Second

// Ready reports whether the input is reading: its first scan is done (the
// glob listed, every file it could open opened and positioned) and those files
// backfilled when Options.Backfill asks, or BackfillReadyWait has passed since the
// caller's start (Options.Waited before the first scan's end). A
// file that could not be opened is an error, counted and retried, and does not hold
// readiness: waiting would not open it. It stays true afterwards.
func (f *Follower) Ready() bool {
	return f.ready.Load() && (f.backfills.Load() == 0 || f.o.Waited+f.o.now().Sub(f.readyAt) >= BackfillReadyWait)
}

// Stats returns a snapshot of the counters and of the lag per path. The files are looked
// at (an fstat each) outside f.mu: a scrape of a node's 500 pod logs held it for as many
// syscalls, which the reader and discovery wait for; a file closed meanwhile, as if gone
// before, is no lag.
func (f *Follower) Stats() input.Stats {
	s := f.c.snapshot()
	s.Counters = []input.Counter{selfmetric.InputLostBytes.Count(f.c.truncatedBytes.Load(), "truncation")}
	s.Polling = f.w == nil
	s.Backfilling = int(f.backfills.Load())
	f.mu.Lock()
	open := make([]pathFile, len(f.files))
	for i, t := range f.files {
		open[i] = pathFile{path: t.path, t: t}
	}
	f.mu.Unlock()
	slices.SortStableFunc(open, func(a, b pathFile) int { return strings.Compare(a.path, b.path) })
	for i, o := range open {
		if i == 0 || o.path != open[i-1].path {
			s.Files = append(s.Files, input.FileStats{Path: o.path})
		}
		if fi, err := o.t.f.Stat(); err == nil {
			// A truncation not yet seen by the reader would give a negative lag.
			s.Files[len(s.Files)-1].BytesBehind += max(0, fi.Size()-o.t.done.Load()-o.t.held.Load())
		}
	}
	return s
}

// pathFile is an open file and the path it is read under, as Stats took them.
type pathFile struct {
	path string
	t    *tracked
}

// Stop ends following and waits for its goroutines and the Handler to
// return. Lines not yet handed on are dropped; Positions says where they
// start. Stop may be called more than once.
func (f *Follower) Stop() {
	f.stopOnce.Do(func() {
		f.stopping.Store(true)
		close(f.stop)
		f.wg.Wait()
		if f.w != nil {
			_ = f.w.Close()
			f.o.Files.give()
		}
		f.judgeHeld(nil)
		f.pendingAtStop()
		f.mu.Lock()
		f.final, f.finalDrained = f.positions(), f.drained()
		for _, t := range f.files {
			f.close(t.f)
			f.readPaths[t.path] = true
			f.release(t.id)
		}
		f.files, f.byID = nil, nil
		f.mu.Unlock()
		if f.o.Closed != nil {
			for p := range f.readPaths {
				f.o.Closed(p)
			}
		}
	})
}

// judgeHeld judges the files held back that the reader has not told yet, so that the
// positions Stop leaves have a copy where it is read from (judged): passed over, it would
// be read from its start by the follower that resumes from them, its original's position
// past its truncation. Stop calls it once the reader is done, of all (of nil); the reader
// when it finds of truncated within a line (readAgain), of those alone that may wait for
// that truncation (copied, live): any other is judged in its turn, once the truncation is
// kept (keepTruncated), as it may be a copy of it still.
func (f *Follower) judgeHeld(of *tracked) {
	f.mu.Lock()
	var held []*tracked
	var paths []string
	for _, t := range f.files {
		if t.judging.Load() && (of == nil || of.liveOriginal(t.path, of.done.Load())) {
			held, paths = append(held, t), append(paths, t.path)
		}
	}
	f.mu.Unlock()
	for i, t := range held {
		if fi, err := f.o.stat(t.f); err == nil {
			f.judged(t, paths[i], fi.Size())
		}
	}
}

// close closes a file the follower kept open, giving back its place (Options.Files).
func (f *Follower) close(file *os.File) {
	_ = file.Close()
	f.o.Files.give()
}

// claim reports whether the follower may read the file id (Options.Claim).
func (f *Follower) claim(id fileID) bool {
	return f.o.Claim == nil || f.o.Claim(id.dev, id.ino)
}

// release lets go of the file id, claimed (Options.Release).
func (f *Follower) release(id fileID) {
	if f.o.Release != nil {
		f.o.Release(id.dev, id.ino)
	}
}

// poke tells the reader there may be something to read in any file: its next turn looks
// at every open file. Pokes coalesce.
func (f *Follower) poke() {
	f.whole.Store(true)
	f.signal()
}

// nudge tells the reader that an event named path as written: unless poked meanwhile,
// its next turn looks at the files read under the paths nudged alone (and those it looks
// at every turn), so that a write costs a look at its file, not at all of them.
func (f *Follower) nudge(path string) {
	if !config.IsGlob(f.o.Path) && filepath.Clean(path) == filepath.Clean(f.o.Path) {
		path = f.o.Path // as written, which the file is read under
	}
	f.writtenMu.Lock()
	f.written[path] = true
	f.writtenMu.Unlock()
	f.signal()
}

func (f *Follower) signal() {
	select {
	case f.wake <- struct{}{}:
	default:
	}
}

// readLoop is the one goroutine that calls the Handler.
func (f *Follower) readLoop() {
	defer f.wg.Done()
	f.whole.Store(true)
	for {
		more := f.turn()
		if f.stopping.Load() {
			return
		}
		if more {
			continue
		}
		if f.o.CaughtUp != nil {
			f.o.CaughtUp()
		}
		select {
		case <-f.stop:
			return
		case <-f.wake:
		}
	}
}

// turn is one turn of the reader, over every file when poked, else over those nudged.
func (f *Follower) turn() bool {
	if f.whole.Swap(false) {
		f.takeWritten() // the whole turn looks at them too
		return f.readAll()
	}
	return f.readTurn(false, f.takeWritten())
}

// takeWritten returns the paths nudged since it was last called, valid until it is
// called again, and forgets them.
func (f *Follower) takeWritten() map[string]bool {
	f.writtenMu.Lock()
	defer f.writtenMu.Unlock()
	clear(f.taken)
	f.written, f.taken = f.taken, f.written
	return f.taken
}

// readAll gives every open file one turn and retires rotated files that
// have been idle for the grace period. It reports whether a file has more to
// read right away.
func (f *Follower) readAll() (more bool) {
	more = f.readTurn(true, nil)
	f.turns.Add(1)
	return more
}

// named reports whether each of written is one of paths.
func named(written map[string]bool, paths []string) bool {
	for p := range written {
		if !slices.Contains(paths, p) {
			return false
		}
	}
	return true
}

// lookAlways reports whether t is looked at by every turn of the reader, not only when
// an event named it: a file that left its path may have left the directories watched
// too, and is retired after its grace by a turn (retireIfIdle); a judged one is read
// once it is told to be no copy (judged), which no event says; a failed read is retried,
// and a Backfill due is called, at the next turn. f.mu must be held.
func (t *tracked) lookAlways() bool {
	return t.rotated || t.judging.Load() || t.backfill || t.readErr != ""
}

// readTurn gives the open files one turn: all of them, or, for a turn of Write events,
// those read under the paths only holds, those the last turn left behind (again) and
// those that look at every turn (lookAlways). A path of only that no open file is read
// under (a symlink's target, a file renamed away under another name) may be any file's:
// the turn looks at all of them then.
func (f *Follower) readTurn(all bool, only map[string]bool) (more bool) {
	f.mu.Lock()
	turn, paths := f.turnFiles[:0], f.turnPaths[:0]
	for _, t := range f.files {
		if all || only[t.path] || f.again[t] || t.lookAlways() {
			turn, paths = append(turn, t), append(paths, t.path)
		}
	}
	if !all && !named(only, paths) {
		turn, paths = turn[:0], paths[:0]
		for _, t := range f.files {
			turn, paths = append(turn, t), append(paths, t.path)
		}
		all = true
	}
	changed := f.pathsChanged
	var open []string // the paths of every open file, for closeGone
	if f.o.Closed != nil && changed != f.readChanged {
		open = paths
		if !all {
			open = make([]string, len(f.files))
			for i, t := range f.files {
				open[i] = t.path
			}
		}
	}
	f.mu.Unlock()
	f.turnFiles, f.turnPaths = turn, paths
	clear(f.again)
	if open != nil {
		f.readChanged = changed
		f.closeGone(open)
	}

	// The paths whose file read this turn has more: a later file under one (its
	// successor) waits until the rotated one is read to its end, so that the lines of a
	// path come in the order they were written (a CRI message may go on in the
	// successor). A file that waits is not retired either: it was not read.
	var behind []string
	for i, t := range turn {
		if f.stopping.Load() {
			return false
		}
		if t.backfill {
			t.backfill = false
			f.o.Backfill(paths[i], t.f, t.off)
			if t.holdsReady {
				f.backfills.Add(-1)
			}
		}
		if slices.Contains(behind, paths[i]) {
			f.again[t] = true
			continue
		}
		m := f.step(t, paths[i])
		more = more || m
		if m {
			behind = append(behind, paths[i])
			f.again[t] = true
		} else {
			f.retireIfIdle(t, paths[i])
		}
	}
	f.settleTruncations()
	return more
}

// closeGone tells Options.Closed of the paths read before that no file is
// read under now.
func (f *Follower) closeGone(paths []string) {
	now := make(map[string]bool, len(paths))
	for _, p := range paths {
		now[p] = true
	}
	for p := range f.readPaths {
		if !now[p] {
			f.o.Closed(p)
		}
	}
	f.readPaths = now
}

// retireIfIdle closes t if it left its path and has not grown for the grace
// period, handing on its final line if it lacks a newline: nothing will
// complete it now. The file leaves the positions and its line is handed on under
// Options.Hold, as one: a cut between the two would have neither, and a restart
// from it would lose the line.
func (f *Follower) retireIfIdle(t *tracked, path string) {
	f.mu.Lock()
	idle := f.idle(t)
	f.mu.Unlock()
	if !idle {
		return
	}
	defer f.pruneLeft() // after the hold: its stats hold no line back
	f.r.hold.Lock()
	defer f.r.hold.Unlock()
	f.mu.Lock()
	idle = f.idle(t) // again: discovery may have seen it come back meanwhile
	if idle {
		f.remove(t)
	}
	f.mu.Unlock()
	if !idle {
		return
	}
	f.r.finishHeld(t, path)
	f.keepLeft(t, path)
	f.close(t.f)
	f.o.Logger.Debug("closed rotated file after its grace period", "path", path, "offset", t.off)
}

// idle reports whether t left its path and has not grown for the grace period; f.mu
// must be held.
func (f *Follower) idle(t *tracked) bool {
	now := f.o.now()
	return t.rotated && now.Sub(t.lastData) >= f.o.RotationGrace && now.Sub(t.rotatedAt) >= f.o.RotationGrace
}

// remove drops t from the open files; f.mu must be held.
func (f *Follower) remove(t *tracked) {
	f.pathsChanged++
	delete(f.byID, t.id)
	f.release(t.id)
	for i, u := range f.files {
		if u == t {
			f.files = append(f.files[:i], f.files[i+1:]...)
			break
		}
	}
}

// step gives t one turn: truncation checks, then a read. It reports whether
// t has more to read right away.
func (f *Follower) step(t *tracked, path string) bool {
	fi, err := f.o.stat(t.f)
	if err != nil {
		f.readFailed(t, path, err)
		return false
	}
	size := fi.Size()
	if t.judging.Load() && !f.judged(t, path, size) {
		return false
	}
	rewritten, err := t.rewritten(size)
	if err != nil {
		f.readFailed(t, path, err)
		return false
	}
	if rewritten {
		f.readAgain(t, path, size)
	} else if size == t.off {
		return false
	}
	t.seen = size
	if t.zeros > t.off {
		at := t.pastZeros(size, &f.stopping)
		if at < 0 {
			return false
		}
		if t.holdZeros(t.off, 0); at > t.off {
			// The line they cut is final, as a writer's that died mid-line is; the text
			// after them opens a line.
			f.r.finish(t, path)
			t.positionAt(at)
		}
	}
	if t.atHole() {
		if t.skipHole(size, &f.stopping); t.zeros > t.off {
			return false
		}
	}
	read, atEOF, err := f.r.pass(t, path, passBudget)
	if read > 0 {
		t.lastData = f.o.now()
	}
	if errors.Is(err, errRewritten) {
		if fi, err = f.o.stat(t.f); err == nil {
			f.readAgain(t, path, fi.Size())
			return true
		}
	}
	if err != nil {
		f.readFailed(t, path, err)
		return false
	}
	t.readErr = ""
	if !atEOF {
		return !f.stopping.Load()
	}
	// What was written while we read is read in the next turn right away.
	if fi, err = f.o.stat(t.f); err != nil {
		f.readFailed(t, path, err)
		return false
	}
	return fi.Size() > max(t.off, t.zeros)
}

// readAgain makes t read again from its start, found truncated or rewritten under the
// read offset, size bytes long now.
func (f *Follower) readAgain(t *tracked, path string, size int64) {
	f.c.truncations.Add(1)
	f.o.Logger.Info("file truncated, reading it again from the start", "path", path, "offset", t.off, "size", size)
	// The bytes that could have completed a last line without a newline are gone: it
	// is final, as when its file is retired; unless a copy of the file waits for this
	// truncation (judged), which holds them, and is read from the line's start. A copy
	// the scan found, named as one of the log's rotated files, whose turn has not come
	// yet is judged now: the log comes before it in a turn, and its head would be handed
	// on as a line, the copy read on past it.
	if len(t.partial) > 0 && !t.skipping && !t.lead {
		f.judgeHeld(t)
	}
	whole := !t.skipping && !t.lead && f.copyWaits(t)
	f.keepTruncated(t, path, whole)
	if !whole {
		f.r.finish(t, path)
	}
	t.restart()
}

// readFailed counts and logs an error of t once until a read succeeds.
func (f *Follower) readFailed(t *tracked, path string, err error) {
	if t.readErr == err.Error() {
		return
	}
	t.readErr = err.Error()
	f.c.fail(reasonRead)
	f.o.Logger.Warn("cannot read file, retrying", "path", path, "err", err)
}
