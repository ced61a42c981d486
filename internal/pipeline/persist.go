package pipeline

import (
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"maps"
	"math"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/logwindow/logwindow_exporter/config"
	"github.com/logwindow/logwindow_exporter/internal/input/cri"
	"github.com/logwindow/logwindow_exporter/internal/input/follow"
	"github.com/logwindow/logwindow_exporter/internal/selfmetric"
	"github.com/logwindow/logwindow_exporter/internal/storage"
	"github.com/logwindow/logwindow_exporter/internal/store"
	"github.com/logwindow/logwindow_exporter/windows/wire"
)

// DefaultSnapshotInterval is how often the state is written to --storage.path.
const DefaultSnapshotInterval = 10 * time.Second

// DefaultStorageLockWait is how long a start waits for the exporter it replaces to let the
// storage directory go: the snapshot it writes as it stops is the one to restore. A
// DaemonSet deleted and made again (or a pod restarted by hand) has its new pod started
// while the old one is still terminating, within Kubernetes' default grace period of 30 s.
const DefaultStorageLockWait = 30 * time.Second

// Sections of a snapshot the pipeline writes besides the Set's: when it started, the
// positions of the followed files, the CRI messages in parts being joined then, where
// the files the followers closed after they left their path were read up to
// (follow.Follower.Left), and what the files they found truncated lately held
// (follow.Follower.Truncated), and which of the positions' files had left their path and
// were read to their end (follow.Follower.Drained), and what of the files found
// truncated is lost unless a copy of them is read (follow.Truncation's Seen and Lost),
// apart so that a build from before it passes over it. A snapshot without the last five
// (written before they were) restores without those messages and files.
const (
	sectionPipeline        = "pipeline"
	sectionFiles           = "files"
	sectionParts           = "cri-parts"
	sectionLeft            = "left-files"
	sectionTruncated       = "truncated-files"
	sectionDrained         = "drained-files"
	sectionTruncatedUnread = "truncated-unread"
)

// persister is the pipeline's side of --storage.path.
type persister struct {
	dir      string
	interval time.Duration
	// write serialises the snapshots: one writer per directory. It guards lock.
	write sync.Mutex
	// lock is the directory taken from other processes (storage.TakeLock), nil until it is.
	lock *storage.Lock
	// writeFile writes a snapshot's file: storage.Write, or a slow disk in tests.
	writeFile func(dir string, fill func(w *storage.Writer) error) error
	// encodeAhead is Set.EncodeAhead, or a slow one in tests.
	encodeAhead func(*store.Set, *storage.Spill) (*store.Encoded, error)
	// mu guards stats.
	mu    sync.Mutex
	stats selfmetric.StorageStats
}

// StorageStats returns the statistics of the snapshots.
func (p *Pipeline) StorageStats() selfmetric.StorageStats {
	if p.storage == nil {
		return selfmetric.StorageStats{}
	}
	p.storage.mu.Lock()
	defer p.storage.mu.Unlock()
	return p.storage.stats
}

// update changes the statistics under their lock.
func (s *persister) update(f func(st *selfmetric.StorageStats)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	f(&s.stats)
}

// dirMode is the mode the storage directory is made with.
const dirMode = 0o750

// takeLock takes the directory for this process, made when missing, if it has not yet
// (restore waited for it at start), or no longer holds it; s.write must be held, or no
// snapshot be written yet.
//
// A directory removed or replaced while the exporter runs (or its lock file removed) took
// the snapshot and the lock along: a restart would find no snapshot, and another exporter
// given the directory made again would take it as free while this one went on writing
// there. The loss is logged and counted as a failed snapshot, the directory made again
// and its lock taken again; one another process took meanwhile is its own (ErrLocked),
// and no snapshot is written there until it lets the directory go.
func (s *persister) takeLock(log *slog.Logger) error {
	lost := s.lock != nil
	if lost {
		// One that cannot be looked at keeps its lock: the write that follows fails, and
		// says why.
		if held, err := s.lock.Held(s.dir); held || err != nil {
			return err
		}
		s.lock.Release()
		s.lock = nil
		s.update(func(st *selfmetric.StorageStats) { st.Failures++ })
		log.Error("the storage directory, or its lock file, was removed or replaced while the exporter ran: the snapshot went with it; making the directory again and taking its lock again", "dir", s.dir)
	}
	// Not only one lost: one start could not make, or lost while unlocked, would fail
	// every snapshot until a restart.
	if err := os.MkdirAll(s.dir, dirMode); err != nil {
		return fmt.Errorf("snapshot: %w", err)
	}
	l, err := storage.TakeLock(s.dir)
	s.took(l, log)
	if lost && err != nil && !errors.Is(err, storage.ErrLocked) {
		// As at start: written unguarded, said once, not at every snapshot that tries again.
		log.Error("cannot lock the storage directory again: another exporter given it too would not be told of", "dir", s.dir, "err", err)
	}
	return err
}

// othersErr sees to the lock (takeLock) and returns the error of a directory another
// process holds, nil for any other: one that cannot be locked for another reason is
// written unguarded, as at start, and a write that then fails says why. s.write must be
// held.
func (s *persister) othersErr(log *slog.Logger) error {
	if err := s.takeLock(log); errors.Is(err, storage.ErrLocked) {
		return err
	}
	return nil
}

// took keeps the lock l taken (nil when none was), and warns when its file was replaced.
func (s *persister) took(l *storage.Lock, log *slog.Logger) {
	s.lock = l
	if l != nil && l.Replaced() != nil {
		log.Warn("replaced the storage directory's lock file, which this user may not open: an exporter run as another user (root) left it", "dir", s.dir, "err", l.Replaced())
	}
}

// release lets the directory go, for another process (or a pipeline of this one) to take.
func (s *persister) release() {
	s.write.Lock()
	defer s.write.Unlock()
	if s.lock != nil {
		s.lock.Release()
		s.lock = nil
	}
}

// restore reads the snapshot of the storage directory into gen's new Set, moves the
// processing clock on to the newest processing second of the restored series when it is
// behind it (store.Restored.Processing), and returns the positions of the files by input source, the CRI
// messages in parts its inputs were joining by input source, and the start second it
// records (or math.MaxInt64). A
// snapshot that cannot be opened, read or decoded is logged, counted and set aside, and
// the exporter starts without it. Its one error is Options.Interrupt closed while it waited
// for the directory.
func (p *Pipeline) restore(gen *generation) (map[string][]follow.Position, map[string][]pathParts, int64, error) {
	s, log := p.storage, p.opts.Logger
	made := os.MkdirAll(s.dir, dirMode)
	if made != nil {
		log.Warn("cannot make the storage directory: snapshots will fail until it can be written", "dir", s.dir, "err", made)
	}
	wait := cmp.Or(p.opts.StorageLockWait, DefaultStorageLockWait)
	l, err := storage.WaitLock(s.dir, wait, p.opts.Interrupt, func() {
		log.Warn("another exporter uses the storage directory: waiting for it to let the directory go, to restore the snapshot it writes as it stops", "dir", s.dir, "wait", wait)
	})
	s.took(l, log)
	switch {
	case errors.Is(err, storage.ErrStopped):
		return nil, nil, math.MaxInt64, err
	case errors.Is(err, storage.ErrLocked):
		// Its snapshot is not of this exporter's files nor of its series: a file it reads
		// without a position there would be read from its start, counted again.
		s.update(func(st *selfmetric.StorageStats) { st.RestoreFailures++ })
		log.Error("another exporter uses the storage directory: starting empty; no snapshot is written until it lets the directory go", "dir", s.dir, "waited", wait, "err", err)
		return nil, nil, math.MaxInt64, nil
	case err != nil && made == nil:
		log.Warn("cannot lock the storage directory: another exporter given it too would not be told of", "dir", s.dir, "err", err)
	}
	most := int64(math.MaxInt64) // no bound
	if p.opts.SeriesMaxBytes > 0 {
		most = p.opts.SeriesMaxBytes
	}
	snap, err := storage.Read(s.dir, most)
	var positions map[string][]follow.Position
	var parts map[string][]pathParts
	since := int64(math.MaxInt64)
	if err == nil {
		positions, since, err = decodePipeline(snap)
	}
	// The optional sections only help rare cases: a record of them that does not decode
	// costs that record (skipped), not the snapshot's series and positions.
	var left, truncatedAt, drained map[string][]follow.Position
	var truncated map[string][]follow.Truncation
	var skipped []skippedRecord
	if err == nil {
		parts, skipped = decodeParts(snap, skipped)
		left, skipped = decodeFiles(snap, sectionLeft, skipped)
		truncatedAt, skipped = decodeFiles(snap, sectionTruncated, skipped)
		drained, skipped = decodeFiles(snap, sectionDrained, skipped)
		truncated, skipped = decodeTruncated(snap, truncatedAt, skipped)
	}
	var res store.Restored
	if err == nil {
		res, err = gen.set.Restore(snap)
	}
	switch {
	case errors.Is(err, fs.ErrNotExist):
		log.Info("no snapshot in the storage directory: starting empty", "dir", s.dir)
		return nil, nil, math.MaxInt64, nil
	case err != nil:
		s.update(func(st *selfmetric.StorageStats) { st.RestoreFailures++ })
		// Whatever kept it from being read (corrupt, another version, a file this user may
		// not open, a link loop), the first snapshot written would replace it: set aside,
		// a person can still read it, and the next start does not fail on it again.
		attrs := []any{"dir", s.dir, "err", err}
		to, aerr := storage.SetAside(s.dir, p.opts.Now())
		attrs = append(attrs, "set_aside_as", to)
		if aerr != nil {
			attrs = append(attrs, "set_aside_err", aerr)
		}
		log.Error("cannot restore the snapshot: starting empty", attrs...)
		return nil, nil, math.MaxInt64, nil
	}
	p.clock.notBefore(res.Processing)
	// Compared, not subtracted: a snapshot that restored no line has math.MinInt64, which
	// less the clock's second wraps to far ahead.
	if wall := p.clock.wall(); res.Processing > wall {
		// In a Duration up to its 292 years: a second past them was edited in.
		ahead := time.Duration(min(res.Processing-wall, int64(math.MaxInt64/time.Second))) * time.Second
		// Which clock was wrong cannot be told: one that booted behind (no RTC) is the
		// hold's reason, one that was ahead when the snapshot was written keeps processing
		// time ahead across every restart since. Either way a person should know.
		log.Warn("the host's clock is behind the processing time of the snapshot's newest lines (it stepped back while the exporter was down, or was ahead when the snapshot was written): processing time goes on from theirs, this far ahead of the clock", "dir", s.dir, "ahead", ahead)
	}
	p.clock.wallNotBefore(res.Wall)
	for _, why := range res.Skipped {
		log.Warn("a rule of the snapshot was not restored: it starts empty", "err", why)
	}
	for _, sk := range skipped {
		log.Warn("a record of the snapshot was not restored: the rest of the snapshot is", "section", sk.section, "err", sk.err)
	}
	s.update(func(st *selfmetric.StorageStats) {
		st.RestoredRules, st.RestoredSeries, st.SkippedRules = res.Rules, res.Series, len(res.Skipped)
		st.SkippedRecords = len(skipped)
	})
	files, messages := 0, 0
	for _, ps := range positions {
		files += len(ps)
	}
	for _, pps := range parts {
		for _, pp := range pps {
			messages += len(pp.parts)
		}
	}
	p.resumeTaken, p.resumeLeft, p.resumeTruncated, p.resumeDrained = snap.Written, left, truncated, drained
	// The followers judge by it which files rotated away while the exporter was down are
	// to be read, against those files' own times. One ahead of the system's clock now was
	// written while the clock ran ahead: the files written since it was set right are
	// older, and would be left out; the followers go by the files' times alone, as for
	// positions whose time is unknown. The clock compared is the system's, whose time the
	// files were given, not the one injected.
	if snap.Written.After(time.Now()) {
		log.Warn("the snapshot was written at a time ahead of the host's clock (the clock ran ahead then, or stepped back since): the files rotated away while the exporter was down are judged by their own times alone", "dir", s.dir, "written", snap.Written)
		p.resumeTaken = time.Time{}
	}
	log.Info("restored the snapshot", "dir", s.dir, "rules", res.Rules, "series", res.Series, "skipped_rules", len(res.Skipped), "files", files, "messages_in_parts", messages)
	return positions, parts, since, nil
}

// decodePipeline reads the pipeline's sections of a snapshot.
func decodePipeline(snap *storage.Snapshot) (map[string][]follow.Position, int64, error) {
	meta, ok := snap.Section(sectionPipeline)
	files, ok2 := snap.Section(sectionFiles)
	if !ok || !ok2 {
		return nil, 0, fmt.Errorf("%w: no %q or %q section", storage.ErrCorrupt, sectionPipeline, sectionFiles)
	}
	since := int64(math.MaxInt64)
	for rec := range meta.Records() {
		r := wire.NewReader(rec)
		// Rates count from it: one no clock reaches was edited, and would have them read
		// over spans that overflow.
		if since = r.Varint(); r.Err() == nil && (since < 0 || since > store.LatestSecond) {
			r.Failf("start at second %d", since)
		}
		if err := r.Done(); err != nil {
			return nil, 0, err
		}
	}
	positions := map[string][]follow.Position{}
	for rec := range files.Records() {
		source, ps, err := decodePositions(rec)
		if err != nil {
			return nil, 0, err
		}
		positions[source] = ps
	}
	return positions, since, nil
}

// decodePositions reads a record of the files section: an input's source and the
// positions of its files (appendPositions).
func decodePositions(rec []byte) (string, []follow.Position, error) {
	r := wire.NewReader(rec)
	source := string(r.Prefixed())
	n := r.Count(math.MaxInt, positionBytes)
	ps := make([]follow.Position, 0, n)
	for range n {
		ps = append(ps, decodePosition(r, source))
	}
	return source, ps, r.Done()
}

// positionBytes is the least a position of appendPosition takes: a byte for each of the
// path's length, the device, the inode and the offset, and 8 for the head's hash. A count
// of positions is checked against it before room is made for them.
const positionBytes = 4 + 8

// decodePosition reads a position of appendPosition, of a file of the input of source.
func decodePosition(r *wire.Reader, source string) follow.Position {
	pos := follow.Position{Path: string(r.Prefixed()), Dev: r.Uvarint(), Ino: r.Uvarint()}
	if r.Err() == nil && !follow.Names(source, pos.Path) {
		// Its file would be looked for by device and inode in that path's directory
		// and read as the input's, any file the exporter may read.
		r.Failf("position of %q, which %q does not name", pos.Path, source)
	}
	off := r.Uvarint()
	if off > math.MaxInt64 {
		r.Failf("offset %d", off)
	}
	pos.Offset, pos.Head = int64(off), r.Uint64()
	return pos
}

// pathParts are the CRI messages in parts that a cri input's joiner was in the middle of
// under one path, at a snapshot's cut or when a reload stopped its follower, with the
// files read under that path then and where they were read up to: the joiner of a
// restart, or of the follower that replaces the stopped one, is given the messages back
// only when its follower reads each of those files on from there (resumeFrom), so that
// their next parts are the lines that follow those they were joined from.
type pathParts struct {
	path string
	// files are the positions of the files read under path, before keptAt moved any back:
	// a file read again from further back would give the messages parts they have.
	files []follow.Position
	parts []cri.Part
	// from is the label of the input whose joiner held them, when that input is gone
	// (Pipeline.vanishedParts), its source at a restart (a snapshot records no name), for
	// the log of those no joiner goes on with (goneInput); taken says that a joiner went
	// on with them (resumeFrom) or that they were counted lost; readBy is the first
	// stream whose follower reads their path, but not on from where they were kept
	// (resumeFrom), which settleParts counts them in when none goes on.
	from   string
	taken  bool
	readBy *stream
}

// Flags of a message in parts in its record.
const (
	partSkipped = 1 << iota
	partCounted
)

// partsAt returns the messages in parts in's joiner is in the middle of, by path, with
// ps, the positions of in's follower taken at the same cut (under it, which the reading
// goroutine holds while it feeds the joiner, or once the follower stopped), less those
// drained returns (its files then rotated away and read to their end, asked only of a
// cri input holding parts: the cut waits for it) when the path has others:
// their next parts are in those, and a restart that finds a drained file gone (compressed
// by the kubelet at its next rotation) goes on with them. The messages
// of a path no file of ps is read under (its files were closed) are left out: nothing
// goes on with them. So are those of a path that holds lines while its format is chosen
// (kept): a snapshot's positions go back to its first held line (keptAt), from which
// their parts are read again, in a file rotated away and closed since too, which ps
// lacks and so would not tell the restart that the file is read again. They alias the
// joiner's buffers: the caller copies them before the joiner is fed again.
func (in *stream) partsAt(ps []follow.Position, drained func() []follow.Position) []pathParts {
	if in.cri == nil || in.cri.HeldBytes() == 0 {
		return nil
	}
	done := drained()
	byPath := map[string][]cri.Part{}
	for path, part := range in.cri.Pending() {
		byPath[path] = append(byPath[path], part)
	}
	var pps []pathParts
	for path, parts := range byPath {
		if len(in.kept[path]) > 0 {
			continue
		}
		pp := pathParts{path: path, parts: parts}
		for _, pos := range ps {
			if pos.Path == path {
				pp.files = append(pp.files, pos)
			}
		}
		if live := slices.DeleteFunc(slices.Clone(pp.files), func(pos follow.Position) bool {
			return slices.Contains(done, pos)
		}); len(live) > 0 {
			pp.files = live
		}
		if len(pp.files) > 0 {
			pps = append(pps, pp)
		}
	}
	return pps
}

// appendPathParts appends the record of the messages in parts pp of the input source.
func appendPathParts(dst []byte, source string, pp pathParts) []byte {
	dst = wire.AppendBytes(dst, []byte(source))
	dst = wire.AppendBytes(dst, []byte(pp.path))
	dst = wire.AppendUvarint(dst, uint64(len(pp.files)))
	for _, pos := range pp.files {
		dst = wire.AppendUvarint(dst, pos.Dev)
		dst = wire.AppendUvarint(dst, pos.Ino)
		dst = wire.AppendUvarint(dst, uint64(pos.Offset))
	}
	dst = wire.AppendUvarint(dst, uint64(len(pp.parts)))
	for _, part := range pp.parts {
		var flags byte
		if part.Skipped {
			flags |= partSkipped
		}
		if part.Counted {
			flags |= partCounted
		}
		dst = wire.AppendBytes(dst, []byte(part.Stream))
		dst = append(dst, flags)
		dst = wire.AppendBytes(dst, part.Joined)
	}
	return dst
}

// skippedRecord is a record of an optional section of a snapshot that did not decode,
// left out of the restore: its section's name, and why.
type skippedRecord struct {
	section string
	err     error
}

// decodeFiles reads a section of files other than those of the positions (sectionLeft,
// sectionTruncated), or of some of them (sectionDrained), by input source; a snapshot without it (written before it was) has
// none. The records that do not decode are left out, appended to skipped.
func decodeFiles(snap *storage.Snapshot, section string, skipped []skippedRecord) (map[string][]follow.Position, []skippedRecord) {
	sec, ok := snap.Section(section)
	if !ok {
		return nil, skipped
	}
	bySource := map[string][]follow.Position{}
	for rec := range sec.Records() {
		source, ps, err := decodePositions(rec)
		if err != nil {
			skipped = append(skipped, skippedRecord{section, err})
			continue
		}
		bySource[source] = append(bySource[source], ps...)
	}
	return bySource, skipped
}

// decodeTruncated gives the positions of the files found truncated, by input source, what
// the snapshot's sectionTruncatedUnread says of each is lost unless a copy of it is
// read: a snapshot without it (written before it was) has nothing. The records that do
// not decode are left out, appended to skipped: those bytes are then not counted.
func decodeTruncated(snap *storage.Snapshot, at map[string][]follow.Position, skipped []skippedRecord) (map[string][]follow.Truncation, []skippedRecord) {
	if at == nil {
		return nil, skipped
	}
	out := make(map[string][]follow.Truncation, len(at))
	index := map[string]map[follow.Position]int{} // where each position is in out
	for source, ps := range at {
		index[source] = make(map[follow.Position]int, len(ps))
		for _, p := range ps {
			index[source][p] = len(out[source])
			out[source] = append(out[source], follow.Truncation{Position: p})
		}
	}
	sec, ok := snap.Section(sectionTruncatedUnread)
	if !ok {
		return out, skipped
	}
	for rec := range sec.Records() {
		source, unread, err := decodeUnread(rec)
		if err != nil {
			skipped = append(skipped, skippedRecord{sectionTruncatedUnread, err})
			continue
		}
		for _, u := range unread {
			if i, ok := index[source][u.Position]; ok {
				out[source][i].Seen, out[source][i].Lost = u.Seen, u.Lost
			}
		}
	}
	return out, skipped
}

// appendUnread appends the record of what ts, an input's files found truncated, held
// unread: of those with bytes lost unless a copy of them is read, the position, the
// size seen and the bytes lost.
func appendUnread(dst []byte, source string, ts []follow.Truncation) []byte {
	dst = wire.AppendBytes(dst, []byte(source))
	n := 0
	for _, t := range ts {
		if t.Lost > 0 {
			n++
		}
	}
	dst = wire.AppendUvarint(dst, uint64(n))
	for _, t := range ts {
		if t.Lost > 0 {
			dst = appendPosition(dst, t.Position)
			dst = wire.AppendUvarint(dst, uint64(t.Seen))
			dst = wire.AppendUvarint(dst, uint64(t.Lost))
		}
	}
	return dst
}

// decodeUnread reads a record of appendUnread.
func decodeUnread(rec []byte) (string, []follow.Truncation, error) {
	r := wire.NewReader(rec)
	source := string(r.Prefixed())
	n := r.Count(math.MaxInt, positionBytes+2)
	ts := make([]follow.Truncation, 0, n)
	for range n {
		t := follow.Truncation{Position: decodePosition(r, source)}
		seen, lost := r.Uvarint(), r.Uvarint()
		if r.Err() == nil && (seen > math.MaxInt64 || lost > seen) {
			r.Failf("%d bytes lost of %d seen", lost, seen)
		}
		t.Seen, t.Lost = int64(seen), int64(lost)
		ts = append(ts, t)
	}
	return source, ts, r.Done()
}

// decodeParts reads the messages in parts of a snapshot, by input source; a snapshot
// without them (written before they were kept) has none. The records that do not decode
// are left out, appended to skipped: their messages' first parts are lost, as they were
// before they were kept.
func decodeParts(snap *storage.Snapshot, skipped []skippedRecord) (map[string][]pathParts, []skippedRecord) {
	sec, ok := snap.Section(sectionParts)
	if !ok {
		return nil, skipped
	}
	bySource := map[string][]pathParts{}
	for rec := range sec.Records() {
		source, pp, err := decodePathParts(rec)
		if err != nil {
			skipped = append(skipped, skippedRecord{sectionParts, err})
			continue
		}
		bySource[source] = append(bySource[source], pp)
	}
	return bySource, skipped
}

// decodePathParts reads a record of appendPathParts; the messages' bytes alias rec.
func decodePathParts(rec []byte) (string, pathParts, error) {
	r := wire.NewReader(rec)
	source := string(r.Prefixed())
	pp := pathParts{path: string(r.Prefixed())}
	n := r.Count(math.MaxInt, 3)
	pp.files = make([]follow.Position, 0, n)
	for range n {
		pos := follow.Position{Path: pp.path, Dev: r.Uvarint(), Ino: r.Uvarint()}
		off := r.Uvarint()
		if off > math.MaxInt64 {
			r.Failf("offset %d", off)
		}
		pos.Offset = int64(off)
		pp.files = append(pp.files, pos)
	}
	n = r.Count(math.MaxInt, 3)
	pp.parts = make([]cri.Part, 0, n)
	for range n {
		part := cri.Part{Stream: string(r.Prefixed())}
		if r.Err() == nil && !cri.Readable(part.Stream) {
			// No CRI line has it: kept, its bytes would be held for a message nothing ends.
			r.Failf("stream name %.16q of %d bytes", part.Stream, len(part.Stream))
		}
		flags := r.Byte()
		if flags&^(partSkipped|partCounted) != 0 {
			r.Failf("message flags %#x", flags)
		}
		part.Skipped, part.Counted = flags&partSkipped != 0, flags&partCounted != 0
		part.Joined = r.Prefixed()
		pp.parts = append(pp.parts, part)
	}
	return source, pp, r.Done()
}

// resumeFrom gives in's joiner back the messages in parts of each of groups (of the
// snapshot restored, of the followers a reload stopped to start in's instead, of the
// inputs it removed), before its follower hands on a line, for each path whose files the
// follower reads on from where they were when the messages were kept (from: where it
// reads each file from), and marks them taken. Those of a path whose files it reads
// otherwise (rewritten or gone while the exporter was down, or read again from further
// back) are lost, as they were before they were kept: marked read by in, and those of
// a path it reads no file under (another shard's, another input's, no one's) are left
// to settleParts, which counts and logs, once every follower started, those no joiner
// went on with. Those the joiner refuses (refusedParts) lose their first parts: they
// count as too long in in, as settleParts' do, and are logged. restart says that groups
// are a snapshot's, whose removed inputs are named by their source (goneInput).
func (in *stream) resumeFrom(from []follow.Position, restart bool, groups ...[]pathParts) {
	type place struct {
		path     string
		dev, ino uint64
		offset   int64
	}
	readFrom, read := make(map[place]bool, len(from)), make(map[string]bool, len(from))
	for _, f := range from {
		readFrom[place{f.Path, f.Dev, f.Ino, f.Offset}], read[f.Path] = true, true
	}
	var refused refusedParts
	for _, pps := range groups {
		// Of removed inputs that both held a message (both read its file), the one whose
		// parts go on is the first by name (by source at a restart), whatever order a map
		// gave them in.
		order := make([]*pathParts, len(pps))
		for i := range pps {
			order[i] = &pps[i]
		}
		slices.SortStableFunc(order, func(a, b *pathParts) int { return cmp.Compare(a.from, b.from) })
		for _, pp := range order {
			// A record without files (partsAt writes none) would be given to every shard.
			readOn := len(pp.files) > 0 && !slices.ContainsFunc(pp.files, func(k follow.Position) bool {
				return !readFrom[place{k.Path, k.Dev, k.Ino, k.Offset}]
			})
			switch {
			case readOn:
				// Of a gone input's files, every input that reads one on goes on with them.
				pp.taken = true
			case read[pp.path]:
				if pp.readBy == nil {
					pp.readBy = in
				}
				continue
			default:
				continue // another shard's path, or one no file is read under any more
			}
			for _, part := range pp.parts {
				refused.add(pp, part, in.cri.Resume(pp.path, part))
			}
		}
	}
	refused.count(in, restart)
	in.chargeHeld()
}

// refusedParts are the messages in parts a joiner did not keep (cri.Resume), for
// resumeFrom to count and log; kept is, by path and stream, the input (pathParts.from)
// whose message of it the joiner went on with.
type refusedParts struct {
	kept map[[2]string]string
	// past are those refused past cri.MaxTracked, or of a stream no line names;
	// twice those of a file's stream of which another was kept, by the input that held
	// them and the one whose was kept.
	past  lostCount
	twice map[[2]string]*lostCount
}

// lostCount is a number of messages whose first parts are lost, of which uncounted
// took no count yet (cri.Part.Counted), and their paths.
type lostCount struct {
	messages, uncounted int
	paths               []string
}

// add counts part, a message of path.
func (c *lostCount) add(path string, part cri.Part) {
	c.messages++
	if !part.Counted {
		c.uncounted++
	}
	if !slices.Contains(c.paths, path) {
		c.paths = append(c.paths, path)
	}
}

// add notes what the joiner made of part of pp (r).
func (rp *refusedParts) add(pp *pathParts, part cri.Part, r cri.Resumed) {
	key := [2]string{pp.path, part.Stream}
	switch r {
	case cri.Kept:
		if rp.kept == nil {
			rp.kept = map[[2]string]string{}
		}
		if _, ok := rp.kept[key]; !ok {
			rp.kept[key] = pp.from
		}
	case cri.Held:
		// Two inputs removed that read the same file both held its message: the joiner
		// goes on with the first given it, and the other's copy is lost as a message of
		// a file no longer read is.
		if rp.twice == nil {
			rp.twice = map[[2]string]*lostCount{}
		}
		by := [2]string{pp.from, rp.kept[key]}
		if rp.twice[by] == nil {
			rp.twice[by] = &lostCount{}
		}
		rp.twice[by].add(pp.path, part)
	default:
		rp.past.add(pp.path, part)
	}
}

// count counts the messages refused as too long in in, and logs them: those past the
// limit in one line, those of a stream held twice in one by the inputs that held them.
func (rp *refusedParts) count(in *stream, restart bool) {
	if c := rp.past; c.messages > 0 {
		// A snapshot of more shards than read now, whose joiners each held up to the limit;
		// or, in one written by hand, a stream no line can name.
		in.tooLong.Add(uint64(c.uncounted))
		in.log.Warn("messages in parts not resumed, past the limit of messages in progress (or of a stream no CRI line names): their first parts are lost, counted as too long, their last parts read as whole messages", "messages", c.messages, "counted", c.uncounted, "limit", cri.MaxTracked)
	}
	for _, by := range slices.SortedFunc(maps.Keys(rp.twice), func(a, b [2]string) int {
		return cmp.Or(cmp.Compare(a[0], b[0]), cmp.Compare(a[1], b[1]))
	}) {
		c := rp.twice[by]
		slices.Sort(c.paths)
		in.tooLong.Add(uint64(c.uncounted))
		key, gone := goneInput(restart)
		log, why := in.log, "parts of the same messages (of one file and stream) were given back twice (a snapshot written by hand), and this input goes on with the first"
		switch lost, kept := by[0], by[1]; {
		case lost == kept, lost == "":
			// Given back twice by one input; an input's own are given back before removed
			// inputs', so that none of theirs is kept before one of its own.
		case kept == "":
			log, why = log.With(key, lost), gone+", and this input held parts of the same messages (of one file and stream) itself, which it goes on with"
		default:
			// Both read the file: this input reads each message once, the one's parts.
			log, why = log.With(key, lost, "goes_on_with_"+key, kept), gone+", and another input no longer in the rule file held parts of the same messages (of one file and stream), which this input goes on with"
		}
		log.Warn("the first parts of messages in parts are lost, counted as too long: "+why, "paths", c.paths, "messages", c.messages, "counted", c.uncounted)
	}
}

// goneInput is the log's key for an input the rule file no longer names whose joiner
// held messages in parts (pathParts.from), and the words that say it is gone. A reload
// names it by its label, as every log line names an input; a restart knows only its
// source, which is all a snapshot records of it (not its name), and says so.
func goneInput(restart bool) (key, words string) {
	if restart {
		return "of_input_path", "the input that held them, named here by its path (a snapshot records an input's path, not its name), is no longer in the rule file"
	}
	return "of_input", "the input that held them is no longer in the rule file"
}

// settleParts counts, once syncInputs started cfg's inputs, the messages in parts their
// joiners were given back and none went on with (resumeFrom): of a path under which
// the input reads no file any more (its glob narrowed, or the file gone or rotated away
// while the exporter was down) or reads it otherwise (rewritten meanwhile), or of an
// input the configuration no longer names whose files no new input reads on
// (Pipeline.vanishedParts). A message that lost its first parts so is dropped, as one
// whose file went is (Joiner.Release): it counts as too long in the input that was to go
// on with it (its source's first shard, its input's self-metrics summing its shards), or
// for a gone input the new one that reads their file otherwise, else the first new cri
// input given its parts; an input removed with none started in its place leaves no
// counter to count them in, and they are logged only. They are logged here, once every
// follower started, so that an input of several shards logs them in one line.
func (p *Pipeline) settleParts(cfg *config.Config) {
	for _, ci := range cfg.Inputs {
		lost := untaken(p.partsOf(ci.Source()))
		if len(lost) == 0 {
			continue
		}
		in := p.inputs[streamKey(ci, 0)]
		for _, pp := range lost {
			in = cmp.Or(in, pp.readBy) // its first shard did not start: one that did
		}
		log, why := p.opts.Logger.With("input", ci.Label()), lostWhy(lost)
		if in != nil {
			log = in.log
		}
		if in != nil && in.cri == nil {
			why = "the input no longer reads CRI lines (its wrapper changed)"
		}
		in.lostParts(log, lost, why)
	}
	type to struct {
		from string
		in   *stream
	}
	byInput := map[to][]*pathParts{}
	for _, pp := range untaken(p.vanishedParts) {
		k := to{pp.from, cmp.Or(pp.readBy, p.vanishedTo)}
		byInput[k] = append(byInput[k], pp)
	}
	key, words := goneInput(p.starting) // at Start, those of the snapshot restored
	for k, lost := range byInput {
		log := p.opts.Logger.With(key, k.from)
		if k.in != nil {
			log = k.in.log.With(key, k.from)
		}
		k.in.lostParts(log, lost, words+", "+lostWhy(lost))
	}
}

// untaken is the messages in parts of pps no joiner went on with nor counted.
func untaken(pps []pathParts) []*pathParts {
	var out []*pathParts
	for i := range pps {
		if !pps[i].taken {
			out = append(out, &pps[i])
		}
	}
	return out
}

// lostWhy says why the messages of lost are lost: their files are read otherwise
// (readBy), or not at all.
func lostWhy(lost []*pathParts) string {
	readOtherwise := 0
	for _, pp := range lost {
		if pp.readBy != nil {
			readOtherwise++
		}
	}
	switch readOtherwise {
	case 0:
		return "no file under their path is read any more"
	case len(lost):
		return "their files are not read on from where they were kept"
	}
	return "their files are no longer read, or not on from where they were kept"
}

// lostParts counts the messages of lost, which no joiner goes on with, as too long in in
// (nil: none to count them in), once each but for those the reader counted a part of
// (Counted), as Joiner.Release's are; marks them taken, and logs them once to log, with
// why.
func (in *stream) lostParts(log *slog.Logger, lost []*pathParts, why string) {
	if len(lost) == 0 {
		return
	}
	messages, uncounted := 0, 0
	paths := make([]string, 0, len(lost))
	for _, pp := range lost {
		pp.taken = true
		paths = append(paths, pp.path)
		messages += len(pp.parts)
		for _, part := range pp.parts {
			if !part.Counted {
				uncounted++
			}
		}
	}
	slices.Sort(paths)
	paths = slices.Compact(paths)
	if in == nil {
		log.Warn("the first parts of messages in parts are lost, counted nowhere: "+why+", and no input is left to count them", "paths", paths, "messages", messages)
		return
	}
	in.tooLong.Add(uint64(uncounted))
	log.Warn("the first parts of messages in parts are lost, counted as too long: "+why, "paths", paths, "messages", messages, "counted", uncounted)
}

// Snapshot writes the state to the storage directory now: every rule's series and the
// followed files' positions, one cut (every line before a position is in the series and
// none after). A failure is logged and counted; the last snapshot stays in place. Without
// a storage path it does nothing; after Stop it is refused.
func (p *Pipeline) Snapshot() error {
	if p.storage == nil {
		return nil
	}
	begin := time.Now()
	// The series are encoded ahead while the inputs go on, and only those written since
	// again during the cut; not while a warm start fills windows without counting lines.
	// Scrapes (the inputs' and reloads' self-metrics), readiness and reloads take p.mu,
	// and must not wait for the encoding, nor for the disk: p.mu is held only to see the
	// inputs, and then from the cut until it is taken. The stores a reload meanwhile made
	// or moved to another place in the Set are encoded in full at the cut (Set.Encode).
	p.mu.Lock()
	ready, set := !p.stopped && p.inputsReady(), p.gen.Load().set
	if ready {
		// Nor into a directory another exporter holds: the spill would take its disk, and
		// the encoding CPU, at every snapshot refused. Seen to under p.mu, which Stop lets
		// the lock go under, so that a snapshot cut short by it does not take it again.
		p.storage.write.Lock()
		ready = p.storage.othersErr(p.opts.Logger) == nil
		p.storage.write.Unlock()
	}
	p.mu.Unlock()
	// Without them, the cut encodes them all, into a spill of its own (which says why
	// the snapshot failed, if one cannot be made), while the inputs wait; why they are
	// not is logged with the snapshot (aheadErr).
	var ahead *store.Encoded
	var sp *storage.Spill
	var aheadErr error
	if ready {
		if sp, aheadErr = storage.NewSpill(p.storage.dir); aheadErr == nil {
			if ahead, aheadErr = p.storage.encodeAhead(set, sp); aheadErr != nil {
				sp.Close()
				ahead, sp = nil, nil
			}
		}
	}
	p.lockScanned() // not p.mu.Lock(): a reload's new followers are waited for without it
	if p.stopped {
		p.mu.Unlock()
		if sp != nil {
			sp.Close()
		}
		// Stop wrote the last one, with the positions of inputs that no longer run.
		return errStopped
	}
	return p.snapshot(ahead, sp, aheadErr, begin, p.mu.Unlock)
}

// snapshot writes a snapshot begun at begin, of the series encoded ahead into sp (or
// nil, and sp nil; aheadErr says why when they could not be), with p.mu held, which keeps
// the inputs from coming and going (a reload's new follower would otherwise start or stop
// during the cut); cutDone is called once the cut is taken, before the file is written,
// and may let p.mu go. The cut is taken after p.mu: a reload that holds p.mu may wait for
// a follower that waits for the cut. The snapshots are written in the order of their
// cuts: s.write is taken under p.mu.
func (p *Pipeline) snapshot(ahead *store.Encoded, sp *storage.Spill, aheadErr error, begin time.Time, cutDone func()) error {
	s := p.storage
	s.write.Lock()
	defer s.write.Unlock()
	// The lock is seen to before the spill is made in the directory: a directory lost
	// while the exporter ran is made again first, and one another exporter took is its
	// own, for no spill nor snapshot of this one (othersErr).
	err := s.othersErr(p.opts.Logger)
	if sp == nil && err == nil {
		sp, err = storage.NewSpill(s.dir)
	}
	if sp != nil {
		defer sp.Close()
	}
	// A reload's new followers list and open their files in their own goroutines
	// (follow.Options.Later), and their positions wait for that: waited for here, not
	// under the cut, which would hold every input's lines meanwhile (a second or two over
	// a new glob of 5,000 files). p.mu keeps others from starting. Snapshot took p.mu
	// once they had (lockScanned): this waits only in Stop's, which holds p.mu throughout.
	for _, in := range p.inputs {
		if f, ok := in.running.(*follow.Follower); ok {
			<-f.Scanned()
		}
	}
	cutAt := time.Now()
	p.cut.Lock()
	files, left, drained := make(map[string][]follow.Position), make(map[string][]follow.Position), make(map[string][]follow.Position)
	truncated := make(map[string][]follow.Truncation)
	var parts [][]byte
	for _, in := range p.inputs {
		in.drain()
	}
	running := make(map[string]bool, len(p.inputs))
	for _, in := range p.inputs {
		running[in.source] = true
		if f, ok := in.running.(*follow.Follower); ok {
			ps, done := f.Positions(), f.Drained()
			for _, pp := range in.partsAt(ps, func() []follow.Position { return done }) { // before keptAt moves any back
				parts = append(parts, appendPathParts(nil, in.source, pp))
			}
			files[in.source] = append(files[in.source], in.keptAt(ps)...)
			left[in.source] = append(left[in.source], namedBy(in.source, f.Left())...)
			truncated[in.source] = append(truncated[in.source], f.Truncated()...)
			drained[in.source] = append(drained[in.source], done...)
		}
	}
	// A reload that panicked as it started followers anew (see panicInForce) left where
	// those it had stopped stopped to what starts them next: until then they are their
	// input's positions, else a restart would read its files from start_at. Of an input
	// none of whose followers runs only: one that runs read on from them.
	for source, ps := range p.handedOver {
		if running[source] {
			continue
		}
		files[source], left[source], truncated[source] = ps, namedBy(source, p.handedLeft[source]), p.handedTruncated[source]
		for _, pp := range p.handedParts[source] {
			parts = append(parts, appendPathParts(nil, source, pp))
		}
	}
	var enc *store.Encoded
	if err == nil {
		enc, err = p.gen.Load().set.Encode(sp, ahead)
	}
	// Read once the series are encoded: no line in them was counted at a later second.
	processing := p.clock.second()
	pause := time.Since(cutAt)
	p.cut.Unlock()
	cutDone()
	if err == nil {
		err = s.writeFile(s.dir, func(w *storage.Writer) error {
			if err := w.Section(sectionPipeline); err != nil {
				return err
			}
			if err := w.Record(wire.AppendVarint(nil, min(p.started, p.restored))); err != nil {
				return err
			}
			if err := enc.Write(w, processing); err != nil {
				return err
			}
			if err := w.Section(sectionFiles); err != nil {
				return err
			}
			var rec []byte
			for source, ps := range files {
				rec = appendPositions(rec[:0], source, ps)
				if err := w.Record(rec); err != nil {
					return err
				}
			}
			if err := w.Section(sectionParts); err != nil {
				return err
			}
			for _, rec := range parts {
				if err := w.Record(rec); err != nil {
					return err
				}
			}
			truncatedAt := make(map[string][]follow.Position, len(truncated))
			for source, ts := range truncated {
				for _, t := range ts {
					truncatedAt[source] = append(truncatedAt[source], t.Position)
				}
			}
			for _, sec := range []struct {
				name  string
				files map[string][]follow.Position
			}{{sectionLeft, left}, {sectionTruncated, truncatedAt}, {sectionDrained, drained}} {
				if err := w.Section(sec.name); err != nil {
					return err
				}
				for source, ps := range sec.files {
					if len(ps) == 0 {
						continue
					}
					rec = appendPositions(rec[:0], source, ps)
					if err := w.Record(rec); err != nil {
						return err
					}
				}
			}
			if err := w.Section(sectionTruncatedUnread); err != nil {
				return err
			}
			for source, ts := range truncated {
				if !slices.ContainsFunc(ts, func(t follow.Truncation) bool { return t.Lost > 0 }) {
					continue
				}
				rec = appendUnread(rec[:0], source, ts)
				if err := w.Record(rec); err != nil {
					return err
				}
			}
			return nil
		})
	}
	took := time.Since(begin)
	if aheadErr != nil {
		s.update(func(st *selfmetric.StorageStats) { st.AheadFailures++ })
	}
	written := err == nil || errors.Is(err, storage.ErrNotSynced)
	if !written {
		attrs := []any{"dir", s.dir, "err", err}
		if aheadErr != nil {
			// What kept the series from being encoded ahead (a full disk) may be what
			// failed the snapshot, or may not.
			attrs = append(attrs, "ahead_err", aheadErr)
		}
		s.update(func(st *selfmetric.StorageStats) { st.Failures++ })
		p.opts.Logger.Warn("cannot write the snapshot: the previous one stays", attrs...)
		return err
	}
	if err != nil {
		// The new snapshot is in place, and the next one replaces it as any other: it is
		// written, and counted so; only whether it lasts a crash of the host is not known.
		s.update(func(st *selfmetric.StorageStats) { st.Unsynced++ })
		p.opts.Logger.Warn("the snapshot was written, but the storage directory could not be synced: it may not last a crash of the host", "dir", s.dir, "err", err)
	}
	if aheadErr != nil {
		// The snapshot is whole, but the cut encoded every series, while the inputs waited.
		p.opts.Logger.Warn("the series could not be encoded ahead of the snapshot's cut: they were encoded at the cut, while the inputs waited", "dir", s.dir, "err", aheadErr)
	}
	size := int64(0)
	if fi, err := os.Stat(s.dir + string(os.PathSeparator) + storage.FileName); err == nil {
		size = fi.Size()
	}
	s.update(func(st *selfmetric.StorageStats) {
		st.Snapshots++
		st.LastBytes, st.LastDuration, st.LastPause, st.LastSuccess = size, took, pause, p.opts.Now()
	})
	p.opts.Logger.Debug("snapshot written", "dir", s.dir, "bytes", size, "took", took, "pause", pause, "series_bytes", enc.Bytes())
	return nil
}

// appendPositions appends the record of an input's positions.
func appendPositions(dst []byte, source string, ps []follow.Position) []byte {
	dst = wire.AppendBytes(dst, []byte(source))
	dst = wire.AppendUvarint(dst, uint64(len(ps)))
	for _, pos := range ps {
		dst = appendPosition(dst, pos)
	}
	return dst
}

// namedBy returns those of ps, of files an input's followers closed (follow.Follower.Left),
// whose path source names. The others are of another input's files, handed to them at a
// reload that replaced that input by this one (Pipeline.vanished), kept should that input
// come back at a later reload; a restart would skip the input's record of them whole, as
// it does a position of a file the input does not read (decodePositions).
func namedBy(source string, ps []follow.Position) []follow.Position {
	return slices.DeleteFunc(slices.Clone(ps), func(pos follow.Position) bool { return !follow.Names(source, pos.Path) })
}

// appendPosition appends a position of a record.
func appendPosition(dst []byte, pos follow.Position) []byte {
	dst = wire.AppendBytes(dst, []byte(pos.Path))
	dst = wire.AppendUvarint(dst, pos.Dev)
	dst = wire.AppendUvarint(dst, pos.Ino)
	dst = wire.AppendUvarint(dst, uint64(pos.Offset))
	return binary.LittleEndian.AppendUint64(dst, pos.Head)
}

// snapshotEvery writes a snapshot every interval until stop is closed.
func (p *Pipeline) snapshotEvery(stop <-chan struct{}) {
	t := time.NewTicker(p.storage.interval)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
			_ = p.Snapshot()
		}
	}
}
