//go:build !linux && !darwin

package server

import (
	"os"
	"time"
)

// changeTime is zero where the exporter does not read a file's ctime: its stamps are its
// modification time alone.
func changeTime(os.FileInfo) time.Time { return time.Time{} }
