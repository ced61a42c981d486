//go:build !linux

package asother

import (
	"errors"
	"os"
)

// run runs f where the tests do not run as root; as root, whom any mode lets through,
// it cannot change the user of one thread alone.
func run(f func()) error {
	if os.Geteuid() == 0 {
		return errors.New("tests run as root: another user's access needs Linux's setfsuid")
	}
	f()
	return nil
}
