// Package wire holds the primitives the records of a snapshot are written with: varints,
// floats and length-prefixed bytes, appended to a buffer, and a Reader that reads them
// back from bytes that may be hostile: it never panics, never allocates, and a length it
// reads is checked against the bytes that remain before anything is made of that size.
//
// A float is written as the uvarint of its IEEE 754 bits with the bytes reversed, so that
// the small integers counts and sums mostly are (whose low mantissa bytes are 0) take two
// or three bytes instead of eight; any other float takes at most ten.
package wire

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/bits"
)

// ErrCorrupt is what every error of a Reader wraps: the bytes are not an encoding of what
// was asked for.
var ErrCorrupt = errors.New("corrupt encoding")

// AppendUvarint appends x as a uvarint.
func AppendUvarint(dst []byte, x uint64) []byte { return binary.AppendUvarint(dst, x) }

// AppendVarint appends x as a zigzag varint.
func AppendVarint(dst []byte, x int64) []byte { return binary.AppendVarint(dst, x) }

// AppendFloat appends f (see the package documentation).
func AppendFloat(dst []byte, f float64) []byte {
	return binary.AppendUvarint(dst, bits.ReverseBytes64(math.Float64bits(f)))
}

// AppendBytes appends b with its length before it.
func AppendBytes(dst, b []byte) []byte {
	return append(binary.AppendUvarint(dst, uint64(len(b))), b...)
}

// AppendBool appends b as one byte, 0 or 1.
func AppendBool(dst []byte, b bool) []byte {
	if b {
		return append(dst, 1)
	}
	return append(dst, 0)
}

// Reader reads what the Append functions wrote. The first problem it meets sticks: every
// later read returns a zero value, so that a decoder reads a whole record and checks Err
// once, and a corrupt length can never index past the bytes.
type Reader struct {
	b   []byte
	err error
}

// NewReader reads b.
func NewReader(b []byte) *Reader { return &Reader{b: b} }

// Err is the first problem met, wrapping ErrCorrupt, or nil.
func (r *Reader) Err() error { return r.err }

// Len is how many bytes remain.
func (r *Reader) Len() int { return len(r.b) }

// Rest returns the bytes that remain and consumes them.
func (r *Reader) Rest() []byte {
	b := r.b
	r.b = nil
	return b
}

// Failf records a problem (the first sticks) and returns it.
func (r *Reader) Failf(format string, args ...any) error {
	if r.err == nil {
		r.err = fmt.Errorf("%w: "+format, append([]any{ErrCorrupt}, args...)...)
		r.b = nil
	}
	return r.err
}

// Done returns Err, or an error if bytes remain unread: a record is read whole.
func (r *Reader) Done() error {
	if r.err == nil && len(r.b) != 0 {
		r.Failf("%d bytes left over", len(r.b))
	}
	return r.err
}

// Byte reads one byte.
func (r *Reader) Byte() byte {
	if len(r.b) == 0 {
		r.Failf("truncated")
		return 0
	}
	c := r.b[0]
	r.b = r.b[1:]
	return c
}

// Bool reads a byte written by AppendBool; any other value is corrupt.
func (r *Reader) Bool() bool {
	switch r.Byte() {
	case 0:
		return false
	case 1:
		return true
	}
	r.Failf("not a boolean")
	return false
}

// Uvarint reads a uvarint. Only the shortest encoding of a number is one, so that a
// record reads back to the bytes it was read from.
func (r *Reader) Uvarint() uint64 {
	x, n := binary.Uvarint(r.b)
	if n <= 0 || n > 1 && r.b[n-1] == 0 {
		r.Failf("bad uvarint")
		return 0
	}
	r.b = r.b[n:]
	return x
}

// Varint reads a zigzag varint, in its shortest encoding as Uvarint.
func (r *Reader) Varint() int64 {
	x, n := binary.Varint(r.b)
	if n <= 0 || n > 1 && r.b[n-1] == 0 {
		r.Failf("bad varint")
		return 0
	}
	r.b = r.b[n:]
	return x
}

// Float reads a float written by AppendFloat.
func (r *Reader) Float() float64 {
	return math.Float64frombits(bits.ReverseBytes64(r.Uvarint()))
}

// Finite reads a float written by AppendFloat where only a finite one belongs, as a sum of
// values the store admitted: NaN or an infinity there is corrupt (an edited file), which
// a read would otherwise export as it is.
func (r *Reader) Finite() float64 {
	f := r.Float()
	if r.err == nil && (math.IsNaN(f) || math.IsInf(f, 0)) {
		r.Failf("%v where a finite number belongs", f)
		return 0
	}
	return f
}

// Uint32 reads 4 bytes little-endian.
func (r *Reader) Uint32() uint32 {
	b := r.Bytes(4)
	if b == nil {
		return 0
	}
	return binary.LittleEndian.Uint32(b)
}

// Uint64 reads 8 bytes little-endian.
func (r *Reader) Uint64() uint64 {
	b := r.Bytes(8)
	if b == nil {
		return 0
	}
	return binary.LittleEndian.Uint64(b)
}

// Bytes returns the next n bytes, not copied, or nil if fewer remain.
func (r *Reader) Bytes(n int) []byte {
	if n < 0 || n > len(r.b) {
		r.Failf("%d bytes wanted, %d left", n, len(r.b))
		return nil
	}
	b := r.b[:n:n]
	r.b = r.b[n:]
	return b
}

// Prefixed returns the bytes AppendBytes wrote, not copied.
func (r *Reader) Prefixed() []byte {
	return r.Bytes(r.Count(math.MaxInt, 1))
}

// Count reads a uvarint count of things each at least each bytes long when encoded, so
// that a count of more than what remains could hold is refused before anything is made of
// its size; and refuses a count above most. each 0 checks most only.
func (r *Reader) Count(most, each int) int {
	n := r.Uvarint()
	switch {
	case r.err != nil:
		return 0
	case n > uint64(most):
		r.Failf("count %d over %d", n, most)
		return 0
	case each > 0 && n > uint64(len(r.b)/each):
		r.Failf("count %d of %d bytes each, %d bytes left", n, each, len(r.b))
		return 0
	}
	return int(n)
}
