package syslog

import (
	"path/filepath"
	"testing"

	"github.com/logwindow/logwindow_exporter/internal/input/syslog/syslogtest"
)

// The header's hostname and tag, as senders write them.
func TestParseHeader(t *testing.T) {
	for _, tc := range []struct {
		name, in, host, tag, msg string
	}{
		{"nginx", nginxDatagram, "vm", "nginx", nginxLine},
		{"nginx nohostname", nginxNoHostname, "", "nginx", nginxLine},
		{"tag with pid", "<13>Nov 24 01:02:03 host cron[123]: job done", "host", "cron", "job done"},
		{"ipv6 host", "<13>Nov 24 01:02:03 ::1 app: hi", "::1", "app", "hi"},
		{"ipv6 host starting with hex", "<13>Nov 24 01:02:03 fe80::1 app: hi", "fe80::1", "app", "hi"},
		{"no tag", "<13>Nov 24 01:02:03 host just words here", "host", "", "just words here"},
		{"only a message", "<13>Nov 24 01:02:03 hello", "", "", "hello"},
		{"rfc5424", "<165>1 2003-10-11T22:14:15.003Z mymachine.example.com evntslog - ID47 - msg text", "mymachine.example.com", "evntslog", "msg text"},
		{"rfc5424 nil values", "<165>1 - - - - - - hi", "", "", "hi"},
		{"rfc5424 sd", `<165>1 2003-10-11T22:14:15.003Z host app 42 ID47 [a@1 b="c"] m`, "host", "app", "m"},
		{"no timestamp", "<13>hello", "", "", "hello"},
		{"no timestamp, tag", "<13>busybox[9]: hello there", "", "busybox", "hello there"},
		{"rfc3339 time", "<13>2026-11-24T01:02:03Z web-2 nginx: hi", "web-2", "nginx", "hi"},
		{"unpadded day", "<13>Nov 4 01:02:03 web-2 nginx: hi", "web-2", "nginx", "hi"},
		{"not syslog", "plain line", "", "", "plain line"},
		// A level opening a headerless message (Python's SysLogHandler under a formatter
		// of "%(levelname)s: %(message)s") is the message's, not a program's name.
		{"no timestamp, level", "<12>WARNING: disk full", "", "", "WARNING: disk full"},
		{"no timestamp, lower-case level", "<11>error: disk full", "", "", "error: disk full"},
		{"no timestamp, tag before a level", "<12>myapp: WARNING: disk full", "", "myapp", "WARNING: disk full"},
		// nginx always sends its time: a tag there is nginx's, whatever its name.
		{"nginx tagged as a level", "<190>Nov 24 05:28:09 vm info: GET /", "vm", "info", "GET /"},
		// Cisco IOS: a sequence number, an origin, a time marked unsynced (*) or
		// once-synced (.), milliseconds, a time zone, the mnemonic as the tag.
		{"cisco", "<189>*Mar  1 00:00:00.123: %SYS-5-CONFIG_I: Configured from console", "", "%SYS-5-CONFIG_I", "Configured from console"},
		{"cisco sequence number", "<189>123: *Mar  1 00:00:00.123: %SYS-5-CONFIG_I: Configured", "", "%SYS-5-CONFIG_I", "Configured"},
		{"cisco once synced", "<189>124: .Mar  1 00:00:01.456: %LINK-3-UPDOWN: Interface Gi0/1, changed state to up", "", "%LINK-3-UPDOWN", "Interface Gi0/1, changed state to up"},
		{"cisco time zone", "<189>125: Nov 24 2026 01:02:03.123 UTC: %SYS-5-CONFIG_I: Configured", "", "%SYS-5-CONFIG_I", "Configured"},
		{"cisco time zone, no sequence", "<189>*Nov 24 01:02:03 CET: %SYS-5-CONFIG_I: Configured", "", "%SYS-5-CONFIG_I", "Configured"},
		{"cisco origin", "<189>126: R1: *Mar  1 00:00:00.123: %SYS-5-CONFIG_I: Configured", "R1", "%SYS-5-CONFIG_I", "Configured"},
		{"cisco without timestamps", "<189>127: %SYS-5-CONFIG_I: Configured", "", "%SYS-5-CONFIG_I", "Configured"},
		{"cisco synced, plain header", "<189>Mar  1 00:00:00.123: %SYS-5-CONFIG_I: Configured", "", "%SYS-5-CONFIG_I", "Configured"},
		// Without a message counter (`no logging message-counter syslog`) and synced, the
		// zone and the mnemonic after it still say Cisco: the zone is no tag.
		{"cisco synced, time zone, no sequence", "<189>Mar  1 00:00:00.123 UTC: %SYS-5-CONFIG_I: Configured", "", "%SYS-5-CONFIG_I", "Configured"},
		{"cisco synced, time zone and year, no sequence", "<189>Mar  1 2026 00:00:00 CEST: %LINK-3-UPDOWN: Interface Gi0/1, changed state to up", "", "%LINK-3-UPDOWN", "Interface Gi0/1, changed state to up"},
		// The '%' marks a mnemonic: the name after it is held to a tag's length, as
		// an RFC 3164 tag is (48 bytes here).
		{"cisco mnemonic of a tag's length", "<189>128: *Mar  1 00:00:00.123: %CLIENT_ORCH_LOG-6-CLIENT_ADDED_TO_RUN_STATE_AGAI: up", "", "%CLIENT_ORCH_LOG-6-CLIENT_ADDED_TO_RUN_STATE_AGAI", "up"},
		{"cisco mnemonic of a tag's length after a zone", "<189>Mar  1 00:00:00.123 UTC: %CLIENT_ORCH_LOG-6-CLIENT_ADDED_TO_RUN_STATE_AGAI: up", "", "%CLIENT_ORCH_LOG-6-CLIENT_ADDED_TO_RUN_STATE_AGAI", "up"},
		{"cisco mnemonic past a tag's length", "<189>129: *Mar  1 00:00:00.123: %CLIENT_ORCH_LOG-6-CLIENT_ADDED_TO_RUN_STATE_AGAIN: up", "", "", "%CLIENT_ORCH_LOG-6-CLIENT_ADDED_TO_RUN_STATE_AGAIN: up"},
		// A tag in capitals is a tag, unless a mnemonic follows it.
		{"tag in capitals", "<190>Nov 24 05:28:09 NGINX: GET /", "", "NGINX", "GET /"},
		{"tag in capitals, a percent", "<190>Nov 24 05:28:09 APP: %d items", "", "APP", "%d items"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			msg, h, _ := Parse([]byte(tc.in))
			if string(h.Hostname) != tc.host || string(h.Tag) != tc.tag || string(msg) != tc.msg {
				t.Errorf("Parse(%q) = %q, host %q, tag %q; want %q, %q, %q", tc.in, msg, h.Hostname, h.Tag, tc.msg, tc.host, tc.tag)
			}
		})
	}
}

// Datagrams received on a real socket come with their header, given just before their
// message, on the handler's goroutine.
func TestListenHeader(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "s.sock")
	c := newCollector()
	var header Header
	opts := Options{Network: "unixgram", Addr: sock, Header: func(h Header) { header = h }}
	listen(t, opts, func(source string, line []byte) {
		c.handle(source, []byte(string(header.Hostname)+"|"+string(header.Tag)+"|"+string(line)))
	})
	syslogtest.Send(t, "unixgram", sock,
		"<190>Nov 24 05:28:09 web-1 nginx: GET / 200",
		"<190>Nov 24 05:28:09 nginx_shop: GET / 404",
		"<165>1 2026-11-24T05:28:09Z web-3 nginx 42 - - GET / 500",
		"GET / 204")
	got := c.wait(t, 4)
	want := []string{"web-1|nginx|GET / 200", "|nginx_shop|GET / 404", "web-3|nginx|GET / 500", "||GET / 204"}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("datagram %d: %q, want %q", i, got[i], want[i])
		}
	}
}
