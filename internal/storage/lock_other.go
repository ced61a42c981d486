//go:build !unix

package storage

import "os"

// noFollow is 0 where O_NOFOLLOW does not exist.
const noFollow = 0

// lockFile does nothing where flock does not exist: the directory is not guarded.
func lockFile(*os.File) error { return nil }

// lockDir does nothing where flock does not exist.
func lockDir(string, bool) (func(), error) { return func() {}, nil }
