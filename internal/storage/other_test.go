//go:build !unix

package storage

import "errors"

func mkfifo(string) error { return errors.New("no FIFOs here") }
