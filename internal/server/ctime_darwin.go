package server

import (
	"os"
	"syscall"
	"time"
)

// changeTime is when the file of info last changed, its contents or its metadata (ctime),
// which no program can set back; zero when info does not say. darwin names it Ctimespec.
func changeTime(info os.FileInfo) time.Time {
	st, ok := info.Sys().(*syscall.Stat_t)
	if !ok {
		return time.Time{}
	}
	return time.Unix(st.Ctimespec.Unix())
}
