//go:build !linux

package syslog

import (
	"net"
	"syscall"
)

// enableDropCount does nothing where the kernel has no SO_RXQ_OVFL.
func enableDropCount(net.PacketConn) error { return nil }

// dropCount never has a count where the kernel has no SO_RXQ_OVFL.
func dropCount([]byte) (uint32, bool) { return 0, false }

// socketDrops has no count where the kernel has no SO_MEMINFO.
func socketDrops(syscall.Conn) (uint32, bool) { return 0, false }
