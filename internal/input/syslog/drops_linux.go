package syslog

import (
	"encoding/binary"
	"net"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// enableDropCount asks the kernel to attach its count of dropped datagrams to each
// datagram received (SO_RXQ_OVFL).
func enableDropCount(c net.PacketConn) error {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return nil
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return err
	}
	var serr error
	if err := raw.Control(func(fd uintptr) {
		serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RXQ_OVFL, 1)
	}); err != nil {
		return err
	}
	return serr
}

// dropCount reads the SO_RXQ_OVFL count from a datagram's control messages: the
// datagrams the socket had dropped when this one was queued.
func dropCount(oob []byte) (uint32, bool) {
	if len(oob) == 0 {
		return 0, false
	}
	msgs, err := syscall.ParseSocketControlMessage(oob)
	if err != nil {
		return 0, false
	}
	for _, m := range msgs {
		if m.Header.Level == syscall.SOL_SOCKET && m.Header.Type == syscall.SO_RXQ_OVFL && len(m.Data) >= 4 {
			return binary.NativeEndian.Uint32(m.Data), true
		}
	}
	return 0, false
}

// socketDrops reads the kernel's count of the datagrams c dropped so far (SO_MEMINFO,
// Linux 4.12), the count SO_RXQ_OVFL gives with a datagram; ok is false where it cannot
// be read, and on a closed socket.
func socketDrops(c syscall.Conn) (uint32, bool) {
	raw, err := c.SyscallConn()
	if err != nil {
		return 0, false
	}
	var info [unix.SK_MEMINFO_VARS]uint32
	size := uint32(unsafe.Sizeof(info))
	var errno syscall.Errno
	if err := raw.Control(func(fd uintptr) {
		_, _, errno = unix.Syscall6(unix.SYS_GETSOCKOPT, fd, unix.SOL_SOCKET, unix.SO_MEMINFO,
			uintptr(unsafe.Pointer(&info)), uintptr(unsafe.Pointer(&size)), 0)
	}); err != nil || errno != 0 || size <= unix.SK_MEMINFO_DROPS*4 {
		return 0, false
	}
	return info[unix.SK_MEMINFO_DROPS], true
}
