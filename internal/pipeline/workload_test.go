package pipeline

import (
	"strings"
	"testing"
	"time"
)

func TestWorkloadOf(t *testing.T) {
	long := strings.Repeat("a", 50) // a Deployment name that leaves no room for its hash
	// The clock's now: minute 29931840 since 1970.
	now := time.Date(2026, 11, 29, 0, 0, 0, 0, time.UTC)
	for _, tc := range []struct{ name, pod, want string }{
		// As controllers name them.
		{"deployment", "web-7d4b9c8f6d-x2kqz", "web"},
		{"deployment, hyphenated name", "ingress-nginx-controller-5c8d66c76d-4kq9z", "ingress-nginx-controller"},
		{"deployment, 9-character hash", "coredns-5d78c9869d-8xwzt", "coredns"},
		{"deployment, 6-character hash", "api-6b4c8f-x7k2b", "api"},
		{"deployment, all-digit suffix", "web-7d4b9c8f6d-24567", "web"},
		{"daemonset", "kube-proxy-7xk2b", "kube-proxy"},
		{"daemonset named like a word of the hash alphabet", "node-local-dns-x7k9p", "node-local-dns"},
		{"replicaset", "agent-5lz9w", "agent"},
		{"job", "migrate-q8x7v", "migrate"},
		// A CronJob's Job is the CronJob's name, a hyphen and its scheduled time in
		// minutes since 1970 (eight digits from 1989 to 2160).
		{"cronjob", "backup-29412345-x7k2b", "backup"},
		{"cronjob, hyphenated name", "nightly-report-29400000-bq9zt", "nightly-report"},
		{"cronjob, minute of hash characters", "backup-29456789-x7k2b", "backup"},
		{"statefulset ordinal", "web-0", "web-0"},
		{"statefulset ordinal 12", "kafka-12", "kafka-12"},
		{"statefulset ordinal of 4 digits", "db-2024", "db-2024"},
		{"bare pod", "debug", "debug"},
		{"bare pod with hyphens", "my-debug-pod", "my-debug-pod"},
		// A generateName longer than 58 characters (the owner's name and its hyphen) is
		// cut to 58, and the suffix follows what is left with no hyphen between.
		{"cut hash", long + "-7d4b9c8" + "x2kqz", long},
		{"cut hash of 1", strings.Repeat("a", 56) + "-7" + "x2kqz", strings.Repeat("a", 56)},
		{"whole hash, its hyphen cut", strings.Repeat("a", 47) + "-7d4b9c8f6d" + "x2kqz", strings.Repeat("a", 47)},
		{"cut in the name", strings.Repeat("app-", 15)[:58] + "x2kqz", strings.Repeat("app-", 15)[:58]},
		{"cut after the hyphen", strings.Repeat("b", 57) + "-x2kqz", strings.Repeat("b", 57)},
		{"63 characters, a hyphen before the suffix", strings.Repeat("b", 46) + "-7d4b9c8f6d-x2kqz", strings.Repeat("b", 46)},
		// A CronJob's name is at most 52 characters: from 49 on, its Job's pods have the
		// minute cut, whole or in part.
		{"cronjob of 48, nothing cut", strings.Repeat("c", 48) + "-29412345-x7k2b", strings.Repeat("c", 48)},
		{"cronjob of 49, the hyphen cut", strings.Repeat("c", 49) + "-29412345" + "x7k2b", strings.Repeat("c", 49)},
		{"cronjob of 52, the minute cut", strings.Repeat("c", 52) + "-29412" + "x7k2b", strings.Repeat("c", 52)},
		{"63 characters ending in an ordinal", strings.Repeat("b", 60) + "-12", strings.Repeat("b", 60) + "-12"},
		// An Indexed Job's pods are the Job's name, a hyphen, the index in decimal and a
		// hyphen, then the suffix (the job controller's podGenerateNameWithIndex), cut to
		// 58 from the end of the Job's name. A CronJob's Indexed Job has its minute before
		// the index: the CronJob's runs and indexes are one workload.
		{"cronjob's indexed job", "backup-29412345-0-x7k2b", "backup"},
		{"cronjob's indexed job, index 12", "nightly-report-29400000-12-bq9zt", "nightly-report"},
		{"cronjob's indexed job, index of hash characters", "backup-29412345-4567-x7k2b", "backup"},
		{"cronjob's indexed job, the minute cut", strings.Repeat("c", 48) + "-294123-7-" + "x7k2b", strings.Repeat("c", 48)},
		{"cronjob's indexed job, the minute and its hyphen cut", strings.Repeat("c", 52) + "--123-" + "x7k2b", strings.Repeat("c", 52)},
		// A Job's index cannot be told from the end of the name of a DaemonSet, a
		// ReplicaSet or a Job (agent-2-x7k2b is agent-2's pod too): it is kept, as a
		// StatefulSet's ordinal is.
		{"indexed job keeps its index", "train-3-x7k2b", "train-3"},
		{"daemonset named with a number", "agent-2-x7k2b", "agent-2"},
		{"cronjob's job, index with a leading zero", "backup-29412345-01-x7k2b", "backup-29412345-01"},
		{"cronjob's job, index of 11 digits", "backup-29412345-12345678901-x7k2b", "backup-29412345-12345678901"},
		// A Job's minute is one since the controller that names Jobs so (Kubernetes 1.20,
		// at the end of 2020), and not ahead of the clock but by its skew: 8 digits
		// otherwise are the end of a DaemonSet's, a ReplicaSet's or a Job's name, a date
		// among them.
		{"daemonset named by a date", "agent-20240101-x2kqz", "agent-20240101"},
		{"daemonset named by a number below 2020's minutes", "agent-12345678-x2kqz", "agent-12345678"},
		{"daemonset named by a number ahead of the clock", "agent-87654321-x2kqz", "agent-87654321"},
		{"cronjob, first minute of 2020", "backup-26297280-x7k2b", "backup"},
		{"cronjob, minute before 2020", "backup-26297279-x7k2b", "backup-26297279"},
		{"cronjob, minute of now", "backup-29931840-x7k2b", "backup"},
		{"cronjob, minute a day ahead (clock skew)", "backup-29933280-x7k2b", "backup"},
		{"cronjob, minute more than a day ahead", "backup-29933281-x7k2b", "backup-29933281"},
		{"indexed job of a daemonset named by a date", "agent-20240101-3-x7k2b", "agent-20240101-3"},
		// Near misses are left as they are.
		{"suffix with a vowel", "web-7d4b9c8f6d-x2kqa", "web-7d4b9c8f6d-x2kqa"},
		{"suffix of 4", "web-x2kq", "web-x2kq"},
		{"suffix of 6", "web-x2kqzz", "web-x2kqzz"},
		{"suffix with a 0", "web-x2kq0", "web-x2kq0"},
		{"upper case suffix", "web-X2KQZ", "web-X2KQZ"},
		{"minute of 7 digits", "backup-2941234-x7k2b", "backup-2941234"},
		{"minute of 9 digits", "backup-294123456-x7k2b", "backup-294123456"},
		{"hash of 11", "web-7d4b9c8f6d4-x2kqz", "web-7d4b9c8f6d4"},
		{"hash with a letter outside its alphabet", "web-7d4b9c8f6z-x2kqz", "web-7d4b9c8f6z"},
		{"short hash-like word kept", "web-bcd-x2kqz", "web-bcd"},
		{"only a suffix", "x2kqz", "x2kqz"},
		{"hyphen and suffix", "-x2kqz", "-x2kqz"},
		{"empty", "", ""},
		{"trailing hyphen", "web-", "web-"},
		{"suffix after an empty segment", "web--x2kqz", "web-"},
		{"not ASCII", "wéb-x2kqz", "wéb"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := workloadOf(tc.pod, now); got != tc.want {
				t.Errorf("workloadOf(%q) = %q, want %q", tc.pod, got, tc.want)
			}
		})
	}
}
