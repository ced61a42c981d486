package syslog

import (
	"encoding/binary"
	"net"
	"syscall"
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
func dropCount(oob []byte) (uint64, bool) {
	if len(oob) == 0 {
		return 0, false
	}
	msgs, err := syscall.ParseSocketControlMessage(oob)
	if err != nil {
		return 0, false
	}
	for _, m := range msgs {
		if m.Header.Level == syscall.SOL_SOCKET && m.Header.Type == syscall.SO_RXQ_OVFL && len(m.Data) >= 4 {
			return uint64(binary.NativeEndian.Uint32(m.Data)), true
		}
	}
	return 0, false
}
