// Package follow follows one input (a file or a glob) like `tail -F` and hands
// complete lines to a handler, losing nothing that can be kept.
//
// # What it guarantees
//
//   - Rename+create rotation loses nothing: a file is identified by device and
//     inode and kept open, so a file that leaves its path (renamed, deleted, or
//     replaced behind a symlink) is read to its end, alongside its successor,
//     until it has been idle for Options.RotationGrace. A writer that keeps
//     writing the old file for a while (nginx until USR1) is followed there.
//     The lines of a path come in the order they were written: a successor
//     waits while the file it replaced has more to read.
//   - Files are discovered by a goroutine of their own, so a rotation that
//     happens while the handler blocks is still seen: the new file is opened
//     (its inode held) at once and read in full when the handler comes back.
//   - Truncation is detected before every read, by content and never by
//     timestamps: a file shorter than the read offset, or one whose last KiB
//     before the offset or whose first KiB differs from what was read there
//     (truncated and refilled, to any length), is read again from offset 0. A pass
//     that reads on past a buffer (a reader behind by more than one) checks the last KiB
//     before each further read's offset too: lines handed on meanwhile to a slow handler
//     leave time for a rewrite, whose new bytes would otherwise be read from the middle.
//     That KiB is read in the same syscall as the read it checks (preadv), so the check
//     costs a catch-up no syscall.
//     Timestamps cannot tell a rewrite from an append: Linux sets the mtime
//     at the start of a write(), before its bytes and the new size are
//     visible, so a look during a busy writer's write sees a newer mtime at
//     the old size, and with coarse timestamps the next look sees it again.
//     What content cannot see is not read again: a rewrite to exactly the
//     length read that leaves the first and the last KiB read as they were
//     (`echo x > f` with the same x each time, or a `touch`). A log's lines
//     carry their times, so such a rewrite repeats the very bytes it replaces.
//   - Only complete lines are delivered while a file may grow: a last line
//     without a newline is held until its newline comes, however long that
//     takes. Once no byte can complete it, it is handed on and counted as
//     any line (or as too long past the cap): when its file, having left its
//     path (renamed away or deleted), is closed after the grace period; when
//     its file is found truncated or rewritten under the read offset, as the
//     bytes that would have completed it are gone; and by ReadToEnd at the
//     end of each file. Stop hands it nothing: the file may go on. This is
//     what `tail -F` shows (it prints bytes as they come and keeps them on a
//     truncation), and it shows a line cut by a writer that died mid-line, or
//     read in part when a copytruncate came, as one malformed or unmatched
//     line rather than nothing. Lines longer than Options.MaxLineBytes are
//     skipped and counted; the reader holds one buffer of MaxLineBytes+1
//     bytes (at least 64 KiB) whatever the input.
//   - A glob's directories are looked at (one stat each) at every poll and
//     listed again only when their identity, mtime or ctime changed, or an
//     event named them; events make at most one scan per poll interval, so a
//     churn of directories costs what changed, not the whole tree per event.
//     A listing made within settleAfter of the directory's mtime is made
//     again, as a change in the same timestamp tick would not show.
//   - The poll (a scan, and a turn of the reader over every open file) comes
//     every PollInterval, but every quietPolls-th interval only while inotify
//     reports what it would find (Follower.covers): every directory watched, on
//     a local file system, every match reached through no symlink, nothing
//     waiting to be retried. A Write event has the reader look at the file
//     read under the path it names (nudge), or at every file when none is; a
//     file that left its path, one being judged or failing, is looked at every
//     interval; an overflow makes the next poll whole. Polling alone, a
//     directory without a watch and a network file system, whose other hosts'
//     writes inotify does not report, keep the poll at every interval.
//   - Files are read under the paths a glob matched. A symlink out of the
//     glob's root (the longest directory prefix without metacharacters), to
//     a file or a directory, is refused: counted and logged once, checked
//     again on the file the kernel opened (/proc/self/fd), so that a link
//     swapped in after the looks is refused too. A file several matches
//     reach is read once, under the match reached through no symlink, else
//     the one that sorts first. A path without a glob may be a symlink to
//     anywhere: it is the user's own.
//   - A directory a glob cannot list
//     (EACCES, EMFILE, ENFILE, EIO: anything but its absence, ENOENT or
//     ENOTDIR) is an error, counted and logged once until it can be listed
//     again, and changes nothing: its files stay open and are read on, and
//     none is taken for gone. A file has left its path only when a listing
//     that succeeded lacks it and a look at the path it was last seen at
//     confirms it (no file there, or another device and inode).
//   - No failure exits the process: inotify that cannot be set up (per-user
//     instance limit) falls back to polling; list, stat, open and read
//     failures are logged and counted once per episode and retried on every
//     scan. Options.Files bounds the files open, so that a glob of more files than
//     the process may open leaves the rest of it its descriptors: a file past the
//     bound waits for a place, counted once, and is opened by a later scan. It costs
//     a lock per open and close, nothing per line.
//
// With logrotate's copytruncate, lines not yet read when the truncation
// happens are lost: those written between the copy and the truncation (by
// design of that method, see logrotate(8)), plus the reader's lag, which is
// near zero with inotify and up to one PollInterval of writes without, and
// what a reader behind on the file (a burst, a slow handler) had not read yet. The
// truncation is detected and counted, and so are, in bytes, those the reader saw the
// file hold past its offset at its last look (tracked.seen), unless a copy of the file
// is read from there (copies.go), with a warning naming the file; what was written
// after that look cannot be measured from here. A
// follower resumed from positions taken before a copytruncate reads the copy from
// the position (position.go), so that only the first kind is lost then. A line written
// in part when the copy was made and finished after the truncation (a buffered writer
// flushes in the middle of lines) is handed on as two, its head at the copy's end and its
// rest opening the log: the log's first bytes may as well be the first line of a writer
// that began anew, its predecessor dead in the middle of a line, which joined to that
// line's head would be lost.
//
// # Why not nxadm/tail
//
// The project names github.com/nxadm/tail (v1.4.11, the latest) for tailing.
// Every part of it was weighed against the guarantees above, and none is used:
//
//   - tail.TailFile drops what it had not read from a rotated file when it
//     reopens the path (upstream #72, fix never merged): 614 to 3,643 lines lost
//     per rotation in our measurements. It sees a truncation only when a file
//     shrinks below the last size (`echo x > f` twenty times: 6-9 of 20 lost
//     with inotify, 19 of 20 with polling). MaxLineSize splits long lines but
//     does not bound memory (100 MiB without a newline: 319 MiB heap). Location
//     applies only to the first open. All measured on this project's machines.
//   - Its watch package, which could have served for change notification
//     only, calls util.Fatal (os.Exit(1)) inside its own goroutines when
//     fsnotify.NewWatcher fails (#53) and on any stat error other than "not
//     found" (EACCES, ELOOP, EIO). A probe of our own cannot prevent the
//     first: the library creates its own inotify instance later, and the
//     per-user limit is shared with every other process of the user. Its
//     inotify tracker is one per process and keyed by path, so a rotated file
//     and its successor at the same path cannot be watched at once, and
//     stopping one watch breaks another on the same path (#41). Its polling
//     watcher has the same os.Exit on stat errors and a process-global
//     interval.
//
// The watch package is a thin layer over github.com/fsnotify/fsnotify; this
// package uses fsnotify directly, one watcher per Follower on the directories
// involved (a directory watch also reports creations and renames, which a
// file watch cannot), with a periodic scan as the safety net and fallback.
//
// Linux only: identity comes from syscall.Stat_t.
package follow
