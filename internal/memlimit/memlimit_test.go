package memlimit

import (
	"io/fs"
	"math"
	"path"
	"strconv"
	"strings"
	"testing"
	"testing/fstest"
)

func TestChoose(t *testing.T) {
	v2 := func(cgroup, max string) fstest.MapFS {
		fsys := fstest.MapFS{"proc/self/cgroup": {Data: []byte("0::" + cgroup + "\n")}}
		if max != "" {
			fsys[path.Join("sys/fs/cgroup", cgroup, "memory.max")] = &fstest.MapFile{Data: []byte(max + "\n")}
		}
		return fsys
	}
	v1 := func(limit string) fstest.MapFS {
		return fstest.MapFS{
			"proc/self/cgroup": {Data: []byte("12:cpu,cpuacct:/kubepods/pod1/c1\n11:memory:/kubepods/pod1/c1\n1:name=systemd:/kubepods/pod1/c1\n")},
			"sys/fs/cgroup/memory/kubepods/pod1/c1/memory.limit_in_bytes": {Data: []byte(limit + "\n")},
		}
	}
	with := func(fsys fstest.MapFS, name, data string) fstest.MapFS {
		fsys[name] = &fstest.MapFile{Data: []byte(data + "\n")}
		return fsys
	}
	for _, tc := range []struct {
		name    string
		fsys    fs.FS
		flag    int64
		set     bool
		want    Bound
		wantErr bool
	}{
		// The flag's bound is used as it is, but the container's limit is still read, for
		// the checks of the flag and of GOMEMLIMIT against it.
		{name: "flag wins over a cgroup", fsys: v2("/", "268435456"), flag: 64 << 20, set: true,
			want: Bound{Bytes: 64 << 20, SoftLimit: 96 << 20, Limit: 256 << 20, Source: Flag}},
		{name: "flag 0 is no bound", fsys: v2("/", "268435456"), flag: 0, set: true,
			want: Bound{Limit: 256 << 20, Source: Flag}},
		{name: "flag at a parent's limit", fsys: with(v2("/a.slice/app.service", "max"),
			"sys/fs/cgroup/a.slice/memory.max", "4294967296"), flag: 4 << 30, set: true,
			want: Bound{Bytes: 4 << 30, SoftLimit: 6 << 30, Limit: 4 << 30, Source: Flag}},
		{name: "flag, cgroup without a limit", fsys: v2("/", "max"), flag: 64 << 20, set: true,
			want: Bound{Bytes: 64 << 20, SoftLimit: 96 << 20, Source: Flag}},
		{name: "flag, garbage limit: the flag's bound and an error", fsys: v2("/", "lots"), flag: 64 << 20, set: true, wantErr: true,
			want: Bound{Bytes: 64 << 20, SoftLimit: 96 << 20, Source: Flag}},
		{name: "v2 namespaced: the mount's top", fsys: v2("/", "268435456"),
			want: Bound{Bytes: 128 << 20, SoftLimit: 192 << 20, Limit: 256 << 20, Source: CgroupV2}},
		{name: "v2 by path", fsys: v2("/kubepods.slice/pod.slice/c.scope", "1073741824"),
			want: Bound{Bytes: 512 << 20, SoftLimit: 768 << 20, Limit: 1 << 30, Source: CgroupV2}},
		{name: "v2 max is no limit", fsys: v2("/", "max"),
			want: Bound{Bytes: Default, SoftLimit: Default / 2 * 3, Source: Fallback}},
		{name: "v2 with no memory controller file", fsys: v2("/user.slice", ""),
			want: Bound{Bytes: Default, SoftLimit: Default / 2 * 3, Source: Fallback}},
		{name: "v1", fsys: v1("536870912"),
			want: Bound{Bytes: 256 << 20, SoftLimit: 384 << 20, Limit: 512 << 20, Source: CgroupV1}},
		{name: "hybrid: v1's memory controller", fsys: fstest.MapFS{
			"proc/self/cgroup":                           {Data: []byte("4:memory:/process_api/x\n0::/\n")},
			"sys/fs/cgroup/memory/memory.limit_in_bytes": {Data: []byte("2147483648\n")},
		}, want: Bound{Bytes: 1 << 30, SoftLimit: 3 << 29, Limit: 2 << 30, Source: CgroupV1}},
		{name: "v1 unlimited", fsys: v1("9223372036854771712"),
			want: Bound{Bytes: Default, SoftLimit: Default / 2 * 3, Source: Fallback}},
		// The kernel writes v1's "no limit" as the largest int64 rounded down to its page
		// size: 64 KiB pages (arm64, ppc64le kernels) round it further down than 4 KiB ones.
		{name: "v1 unlimited, 64 KiB pages", fsys: v1("9223372036854710272"),
			want: Bound{Bytes: Default, SoftLimit: Default / 2 * 3, Source: Fallback}},
		{name: "v1 unlimited, 256 KiB pages", fsys: v1("9223372036854513664"),
			want: Bound{Bytes: Default, SoftLimit: Default / 2 * 3, Source: Fallback}},
		{name: "v1 on 64 KiB pages: the container's limit, not the root's none", fsys: with(v1("536870912"),
			"sys/fs/cgroup/memory/memory.limit_in_bytes", "9223372036854710272"),
			want: Bound{Bytes: 256 << 20, SoftLimit: 384 << 20, Limit: 512 << 20, Source: CgroupV1}},
		{name: "not Linux", fsys: fstest.MapFS{},
			want: Bound{Bytes: Default, SoftLimit: Default / 2 * 3, Source: Fallback}},
		{name: "garbage limit: default and an error", fsys: v2("/", "lots"), wantErr: true,
			want: Bound{Bytes: Default, SoftLimit: Default / 2 * 3, Source: Fallback}},
		{name: "v2 limit amid whitespace", fsys: v2("/", " \t268435456 \n\n"),
			want: Bound{Bytes: 128 << 20, SoftLimit: 192 << 20, Limit: 256 << 20, Source: CgroupV2}},
		{name: "v2 empty file: default and an error", fsys: v2("/", "\n"), wantErr: true,
			want: Bound{Bytes: Default, SoftLimit: Default / 2 * 3, Source: Fallback}},
		{name: "v2 negative: default and an error", fsys: v2("/", "-1"), wantErr: true,
			want: Bound{Bytes: Default, SoftLimit: Default / 2 * 3, Source: Fallback}},
		{name: "v2 zero: default and an error", fsys: v2("/", "0"), wantErr: true,
			want: Bound{Bytes: Default, SoftLimit: Default / 2 * 3, Source: Fallback}},
		{name: "v2 past int64: default and an error", fsys: v2("/", "99999999999999999999"), wantErr: true,
			want: Bound{Bytes: Default, SoftLimit: Default / 2 * 3, Source: Fallback}},
		{name: "v2 two values: default and an error", fsys: v2("/", "268435456 max"), wantErr: true,
			want: Bound{Bytes: Default, SoftLimit: Default / 2 * 3, Source: Fallback}},
		{name: "v1 garbage: default and an error", fsys: v1("lots"), wantErr: true,
			want: Bound{Bytes: Default, SoftLimit: Default / 2 * 3, Source: Fallback}},
		// The kernel holds a cgroup to the limits of its parents too: a service in a slice
		// limited to 256 MiB is killed there, whatever its own memory.max says.
		{name: "v2 nested: a parent's limit under the cgroup's max", fsys: with(v2("/limited.slice/app.service", "max"),
			"sys/fs/cgroup/limited.slice/memory.max", "268435456"),
			want: Bound{Bytes: 128 << 20, SoftLimit: 192 << 20, Limit: 256 << 20, Source: CgroupV2}},
		{name: "v2 nested: the lowest of the cgroup's and its parents'", fsys: with(with(v2("/a.slice/b.slice/app.service", "1073741824"),
			"sys/fs/cgroup/a.slice/memory.max", "536870912"), "sys/fs/cgroup/a.slice/b.slice/memory.max", "max"),
			want: Bound{Bytes: 256 << 20, SoftLimit: 384 << 20, Limit: 512 << 20, Source: CgroupV2}},
		{name: "v2 nested: the cgroup's own limit under its parent's", fsys: with(v2("/a.slice/app.service", "268435456"),
			"sys/fs/cgroup/a.slice/memory.max", "1073741824"),
			want: Bound{Bytes: 128 << 20, SoftLimit: 192 << 20, Limit: 256 << 20, Source: CgroupV2}},
		{name: "v2 nested: garbage in a parent, default and an error", fsys: with(v2("/a.slice/app.service", "268435456"),
			"sys/fs/cgroup/a.slice/memory.max", "lots"), wantErr: true,
			want: Bound{Bytes: Default, SoftLimit: Default / 2 * 3, Source: Fallback}},
		{name: "v1 nested: the pod's limit under the container's unlimited one", fsys: with(v1("9223372036854771712"),
			"sys/fs/cgroup/memory/kubepods/pod1/memory.limit_in_bytes", "536870912"),
			want: Bound{Bytes: 256 << 20, SoftLimit: 384 << 20, Limit: 512 << 20, Source: CgroupV1}},
		{name: "v2 outside the namespace's root: the mount's top", fsys: with(fstest.MapFS{
			"proc/self/cgroup": {Data: []byte("0::/../../other.slice/x.scope\n")}}, "sys/fs/cgroup/memory.max", "268435456"),
			want: Bound{Bytes: 128 << 20, SoftLimit: 192 << 20, Limit: 256 << 20, Source: CgroupV2}},
		{name: "v2 nested: a parent not readable is passed over", fsys: unreadable{with(v2("/a.slice/app.service", "268435456"),
			"sys/fs/cgroup/a.slice/memory.max", "134217728"), "sys/fs/cgroup/a.slice/memory.max"},
			want: Bound{Bytes: 128 << 20, SoftLimit: 192 << 20, Limit: 256 << 20, Source: CgroupV2}},
		{name: "v2 own cgroup not readable: default and an error", fsys: unreadable{v2("/a.slice/app.service", "268435456"),
			"sys/fs/cgroup/a.slice/app.service/memory.max"}, wantErr: true,
			want: Bound{Bytes: Default, SoftLimit: Default / 2 * 3, Source: Fallback}},
		// A parent's limit is shared with every cgroup under it: kubepods.slice's is the
		// node's memory for all its pods, seen when the host's cgroup tree is (a host
		// cgroup namespace, or /sys/fs/cgroup mounted from the host). It may lower the
		// default bound, never raise it to half of what all the pods share.
		{name: "v2 nested: a pool many share raises no bound", fsys: with(with(with(v2("/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod1.slice/cri-containerd-c1.scope", "max"),
			"sys/fs/cgroup/kubepods.slice/memory.max", "66571993088"),
			"sys/fs/cgroup/kubepods.slice/kubepods-besteffort.slice/memory.max", "max"),
			"sys/fs/cgroup/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod1.slice/memory.max", "max"),
			want: Bound{Bytes: Default, SoftLimit: Default / 2 * 3, Limit: 66571993088, Source: CgroupV2}},
		{name: "v2 nested: a parent's limit over the default bound", fsys: with(v2("/a.slice/app.service", "max"),
			"sys/fs/cgroup/a.slice/memory.max", "4294967296"),
			want: Bound{Bytes: Default, SoftLimit: Default / 2 * 3, Limit: 4 << 30, Source: CgroupV2}},
		{name: "flag past what the soft limit can hold", fsys: fstest.MapFS{}, flag: math.MaxInt64 - 1, set: true,
			want: Bound{Bytes: math.MaxInt64 - 1, SoftLimit: math.MaxInt64, Source: Flag}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Choose(tc.fsys, tc.flag, tc.set)
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v, want error %v", err, tc.wantErr)
			}
			if got != tc.want {
				t.Errorf("Choose = %+v, want %+v", got, tc.want)
			}
		})
	}
}

// TestCheckUserLimit: a GOMEMLIMIT under the series' bound, or above the container's
// limit, is an error naming it; off, or one between the two, is not.
func TestCheckUserLimit(t *testing.T) {
	fromCgroup := Bound{Bytes: 128 << 20, SoftLimit: 192 << 20, Limit: 256 << 20, Source: CgroupV2}
	fromFlag := Bound{Bytes: 128 << 20, SoftLimit: 192 << 20, Source: Flag}
	for _, tc := range []struct {
		name    string
		bound   Bound
		limit   int64
		wantErr bool
	}{
		{"between the bound and the container's limit", fromCgroup, 200 << 20, false},
		{"the bound itself", fromCgroup, 128 << 20, false},
		{"under the bound", fromCgroup, 64 << 20, true},
		{"above the container's limit", fromCgroup, 1 << 30, true},
		{"off", fromCgroup, math.MaxInt64, false},
		// The kernel keeps a limit rounded down to its pages: a pod limited to 1G reads
		// 999997440 (4 KiB pages) or 999948288 (64 KiB), while GOMEMLIMIT set from the
		// pod's limits.memory (a resourceFieldRef) is 1000000000, the limit itself.
		{"the container's limit as given, 4 KiB pages", Bound{Bytes: 999997440 / 2, SoftLimit: 999997440 / 4 * 3, Limit: 999997440, Source: CgroupV2}, 1e9, false},
		{"the container's limit as given, 64 KiB pages", Bound{Bytes: 999948288 / 2, SoftLimit: 999948288 / 4 * 3, Limit: 999948288, Source: CgroupV2}, 1e9, false},
		{"a MiB above the container's limit", fromCgroup, 257 << 20, true},
		{"no container limit: any above the bound", fromFlag, 64 << 30, false},
		{"from the flag, above the container's limit", Bound{Bytes: 128 << 20, SoftLimit: 192 << 20, Limit: 256 << 20, Source: Flag}, 1 << 30, true},
		{"no bound: any", Bound{Source: Flag}, 1 << 20, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.bound.CheckUserLimit(tc.limit)
			if (err != nil) != tc.wantErr {
				t.Fatalf("CheckUserLimit(%d) = %v, want an error %v", tc.limit, err, tc.wantErr)
			}
			if err != nil && !strings.Contains(err.Error(), "GOMEMLIMIT") {
				t.Errorf("error %q does not name GOMEMLIMIT", err)
			}
		})
	}
}

// TestCheckSoftLimit: a bound from the flag under the container's limit whose soft limit,
// 1.5 times it, is above the limit leaves the runtime's limit where the kernel kills first.
func TestCheckSoftLimit(t *testing.T) {
	for _, tc := range []struct {
		name    string
		bound   Bound
		wantErr bool
	}{
		{"two thirds of the limit", Bound{Bytes: 170 << 20, SoftLimit: 255 << 20, Limit: 256 << 20, Source: Flag}, false},
		{"past two thirds", Bound{Bytes: 200 << 20, SoftLimit: 300 << 20, Limit: 256 << 20, Source: Flag}, true},
		{"at the limit, which CheckFlag tells", Bound{Bytes: 256 << 20, SoftLimit: 384 << 20, Limit: 256 << 20, Source: Flag}, false},
		{"no container limit", Bound{Bytes: 1 << 30, SoftLimit: 3 << 29, Source: Flag}, false},
		{"from the cgroup", Bound{Bytes: 128 << 20, SoftLimit: 192 << 20, Limit: 256 << 20, Source: CgroupV2}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.bound.CheckSoftLimit()
			if (err != nil) != tc.wantErr {
				t.Fatalf("CheckSoftLimit() for %+v = %v, want an error %v", tc.bound, err, tc.wantErr)
			}
			if err == nil {
				return
			}
			for _, want := range []string{"--series.max-bytes", strconv.FormatInt(tc.bound.Bytes, 10), strconv.FormatInt(tc.bound.SoftLimit, 10), strconv.FormatInt(tc.bound.Limit, 10)} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not name %s", err, want)
				}
			}
		})
	}
}

// TestCheckFlag: a --series.max-bytes at or above the container's limit is an error naming
// the flag, its value and the limit: the kernel kills the process before the bound folds
// a label set. One under it, none (0), or a bound not from the flag is not.
func TestCheckFlag(t *testing.T) {
	for _, tc := range []struct {
		name    string
		bound   Bound
		wantErr bool
	}{
		{"under the container's limit", Bound{Bytes: 64 << 20, SoftLimit: 96 << 20, Limit: 256 << 20, Source: Flag}, false},
		{"at the container's limit", Bound{Bytes: 256 << 20, SoftLimit: 384 << 20, Limit: 256 << 20, Source: Flag}, true},
		{"above the container's limit", Bound{Bytes: 1 << 30, SoftLimit: 3 << 29, Limit: 256 << 20, Source: Flag}, true},
		{"no container limit", Bound{Bytes: 1 << 30, SoftLimit: 3 << 29, Source: Flag}, false},
		{"0: no bound", Bound{Limit: 256 << 20, Source: Flag}, false},
		{"from the cgroup", Bound{Bytes: 128 << 20, SoftLimit: 192 << 20, Limit: 256 << 20, Source: CgroupV2}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.bound.CheckFlag()
			if (err != nil) != tc.wantErr {
				t.Fatalf("CheckFlag() for %+v = %v, want an error %v", tc.bound, err, tc.wantErr)
			}
			if err == nil {
				return
			}
			for _, want := range []string{"--series.max-bytes", strconv.FormatInt(tc.bound.Bytes, 10), strconv.FormatInt(tc.bound.Limit, 10)} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not name %s", err, want)
				}
			}
		})
	}
}

// TestCheckUserLimitUnderBoundRemedy: a GOMEMLIMIT under the bound is most often meant as
// the process's cap (a machine without a cgroup limit, the bound the 512 MiB default): the
// warning says how to keep that cap, a --series.max-bytes of two thirds of it, besides
// raising GOMEMLIMIT.
func TestCheckUserLimitUnderBoundRemedy(t *testing.T) {
	b := Bound{Bytes: Default, SoftLimit: Default / 2 * 3, Source: Fallback}
	err := b.CheckUserLimit(300 << 20)
	if err == nil || !strings.Contains(err.Error(), "--series.max-bytes=209715200") {
		t.Errorf("CheckUserLimit(300MiB) under the default bound = %v, want a remedy of --series.max-bytes=209715200 (200MiB)", err)
	}
}

// unreadable is a file system whose file name cannot be read, as one the process has no
// permission for.
type unreadable struct {
	files fstest.MapFS
	name  string
}

func (u unreadable) Open(name string) (fs.File, error) {
	if name == u.name {
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrPermission}
	}
	return u.files.Open(name)
}
