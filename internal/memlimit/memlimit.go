// Package memlimit derives the exporter's memory bound from the container it runs in: a
// process held to a bound larger than its cgroup's limit is killed by the kernel before
// the bound folds a single label set, so with no bound given the cgroup's limit decides.
package memlimit

import (
	"errors"
	"fmt"
	"io/fs"
	"math"
	"path"
	"strconv"
	"strings"
)

// Default is the bound when none is given and no cgroup limit is found.
const Default = 512 << 20

// noLimit is where a cgroup v1 limit means none (see parseLimit).
const noLimit = 1 << 62

// pageSlack is more than the page size of any kernel, by which the limit a cgroup shows
// may be under the one it was given (see Bound.CheckUserLimit).
const pageSlack = 1 << 20

// Source says where a bound came from, as the self-metric and the log name it.
type Source string

// The sources of a bound.
const (
	Flag     Source = "flag"      // --series.max-bytes
	CgroupV2 Source = "cgroup_v2" // memory.max of the process's cgroup (v2)
	CgroupV1 Source = "cgroup_v1" // memory.limit_in_bytes of its memory cgroup (v1)
	Fallback Source = "default"   // no limit found: Default
)

// Bound is the memory bound chosen and what the Go runtime's soft limit is set to.
type Bound struct {
	// Bytes bounds the series and sketches (--series.max-bytes); 0 is none.
	Bytes int64
	// SoftLimit is for debug.SetMemoryLimit: above what the series hold, room for the
	// garbage the collector lets grow, and below a container's limit; 0 leaves it alone.
	SoftLimit int64
	// Limit is the container's memory limit, whether or not the bound came from it (see
	// CheckFlag, CheckUserLimit); 0 when none was found.
	Limit  int64
	Source Source
}

// Choose returns the bound: flagBytes when the flag was given (set), else half the memory
// limit of the cgroup the process is in as fsys (the root of the machine's file system)
// shows it, the lowest of its and its parents' (a parent's, which other cgroups share,
// at most Default), else Default. The limit is read with the flag too, only to be checked
// against. An error reading the cgroup is returned with the flag's bound or the Default
// one, for the caller to log: a process that cannot read its cgroup still starts.
func Choose(fsys fs.FS, flagBytes int64, set bool) (Bound, error) {
	limit, own, src, err := cgroupLimit(fsys)
	if set {
		// 1.5 times the bound, short of overflowing.
		b := Bound{Bytes: flagBytes, SoftLimit: flagBytes + min(flagBytes/2, math.MaxInt64-flagBytes), Source: Flag}
		if err == nil {
			b.Limit = limit
		}
		return b, err
	}
	if err != nil || limit == 0 {
		return Bound{Bytes: Default, SoftLimit: Default / 2 * 3, Source: Fallback}, err
	}
	// Half for the series; the runtime's soft limit at three quarters leaves the last
	// quarter for what the bound does not count (buffers of scrapes in flight, stacks,
	// the runtime itself) before the kernel's limit.
	b := Bound{Bytes: limit / 2, SoftLimit: limit / 4 * 3, Limit: limit, Source: src}
	if !own {
		// A parent's limit is shared by every cgroup under it (kubepods.slice's is the
		// node's memory for all its pods): it may lower the default, never raise it.
		b.Bytes, b.SoftLimit = min(b.Bytes, Default), min(b.SoftLimit, Default/2*3)
	}
	return b, nil
}

// CheckFlag says what is wrong with a bound given by --series.max-bytes at or above the
// container's limit: the kernel kills the process before the bound folds a single label
// set. nil for one under it, for none (0), and for a bound not from the flag.
func (b Bound) CheckFlag() error {
	if b.Source == Flag && b.Limit > 0 && b.Bytes >= b.Limit {
		return fmt.Errorf("--series.max-bytes=%d is at or above the container's memory limit %d: the kernel kills the process before the bound folds any label set; set it well under the limit (half of it is the default) or leave it out", b.Bytes, b.Limit)
	}
	return nil
}

// CheckSoftLimit says what is wrong with a bound given by --series.max-bytes under the
// container's limit whose soft limit, 1.5 times it, is above the limit: the runtime lets
// the heap grow past what the kernel allows before it collects harder, so the process is
// killed where a bound of the default's share would have been held. nil otherwise; a bound
// at or above the limit is CheckFlag's. Only a soft limit the exporter sets is concerned:
// not the user's GOMEMLIMIT.
func (b Bound) CheckSoftLimit() error {
	if b.Source == Flag && b.Limit > 0 && b.Bytes < b.Limit && b.SoftLimit > b.Limit {
		return fmt.Errorf("--series.max-bytes=%d sets the Go runtime's soft memory limit to %d (1.5 times it), above the container's memory limit %d: the kernel kills the process before the runtime collects for it; set the flag to at most two thirds of the limit (half of it is the default), or GOMEMLIMIT under the limit", b.Bytes, b.SoftLimit, b.Limit)
	}
	return nil
}

// CheckUserLimit says what is wrong, for the bound b, with a soft memory limit the user
// set through GOMEMLIMIT (limit as the runtime read it, math.MaxInt64 for off): under the
// series' bound, the garbage collector runs almost without pause once the series fill it
// (up to half the CPU, the runtime's cap); above the container's limit, the kernel kills
// the process before the runtime collects for it. nil when neither, and for off, which
// the user chose as none. The kernel keeps a limit rounded down to its pages, so one that
// GOMEMLIMIT repeats (a Kubernetes resourceFieldRef of limits.memory: 1G is 1000000000,
// read back as 999997440) is above what the cgroup shows by less than a page: less than
// pageSlack above it is the limit itself, not past it.
func (b Bound) CheckUserLimit(limit int64) error {
	switch {
	case limit == math.MaxInt64:
		return nil
	case b.Bytes > 0 && limit < b.Bytes:
		// Often meant as the process's cap: how to keep it is said first.
		return fmt.Errorf("GOMEMLIMIT=%d is under --series.max-bytes=%d (from %s): once the series hold it, the garbage collector runs without pause; to keep GOMEMLIMIT, set --series.max-bytes=%d (two thirds of it) or less, else raise GOMEMLIMIT to 1.5 times the bound or unset it", limit, b.Bytes, b.Source, limit/3*2)
	case b.Limit > 0 && limit-b.Limit >= pageSlack:
		return fmt.Errorf("GOMEMLIMIT=%d is above the container's memory limit %d: the kernel kills the process before the runtime collects for it; lower GOMEMLIMIT or unset it", limit, b.Limit)
	}
	return nil
}

// cgroupLimit reads the memory limit of the process's own cgroup (the lowest of its and its
// parents', see readLimit), own when it is the cgroup's and not a parent's: /proc/self/cgroup
// names it, v2 (one "0::/path" line) or v1 (a line whose controllers include memory). A
// limit of "max" (v2) or one no machine has (v1's 2^63 rounded to pages) is none: 0.
func cgroupLimit(fsys fs.FS) (limit int64, own bool, src Source, err error) {
	b, err := fs.ReadFile(fsys, "proc/self/cgroup")
	if errors.Is(err, fs.ErrNotExist) {
		return 0, false, Fallback, nil // not Linux
	}
	if err != nil {
		return 0, false, Fallback, err
	}
	// A hybrid machine lists both: its memory controller is v1's, the v2 line names a
	// hierarchy without one.
	v2, found2 := "", false
	for line := range strings.SplitSeq(strings.TrimSpace(string(b)), "\n") {
		id, rest, ok1 := strings.Cut(line, ":")
		ctrls, cgroup, ok2 := strings.Cut(rest, ":")
		if !ok1 || !ok2 {
			continue
		}
		if id == "0" && ctrls == "" {
			v2, found2 = cgroup, true
			continue
		}
		for c := range strings.SplitSeq(ctrls, ",") {
			if c == "memory" {
				return readLimit(fsys, "sys/fs/cgroup/memory", cgroup, "memory.limit_in_bytes", CgroupV1)
			}
		}
	}
	if found2 {
		return readLimit(fsys, "sys/fs/cgroup", v2, "memory.max", CgroupV2)
	}
	return 0, false, Fallback, nil
}

// readLimit reads the limit in file of the cgroup at path under mount and of each of its
// parents up to the mount's top, and returns the lowest: the kernel holds a cgroup to its
// parents' limits too, so a service whose own limit is "max" in a slice limited to 256 MiB
// is killed at 256 MiB. Inside a container whose cgroup namespace makes its own cgroup the
// root, /proc/self/cgroup says "/" while the limit sits at the mount's top; a path that
// leaves the mount (outside the namespace's root) is read at the top alone. A cgroup
// without the file (the root's, or one the mount does not show) has no limit, as has a
// parent whose file cannot be read; garbage in any of them is an error. own is whether the
// lowest is the cgroup's own: that of the first directory with the file, as a container's
// own cgroup may be shown at the mount's top alone.
func readLimit(fsys fs.FS, mount, cgroup, file string, src Source) (lowest int64, own bool, _ Source, _ error) {
	first := true
	for i, dir := range cgroupDirs(mount, cgroup) {
		b, err := fs.ReadFile(fsys, path.Join(dir, file))
		// A parent the process may not read is one the mount does not show, as for a
		// rootless container: its own cgroup's limit still counts.
		if errors.Is(err, fs.ErrNotExist) || i > 0 && errors.Is(err, fs.ErrPermission) {
			continue
		}
		if err != nil {
			return 0, false, src, err
		}
		n, err := parseLimit(string(b))
		if err != nil {
			return 0, false, src, fmt.Errorf("/%s: %w", path.Join(dir, file), err)
		}
		if n > 0 && (lowest == 0 || n < lowest) {
			lowest, own = n, first
		}
		first = false
	}
	return lowest, own, src, nil
}

// cgroupDirs lists the directories of the cgroup at path under mount and of its parents,
// the mount's top last, leaving out those outside the mount.
func cgroupDirs(mount, cgroup string) []string {
	var dirs []string
	for d := path.Join(mount, cgroup); d != mount && strings.HasPrefix(d, mount+"/"); d = path.Dir(d) {
		dirs = append(dirs, d)
	}
	return append(dirs, mount)
}

// parseLimit reads a memory limit file's content: a number of bytes, or no limit (0) for
// v2's "max" and for v1's 2^63 rounded down to pages. The kernel rounds it to its own page
// size (4 KiB, but 64 KiB on many arm64 and ppc64le kernels), so any limit from 2^62
// (4 EiB, which no machine has) is taken for none rather than for a bound of exbibytes.
func parseLimit(content string) (int64, error) {
	s := strings.TrimSpace(content)
	if s == "max" {
		return 0, nil
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n <= 0 {
		return 0, fmt.Errorf("%q is not a memory limit", s)
	}
	if n >= noLimit {
		return 0, nil
	}
	return n, nil
}
