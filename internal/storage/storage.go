// Package storage keeps the exporter's state across restarts in one snapshot file per
// directory: named sections of length-prefixed records, checksummed, written whole to a
// temporary file that is synced and renamed over the last snapshot, so that the snapshot
// on disk is always a complete one, old or new, whatever happens during a write.
//
// What the records hold is the caller's (series encoded by windows, followed files'
// positions); this package guarantees that Read returns exactly the records a Writer
// committed, or an error: ErrCorrupt, ErrVersion or ErrTooLarge for a snapshot to set aside
// (SetAside), fs.ErrNotExist when there is none.
//
// # Format
//
// All integers are uvarints unless said otherwise; CRCs are CRC-32C, 4 bytes little-endian.
//
//	file    = magic "LWSNAP\r\n" · version (4 bytes little-endian) · section* · end
//	section = 0x01 · name length · name · record* · 0x00 · CRC of the section from its 0x01
//	record  = length+1 · bytes
//	end     = 0x02 · number of sections · CRC of the whole file before it
//
// The version is read before anything else, so that a snapshot of another format is told
// apart from a corrupt one.
package storage

import (
	"bufio"
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"hash"
	"hash/crc32"
	"io"
	"io/fs"
	"iter"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/logwindow/logwindow_exporter/internal/filestat"
	"github.com/logwindow/logwindow_exporter/windows/wire"
)

// Version is the format this package writes and reads.
const Version = 1

// FileName is the snapshot's name in its directory.
const FileName = "snapshot"

// magic opens every snapshot; the line ending catches a copy that translated newlines.
const magic = "LWSNAP\r\n"

// Markers of the format.
const (
	markSection = 1
	markEnd     = 2
)

var (
	// ErrCorrupt is the error of a snapshot that is not one: truncated, altered, or not
	// written by this package. It is wire.ErrCorrupt, so that a record that does not decode
	// is corrupt too.
	ErrCorrupt = wire.ErrCorrupt
	// ErrVersion is the error of a snapshot of another format version.
	ErrVersion = errors.New("snapshot of another format version")
	// ErrTooLarge is the error of a snapshot over the size the caller allows.
	ErrTooLarge = errors.New("snapshot too large")
	// ErrNotSynced is in the error of a Commit that put the new snapshot in place but
	// could not sync its directory: the snapshot is written, and the next one replaces
	// it as any other, but the rename may not last a crash of the host (the last
	// snapshot, or none, would be found instead). It is not a failed snapshot.
	ErrNotSynced = errors.New("in place, but its directory could not be synced: it may not last a crash of the host")
)

// Hooks of tests: what a Writer's and a Spill's file is written through, and how a
// directory is synced. A full or failing disk is not at hand in a test (nor a small
// tmpfs); these fail as one does.
var (
	fileWriter    = func(f *os.File) io.Writer { return f }
	syncDirectory = (*os.File).Sync
)

// castagnoli is the CRC-32C table. crc32.MakeTable makes it once, at its first call, and
// returns that one table (whose pointer selects the fast CRC-32C) ever after; made in
// a package variable instead it would cost some 0.2 ms of CPU at start-up, which an
// exporter that keeps no state would pay for nothing.
func castagnoli() *crc32.Table { return crc32.MakeTable(crc32.Castagnoli) }

// tmpPrefix names the temporary files a Writer writes to.
const tmpPrefix = FileName + ".tmp-"

// Writer writes a snapshot to a temporary file in its directory; Commit puts it in place
// of the last one, Abort throws it away. It is not safe for concurrent use, and a
// directory has one writer at a time.
type Writer struct {
	dir  string
	path string // the snapshot's, once committed: dir/FileName
	f    *os.File
	w    *bufio.Writer
	file hash.Hash32 // CRC of the whole file so far
	sec  hash.Hash32 // CRC of the open section, nil when none is open
	n    int         // sections
	err  error
	buf  []byte
}

// Create starts a snapshot in dir, which must exist, and removes the temporary files
// that writes cut short (by a crash) left there.
func Create(dir string) (*Writer, error) {
	for _, p := range named(dir, tmpPrefix) {
		os.Remove(p)
	}
	path := filepath.Join(dir, FileName)
	f, err := os.CreateTemp(dir, tmpPrefix+"*")
	if err != nil {
		return nil, fmt.Errorf("snapshot %s: %w", path, err)
	}
	w := &Writer{dir: dir, path: path, f: f, w: bufio.NewWriterSize(fileWriter(f), 1<<16), file: crc32.New(castagnoli())}
	w.write(binary.LittleEndian.AppendUint32([]byte(magic), Version))
	return w, nil
}

// named returns the paths of the files in dir whose names begin with prefix. They are
// listed, not globbed: the directory's own name may hold glob characters, which would
// match another directory's files (the dir a[1] another's a1), or none at all (a[1).
func named(dir, prefix string) []string {
	entries, _ := os.ReadDir(dir)
	var paths []string
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), prefix) {
			paths = append(paths, filepath.Join(dir, e.Name()))
		}
	}
	return paths
}

// fail keeps err, of op on the temporary file, as the writer's error unless it has one,
// naming the snapshot and its temporary file: the error of a full disk (ENOSPC) says
// neither unless the file's own call made it a *fs.PathError.
func (w *Writer) fail(op string, err error) {
	if w.err == nil && err != nil {
		w.err = fmt.Errorf("snapshot %s: %w", w.path, onFile(op, w.f.Name(), err))
	}
}

// onFile returns err as a *fs.PathError of op on path, unless it is one of path already.
func onFile(op, path string, err error) error {
	if pe, ok := err.(*fs.PathError); ok && pe.Path == path {
		return err
	}
	return &fs.PathError{Op: op, Path: path, Err: err}
}

// write writes b to the file and the CRCs, remembering the first error.
func (w *Writer) write(b []byte) {
	if w.err != nil {
		return
	}
	if _, err := w.w.Write(b); err != nil {
		w.fail("write", err)
		return
	}
	w.file.Write(b)
	if w.sec != nil {
		w.sec.Write(b)
	}
}

// Section ends the section open, if any, and opens one named name: the records written
// next are its own. Names may repeat; Read returns sections in the order written.
func (w *Writer) Section(name string) error {
	w.endSection()
	w.sec = crc32.New(castagnoli())
	w.buf = wire.AppendBytes(append(w.buf[:0], markSection), []byte(name))
	w.write(w.buf)
	w.n++
	return w.err
}

// endSection closes the open section with its CRC.
func (w *Writer) endSection() {
	if w.sec == nil {
		return
	}
	w.write([]byte{0})
	sum := w.sec.Sum32()
	w.sec = nil
	w.write(binary.LittleEndian.AppendUint32(w.buf[:0], sum))
}

// Record writes one record into the open section; b is not retained.
func (w *Writer) Record(b []byte) error {
	w.recordHead(int64(len(b)))
	w.write(b)
	return w.err
}

// recordHead writes the length of a record of n bytes, which are to follow.
func (w *Writer) recordHead(n int64) {
	if w.err == nil && w.sec == nil {
		w.err = fmt.Errorf("snapshot %s: record outside a section", w.path)
	}
	w.write(wire.AppendUvarint(w.buf[:0], uint64(n)+1))
}

// Commit ends the snapshot and puts it in place of the last one: synced to disk, renamed
// to FileName, and the directory synced so that the rename lasts. On any error before
// the rename the last snapshot is left as it was and the temporary file is removed; the
// error names both files. One of the directory's sync, after the rename, wraps
// ErrNotSynced: the new snapshot is in place.
func (w *Writer) Commit() error {
	w.endSection()
	end := binary.AppendUvarint(append(w.buf[:0], markEnd), uint64(w.n))
	w.write(end)
	w.write(binary.LittleEndian.AppendUint32(w.buf[:0], w.file.Sum32()))
	if w.err == nil {
		w.fail("write", w.w.Flush())
	}
	if w.err == nil {
		w.fail("sync", w.f.Sync())
	}
	w.fail("close", w.f.Close())
	if w.err == nil {
		// A *os.LinkError, which names both files.
		if err := os.Rename(w.f.Name(), w.path); err != nil {
			w.err = fmt.Errorf("snapshot %s: %w", w.path, err)
		}
	}
	if w.err != nil {
		os.Remove(w.f.Name())
		return w.err
	}
	if err := syncDir(w.dir); err != nil {
		return fmt.Errorf("snapshot %s %w: %w", w.path, ErrNotSynced, err)
	}
	return nil
}

// Abort throws the snapshot away; the last one stays. It may follow Commit, to no effect.
func (w *Writer) Abort() {
	if w.err == nil {
		w.err = fmt.Errorf("snapshot %s: aborted", w.path)
	}
	w.f.Close()
	os.Remove(w.f.Name())
}

// syncDir syncs dir, so that a rename in it lasts a crash; its error names dir.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	if err := syncDirectory(d); err != nil {
		return onFile("sync", dir, err)
	}
	return nil
}

// Write writes a snapshot in dir with fill and commits it, or, if fill or the write
// fails, leaves the last one in place.
func Write(dir string, fill func(w *Writer) error) error {
	w, err := Create(dir)
	if err != nil {
		return err
	}
	if err := fill(w); err != nil {
		w.Abort()
		return err
	}
	return w.Commit()
}

// Spill keeps the records of a snapshot being taken in a file of the snapshot's directory
// rather than in memory, until a Writer copies them into the snapshot (Writer.Spilled):
// the records are encoded while the state changes, and only once they are all taken is
// the snapshot's order known, so they are held somewhere meanwhile; in memory they would
// take about as much again as the series they encode. The file is removed as soon as it
// is made (where the system lets an open file be removed), so that a crash leaves none,
// and the page cache holds it until Close: a spill lives shorter than the kernel keeps
// dirty pages before writing them, so it mostly never reaches the disk. It is not safe
// for concurrent use.
type Spill struct {
	path string // the snapshot's the spill is for: dir/FileName
	f    *os.File
	w    *bufio.Writer
	size int64 // bytes added
	// r reads the file from pos on, for Spilled.
	r   *bufio.Reader
	pos int64
	err error
}

// Span is where one record is in a Spill.
type Span struct{ off, n int64 }

// Len is the record's length in bytes.
func (s Span) Len() int64 { return s.n }

// spillBuffer is the size of a Spill's buffers, and of the largest gap Spilled reads
// through rather than seeking over.
const spillBuffer = 1 << 16

// NewSpill makes a Spill in dir, which must exist.
func NewSpill(dir string) (*Spill, error) {
	path := filepath.Join(dir, FileName)
	f, err := os.CreateTemp(dir, tmpPrefix+"*")
	if err != nil {
		return nil, fmt.Errorf("snapshot %s: spill: %w", path, err)
	}
	// A system that does not remove an open file leaves it to Close, or to the next
	// Create after a crash.
	_ = os.Remove(f.Name())
	return &Spill{path: path, f: f, w: bufio.NewWriterSize(fileWriter(f), spillBuffer)}, nil
}

// wrap returns err, of op on the spill's file, naming the snapshot and that file (removed
// as it was made, but the one whose disk filled).
func (s *Spill) wrap(op string, err error) error {
	return fmt.Errorf("snapshot %s: spill: %w", s.path, onFile(op, s.f.Name(), err))
}

// Add writes rec to the spill and returns where it is; rec is not retained.
func (s *Spill) Add(rec []byte) (Span, error) {
	if s.err == nil {
		if _, err := s.w.Write(rec); err != nil {
			s.err = s.wrap("write", err)
		}
	}
	if s.err != nil {
		return Span{}, s.err
	}
	span := Span{s.size, int64(len(rec))}
	s.size += span.n
	return span, nil
}

// Close removes the spill; the Spans of it are no longer to be written.
func (s *Spill) Close() error {
	err := s.f.Close()
	if rerr := os.Remove(s.f.Name()); !errors.Is(rerr, fs.ErrNotExist) {
		err = cmp.Or(err, rerr)
	}
	return err
}

// Spilled writes, as records of the open section, those of sp at spans, in their order,
// a buffer at a time: spans in the order they were added read the file once, from start
// to end.
func (w *Writer) Spilled(sp *Spill, spans []Span) error {
	if w.err == nil && sp.err == nil {
		if err := sp.w.Flush(); err != nil {
			sp.err = sp.wrap("write", err)
		}
	}
	if w.err == nil && sp.err != nil {
		w.err = sp.err
	}
	for _, span := range spans {
		if w.err != nil {
			break
		}
		if span.off < sp.pos || span.off-sp.pos > spillBuffer || sp.r == nil {
			from := io.NewSectionReader(sp.f, span.off, sp.size-span.off)
			if sp.r == nil {
				sp.r = bufio.NewReaderSize(from, spillBuffer)
			} else {
				sp.r.Reset(from)
			}
			sp.pos = span.off
		}
		if _, err := sp.r.Discard(int(span.off - sp.pos)); err != nil {
			w.err = sp.wrap("read", err)
			break
		}
		sp.pos = span.off
		w.recordHead(span.n)
		for left := span.n; left > 0 && w.err == nil; {
			b, err := sp.r.Peek(int(min(left, spillBuffer)))
			if err != nil {
				w.err = sp.wrap("read", err)
				break
			}
			w.write(b)
			sp.r.Discard(len(b))
			left -= int64(len(b))
			sp.pos += int64(len(b))
		}
	}
	return w.err
}

// Snapshot is a snapshot read and checked whole.
type Snapshot struct {
	Sections []Section
	// Written is when Read's file was last written (its modification time), about when
	// its state was taken; zero for Parse's.
	Written time.Time
}

// Section is one section of a snapshot.
type Section struct {
	Name string
	// records as framed in the file, checked.
	records []byte
}

// Records yields the section's records in the order written; they alias the snapshot.
func (s Section) Records() iter.Seq[[]byte] {
	return func(yield func([]byte) bool) {
		r := wire.NewReader(s.records)
		for r.Len() > 0 {
			if !yield(r.Bytes(int(r.Uvarint() - 1))) {
				return
			}
		}
	}
}

// Section returns the first section named name.
func (s *Snapshot) Section(name string) (Section, bool) {
	i := slices.IndexFunc(s.Sections, func(s Section) bool { return s.Name == name })
	if i < 0 {
		return Section{}, false
	}
	return s.Sections[i], true
}

// Read reads the snapshot in dir and checks it whole, refusing one of more than most
// bytes with ErrTooLarge before reading it, and one that is not a regular file (a FIFO,
// a device, a directory) as ErrCorrupt. A directory without one gives an error wrapping
// fs.ErrNotExist.
func Read(dir string, most int64) (*Snapshot, error) {
	// Without O_NONBLOCK the open of a FIFO would wait for a writer, and the start with it.
	f, err := os.OpenFile(filepath.Join(dir, FileName), os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, fmt.Errorf("snapshot: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("snapshot: %w", err)
	} else if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%w: %s is not a regular file but %s", ErrCorrupt, f.Name(), filestat.TypeName(fi.Mode()))
	} else if fi.Size() > most {
		return nil, fmt.Errorf("%w: %d bytes, at most %d", ErrTooLarge, fi.Size(), most)
	}
	// One byte past most tells a file that grew since its stat; most may be MaxInt64.
	b, err := io.ReadAll(io.LimitReader(f, most+min(1, math.MaxInt64-most)))
	switch {
	case err != nil:
		return nil, fmt.Errorf("snapshot: %w", err)
	case int64(len(b)) > most:
		return nil, fmt.Errorf("%w: over %d bytes", ErrTooLarge, most)
	}
	snap, err := Parse(b)
	if err != nil {
		return nil, err
	}
	snap.Written = fi.ModTime()
	return snap, nil
}

// Parse checks a snapshot's bytes whole and returns its sections, which alias b.
func Parse(b []byte) (*Snapshot, error) {
	if len(b) < len(magic) || string(b[:len(magic)]) != magic {
		return nil, fmt.Errorf("%w: not a snapshot", ErrCorrupt)
	}
	r := wire.NewReader(b[len(magic):])
	if v := r.Uint32(); r.Err() == nil && v != Version {
		return nil, fmt.Errorf("%w: version %d, this reads %d", ErrVersion, v, Version)
	}
	snap := &Snapshot{}
	for {
		start := len(b) - r.Len()
		switch mark := r.Byte(); mark {
		case markSection:
			name := r.Prefixed()
			from := len(b) - r.Len()
			for r.Err() == nil {
				n := r.Uvarint()
				if n == 0 {
					break
				}
				r.Bytes(int(min(n-1, uint64(r.Len()+1))))
			}
			to := len(b) - r.Len() - 1
			if sum := r.Uint32(); r.Err() == nil && sum != crc32.Checksum(b[start:to+1], castagnoli()) {
				r.Failf("section %q: checksum", name)
			}
			if r.Err() != nil {
				return nil, fmt.Errorf("snapshot: %w", r.Err())
			}
			snap.Sections = append(snap.Sections, Section{Name: string(name), records: b[from:to]})
		case markEnd:
			n := r.Uvarint()
			end := len(b) - r.Len()
			sum := r.Uint32()
			switch {
			case r.Done() != nil:
			case n != uint64(len(snap.Sections)):
				r.Failf("%d sections, %d written", len(snap.Sections), n)
			case sum != crc32.Checksum(b[:end], castagnoli()):
				r.Failf("checksum")
			}
			if r.Err() != nil {
				return nil, fmt.Errorf("snapshot: %w", r.Err())
			}
			return snap, nil
		default:
			r.Failf("marker %d at %d", mark, start)
			return nil, fmt.Errorf("snapshot: %w", r.Err())
		}
	}
}

// badPrefix names the snapshots set aside; keepBad of them are kept, the newest. Three
// bound the disk a crash loop that sets one aside at every start can take to three
// snapshots besides the live one (each within the size bound Read was given), while
// keeping the first of a series of failures, for a person to read, for two more.
const (
	badPrefix = FileName + ".bad-"
	keepBad   = 3
)

// setAside is a snapshot set aside, by its name: snapshot.bad-<n>-<Unix seconds>, n
// counting the set-asides of the directory, or snapshot.bad-<Unix seconds> as earlier
// builds named them (n 0).
type setAside struct {
	name  string
	n, at int64
}

// fileName is the name SetAside gives b, or an earlier build gave it (n 0).
func (b setAside) fileName() string {
	if b.n == 0 {
		return badPrefix + strconv.FormatInt(b.at, 10)
	}
	return badPrefix + strconv.FormatInt(b.n, 10) + "-" + strconv.FormatInt(b.at, 10)
}

// parseSetAside reads the name of a snapshot set aside; ok is false for another file's,
// among them any name SetAside would not write, though its numbers read the same
// (snapshot.bad-01-5, snapshot.bad-+1-5): the set-asides are removed, other files are not.
func parseSetAside(name string) (b setAside, ok bool) {
	rest, ok := strings.CutPrefix(name, badPrefix)
	if !ok {
		return setAside{}, false
	}
	if at, err := strconv.ParseInt(rest, 10, 64); err == nil {
		b = setAside{name: name, at: at}
	} else {
		first, second, _ := strings.Cut(rest, "-")
		n, err := strconv.ParseInt(first, 10, 64)
		// A number one more of which would not be one is no set-aside's: SetAside counts on.
		if err != nil || n <= 0 || n == math.MaxInt64 {
			return setAside{}, false
		}
		if b.at, err = strconv.ParseInt(second, 10, 64); err != nil {
			return setAside{}, false
		}
		b.name, b.n = name, n
	}
	return b, b.fileName() == name
}

// SetAside renames the snapshot in dir, one Read refused, to snapshot.bad-<n>-<now, Unix
// seconds>, so that the next start does not read it again but a person can, and removes
// the oldest so set aside beyond the newest three. n is one more than that of the newest
// set aside before: names are not reused within a second (a crash loop), and which are
// the newest does not depend on the clock, which may have been set back since. It returns
// the new name.
func SetAside(dir string, now time.Time) (string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return "", fmt.Errorf("snapshot: set aside: %w", err)
	}
	var bads []setAside
	for _, e := range entries {
		if b, ok := parseSetAside(e.Name()); ok {
			bads = append(bads, b)
		}
	}
	newest := setAside{n: 1, at: now.Unix()}
	for _, b := range bads {
		newest.n = max(newest.n, b.n+1)
	}
	newest.name = newest.fileName()
	to := filepath.Join(dir, newest.name)
	if err := os.Rename(filepath.Join(dir, FileName), to); err != nil {
		return "", fmt.Errorf("snapshot: set aside: %w", err)
	}
	bads = append(bads, newest)
	slices.SortFunc(bads, func(a, b setAside) int { return cmp.Or(cmp.Compare(b.n, a.n), cmp.Compare(b.at, a.at)) })
	for _, b := range bads[min(keepBad, len(bads)):] {
		if err := os.Remove(filepath.Join(dir, b.name)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return to, fmt.Errorf("snapshot: set aside: %w", err)
		}
	}
	return to, nil
}
