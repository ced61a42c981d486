package syncbuf

import (
	"fmt"
	"sync"
	"testing"

	"github.com/logwindow/logwindow_exporter/internal/testutil/await"
)

// TestHolds: the channel of a text is closed by the write that completes it, even across
// writes, and at once for a text already written; never for one not written.
func TestHolds(t *testing.T) {
	var b Buffer
	split, never := b.Holds("waiting for it"), b.Holds("never said")
	fmt.Fprint(&b, "level=WARN msg=\"waiting ")
	select {
	case <-split:
		t.Fatal("closed before the text was whole")
	default:
	}
	fmt.Fprint(&b, "for it\"\n")
	select {
	case <-split:
	default:
		t.Fatal("not closed once the text was written")
	}
	select {
	case <-b.Holds("msg="):
	default:
		t.Fatal("not closed at once for a text already written")
	}
	select {
	case <-never:
		t.Fatal("closed for a text never written")
	default:
	}
}

// TestHoldsConcurrent: writers and watchers on several goroutines (run with -race).
func TestHoldsConcurrent(t *testing.T) {
	var b Buffer
	var wg sync.WaitGroup
	for i := range 8 {
		ch := b.Holds(fmt.Sprintf("<%d>", i))
		wg.Go(func() { fmt.Fprintf(&b, "<%d>", i) })
		wg.Go(func() { <-ch })
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	if _, ok := await.Receive(t, done); !ok {
		t.Fatalf("a text written, its channel never closed:\n%s", b.String())
	}
}
