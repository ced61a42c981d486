// Package critest writes Kubernetes container-log (CRI) lines for tests, as the kubelet
// does: a message in parts at random cuts, each a line of its own, the last one tagged F.
package critest

import (
	"math/rand/v2"
	"slices"
)

// Line is one CRI line without its newline: `<time> <stream> <P|F> <part>`.
func Line(time, stream, tag, part string) string {
	return time + " " + stream + " " + tag + " " + part
}

// Split returns msg as the CRI lines of up to four parts cut at random places (parts may
// be empty): P lines, then the F line that completes it.
func Split(r *rand.Rand, time, stream, msg string) []string {
	cuts := []int{0}
	for k := r.IntN(4); k > 0; k-- {
		cuts = append(cuts, r.IntN(len(msg)+1))
	}
	slices.Sort(cuts)
	cuts = append(cuts, len(msg))
	lines := make([]string, 0, len(cuts)-1)
	for c := 0; c+1 < len(cuts); c++ {
		tag := "P"
		if c+2 == len(cuts) {
			tag = "F"
		}
		lines = append(lines, Line(time, stream, tag, msg[cuts[c]:cuts[c+1]]))
	}
	return lines
}
