// Package memlimit derives the exporter's memory bound from the container it runs in: a
// process held to a bound larger than its cgroup's limit is killed by the kernel before
// the bound folds a single label set, so with no bound given the cgroup's limit decides.
package memlimit

import (
	"errors"
	"fmt"
	"io/fs"
	"math"
	"strconv"
	"strings"
)

// Default is the bound when none is given and no cgroup limit is found.
const Default = 512 << 20

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
	// Limit is the container's limit the bound came from, 0 when it came from elsewhere.
	Limit  int64
	Source Source
}

// Choose returns the bound: flagBytes when the flag was given (set), else half the memory
// limit of the cgroup the process is in as fsys (the root of the machine's file system)
// shows it, else Default. An error reading the cgroup is returned with the Default bound,
// for the caller to log: a process that cannot read its cgroup still starts.
func Choose(fsys fs.FS, flagBytes int64, set bool) (Bound, error) {
	if set {
		return Bound{Bytes: flagBytes, SoftLimit: flagBytes / 2 * 3, Source: Flag}, nil
	}
	limit, src, err := cgroupLimit(fsys)
	if err != nil || limit == 0 {
		return Bound{Bytes: Default, SoftLimit: Default / 2 * 3, Source: Fallback}, err
	}
	// Half for the series; the runtime's soft limit at three quarters leaves the last
	// quarter for what the bound does not count (buffers of scrapes in flight, stacks,
	// the runtime itself) before the kernel's limit.
	return Bound{Bytes: limit / 2, SoftLimit: limit / 4 * 3, Limit: limit, Source: src}, nil
}

// cgroupLimit reads the memory limit of the process's own cgroup: /proc/self/cgroup names
// it, v2 (one "0::/path" line) or v1 (a line whose controllers include memory). A limit
// of "max" (v2) or one no machine has (v1's 2^63 rounded to pages) is none: 0.
func cgroupLimit(fsys fs.FS) (int64, Source, error) {
	b, err := fs.ReadFile(fsys, "proc/self/cgroup")
	if errors.Is(err, fs.ErrNotExist) {
		return 0, Fallback, nil // not Linux
	}
	if err != nil {
		return 0, Fallback, err
	}
	// A hybrid machine lists both: its memory controller is v1's, the v2 line names a
	// hierarchy without one.
	v2, found2 := "", false
	for line := range strings.SplitSeq(strings.TrimSpace(string(b)), "\n") {
		id, rest, ok1 := strings.Cut(line, ":")
		ctrls, path, ok2 := strings.Cut(rest, ":")
		if !ok1 || !ok2 {
			continue
		}
		if id == "0" && ctrls == "" {
			v2, found2 = path, true
			continue
		}
		for c := range strings.SplitSeq(ctrls, ",") {
			if c == "memory" {
				return readLimit(fsys, "sys/fs/cgroup/memory", path, "memory.limit_in_bytes", CgroupV1)
			}
		}
	}
	if found2 {
		return readLimit(fsys, "sys/fs/cgroup", v2, "memory.max", CgroupV2)
	}
	return 0, Fallback, nil
}

// readLimit reads file in the cgroup at path under mount, or, as inside a container
// whose cgroup namespace makes its own cgroup the root, at the mount itself: there
// /proc/self/cgroup says "/" while the limit sits at the mount's top.
func readLimit(fsys fs.FS, mount, path, file string, src Source) (int64, Source, error) {
	dirs := []string{mount + path, mount}
	if strings.Trim(path, "/") == "" {
		dirs = dirs[1:]
	}
	var b []byte
	var err error
	for _, d := range dirs {
		b, err = fs.ReadFile(fsys, strings.TrimSuffix(d, "/")+"/"+file)
		if !errors.Is(err, fs.ErrNotExist) {
			break
		}
	}
	if errors.Is(err, fs.ErrNotExist) {
		return 0, src, nil
	}
	if err != nil {
		return 0, src, err
	}
	s := strings.TrimSpace(string(b))
	if s == "max" {
		return 0, src, nil
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n <= 0 {
		return 0, src, fmt.Errorf("%s: %q is not a memory limit", file, s)
	}
	// cgroup v1 writes "no limit" as the largest page-aligned int64.
	if n >= math.MaxInt64/4096*4096 {
		return 0, src, nil
	}
	return n, src, nil
}
