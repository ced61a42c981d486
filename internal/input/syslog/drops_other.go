//go:build !linux

package syslog

import "net"

// enableDropCount does nothing where the kernel has no SO_RXQ_OVFL.
func enableDropCount(net.PacketConn) error { return nil }

// dropCount never has a count where the kernel has no SO_RXQ_OVFL.
func dropCount([]byte) (uint64, bool) { return 0, false }
