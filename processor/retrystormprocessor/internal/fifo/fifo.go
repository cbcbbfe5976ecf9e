// Package fifo is a first-in first-out queue on a slice, amortised O(1) per operation, used
// for the processor's deadline queues: entries are pushed in deadline order because their
// deadlines are a constant offset from a clock that does not go back.
package fifo // import "github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/fifo"

// Queue is a FIFO queue. The zero value is empty and ready to use.
type Queue[T any] struct {
	items []T
	head  int
}

// Push appends v at the back.
func (q *Queue[T]) Push(v T) {
	if q.head > 0 && q.head == len(q.items) {
		q.items, q.head = q.items[:0], 0
	}
	q.items = append(q.items, v)
}

// Front returns the oldest element without removing it.
func (q *Queue[T]) Front() (T, bool) {
	if q.head == len(q.items) {
		var zero T
		return zero, false
	}
	return q.items[q.head], true
}

// Pop removes and returns the oldest element.
func (q *Queue[T]) Pop() (T, bool) {
	v, ok := q.Front()
	if !ok {
		return v, false
	}
	var zero T
	q.items[q.head] = zero
	q.head++
	// Compact when the dead prefix is the larger half, so memory follows the live length.
	if q.head >= 1024 && q.head*2 >= len(q.items) {
		n := copy(q.items, q.items[q.head:])
		clear(q.items[n:])
		q.items, q.head = q.items[:n], 0
	}
	return v, true
}

// Len is the number of elements queued.
func (q *Queue[T]) Len() int { return len(q.items) - q.head }
