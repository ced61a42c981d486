package memlimit

import (
	"path"
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
	for _, tc := range []struct {
		name    string
		fsys    fstest.MapFS
		flag    int64
		set     bool
		want    Bound
		wantErr bool
	}{
		{name: "flag wins over a cgroup", fsys: v2("/", "268435456"), flag: 64 << 20, set: true,
			want: Bound{Bytes: 64 << 20, SoftLimit: 96 << 20, Source: Flag}},
		{name: "flag 0 is no bound", fsys: v2("/", "268435456"), flag: 0, set: true,
			want: Bound{Source: Flag}},
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
		{name: "not Linux", fsys: fstest.MapFS{},
			want: Bound{Bytes: Default, SoftLimit: Default / 2 * 3, Source: Fallback}},
		{name: "garbage limit: default and an error", fsys: v2("/", "lots"), wantErr: true,
			want: Bound{Bytes: Default, SoftLimit: Default / 2 * 3, Source: Fallback}},
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
