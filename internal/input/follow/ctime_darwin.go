package follow

import "syscall"

// ctimeOf is the file's status change time in nanoseconds: darwin names it Ctimespec.
func ctimeOf(st *syscall.Stat_t) int64 { return st.Ctimespec.Nano() }
