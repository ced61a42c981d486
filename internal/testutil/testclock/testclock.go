// Package testclock is the clock tests inject where the code reads the time: it moves only
// when the test moves it, from any goroutine.
package testclock

import (
	"sync"
	"time"
)

// Clock is a time that stands still until Add.
type Clock struct {
	mu sync.Mutex
	t  time.Time
}

// New returns a clock standing at t.
func New(t time.Time) *Clock { return &Clock{t: t} }

// Now is the clock's time: a func() time.Time to inject.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

// Add moves the clock on by d.
func (c *Clock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}
