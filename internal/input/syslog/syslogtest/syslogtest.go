// Package syslogtest sends datagrams to a listening socket, for tests of the syslog input
// and of what reads it.
package syslogtest

import (
	"net"
	"testing"
)

// Send writes each datagram to the socket at addr ("unixgram" path or "udp" host:port),
// failing the test on any error.
func Send(t testing.TB, network, addr string, datagrams ...string) {
	t.Helper()
	c, err := net.Dial(network, addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for _, d := range datagrams {
		if _, err := c.Write([]byte(d)); err != nil {
			t.Fatal(err)
		}
	}
}
