package follow

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// compressors are the archives a rotator makes of a log (logrotate's compresscmd, the
// kubelet's gzip): by the bytes they begin with, the extension they are named with, and
// the command that reads one back.
var compressors = []struct{ name, magic, ext, cat string }{
	{"gzip", "\x1f\x8b", ".gz", "zcat"},
	{"bzip2", "BZh", ".bz2", "bzcat"}, // and a digit, then the block magic: see compressed
	{"xz", "\xfd7zXZ\x00", ".xz", "xzcat"},
	{"zstd", "\x28\xb5\x2f\xfd", ".zst", "zstdcat"},
}

// compressed refuses a file that begins as a compressed archive does: its lines would be
// binary that fits no rule, and a one-shot over a glob that matches a log's compressed
// rotations (access.log*) would count none of their lines and exit 0. The error says
// how to read it.
func compressed(path string, f *os.File) error {
	var head [10]byte
	n, _ := f.ReadAt(head[:], 0)
	b := string(head[:n])
	for _, c := range compressors {
		if !strings.HasPrefix(b, c.magic) {
			continue
		}
		// "BZh" may begin a line of text: a bzip2 archive goes on with its block size
		// and the block's magic (the digits of pi).
		if c.name == "bzip2" && (n < 10 || b[3] < '1' || b[3] > '9' || b[4:] != "1AY&SY") {
			continue
		}
		return &failure{reasonNotRegular, fmt.Errorf("%s: %s-compressed: the exporter reads logs as text; read it decompressed (%s %s > FILE, then give FILE)", path, c.name, c.cat, path)}
	}
	return nil
}

// compressedMatch refuses a glob's match named as a compressed archive (access.log.1.gz):
// a glob that matches a log's rotations (access.log*) matches what a rotator compresses
// them into too, which a Follower, finding it new, would read from its first byte as
// binary lines. It is named by its extension rather than read, as a rotator writes it
// after creating it: a Follower may find it empty. So is the archive the kubelet is still
// writing, under the rotated file's name and .tmp (0.log.20240301-120000.tmp), which it
// names .gz once complete. Counted as not_regular: no log file.
func compressedMatch(path string) error {
	base := filepath.Base(path)
	for _, c := range compressors {
		if strings.HasSuffix(base, c.ext) {
			return &failure{reasonNotRegular, fmt.Errorf("%s: a %s-compressed archive, not a log: not followed; narrow the glob so that it does not match it", path, c.name)}
		}
	}
	if stem, ok := strings.CutSuffix(base, kubeletTemp); ok && len(RotatedFrom(stem)) > 0 {
		return &failure{reasonNotRegular, fmt.Errorf("%s: a rotated log's archive being written (the kubelet's, named .gz once complete), not a log: not followed; narrow the glob so that it does not match it", path)}
	}
	return nil
}

// kubeletTemp ends the name the kubelet writes a rotated log's gzip archive under.
const kubeletTemp = ".tmp"
