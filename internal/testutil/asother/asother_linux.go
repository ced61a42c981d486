package asother

import (
	"fmt"
	"os"
	"runtime"
	"syscall"
)

// run runs f on a thread whose file-system user and group are Other's when the process's
// are root's. setfsuid changes the calling thread alone; the thread is locked to f's
// goroutine and ended with it (runtime.LockOSThread without an unlock), so that no
// other goroutine ever runs on it. Leaving root's file-system user drops the thread's
// CAP_DAC_OVERRIDE, which let root open any file whatever its mode.
func run(f func()) error {
	runtime.LockOSThread()
	if os.Geteuid() == 0 {
		// Each returns the thread's previous id, never an error: the second call of each
		// tells whether the first took.
		for _, call := range []uintptr{syscall.SYS_SETFSGID, syscall.SYS_SETFSUID} {
			syscall.RawSyscall(call, Other, 0, 0)
			if now, _, _ := syscall.RawSyscall(call, Other, 0, 0); now != Other {
				return fmt.Errorf("setfs*id(%d) left %d", Other, now)
			}
		}
	}
	f()
	return nil
}
