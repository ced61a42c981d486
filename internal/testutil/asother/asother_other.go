//go:build !linux

package asother

import (
	"errors"
	"os"
)

// Other is the user and group whose file access Run's code has where the tests run as
// root: nobody's.
const Other = 65534

// run runs f where the tests do not run as root; as root, whom any mode lets through,
// it cannot change the user of one thread alone.
func run(f func()) error {
	if os.Geteuid() == 0 {
		return errors.New("tests run as root: another user's access needs Linux's setfsuid")
	}
	f()
	return nil
}
