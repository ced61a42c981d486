package follow

import (
	"path/filepath"
	"slices"
	"testing"

	"github.com/logwindow/logwindow_exporter/internal/input"
)

// TestStatsPerPath: Stats has one entry per path read, sorted by path, whatever order
// the follower found its files in: a log rotated away and still read has its lag added to
// its successor's, found after another log of the glob.
func TestStatsPerPath(t *testing.T) {
	for _, c := range []struct {
		name    string
		rotated bool // b.log is rotated to b.log.1 before its successor is found
	}{
		{name: "a file a path"},
		{name: "a path's rotated file and its successor apart", rotated: true},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			b := filepath.Join(dir, "b.log")
			wb := create(t, b)
			writeLines(t, wb, 1, 10)
			f, _, _ := handDriven(t, filepath.Join(dir, "*.log"), func(string, []byte) {})
			writeLines(t, wb, 11, 12) // behind: written since the read
			want := []input.FileStats{{Path: filepath.Join(dir, "a.log")}, {Path: b, BytesBehind: 2 * lineLen}}
			if c.rotated {
				rename(t, b, b+".1")
				writeLines(t, create(t, b), 21, 23)
				want[1].BytesBehind += 3 * lineLen
			}
			writeLines(t, create(t, filepath.Join(dir, "a.log")), 31, 31)
			want[0].BytesBehind = lineLen
			f.discover(false)
			if got := f.Stats().Files; !slices.Equal(got, want) {
				t.Errorf("Stats().Files = %+v, want %+v", got, want)
			}
		})
	}
}
