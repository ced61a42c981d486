//go:build !unix

package storage

import "os"

// lockFile does nothing where flock does not exist: the directory is not guarded.
func lockFile(*os.File) error { return nil }

// lockDir does nothing where flock does not exist.
func lockDir(string) (func(), error) { return func() {}, nil }
