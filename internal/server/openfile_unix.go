//go:build unix

package server

import (
	"os"
	"syscall"
)

// openNoWait opens path for reading without waiting for a FIFO's writer, which opening
// it otherwise does: the file is looked at as opened, and refused, before it is read.
func openNoWait(path string) (*os.File, error) {
	return os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
}
