//go:build unix

// Package cputime reads the CPU time of the process, for benchmarks: on a machine shared
// with other work the wall time per op includes waiting for a core, and, of work that
// writes a file, waiting for the disk; the CPU time per op is what the cores spent.
package cputime

import (
	"syscall"
	"testing"
	"time"
)

// Process is the CPU time the process has used, user and system.
func Process(tb testing.TB) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		tb.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
