package pipeline

import "strings"

// Kubernetes names a controller's pods by generateName: the owner's name, a hyphen and
// five characters of suffixAlphabet (the prefix cut to maxGeneratedPrefix so that the
// whole stays within 63). A Deployment's ReplicaSet is its name, a hyphen and the
// pod-template-hash: a uint32's decimal digits each encoded as a letter of suffixAlphabet
// (apimachinery's rand.SafeEncodeString), hence 1 to 10 of the ten characters in
// hashAlphabet.
const (
	suffixAlphabet     = "bcdfghjklmnpqrstvwxz2456789"
	suffixLen          = 5
	hashAlphabet       = "456789bcdf"
	maxHashLen         = 10
	maxGeneratedPrefix = 58
	// minHashLen is the shortest hash taken for one: a shorter one is a hash below
	// 100000, one in 40,000; a name of a DaemonSet, ReplicaSet or Job that ends in a
	// hyphen and as many hash characters as this is taken for a Deployment's.
	minHashLen = 6
)

// workloadOf is the name of the workload that owns the pod: a Deployment's pod
// (web-7d4b9c8f6d-x2kqz) without its ReplicaSet's hash and its suffix (web); a pod of a
// DaemonSet, ReplicaSet or Job (agent-5lz9w) without its suffix (agent); any other name,
// a StatefulSet's pod with its ordinal (web-0) or a bare pod, as it is. A Deployment's
// pod whose prefix was cut to 58 characters has lost part of its hash or of its name:
// what of a hash is left, and the hyphen before it, go too.
func workloadOf(pod string) string {
	base, ok := cutSegment(pod, suffixAlphabet, suffixLen, suffixLen)
	if !ok {
		return pod
	}
	if len(base) == maxGeneratedPrefix {
		// The prefix was cut: the hash may be shorter than it was, or gone with its
		// hyphen (a name of 57 characters or more).
		if owner, ok := cutSegment(base, hashAlphabet, 1, maxHashLen); ok {
			return owner
		}
		return strings.TrimSuffix(base, "-")
	}
	if owner, ok := cutSegment(base, hashAlphabet, minHashLen, maxHashLen); ok {
		return owner
	}
	return base
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
	if len(seg) < min || len(seg) > max {
		return name, false
	}
	for j := 0; j < len(seg); j++ {
		if strings.IndexByte(alphabet, seg[j]) < 0 {
			return name, false
		}
	}
	return name[:i], true
}
