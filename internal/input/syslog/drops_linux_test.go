package syslog

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/logwindow/logwindow_exporter/internal/input"
	"github.com/logwindow/logwindow_exporter/internal/selfmetric"
	"github.com/logwindow/logwindow_exporter/internal/testutil/await"
)

// The kernel's drop count, as the Listener reads it, on sockets nobody reads while a
// burst larger than the receive buffer arrives: UDP drops and says so with the next
// datagram queued after the drops; a unix datagram socket drops nothing and makes the (non-blocking) sender fail
// instead, which is why the Listener drains it into a queue of its own.
func TestKernelDropCount(t *testing.T) {
	const burst = 2000
	for _, tc := range []struct {
		network string
		listen  func(t *testing.T) net.PacketConn
		drops   bool
	}{
		{"udp", func(t *testing.T) net.PacketConn {
			c, err := net.ListenPacket("udp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			return c
		}, true},
		{"unixgram", func(t *testing.T) net.PacketConn {
			path := filepath.Join(t.TempDir(), "s.sock")
			c, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: path, Net: "unixgram"})
			if err != nil {
				t.Fatal(err)
			}
			return c
		}, false},
	} {
		t.Run(tc.network, func(t *testing.T) {
			rc := tc.listen(t)
			defer rc.Close()
			if err := enableDropCount(rc); err != nil {
				t.Fatal(err)
			}
			setReceiveBuffer(t, rc, 4096)
			sendErrs := sendNonBlocking(t, rc.LocalAddr(), burst)
			received, _ := drain(t, rc, nil)
			// The count travels with a datagram queued after the drops.
			sendErrs += sendNonBlocking(t, rc.LocalAddr(), 1)
			more, drops := drain(t, rc, func(more int, drops uint64) bool {
				return received+more+int(drops)+sendErrs >= burst+1
			})
			received += more
			if tc.drops {
				if drops == 0 || received+int(drops) != burst+1 {
					t.Errorf("received %d + kernel drops %d != sent %d", received, drops, burst+1)
				}
				return
			}
			if drops != 0 || sendErrs == 0 || received+sendErrs != burst+1 {
				t.Errorf("received %d, drops %d, failed sends %d of %d", received, drops, sendErrs, burst+1)
			}
		})
	}
}

// TestKernelDropsShownWithTheirDatagram: the kernel's count of the datagrams it dropped
// comes with the next datagram it queues, and a look at the counters (a scrape) that
// shows that datagram received shows those drops: it counted the datagram received
// before the drops it told of, and a scrape in between read a burst's datagrams
// received and no drop, which the next scrape put before them. A burst arrives while
// the listener's reader is held, its UDP socket's buffer small; then a datagram queued
// once the reader took the burst's, which tells of the drops, is looked at as it is
// counted received (Options.received). So it is where a look cannot read the socket's
// count (SO_MEMINFO, which a kernel before 4.12 lacks), with the datagram's count alone.
func TestKernelDropsShownWithTheirDatagram(t *testing.T) {
	const burst = 2000
	for _, tc := range []struct {
		name     string
		noLookup bool // a look does not read the socket's count
	}{
		{"the socket's count read at a look", false},
		{"the datagram's count alone", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			entered, release := make(chan struct{}), make(chan struct{})
			var mu sync.Mutex
			var looks [][]input.Counter // Arrivals as each datagram after the first was counted
			var listener atomic.Pointer[Listener]
			first := true // the reader's alone
			l := listen(t, Options{Network: "udp", Addr: "127.0.0.1:0", received: func() {
				if first {
					first = false
					if tc.noLookup {
						// The reader's, before anyone looks: the looks after it are ordered
						// by entered or made by the reader.
						listener.Load().udp = nil
					}
					close(entered)
					<-release
					return
				}
				look := listener.Load().Arrivals()
				mu.Lock()
				looks = append(looks, look)
				mu.Unlock()
			}}, func(string, []byte) {})
			listener.Store(l)
			addr, failed := burstBehind(t, l, entered, release, burst)
			seen := func() int {
				mu.Lock()
				defer mu.Unlock()
				return len(looks)
			}
			// Every datagram of the burst is read, dropped by the kernel, or failed to send.
			port := addr.(*net.UDPAddr).Port
			if !await.Until(t, func() bool { return seen()+int(kernelDrops(t, port))+failed == burst }) {
				t.Fatalf("of %d datagrams sent, %d read, %d dropped by the kernel, %d failed", burst, seen(), kernelDrops(t, port), failed)
			}
			burstRead := seen()
			drops := kernelDrops(t, port)
			if drops == 0 {
				t.Fatalf("the kernel dropped none of %d datagrams (%d read, %d failed): nothing to show", burst, burstRead, failed)
			}
			if sendNonBlocking(t, addr, 1) != 0 {
				t.Fatal("the datagram after the burst failed to send")
			}
			if !await.Until(t, func() bool { return seen() == burstRead+1 }) {
				t.Fatal("the datagram after the burst was never received")
			}
			l.Stop()
			mu.Lock()
			last := looks[len(looks)-1]
			mu.Unlock()
			got := map[string]uint64{}
			for _, c := range last {
				got[c.Name+c.LabelValue] = c.Value
			}
			if got[selfmetric.InputDatagrams.Name] != uint64(burstRead+2) || got[selfmetric.InputDroppedDatagrams.Name+"receive_buffer"] != drops {
				t.Errorf("a look as the datagram after the burst was counted received: %d received, %d dropped by the kernel; want %d and the %d drops it told of",
					got[selfmetric.InputDatagrams.Name], got[selfmetric.InputDroppedDatagrams.Name+"receive_buffer"], burstRead+2, drops)
			}
		})
	}
}

// kernelDrops is the kernel's count of the datagrams the UDP socket of 127.0.0.1:port
// dropped (/proc/net/udp's drops).
func kernelDrops(t *testing.T, port int) uint64 {
	t.Helper()
	table, err := os.ReadFile("/proc/net/udp")
	if err != nil {
		t.Fatal(err)
	}
	local := fmt.Sprintf("0100007F:%04X", port)
	for _, line := range strings.Split(string(table), "\n") {
		if f := strings.Fields(line); len(f) > 2 && f[1] == local {
			n, err := strconv.ParseUint(f[len(f)-1], 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
	}
	t.Fatalf("no UDP socket of 127.0.0.1:%d in /proc/net/udp", port)
	return 0
}

// burstBehind sends l one datagram, waits until its reader holds it (entered), sends it
// burst more into a receive buffer of 4 KiB, most of which the kernel drops, and lets
// the reader go on (release). It returns l's address and the sends that failed.
func burstBehind(t *testing.T, l *Listener, entered, release chan struct{}, burst int) (net.Addr, int) {
	t.Helper()
	setReceiveBuffer(t, l.conn, 4096)
	addr := l.conn.LocalAddr()
	sendNonBlocking(t, addr, 1)
	if _, ok := await.Receive(t, entered); !ok {
		t.Fatal("the first datagram was never received")
	}
	failed := sendNonBlocking(t, addr, burst)
	close(release)
	return addr, failed
}

func setReceiveBuffer(t *testing.T, c net.PacketConn, n int) {
	t.Helper()
	raw, err := c.(syscall.Conn).SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	raw.Control(func(fd uintptr) {
		err = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, n)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// sendNonBlocking sends n datagrams the way nginx does (no waiting on a full queue) and
// returns how many sends failed with EAGAIN.
func sendNonBlocking(t *testing.T, to net.Addr, n int) int {
	t.Helper()
	c, err := net.Dial(to.Network(), to.String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	raw, err := c.(syscall.Conn).SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	failed := 0
	for range n {
		raw.Write(func(fd uintptr) bool {
			_, err := syscall.Write(int(fd), []byte("<190>Nov 24 05:28:09 vm nginx: a line of about the usual length"))
			switch {
			case errors.Is(err, syscall.EAGAIN):
				failed++
			case err != nil:
				t.Fatal(err)
			}
			return true
		})
	}
	return failed
}

// drain reads the datagrams queued, until none is left when enough is nil, else until
// enough holds of their number and the latest drop count (those it returns), waiting for
// more while it does not: a datagram sent on loopback may be queued after its send
// returned (the kernel's softirq work, which a loaded machine defers), so that a queue
// found empty tells only that none is there yet. A wait ends at await.Deadline.
func drain(t *testing.T, c net.PacketConn, enough func(received int, drops uint64) bool) (received int, drops uint64) {
	t.Helper()
	raw, err := c.(syscall.Conn).SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	if err := c.SetReadDeadline(await.Deadline(t)); err != nil {
		t.Fatal(err)
	}
	buf, oob := make([]byte, 1024), make([]byte, 64)
	for enough == nil || !enough(received, drops) {
		var oobn int
		var recvErr error
		err := raw.Read(func(fd uintptr) bool {
			_, oobn, _, _, recvErr = syscall.Recvmsg(int(fd), buf, oob, syscall.MSG_DONTWAIT)
			// false waits for the socket to be readable, and calls again.
			return enough == nil || !errors.Is(recvErr, syscall.EAGAIN)
		})
		switch {
		case err != nil:
			t.Fatalf("%d datagrams received, drops %d, and no more: %v", received, drops, err)
		case errors.Is(recvErr, syscall.EAGAIN):
			return received, drops
		case recvErr != nil:
			t.Fatal(recvErr)
		}
		received++
		if d, ok := dropCount(oob[:oobn]); ok {
			drops = uint64(d)
		}
	}
	return received, drops
}

// TestKernelDropsAfterTheLastDatagram: the datagrams the kernel dropped after the last one
// it queued show at the next look at the counters, though no datagram came after them to
// tell of them. A burst fills a small UDP buffer while the reader is held: the datagrams
// queued were queued before the drops, and none follows.
func TestKernelDropsAfterTheLastDatagram(t *testing.T) {
	const burst = 2000
	entered, release := make(chan struct{}), make(chan struct{})
	var read atomic.Int64 // datagrams read after the first
	first := true         // the reader's alone
	l := listen(t, Options{Network: "udp", Addr: "127.0.0.1:0", received: func() {
		if first {
			first = false
			close(entered)
			<-release
			return
		}
		read.Add(1)
	}}, func(string, []byte) {})
	addr, failed := burstBehind(t, l, entered, release, burst)
	port := addr.(*net.UDPAddr).Port
	if !await.Until(t, func() bool { return int(read.Load())+int(kernelDrops(t, port))+failed == burst }) {
		t.Fatalf("of %d datagrams sent, %d read, %d dropped by the kernel, %d failed", burst, read.Load(), kernelDrops(t, port), failed)
	}
	drops := kernelDrops(t, port)
	if drops == 0 {
		t.Fatalf("the kernel dropped none of %d datagrams: nothing to show", burst)
	}
	got := map[string]uint64{}
	for _, c := range l.Arrivals() {
		got[c.Name+c.LabelValue] = c.Value
	}
	if got[selfmetric.InputDroppedDatagrams.Name+"receive_buffer"] != drops {
		t.Errorf("a look once every datagram was read shows %d dropped by the kernel, want %d", got[selfmetric.InputDroppedDatagrams.Name+"receive_buffer"], drops)
	}
}

// TestKernelDropsLookedAtWhileRead: looks at the counters (scrapes) that read the socket's
// count while the reader takes datagrams that tell of the same drops count each drop
// once. Each round holds the reader while a burst overflows the socket's small buffer,
// so that the datagrams of the rounds after the first come with a count of drops as the
// looks go on.
func TestKernelDropsLookedAtWhileRead(t *testing.T) {
	const rounds, burst = 4, 500
	hold := make(chan chan struct{}, 1)
	entered := make(chan struct{})
	var read atomic.Int64
	l := listen(t, Options{Network: "udp", Addr: "127.0.0.1:0", received: func() {
		read.Add(1)
		select {
		case release := <-hold:
			entered <- struct{}{}
			<-release
		default:
		}
	}}, func(string, []byte) {})
	setReceiveBuffer(t, l.conn, 4096)
	addr := l.conn.LocalAddr()
	port := addr.(*net.UDPAddr).Port
	done := make(chan struct{})
	var looking sync.WaitGroup
	looking.Go(func() {
		for {
			select {
			case <-done:
				return
			default:
				l.Arrivals()
			}
		}
	})
	sent, failed := 0, 0
	for range rounds {
		release := make(chan struct{})
		hold <- release
		failed += sendNonBlocking(t, addr, 1)
		sent++
		if _, ok := await.Receive(t, entered); !ok {
			t.Fatal("the reader was never held")
		}
		failed += sendNonBlocking(t, addr, burst)
		sent += burst
		close(release)
	}
	if !await.Until(t, func() bool { return int(read.Load())+int(kernelDrops(t, port))+failed == sent }) {
		t.Fatalf("of %d datagrams sent, %d read, %d dropped by the kernel, %d failed", sent, read.Load(), kernelDrops(t, port), failed)
	}
	close(done)
	looking.Wait()
	drops := kernelDrops(t, port)
	if drops == 0 {
		t.Fatalf("the kernel dropped none of %d datagrams: nothing to show", sent)
	}
	for _, c := range l.Arrivals() {
		if c.Name == selfmetric.InputDroppedDatagrams.Name && c.LabelValue == "receive_buffer" && c.Value != drops {
			t.Errorf("%d dropped by the kernel after %d rounds looked at while read, want %d", c.Value, rounds, drops)
		}
	}
}
