package parser

import (
	"testing"
	"unsafe"
)

// TestScratchOwnLines makes scratches one after the other, as the inputs of a process do
// on their first lines, and checks that no cache line holds buffers of two of them: a
// shared line would be written by two cores on every line parsed.
func TestScratchOwnLines(t *testing.T) {
	for _, sz := range []sizes{
		{caps: 34, whereCaps: 2, labels: 3, items: 1, slots: 1},
		{caps: 1, whereCaps: 0, labels: 0, items: 0, slots: 0},
		{caps: 7, whereCaps: 5, labels: 11, items: 3, slots: 2},
	} {
		owner := map[uintptr]int{} // cache line → scratch
		for n := range 8 {
			s := newScratch(sz)
			for _, b := range scratchBuffers(s) {
				if b.bytes == 0 {
					t.Fatalf("%+v: scratch %d has a buffer %s without room", sz, n, b.name)
				}
				for line := b.addr / cacheLine; line <= (b.addr+b.bytes-1)/cacheLine; line++ {
					if other, ok := owner[line]; ok && other != n {
						t.Fatalf("%+v: %s of scratch %d shares a cache line with scratch %d", sz, b.name, n, other)
					}
					owner[line] = n
				}
			}
		}
	}
}

type buffer struct {
	name        string
	addr, bytes uintptr
}

func scratchBuffers(s *scratch) []buffer {
	return []buffer{
		bufferOf("caps", s.caps), bufferOf("whereCaps", s.whereCaps), bufferOf("key", s.key),
		bufferOf("ends", s.ends), bufferOf("labels", s.labels), bufferOf("itemText", s.itemText),
		bufferOf("itemEnds", s.itemEnds), bufferOf("items", s.items), bufferOf("fix", s.fix),
		bufferOf("times", s.times), bufferOf("vals", s.vals),
		bufferOf("jsonKey", s.jsonKey),
	}
}

func bufferOf[T any](name string, b []T) buffer {
	return buffer{name, uintptr(unsafe.Pointer(unsafe.SliceData(b[:cap(b)]))), uintptr(cap(b)) * unsafe.Sizeof(*new(T))}
}
