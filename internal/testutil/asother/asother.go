// Package asother runs code of a test as an exporter started as another user than the one
// that made its storage directory's files: refused (EACCES) by the files of mode 0 the
// test makes, even when the tests run as root.
package asother

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/logwindow/logwindow_exporter/internal/testutil/await"
)

// Other is the user and group whose file access Run's code has where the tests run as
// root: nobody's.
const Other = 65534

// Run runs f as another user (Other, where the tests run as root) and waits for it,
// failing the test if f has not returned by await.Deadline, so that code that would wait
// forever on a file fails its test instead: f is then left where it waits. The directories dirs,
// and their parents up to the test's temporary directory, are opened to every user first,
// as the Helm chart gives the storage directory to the exporter's user.
func Run(t *testing.T, dirs []string, f func()) {
	t.Helper()
	if os.Geteuid() == 0 {
		for _, dir := range dirs {
			for d := dir; d != filepath.Dir(d) && d != os.TempDir(); d = filepath.Dir(d) {
				if err := os.Chmod(d, 0o777); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	done := make(chan error, 1)
	go func() { done <- run(f) }()
	err, ok := await.Receive(t, done)
	if !ok {
		t.Fatal("still waiting for the code run as another user")
	}
	if err != nil {
		t.Skip(err)
	}
}
