package follow

import "golang.org/x/sys/unix"

// zfsSuperMagic is ZFS on Linux's, which x/sys/unix does not name.
const zfsSuperMagic = 0x2fc12fc1

// localFS reports whether dir is on a file system whose changes inotify reports, all of
// them: a local one, where every write goes through this kernel. A network file system
// (NFS, SMB, CephFS, FUSE) reports only what this host does; one not known to be local is
// taken for such.
func localFS(dir string) bool {
	var s unix.Statfs_t
	if unix.Statfs(dir, &s) != nil {
		return false
	}
	switch uint32(s.Type) {
	case unix.EXT4_SUPER_MAGIC, unix.XFS_SUPER_MAGIC, unix.BTRFS_SUPER_MAGIC, unix.TMPFS_MAGIC,
		unix.OVERLAYFS_SUPER_MAGIC, unix.F2FS_SUPER_MAGIC, unix.BCACHEFS_SUPER_MAGIC, zfsSuperMagic:
		return true
	}
	return false
}
