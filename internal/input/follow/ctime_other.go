//go:build !darwin

package follow

import "syscall"

// ctimeOf is the file's status change time in nanoseconds.
func ctimeOf(st *syscall.Stat_t) int64 { return st.Ctim.Nano() }
