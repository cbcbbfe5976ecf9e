package decisioncache

import (
	"encoding/binary"
	"testing"

	"github.com/stretchr/testify/assert"
	"go.opentelemetry.io/collector/pdata/pcommon"
)

func id(n uint64) pcommon.TraceID {
	var t pcommon.TraceID
	binary.BigEndian.PutUint64(t[8:], n*0x9e3779b97f4a7c15+1)
	return t
}

func TestKeptIsLRU(t *testing.T) {
	c := New[string](2, 0)
	assert.False(t, c.Keep(id(1), "storm"))
	assert.False(t, c.Keep(id(2), "clean"))
	_, _ = c.Kept(id(1)) // 1 is now more recent than 2
	assert.True(t, c.Keep(id(3), "storm"), "a full cache reports the decision it forgot")
	v, ok := c.Kept(id(1))
	assert.True(t, ok)
	assert.Equal(t, "storm", v)
	_, ok = c.Kept(id(2))
	assert.False(t, ok, "least recently used is forgotten")
	kept, dropped := c.Len()
	assert.Equal(t, 2, kept)
	assert.Zero(t, dropped)
}

func TestDroppedForgetsOldestFirst(t *testing.T) {
	c := New[struct{}](0, 3)
	for n := range uint64(5) {
		assert.Equal(t, n >= 3, c.Drop(id(n), 0), "an eviction is reported once the ring is full")
	}
	assert.False(t, c.Drop(id(4), 0), "re-adding does not take a slot")
	for n, want := range []bool{false, false, true, true, true} {
		dropped, _ := c.Dropped(id(uint64(n)))
		assert.Equalf(t, want, dropped, "trace %d", n)
	}
	_, dropped := c.Len()
	assert.Equal(t, 3, dropped)
}

func TestZeroSizesRememberNothing(t *testing.T) {
	c := New[int](0, 0)
	c.Keep(id(1), 1)
	c.Drop(id(2), 1)
	_, ok := c.Kept(id(1))
	assert.False(t, ok)
	dropped, mark := c.Dropped(id(2))
	assert.False(t, dropped)
	assert.Zero(t, mark)
}

func TestSetHoldsManyIDsExactly(t *testing.T) {
	s := NewSet(100_000)
	for n := range uint64(100_000) {
		s.Add(id(n), uint8(n%4))
	}
	for n := range uint64(100_000) {
		if held, mark := s.Has(id(n)); !held || mark != uint8(n%4) {
			t.Fatalf("lost trace %d", n)
		}
	}
	for n := uint64(100_000); n < 200_000; n++ {
		if held, _ := s.Has(id(n)); held {
			t.Fatalf("false positive for trace %d", n)
		}
	}
}

func TestMarkFollowsTheLastDrop(t *testing.T) {
	c := New[struct{}](0, 2)
	c.Drop(id(1), 2)
	dropped, mark := c.Dropped(id(1))
	assert.True(t, dropped)
	assert.EqualValues(t, 2, mark, "a drop is remembered with its mark")
	assert.False(t, c.Drop(id(1), 0), "dropping again takes no slot")
	_, mark = c.Dropped(id(1))
	assert.Zero(t, mark, "dropping again sets the mark anew")
	c.Drop(id(1), MaxMark)
	c.Drop(id(2), 0)
	assert.True(t, c.Drop(id(3), 1), "the oldest entry, marked or not, is forgotten first")
	dropped, _ = c.Dropped(id(1))
	assert.False(t, dropped)
	dropped, mark = c.Dropped(id(3))
	assert.True(t, dropped)
	assert.EqualValues(t, 1, mark)
	dropped, mark = c.Dropped(id(2))
	assert.True(t, dropped)
	assert.Zero(t, mark, "a mark does not leak into its neighbour's slot")
}
