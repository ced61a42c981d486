package await

import (
	"bytes"
	"runtime"
)

// Stacks returns the stack trace of every goroutine, one each, its first line the
// goroutine's state ("goroutine 7 [chan receive]:"): a test tells by them that a call
// waits (is blocked in a function) rather than that it has not run yet.
func Stacks() [][]byte {
	buf := make([]byte, 1<<16)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	return bytes.Split(buf, []byte("\n\n"))
}
