package syslog

import (
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/logwindow/logwindow_exporter/internal/input"
	"github.com/logwindow/logwindow_exporter/internal/input/syslog/syslogtest"
	"github.com/logwindow/logwindow_exporter/internal/selfmetric"
	"github.com/logwindow/logwindow_exporter/internal/testutil/await"
)

// collector gathers what a Listener hands on.
type collector struct {
	mu    sync.Mutex
	lines []string
	got   chan struct{}
}

func newCollector() *collector { return &collector{got: make(chan struct{}, 1<<16)} }

func (c *collector) handle(_ string, line []byte) {
	c.mu.Lock()
	c.lines = append(c.lines, string(line))
	c.mu.Unlock()
	c.got <- struct{}{}
}

// wait blocks until n lines have arrived, failing the test if they have not by
// await.Deadline.
func (c *collector) wait(t *testing.T, n int) []string {
	t.Helper()
	for range n {
		if _, ok := await.Receive(t, c.got); !ok {
			t.Fatalf("got %d lines, waiting for %d", len(c.snapshot()), n)
		}
	}
	return c.snapshot()
}

func (c *collector) snapshot() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.lines)
}

func listen(t *testing.T, opts Options, h input.Handler) *Listener {
	t.Helper()
	l, err := Listen(opts, h)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(l.Stop)
	return l
}

func TestListenReceives(t *testing.T) {
	for _, tc := range []struct {
		name    string
		network string
		addr    func(dir string) string
		// target is where to send: a unix socket's own address is the name it was bound
		// through, not its path.
		target func(l *Listener) string
	}{
		{"unixgram", "unixgram", func(dir string) string { return filepath.Join(dir, "s.sock") },
			func(l *Listener) string { return l.unixPath }},
		{"udp", "udp", func(string) string { return "127.0.0.1:0" },
			func(l *Listener) string { return l.conn.LocalAddr().String() }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newCollector()
			l := listen(t, Options{Network: tc.network, Addr: tc.addr(t.TempDir())}, c.handle)
			if !l.Ready() {
				t.Fatal("not ready once bound")
			}
			syslogtest.Send(t, tc.name, tc.target(l), nginxDatagram, "not syslog at all", nginxNoHostname, "<13>no timestamp")
			got := c.wait(t, 4)
			want := []string{nginxLine, "not syslog at all", nginxLine, "no timestamp"}
			if !slices.Equal(got, want) {
				t.Errorf("lines = %q, want %q", got, want)
			}
			// A batch's malformed datagrams are counted once it was handed on.
			if s := waitStats(t, l, func(s input.Stats) bool { return count(s, selfmetric.InputMalformedDatagrams.Name, "") > 0 }); s.LinesRead != 4 || received(s) != 4 || count(s, selfmetric.InputMalformedDatagrams.Name, "") != 1 {
				t.Errorf("stats = %+v", s)
			}
		})
	}
}

// A datagram of no bytes, or of only blanks and line ends, carries no line: rsyslog passes
// over an empty one, and senders send them as keepalives. Such a datagram is received and
// counted as such, but is neither a line read nor a malformed datagram, on either kind of
// socket.
func TestListenIgnoresBlankDatagrams(t *testing.T) {
	blanks := []string{"", "\n", "\r\n", "\x00", " ", "\t \r\n", "\n\n"}
	for _, tc := range []struct {
		network string
		addr    func(dir string) string
		target  func(l *Listener) string
	}{
		{"unixgram", func(dir string) string { return filepath.Join(dir, "s.sock") },
			func(l *Listener) string { return l.unixPath }},
		{"udp", func(string) string { return "127.0.0.1:0" },
			func(l *Listener) string { return l.conn.LocalAddr().String() }},
	} {
		t.Run(tc.network, func(t *testing.T) {
			c := newCollector()
			l := listen(t, Options{Network: tc.network, Addr: tc.addr(t.TempDir())}, c.handle)
			// The line after the blanks comes through the same socket and queue after
			// them: once it is handed on, every blank was looked at.
			syslogtest.Send(t, tc.network, tc.target(l), append(blanks, nginxDatagram)...)
			if got := c.wait(t, 1); !slices.Equal(got, []string{nginxLine}) {
				t.Errorf("lines = %q, want the one line after the blank datagrams", got)
			}
			s := l.Stats()
			if s.LinesRead != 1 || count(s, selfmetric.InputMalformedDatagrams.Name, "") != 0 {
				t.Errorf("lines read %d, malformed %d, want 1 and 0 (stats %+v)", s.LinesRead, count(s, selfmetric.InputMalformedDatagrams.Name, ""), s)
			}
			if r := received(s); r != uint64(len(blanks)+1) {
				t.Errorf("received %d datagrams, want %d", r, len(blanks)+1)
			}
		})
	}
}

func TestListenTooLong(t *testing.T) {
	c := newCollector()
	path := filepath.Join(t.TempDir(), "s.sock")
	l := listen(t, Options{Network: "unixgram", Addr: path, MaxLineBytes: 100}, c.handle)
	long := "<13>Nov 24 01:02:03 h t: " + string(make([]byte, 100))
	syslogtest.Send(t, "unixgram", path, long, "<13>Nov 24 01:02:03 h t: short")
	if got := c.wait(t, 1); !slices.Equal(got, []string{"short"}) {
		t.Errorf("lines = %q", got)
	}
	if s := l.Stats(); received(s) != 2 || s.TooLong != 1 {
		t.Errorf("stats = %+v", s)
	}
}

// A UDP datagram is at most 64 KiB, so a line cap set far above it (for a file's long
// lines) must not make a UDP listener hold a read buffer of the cap: a buffer the heap
// counts beyond the soft memory limit has the collector run without end. The largest
// datagram IPv4 carries is still read whole.
func TestListenUDPBufferBounded(t *testing.T) {
	const maxLine = 1 << 30
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	c := newCollector()
	l := listen(t, Options{Network: "udp", Addr: "127.0.0.1:0", MaxLineBytes: maxLine}, c.handle)
	header := "<13>Nov 24 01:02:03 h t: "
	body := strings.Repeat("x", 65507-len(header))
	syslogtest.Send(t, "udp", l.conn.LocalAddr().String(), header+body)
	if got := c.wait(t, 1); len(got) != 1 || got[0] != body {
		t.Errorf("the largest IPv4 datagram was not read whole: %d lines", len(got))
	}
	runtime.ReadMemStats(&after)
	if grown := int64(after.HeapAlloc) - int64(before.HeapAlloc); grown > 64<<20 {
		t.Errorf("the heap grew by %d MiB for a UDP listener of a %d MiB line cap", grown>>20, maxLine>>20)
	}
}

// A unix datagram may pass 64 KiB (nginx sends up to its socket's send buffer, 208 KiB
// by default), yet a line cap set far above what any sender can send (for a file's long
// lines) must not make the listener hold a read buffer of the cap, which the heap counts
// whole. A datagram of a default sender's largest size is still read whole.
func TestListenUnixBufferBounded(t *testing.T) {
	const maxLine = 1 << 30
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	c := newCollector()
	path := filepath.Join(t.TempDir(), "s.sock")
	listen(t, Options{Network: "unixgram", Addr: path, MaxLineBytes: maxLine}, c.handle)
	header := "<13>Nov 24 01:02:03 h t: "
	body := strings.Repeat("x", 200<<10)
	syslogtest.Send(t, "unixgram", path, header+body)
	if got := c.wait(t, 1); len(got) != 1 || got[0] != body {
		t.Errorf("a datagram of 200 KiB was not read whole: %d lines", len(got))
	}
	runtime.ReadMemStats(&after)
	if grown := int64(after.HeapAlloc) - int64(before.HeapAlloc); grown > 64<<20 {
		t.Errorf("the heap grew by %d MiB for a unix listener of a %d MiB line cap", grown>>20, maxLine>>20)
	}
}

// A handler that stalls fills the in-process queue; what does not fit is dropped and
// counted, every datagram is accounted for, and the socket is drained all the while (a
// blocking unix sender never loses one).
func TestListenQueueFull(t *testing.T) {
	const queue, sent = 8, 200
	path := filepath.Join(t.TempDir(), "s.sock")
	entered, release := make(chan struct{}, 1), make(chan struct{})
	c := newCollector()
	l := listen(t, Options{Network: "unixgram", Addr: path, QueueDatagrams: queue}, func(_ string, line []byte) {
		select {
		case entered <- struct{}{}:
		default:
		}
		<-release
		c.handle("", line)
	})
	datagrams := make([]string, sent)
	for i := range datagrams {
		datagrams[i] = "x"
	}
	syslogtest.Send(t, "unixgram", path, datagrams...)
	waitSettled(t, l, entered, sent)
	close(release)
	s := l.Stats()
	dropped := count(s, selfmetric.InputDroppedDatagrams.Name, "queue")
	delivered := len(c.wait(t, sent-int(dropped)))
	if dropped == 0 || uint64(delivered)+dropped != sent {
		t.Errorf("delivered %d + dropped %d != sent %d (stats %+v)", delivered, dropped, sent, s)
	}
	// At most the queue plus the one datagram the stalled handler holds got through.
	if delivered > queue+1 {
		t.Errorf("delivered %d with a queue of %d", delivered, queue)
	}
}

// Datagrams that wait in the queue are handled in batches of at most batchDatagrams, each
// after one call of Options.Batch and followed by one of Options.BatchEnd: a handler that
// stalls on the first leaves the rest queued, which then go through in as few batches as
// the bound allows, and the last batch ends once the queue is dry.
func TestListenBatch(t *testing.T) {
	const sent = 2*batchDatagrams + 87
	path := filepath.Join(t.TempDir(), "s.sock")
	entered, release := make(chan struct{}), make(chan struct{})
	c := newCollector()
	var mu sync.Mutex
	// batches are the datagrams per batch, ended those each batch had at its end.
	var batches, ended []int
	endedAll := make(chan struct{}) // closed when the batch of the last datagram ended
	endedSum := 0
	l := listen(t, Options{Network: "unixgram", Addr: path, QueueDatagrams: 2 * sent,
		Batch: func() {
			mu.Lock()
			defer mu.Unlock()
			if len(ended) != len(batches) {
				t.Errorf("batch %d began before batch %d ended", len(batches), len(ended))
			}
			batches = append(batches, 0)
		},
		BatchEnd: func() {
			mu.Lock()
			defer mu.Unlock()
			ended = append(ended, batches[len(batches)-1])
			if endedSum += ended[len(ended)-1]; endedSum == sent {
				close(endedAll)
			}
		}}, func(_ string, line []byte) {
		if len(c.snapshot()) == 0 {
			close(entered)
			<-release
		}
		mu.Lock()
		batches[len(batches)-1]++
		mu.Unlock()
		c.handle("", line)
	})
	datagrams := make([]string, sent)
	for i := range datagrams {
		datagrams[i] = "x"
	}
	syslogtest.Send(t, "unixgram", path, datagrams...)
	waitSettled(t, l, entered, sent)
	close(release)
	c.wait(t, sent)
	if _, ok := await.Receive(t, endedAll); !ok {
		t.Fatal("the batch of the last datagram never ended")
	}
	mu.Lock()
	defer mu.Unlock()
	if len(ended) != len(batches) {
		t.Fatalf("%d batches ended of %d", len(ended), len(batches))
	}
	total := 0
	for i, n := range batches {
		if n == 0 || n > batchDatagrams {
			t.Errorf("a batch of %d datagrams", n)
		}
		if ended[i] != n {
			t.Errorf("batch %d of %d datagrams ended after %d", i, n, ended[i])
		}
		total += n
	}
	// The first datagram may have been taken alone, before the others were queued.
	least := (sent + batchDatagrams - 1) / batchDatagrams
	if total != sent || len(batches) < least || len(batches) > least+1 {
		t.Errorf("batches %v for %d datagrams", batches, sent)
	}
}

func TestSocketFile(t *testing.T) {
	old := syscall.Umask(0o077) // a restrictive umask must not narrow the mode asked for
	defer syscall.Umask(old)
	for _, tc := range []struct {
		name string
		mode fs.FileMode
		want fs.FileMode
	}{
		{"default: owner and group", 0, 0o660},
		{"configured open to all", 0o666, 0o666},
		{"configured", 0o660, 0o660},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "s.sock")
			l, err := Listen(Options{Network: "unixgram", Addr: path, SocketMode: tc.mode}, func(string, []byte) {})
			if err != nil {
				t.Fatal(err)
			}
			fi, err := os.Lstat(path)
			if err != nil {
				t.Fatal(err)
			}
			if fi.Mode().Type() != fs.ModeSocket || fi.Mode().Perm() != tc.want {
				t.Errorf("mode = %v, want socket %v", fi.Mode(), tc.want)
			}
			l.Stop()
			if _, err := os.Lstat(path); !os.IsNotExist(err) {
				t.Errorf("socket still there after Stop: %v", err)
			}
		})
	}
}

func TestSocketPathTaken(t *testing.T) {
	for _, tc := range []struct {
		name    string
		prepare func(t *testing.T, path string)
		ok      bool
		err     string // what the error says, when not ok
	}{
		{"stale socket from a crash is replaced", func(t *testing.T, path string) {
			c, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: path, Net: "unixgram"})
			if err != nil {
				t.Fatal(err)
			}
			c.Close() // a unixgram socket leaves its file behind, as a killed process does
		}, true, ""},
		{"live socket is refused", func(t *testing.T, path string) {
			c, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: path, Net: "unixgram"})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { c.Close() })
		}, false, "is in use by another process"},
		// Another service's socket (journald's stdout socket): a wrong path, said so.
		{"live stream socket is refused", func(t *testing.T, path string) {
			ln, err := net.Listen("unix", path)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { ln.Close() })
		}, false, "is another process's socket, not a datagram one"},
		{"symlink is refused and kept", func(t *testing.T, path string) {
			target := path + ".stale"
			c, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: target, Net: "unixgram"})
			if err != nil {
				t.Fatal(err)
			}
			c.Close()
			if err := os.Symlink(target, path); err != nil {
				t.Fatal(err)
			}
		}, false, "exists and is not a socket"},
		{"regular file is refused and kept", func(t *testing.T, path string) {
			if err := os.WriteFile(path, []byte("data"), 0o600); err != nil {
				t.Fatal(err)
			}
		}, false, "exists and is not a socket"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "s.sock")
			tc.prepare(t, path)
			before, _ := os.Lstat(path)
			l, err := Listen(Options{Network: "unixgram", Addr: path}, func(string, []byte) {})
			if tc.ok != (err == nil) || err != nil && !strings.Contains(err.Error(), path+" "+tc.err) {
				t.Fatalf("Listen: err = %v, want ok %v or %q", err, tc.ok, path+" "+tc.err)
			}
			if err == nil {
				l.Stop()
				return
			}
			after, statErr := os.Lstat(path)
			if statErr != nil || !os.SameFile(before, after) {
				t.Errorf("the file at the path was touched: %v", statErr)
			}
		})
	}
}

// Stop removes the socket it bound, never a file that replaced it meanwhile.
func TestStopKeepsReplacedFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.sock")
	l, err := Listen(Options{Network: "unixgram", Addr: path}, func(string, []byte) {})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte("someone else's"), 0o600); err != nil {
		t.Fatal(err)
	}
	l.Stop()
	if b, err := os.ReadFile(path); err != nil || string(b) != "someone else's" {
		t.Errorf("replaced file: %q, %v", b, err)
	}
}

// count is the input's counter of the family name with the label value given ("" for
// none).
func count(s input.Stats, name, labelValue string) uint64 {
	for _, c := range s.Counters {
		if c.Name == name && c.LabelValue == labelValue {
			return c.Value
		}
	}
	return 0
}

// waitStats returns l's stats once done says they are complete, or as they are at
// await.Deadline, for the caller to fail on.
func waitStats(t *testing.T, l *Listener, done func(input.Stats) bool) input.Stats {
	t.Helper()
	var s input.Stats
	await.Until(t, func() bool { s = l.Stats(); return done(s) })
	return s
}

// waitSettled waits, once entered says the handler holds the first datagram (and takes no
// other until released), until the reader has queued or dropped every one of the n sent:
// it counts a datagram received before it queues it, so that a test released on that
// count alone would see the last ones queued into the room the release made.
func waitSettled(t *testing.T, l *Listener, entered <-chan struct{}, n uint64) {
	t.Helper()
	if _, ok := await.Receive(t, entered); !ok {
		t.Fatal("the handler was never given a datagram")
	}
	settled := func(s input.Stats) bool {
		return count(s, selfmetric.InputDroppedDatagrams.Name, "queue")+uint64(len(l.queue))+1 == n
	}
	if s := waitStats(t, l, settled); !settled(s) {
		t.Fatalf("%d queued and %d dropped of %d datagrams, one held (stats %+v)", len(l.queue), count(s, selfmetric.InputDroppedDatagrams.Name, "queue"), n, s)
	}
}

// waitReceived waits until l has received n datagrams, failing the test if it has not by
// await.Deadline.
func waitReceived(t *testing.T, l *Listener, n uint64) {
	t.Helper()
	if s := waitStats(t, l, func(s input.Stats) bool { return received(s) >= n }); received(s) < n {
		t.Fatalf("%d datagrams received, want %d", received(s), n)
	}
}

// received counts the datagrams received.
func received(s input.Stats) uint64 { return count(s, selfmetric.InputDatagrams.Name, "") }

// Options.Quiet is called on the handler's goroutine while no datagram waits, after the
// datagrams handed on, so that a handler holding lines for the ones after them can let
// them go once none comes; with none set, the listener hands datagrams on as ever.
func TestListenQuiet(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "s.sock")
	var mu sync.Mutex
	var order []string // what the handler's goroutine saw, in order: lines and quiet ticks
	quiet := make(chan struct{}, 1)
	l := listen(t, Options{Network: "unixgram", Addr: sock, QuietInterval: time.Millisecond, Quiet: func() {
		mu.Lock()
		defer mu.Unlock()
		if len(order) > 0 && order[len(order)-1] != "quiet" {
			order = append(order, "quiet")
			select {
			case quiet <- struct{}{}:
			default:
			}
		}
	}}, func(_ string, line []byte) {
		mu.Lock()
		defer mu.Unlock()
		order = append(order, string(line))
	})
	for _, line := range []string{"a", "b"} {
		syslogtest.Send(t, "unixgram", l.unixPath, line)
		if _, ok := await.Receive(t, quiet); !ok {
			t.Fatalf("no quiet tick after %q", line)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if want := []string{"a", "quiet", "b", "quiet"}; !slices.Equal(order, want) {
		t.Errorf("handler's goroutine saw %q, want %q", order, want)
	}
}

// Options.Stopped is called on the handler's goroutine once Stop closed the socket and
// every datagram queued was handed on, before Stop returns, and once however often Stop
// is called: a handler holding lines for the ones after them lets them go there.
func TestListenStopped(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "s.sock")
	var mu sync.Mutex
	var order []string // what the handler's goroutine saw, in order: lines and the stop
	first, release := make(chan struct{}), make(chan struct{})
	l := listen(t, Options{Network: "unixgram", Addr: sock, Stopped: func() {
		mu.Lock()
		defer mu.Unlock()
		order = append(order, "stopped")
	}}, func(_ string, line []byte) {
		if string(line) == "a" {
			close(first)
			<-release // the others queue meanwhile
		}
		mu.Lock()
		defer mu.Unlock()
		order = append(order, string(line))
	})
	syslogtest.Send(t, "unixgram", l.unixPath, "a", "b", "c")
	<-first
	waitReceived(t, l, 3)
	stopped := make(chan struct{})
	go func() {
		l.Stop()
		close(stopped)
	}()
	close(release)
	<-stopped
	l.Stop()
	mu.Lock()
	defer mu.Unlock()
	if want := []string{"a", "b", "c", "stopped"}; !slices.Equal(order, want) {
		t.Errorf("handler's goroutine saw %q by the time Stop returned, want %q", order, want)
	}
}

// The kernel's count of a UDP socket's drops is 32 bits: the drops go on being counted
// once it wraps, and a reading older than the last taken (a datagram's, queued before a
// look read the socket's count) adds nothing.
func TestObserveDrops(t *testing.T) {
	for _, tc := range []struct {
		name     string
		readings []uint32
		want     uint64
	}{
		{"growing", []uint32{3, 3, 10}, 10},
		{"an older reading", []uint32{10, 4, 12}, 12},
		{"wrapping", []uint32{1 << 30, 1 << 31, 3 << 30, 1<<32 - 1, 6}, 1<<32 + 6},
		{"an older reading across the wrap", []uint32{1 << 30, 1 << 31, 3 << 30, 5, 1<<32 - 2, 9}, 1<<32 + 9},
		{"an older reading before the wrap", []uint32{3, 1<<32 - 2, 5}, 5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var l Listener
			for _, d := range tc.readings {
				l.observeDrops(d)
			}
			if got := l.droppedKernel.Load(); got != tc.want {
				t.Errorf("readings %v: %d dropped, want %d", tc.readings, got, tc.want)
			}
		})
	}
}

// Stop hands on the datagrams the socket's receive buffer still holds, as it does those
// of its queue, and counts them received: sent before the input stopped (a shutdown, a
// reload that removes the input), they were lost with the socket, counted nowhere. The
// reader is held on the first datagram while the others wait in the kernel's buffer,
// and let go only once Stop told it to stop.
func TestStopDrainsSocket(t *testing.T) {
	for _, network := range []string{"unixgram", "udp"} {
		t.Run(network, func(t *testing.T) {
			addr := filepath.Join(t.TempDir(), "s.sock")
			if network == "udp" {
				addr = "127.0.0.1:0"
			}
			held, release := make(chan struct{}), make(chan struct{})
			var once sync.Once
			c := newCollector()
			l := listen(t, Options{Network: network, Addr: addr,
				received: func() { once.Do(func() { close(held); <-release }) },
				stopping: func() { close(release) },
			}, c.handle)
			if network == "udp" {
				addr = l.conn.LocalAddr().String()
			}
			sent := []string{"a", "b", "c", "d", "e"}
			syslogtest.Send(t, network, addr, sent...)
			<-held
			l.Stop()
			if got := c.snapshot(); !slices.Equal(got, sent) {
				t.Errorf("handed on by the time Stop returned: %q, want %q", got, sent)
			}
			if s := l.Stats(); received(s) != uint64(len(sent)) || s.LinesRead != uint64(len(sent)) {
				t.Errorf("%d datagrams received, %d lines, want %d of each", received(s), s.LinesRead, len(sent))
			}
		})
	}
}
