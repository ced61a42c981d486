package pipeline

import (
	"strconv"
	"strings"
	"time"
)

// Kubernetes names a controller's pods by generateName: the owner's name, a hyphen and
// five characters of suffixAlphabet (the prefix cut to maxGeneratedPrefix so that the
// whole stays within 63). A Deployment's ReplicaSet is its name, a hyphen and the
// pod-template-hash: a uint32's decimal digits each encoded as a letter of suffixAlphabet
// (apimachinery's rand.SafeEncodeString), hence 1 to 10 of the ten characters in
// hashAlphabet. A CronJob's Job is the CronJob's name, a hyphen and the time it was
// scheduled for in minutes since 1970 (the cronjob controller's getJobName): minuteLen
// digits, from firstJobMinute (the controller that names Jobs so came with Kubernetes
// 1.20, at the end of 2020; the one before named them by seconds) to the clock's now, but
// for the skew of the node's clock and the control plane's (maxJobSkew). An Indexed Job's pods are the Job's name, a hyphen, the index
// (decimal, from 0 to completions-1, an int32) and a hyphen, then the suffix, with the
// Job's name cut so that the prefix is 58 (the job controller's podGenerateNameWithIndex).
const (
	suffixAlphabet     = "bcdfghjklmnpqrstvwxz2456789"
	suffixLen          = 5
	hashAlphabet       = "456789bcdf"
	maxHashLen         = 10
	maxGeneratedPrefix = 58
	digits             = "0123456789"
	minuteLen          = 8
	// firstJobMinute is the minute 2020 began, 1970-based: 8 digits before it (a date,
	// agent-20240101, is one of 2008) end the name of a DaemonSet, a ReplicaSet or a Job.
	firstJobMinute = 26297280
	maxJobSkew     = 24 * time.Hour
	maxIndexLen    = 10
	// minHashLen is the shortest hash taken for one: a shorter one is a hash below
	// 100000, one in 40,000; a name of a DaemonSet, ReplicaSet or Job that ends in a
	// hyphen and as many hash characters as this is taken for a Deployment's.
	minHashLen = 6
)

// workloadOf is the name of the workload that owns the pod: a Deployment's pod
// (web-7d4b9c8f6d-x2kqz) without its ReplicaSet's hash and its suffix (web); a pod of a
// DaemonSet, ReplicaSet or Job (agent-5lz9w) without its suffix (agent); a CronJob's Job's
// pod (backup-29412345-x7k2b) without its Job's scheduled minute and its suffix (backup),
// so that its runs are one workload (a minute since 2020, not ahead of now: see
// firstJobMinute), and so an Indexed CronJob's Job's pod
// (backup-29412345-3-x7k2b) without its index too; any other name, a StatefulSet's pod
// with its ordinal (web-0), an Indexed Job's pod with its index (train-3-x7k2b: a
// DaemonSet named train-3 has pods of that name), or a bare pod, as it is.
//
// Kubernetes cuts a generateName (the owner's name and a hyphen) longer than 58
// characters to 58 and puts the suffix right after it: a pod name of 63 characters whose
// 58th is not a hyphen is such a prefix and a suffix with nothing between. What is left of
// a Deployment's hash or a Job's minute at the end of the prefix goes with the hyphen
// before it; a prefix cut within the owner's name is the same for all its pods, and stays.
func workloadOf(pod string, now time.Time) string {
	latest := now.Add(maxJobSkew).Unix() / 60
	if len(pod) == maxGeneratedPrefix+suffixLen && pod[maxGeneratedPrefix-1] != '-' && inAlphabet(pod[maxGeneratedPrefix:], suffixAlphabet) {
		prefix := pod[:maxGeneratedPrefix]
		if owner, ok := cutSegment(prefix, hashAlphabet, 1, maxHashLen); ok {
			return owner
		}
		if owner, ok := cutSegment(prefix, digits, 1, minuteLen); ok {
			return owner
		}
		return prefix
	}
	base, ok := cutSegment(pod, suffixAlphabet, suffixLen, suffixLen)
	if !ok {
		return pod
	}
	if owner, ok := cutSegment(base, hashAlphabet, minHashLen, maxHashLen); ok {
		return owner
	}
	if owner, ok := indexedCronJob(base, len(pod) == maxGeneratedPrefix+suffixLen, latest); ok {
		return owner
	}
	if owner, ok := cutMinute(base, latest); ok {
		return owner
	}
	return base
}

// cutMinute cuts a CronJob's Job's minute off name, the Job's name: a hyphen and
// minuteLen digits, a minute from firstJobMinute to latest.
func cutMinute(name string, latest int64) (string, bool) {
	owner, ok := cutSegment(name, digits, minuteLen, minuteLen)
	if !ok {
		return name, false
	}
	m, _ := strconv.ParseInt(name[len(owner)+1:], 10, 64)
	if m < firstJobMinute || m > latest {
		return name, false
	}
	return owner, true
}

// indexedCronJob is the CronJob whose Indexed Job's pod has the name base and a suffix:
// the CronJob's name, a hyphen, the Job's minute, a hyphen and the index. When the pod's
// name is 63 characters (cut), the Job's name was cut before the index: what is left of
// the minute, or its hyphen alone, goes. A Job's index alone says nothing (agent-2 may be
// a DaemonSet's name): without the minute before it, ok is false.
func indexedCronJob(base string, cut bool, latest int64) (string, bool) {
	job, ok := cutSegment(base, digits, 1, maxIndexLen)
	if !ok || len(job) < len(base)-2 && base[len(job)+1] == '0' {
		return base, false // no index, or one of a leading zero, which strconv.Itoa writes not
	}
	if owner, ok := cutMinute(job, latest); ok {
		return owner, true
	}
	if cut {
		return cutSegment(job, digits, 0, minuteLen-1)
	}
	return base, false
}

// cutSegment cuts a last segment of name, a hyphen and min to max characters of
// alphabet, returning what precedes the hyphen; ok is false when name does not end so or
// nothing would precede it.
func cutSegment(name, alphabet string, min, max int) (string, bool) {
	i := strings.LastIndexByte(name, '-')
	if i <= 0 {
		return name, false
	}
	seg := name[i+1:]
	if len(seg) < min || len(seg) > max || !inAlphabet(seg, alphabet) {
		return name, false
	}
	return name[:i], true
}

// inAlphabet reports whether every byte of s is one of alphabet's.
func inAlphabet(s, alphabet string) bool {
	for j := 0; j < len(s); j++ {
		if strings.IndexByte(alphabet, s[j]) < 0 {
			return false
		}
	}
	return true
}
