package syslog

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"math"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// afterBind runs between binding the socket and setting its mode; a test sets it to play
// the neighbour who swaps files in the socket's directory at that moment.
var afterBind = func(path string) {}

// boundName is the socket's name in its private directory: short, so that the path it is
// bound through always fits a socket address.
const boundName = "s"

// bindUnix creates the unix datagram socket at path with mode so that nothing another
// local user does in path's directory meanwhile (one writable by all without the sticky
// bit, as a Kubernetes emptyDir is) changes any file but path's own entry.
//
// No name in that directory is looked up after the socket exists: it is bound in a new
// directory of ours beside path (0700: no one else can add to it), reached through that
// directory's descriptor (/proc/self/fd/N/s), its mode is set there by descriptor, and
// renameat(2) moves it to path, replacing a stale socket, or whatever has appeared there,
// without following it. Each shorter way leaves a hole (tried on Linux 6.18):
//   - chmod(path) after bind follows a symlink swapped in between;
//   - fchmod of the socket's descriptor succeeds but changes the socket's own inode, not
//     the file bind made, which keeps bind's mode;
//   - fchmodat(AT_SYMLINK_NOFOLLOW) fails with EOPNOTSUPP before fchmodat2 (Linux 6.6),
//     and would still change another file hard-linked in where fs.protected_hardlinks is 0;
//   - a umask set around bind is the whole process's: files other goroutines create
//     meanwhile get it too;
//   - binding through the private directory's path would let someone who renames it and
//     puts a symlink in its place have the socket created in any directory.
func bindUnix(path string, mode fs.FileMode, log *slog.Logger) (*net.UnixConn, fileID, error) {
	if err := checkStale(path); err != nil {
		return nil, fileID{}, err
	}
	parent, base := filepath.Dir(path), filepath.Base(path)
	pfd, err := unix.Open(parent, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fileID{}, &fs.PathError{Op: "open", Path: parent, Err: err}
	}
	defer unix.Close(pfd)
	private, err := os.MkdirTemp(parent, "."+base+".")
	if err != nil {
		return nil, fileID{}, err
	}
	name := filepath.Base(private)
	defer func() {
		// By name, so it may be a directory someone swapped in; rmdir removes only an empty
		// one, which they could remove as well.
		if err := unix.Unlinkat(pfd, name, unix.AT_REMOVEDIR); err != nil {
			log.Warn("removing the socket's temporary directory", "path", private, "err", err)
		}
	}()
	dfd, err := openPrivate(pfd, name)
	if err != nil {
		return nil, fileID{}, fmt.Errorf("creating the socket %s: %s: %w", path, private, err)
	}
	defer unix.Close(dfd)
	c, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: fmt.Sprintf("/proc/self/fd/%d/%s", dfd, boundName), Net: "unixgram"})
	if errors.Is(err, unix.ENOENT) {
		return nil, fileID{}, fmt.Errorf("creating the socket %s needs /proc mounted: %w", path, err)
	}
	if err != nil {
		return nil, fileID{}, fmt.Errorf("creating the socket %s: %w", path, err)
	}
	afterBind(path)
	id, err := place(dfd, pfd, base, mode)
	if err != nil {
		c.Close()
		unix.Unlinkat(dfd, boundName, 0)
		return nil, fileID{}, fmt.Errorf("creating the socket %s: %w", path, err)
	}
	return c, id, nil
}

// CheckUnixPath tells what would keep the socket from being created at path, without
// creating anything or looking beyond path and its directory: the directory missing, not
// a directory, or not one this process may add entries to (bindUnix makes its private
// directory there and renames the socket into it), or a file at path that is not a
// socket. A live socket at path is not reported: the exporter being checked may hold it,
// and a start beside it would be refused by its own bind. What only binding tells (a
// socket another process starts on the path meanwhile, a full file system, a security
// module's refusal) it cannot.
func CheckUnixPath(path string) error {
	parent := filepath.Dir(path)
	fi, err := os.Stat(parent)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("the socket's directory %s does not exist", parent)
	case err != nil:
		return fmt.Errorf("the socket's directory: %w", err)
	case !fi.IsDir():
		return fmt.Errorf("the socket's directory %s is not a directory", parent)
	}
	// As the effective user (AT_EACCESS), which makes the socket; a read-only mount is
	// EROFS.
	if err := unix.Faccessat(unix.AT_FDCWD, parent, unix.W_OK|unix.X_OK, unix.AT_EACCESS); err != nil {
		return fmt.Errorf("the socket's directory %s is not one this user (uid %d) may create files in: %w", parent, os.Geteuid(), err)
	}
	fi, err = os.Lstat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil
	case err != nil:
		return err
	case fi.Mode().Type() != fs.ModeSocket:
		return fmt.Errorf("%s exists and is not a socket; refusing to replace it", path)
	}
	return nil
}

// openPrivate opens the directory just made, refusing one swapped in for it that is not
// the exporter's alone: anyone may rename the entries of a directory writable by all.
func openPrivate(pfd int, name string) (int, error) {
	dfd, err := unix.Openat(pfd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, err
	}
	var st unix.Stat_t
	if err := unix.Fstat(dfd, &st); err != nil {
		unix.Close(dfd)
		return -1, err
	}
	if int(st.Uid) != os.Geteuid() || st.Mode&0o077 != 0 {
		unix.Close(dfd)
		return -1, errors.New("replaced by a directory open to others while in use")
	}
	return dfd, nil
}

// place sets the bound socket's mode and moves it from the private directory dfd to base
// in pfd, returning the identity of the file now at base.
func place(dfd, pfd int, base string, mode fs.FileMode) (fileID, error) {
	// bind applied the umask; the mode asked for is set whatever the umask.
	if err := unix.Fchmodat(dfd, boundName, uint32(mode.Perm()), 0); err != nil {
		return fileID{}, err
	}
	var st unix.Stat_t
	if err := unix.Fstatat(dfd, boundName, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return fileID{}, err
	}
	if err := unix.Renameat(dfd, boundName, pfd, base); err != nil {
		return fileID{}, err
	}
	return fileID{dev: uint64(st.Dev), ino: uint64(st.Ino)}, nil
}

// checkStale makes sure the socket may take path: nothing is there, or a socket no one
// receives on (what a crashed exporter leaves). A live socket or any other file is
// refused, so a wrong path never deletes anyone's data. Nothing is removed here: the
// rename that puts the new socket in place replaces a stale one. The liveness probe goes
// through a descriptor of the very entry looked at, so a symlink swapped in after the look
// is not followed.
func checkStale(path string) error {
	fd, err := unix.Open(path, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if errors.Is(err, unix.ENOENT) {
		return nil
	}
	if err != nil {
		return &fs.PathError{Op: "open", Path: path, Err: err}
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return &fs.PathError{Op: "stat", Path: path, Err: err}
	}
	if st.Mode&unix.S_IFMT != unix.S_IFSOCK {
		return fmt.Errorf("%s exists and is not a socket; refusing to replace it", path)
	}
	c, err := net.Dial("unixgram", fmt.Sprintf("/proc/self/fd/%d", fd))
	if err == nil {
		c.Close()
		return fmt.Errorf("%s is in use by another process", path)
	}
	switch {
	case errors.Is(err, unix.EPROTOTYPE):
		// A live stream or seqpacket socket: another service's, a path mistaken.
		return fmt.Errorf("%s is another process's socket, not a datagram one", path)
	case !errors.Is(err, unix.ECONNREFUSED):
		return fmt.Errorf("%s: checking the existing socket: %w", path, err)
	}
	return nil
}

// maxUnixDatagram is the longest unix datagram a sender without CAP_NET_ADMIN can send:
// the kernel refuses (EMSGSIZE) one longer than the sender's send buffer less 32 bytes, and
// that buffer is net.core.wmem_default until the sender sets it, to at most twice
// net.core.wmem_max. A privileged sender may force a larger buffer; its longer datagrams are
// counted as too long. When the limits cannot be read, the line cap alone bounds the read.
func maxUnixDatagram() int {
	dflt, err1 := readSysctl("/proc/sys/net/core/wmem_default")
	most, err2 := readSysctl("/proc/sys/net/core/wmem_max")
	if err1 != nil || err2 != nil {
		return math.MaxInt - 1
	}
	return max(dflt, 2*most) - 32
}

func readSysctl(path string) (int, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err == nil && (n <= 32 || n > math.MaxInt32) {
		err = fmt.Errorf("%s: %d is out of range", path, n)
	}
	return n, err
}
