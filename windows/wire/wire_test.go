package wire

import (
	"errors"
	"math"
	"testing"
)

// TestRoundTrip reads back every kind of value written.
func TestRoundTrip(t *testing.T) {
	floats := []float64{0, 1, -1, 17, 0.1, math.Inf(1), math.Inf(-1), math.MaxFloat64, math.SmallestNonzeroFloat64}
	var b []byte
	b = AppendUvarint(b, math.MaxUint64)
	b = AppendVarint(b, math.MinInt64)
	b = AppendBool(b, true)
	b = AppendBytes(b, []byte("abc"))
	for _, f := range floats {
		b = AppendFloat(b, f)
	}
	r := NewReader(b)
	if got := r.Uvarint(); got != math.MaxUint64 {
		t.Errorf("uvarint %d", got)
	}
	if got := r.Varint(); got != math.MinInt64 {
		t.Errorf("varint %d", got)
	}
	if !r.Bool() {
		t.Error("bool false")
	}
	if got := r.Prefixed(); string(got) != "abc" {
		t.Errorf("bytes %q", got)
	}
	for _, want := range floats {
		if got := r.Float(); math.Float64bits(got) != math.Float64bits(want) {
			t.Errorf("float %v, want %v", got, want)
		}
	}
	if err := r.Done(); err != nil {
		t.Fatal(err)
	}
	if n := len(AppendFloat(nil, 3)); n != 2 {
		t.Errorf("3.0 takes %d bytes, want 2", n)
	}
}

// TestRefused fails a reader on every malformed input, and the first failure sticks.
func TestRefused(t *testing.T) {
	for _, tc := range []struct {
		name string
		b    []byte
		read func(r *Reader)
	}{
		{"truncated uvarint", []byte{0x80}, func(r *Reader) { r.Uvarint() }},
		{"overlong uvarint", []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01}, func(r *Reader) { r.Uvarint() }},
		{"uvarint not shortest", []byte{0x81, 0x00}, func(r *Reader) { r.Uvarint() }},
		{"varint not shortest", []byte{0x80, 0x80, 0x00}, func(r *Reader) { r.Varint() }},
		{"not a bool", []byte{2}, func(r *Reader) { r.Bool() }},
		{"count over the most", []byte{5, 1, 1, 1, 1, 1}, func(r *Reader) { r.Count(4, 1) }},
		{"count over the bytes", []byte{5, 1, 1, 1, 1}, func(r *Reader) { r.Count(100, 1) }},
		{"bytes past the end", []byte{9, 1}, func(r *Reader) { r.Prefixed() }},
		{"left over", []byte{1, 2}, func(r *Reader) { r.Byte() }},
		{"sticks", []byte{2, 0}, func(r *Reader) { r.Bool(); r.Byte() }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := NewReader(tc.b)
			tc.read(r)
			if err := r.Done(); !errors.Is(err, ErrCorrupt) {
				t.Fatalf("Done: %v, want ErrCorrupt", err)
			}
		})
	}
}
