package filestat

import (
	"os"
	"syscall"
)

// ChangeTime is when the file of fi last changed, its contents or its metadata (ctime), in
// Unix nanoseconds: unlike the modification time, no program can set it back. ok is false
// where fi does not say. darwin names it Ctimespec.
func ChangeTime(fi os.FileInfo) (ns int64, ok bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, false
	}
	return st.Ctimespec.Nano(), true
}
