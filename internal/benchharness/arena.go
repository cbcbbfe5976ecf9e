package benchharness

import (
	"fmt"
	"syscall"
)

// arena holds the encoded requests in anonymous memory mappings: outside the Go heap, so a
// workload of hundreds of megabytes changes neither the garbage collector's pacing nor its
// marking work. Decoding copies every string, so nothing in the heap points into it.
//
// Requests are added one at a time as they are encoded, into chunks mapped as they are
// needed, so building a workload never holds it twice (once in the heap, once here): the
// replay drive's workload is gigabytes. A request never straddles two chunks.
type arena struct {
	chunks [][]byte
	// used is how much of the last chunk holds requests; total, of all of them.
	used, total int
}

// arenaChunk is the size of a chunk, unless one request needs more.
const arenaChunk = 64 << 20

// add copies p into the arena and returns where it is.
func (a *arena) add(p []byte) (encodedBatch, error) {
	if len(a.chunks) == 0 || a.used+len(p) > len(a.chunks[len(a.chunks)-1]) {
		mem, err := syscall.Mmap(-1, 0, max(arenaChunk, len(p)), syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
		if err != nil {
			return encodedBatch{}, fmt.Errorf("map %d bytes for the workload: %w", max(arenaChunk, len(p)), err)
		}
		a.chunks = append(a.chunks, mem)
		a.used = 0
	}
	b := encodedBatch{chunk: len(a.chunks) - 1, off: a.used, n: len(p)}
	a.used += copy(a.chunks[b.chunk][a.used:], p)
	a.total += len(p)
	return b, nil
}

func (a *arena) bytes(b encodedBatch) []byte {
	return a.chunks[b.chunk][b.off : b.off+b.n : b.off+b.n]
}

func (a *arena) size() int { return a.total }

func (a *arena) close() error {
	var first error
	for _, mem := range a.chunks {
		if err := syscall.Munmap(mem); err != nil && first == nil {
			first = fmt.Errorf("unmap the workload: %w", err)
		}
	}
	a.chunks, a.used, a.total = nil, 0, 0
	return first
}
