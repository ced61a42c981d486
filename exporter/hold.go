package exporter

import "context"

// holdKey is the context key of a request's hold function (WithHold).
type holdKey struct{}

// WithHold returns ctx with hold, which a Handler serving a request of that context has
// its Writer call (Writer.Hold) whenever the scrape comes to hold more heap than before:
// a limiter in front of the Handler charges the scrape for what it holds, and may make
// it wait for room, or end it (hold's error ends the scrape).
func WithHold(ctx context.Context, hold func(bytes int64) error) context.Context {
	return context.WithValue(ctx, holdKey{}, hold)
}

// Hold tells the Writer that its scrape holds bytes of heap now, its reads with the
// rest (what a limiter charged it for is what its source's cost said). A scrape
// calls it before it writes what it read, so that a scrape that holds more than it
// was charged waits for the room, or ends, rather than writing to a client that may
// stall with the read held. It returns an error when the scrape is to end, nil when it
// may go on, at once when nothing in front of the Handler charges scrapes.
func (x *Writer) Hold(bytes int64) error {
	if x.hold == nil {
		return x.err
	}
	return x.fail(x.hold(bytes))
}
