//go:build !linux

package syslog

import (
	"fmt"
	"io/fs"
	"log/slog"
	"math"
	"net"
)

// bindUnix refuses: creating the socket without following a name on the way relies on
// Linux's /proc/self/fd (see unixsocket_linux.go).
func bindUnix(path string, _ fs.FileMode, _ *slog.Logger) (*net.UnixConn, fileID, error) {
	return nil, fileID{}, fmt.Errorf("%s: unix sockets are received on Linux only; use udp://127.0.0.1:port", path)
}

// maxUnixDatagram leaves the line cap alone to bound a read: bindUnix refuses here anyway.
func maxUnixDatagram() int { return math.MaxInt - 1 }

// CheckUnixPath says what bindUnix would: no unix socket here.
func CheckUnixPath(path string) error {
	_, _, err := bindUnix(path, 0, nil)
	return err
}
