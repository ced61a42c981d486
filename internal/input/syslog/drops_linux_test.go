package syslog

import (
	"errors"
	"net"
	"path/filepath"
	"syscall"
	"testing"

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
			drops = d
		}
	}
	return received, drops
}
