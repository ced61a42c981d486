// Package syncbuf is the buffer tests hand to a logger or a child process's pipe when
// several goroutines write it while the test reads it.
package syncbuf

import (
	"bytes"
	"slices"
	"sync"
)

// Buffer is a bytes.Buffer whose Write and String may be called from any goroutine.
type Buffer struct {
	mu sync.Mutex
	b  bytes.Buffer
	// watch are the channels Holds gave that wait for their text.
	watch []watch
}

type watch struct {
	text []byte
	ch   chan struct{}
}

// Write appends p.
func (s *Buffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	n, err := s.b.Write(p)
	s.watch = slices.DeleteFunc(s.watch, func(w watch) bool {
		if !bytes.Contains(s.b.Bytes(), w.text) {
			return false
		}
		close(w.ch)
		return true
	})
	return n, err
}

// String is everything written so far.
func (s *Buffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// Holds returns a channel closed once what was written holds text: a test waits on the
// word of a log (or hands it on as a channel the code under test stops at) rather than
// looks at the buffer over and over.
func (s *Buffer) Holds(text string) <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	ch := make(chan struct{})
	if bytes.Contains(s.b.Bytes(), []byte(text)) {
		close(ch)
	} else {
		s.watch = append(s.watch, watch{[]byte(text), ch})
	}
	return ch
}
