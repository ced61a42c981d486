package follow

import (
	"bufio"
	"compress/bzip2"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/klauspost/compress/zstd"
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
	var head [magicLen]byte
	n, _ := f.ReadAt(head[:], 0)
	if i := compressorOf(head[:n]); i >= 0 {
		c := compressors[i]
		return &failure{reasonNotRegular, fmt.Errorf("%s: %s-compressed: the exporter reads logs as text; read it decompressed (%s %s > FILE, then give FILE)", path, c.name, c.cat, path)}
	}
	return nil
}

// magicLen is how many first bytes compressorOf needs to tell every compressor.
const magicLen = 10

// compressorOf is the index in compressors of the one whose archives begin as head does,
// or -1.
func compressorOf(head []byte) int {
	b := string(head)
	for i, c := range compressors {
		if !strings.HasPrefix(b, c.magic) {
			continue
		}
		// "BZh" may begin a line of text: a bzip2 archive goes on with its block size
		// and the block's magic (the digits of pi).
		if c.name == "bzip2" && (len(b) < magicLen || b[3] < '1' || b[3] > '9' || b[4:magicLen] != "1AY&SY") {
			continue
		}
		return i
	}
	return -1
}

// archiveExt is the compressor of an archive named with its extension (access.log.2.zst),
// and the name without it; ok is false for a name without one.
func archiveExt(name string) (c int, stem string, ok bool) {
	for i, z := range compressors {
		if stem, ok := strings.CutSuffix(name, z.ext); ok {
			return i, stem, true
		}
	}
	return -1, name, false
}

// decompressed reads the archive b begins (gzip, bzip2 or zstd, told by its first bytes);
// done lets go of what the decompressor holds. An xz archive is none: no maintained Go
// library reads xz, and the module has none (errUnreadable).
func decompressed(b *bufio.Reader) (r io.Reader, done func(), err error) {
	head, _ := b.Peek(magicLen)
	i := compressorOf(head)
	if i < 0 {
		return nil, nil, errors.New("not a compressed archive")
	}
	switch compressors[i].name {
	case "gzip":
		z, err := gzip.NewReader(b)
		return z, func() {}, err
	case "bzip2":
		return bzip2.NewReader(b), func() {}, nil
	case "zstd":
		// One goroutine and the least memory: a KiB is all that is read. A frame that
		// asks for a larger window than a log's compressor gives (zstd --long) is refused.
		z, err := zstd.NewReader(b, zstd.WithDecoderConcurrency(1), zstd.WithDecoderLowmem(true), zstd.WithDecoderMaxWindow(archiveWindow))
		if err != nil {
			return nil, nil, err
		}
		return z, z.Close, nil
	}
	return nil, nil, errUnreadable
}

// archiveWindow bounds the window of a zstd archive that decompressed reads: zstd's
// levels up to 19 use at most 8 MiB.
const archiveWindow = 32 << 20

// errUnreadable is decompressed's for an archive of a compressor the exporter cannot read.
var errUnreadable = errors.New("no decompressor for it in the exporter")

// readable reports whether decompressed reads archives of compressors[c].
func readable(c int) bool { return compressors[c].name != "xz" }

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
