package cri

import "testing"

func TestStream(t *testing.T) {
	for _, tc := range []struct {
		line, want string
		ok         bool
	}{
		{"2026-11-28T02:42:59.123456789Z stdout F GET / 200", "stdout", true},
		{"2026-11-28T02:42:59.123456789Z stderr P part", "stderr", true},
		{"2026-11-28T02:42:59Z stdout F", "stdout", true},
		{"2026-11-28T02:42:59Z stdout", "", false},
		{"2026-11-28T02:42:59Z  F x", "", false},
		{"no-spaces", "", false},
		{"", "", false},
	} {
		t.Run(tc.line, func(t *testing.T) {
			name, ok := Stream([]byte(tc.line))
			if string(name) != tc.want || ok != tc.ok {
				t.Errorf("Stream(%q) = %q, %v; want %q, %v", tc.line, name, ok, tc.want, tc.ok)
			}
		})
	}
}

// MessageStart is where the message of a CRI line starts: after its time, stream and tag,
// the tag's flags included; the line's end when the message is empty.
func TestMessageStart(t *testing.T) {
	for _, tc := range []struct {
		line string
		at   int
		ok   bool
	}{
		{"2026-11-28T02:42:59.123456789Z stdout F GET / 200", 40, true},
		{"2026-11-28T02:42:59Z stderr P:x part", 32, true},
		{"2026-11-28T02:42:59Z stdout F ", 30, true},
		{"2026-11-28T02:42:59Z stdout F", 29, true},
		{"2026-11-28T02:42:59Z stdout", 0, false},
		{"2026-11-28T02:42:59Z stdout X msg", 0, false},
		{"GET / 200", 0, false},
	} {
		t.Run(tc.line, func(t *testing.T) {
			if at, ok := MessageStart([]byte(tc.line)); at != tc.at || ok != tc.ok {
				t.Errorf("MessageStart(%q) = %d, %v; want %d, %v", tc.line, at, ok, tc.at, tc.ok)
			}
		})
	}
}
