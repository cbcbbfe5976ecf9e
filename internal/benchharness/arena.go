package benchharness

import (
	"fmt"
	"syscall"
)

// arena holds the encoded requests in an anonymous memory mapping: outside the Go heap, so a
// workload of hundreds of megabytes changes neither the garbage collector's pacing nor its
// marking work. Decoding copies every string, so nothing in the heap points into it.
type arena struct{ mem []byte }

func newArena(parts [][]byte) (*arena, error) {
	total := 0
	for _, p := range parts {
		total += len(p)
	}
	if total == 0 {
		return &arena{}, nil
	}
	mem, err := syscall.Mmap(-1, 0, total, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	if err != nil {
		return nil, fmt.Errorf("map %d bytes for the workload: %w", total, err)
	}
	off := 0
	for _, p := range parts {
		off += copy(mem[off:], p)
	}
	return &arena{mem: mem}, nil
}

func (a *arena) bytes(off, n int) []byte { return a.mem[off : off+n : off+n] }

func (a *arena) size() int { return len(a.mem) }

func (a *arena) close() error {
	if a.mem == nil {
		return nil
	}
	err := syscall.Munmap(a.mem)
	a.mem = nil
	if err != nil {
		return fmt.Errorf("unmap the workload: %w", err)
	}
	return nil
}
