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
