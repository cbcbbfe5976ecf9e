package fifo

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestQueueOrder(t *testing.T) {
	var q Queue[int]
	_, ok := q.Front()
	assert.False(t, ok)
	for i := range 3000 {
		q.Push(i)
	}
	for i := range 2500 {
		v, ok := q.Pop()
		assert.True(t, ok)
		assert.Equal(t, i, v)
	}
	q.Push(3000)
	assert.Equal(t, 501, q.Len())
	for i := 2500; i <= 3000; i++ {
		v, _ := q.Pop()
		assert.Equal(t, i, v)
	}
	_, ok = q.Pop()
	assert.False(t, ok)
	assert.Zero(t, q.Len())
}

func TestQueueReleasesPopped(t *testing.T) {
	var q Queue[*int]
	for i := range 5000 {
		q.Push(&i)
	}
	for range 4000 {
		q.Pop()
	}
	// The dead prefix was compacted away: capacity follows the live length, and popped
	// slots hold no references.
	assert.LessOrEqual(t, len(q.items), 2500)
	for _, p := range q.items[:q.head] {
		assert.Nil(t, p)
	}
}
