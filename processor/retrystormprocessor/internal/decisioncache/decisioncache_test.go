package decisioncache

import (
	"encoding/binary"
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
	"go.opentelemetry.io/collector/pdata/pcommon"
)

func id(n uint64) pcommon.TraceID {
	var t pcommon.TraceID
	binary.BigEndian.PutUint64(t[8:], n*0x9e3779b97f4a7c15+1)
	return t
}

// noBytes is a byte bound no test of entries reaches.
const noBytes = 1 << 40

func TestKeptIsLRU(t *testing.T) {
	c := New[string](2, noBytes, 0, nil)
	assert.Zero(t, c.Keep(id(1), "storm", false, 0))
	assert.Zero(t, c.Keep(id(2), "clean", false, 0))
	_, _ = c.Kept(id(1)) // 1 is now more recent than 2
	assert.Equal(t, 1, c.Keep(id(3), "storm", false, 0), "a full cache reports the decision it forgot")
	v, ok := c.Kept(id(1))
	assert.True(t, ok)
	assert.Equal(t, "storm", v)
	_, ok = c.Kept(id(2))
	assert.False(t, ok, "least recently used is forgotten")
	kept, dropped := c.Len()
	assert.Equal(t, 2, kept)
	assert.Zero(t, dropped)
}

// A flood of clean keeps forgets clean decisions only, however recent; signal decisions go
// only when no clean one is left, least recently used first.
func TestCleanDecisionsAreForgottenBeforeSignalOnes(t *testing.T) {
	type forgotten struct {
		id     pcommon.TraceID
		signal bool
	}
	var out []forgotten
	c := New[int](3, noBytes, 0, func(id pcommon.TraceID, _ int, signal bool) { out = append(out, forgotten{id, signal}) })
	c.Keep(id(1), 1, true, 0)
	c.Keep(id(2), 2, true, 0)
	for n := uint64(10); n < 1000; n++ {
		c.Keep(id(n), int(n), false, 0)
	}
	for _, n := range []uint64{1, 2, 999} {
		_, ok := c.Kept(id(n))
		assert.Truef(t, ok, "trace %d", n)
	}
	assert.Len(t, out, 989)
	for _, f := range out {
		assert.False(t, f.signal, "a clean flood forgets no signal decision")
	}
	_, _ = c.Kept(id(1)) // 2 is now the least recently used signal decision
	out = nil
	c.Keep(id(3), 3, true, 0)
	c.Keep(id(4), 4, true, 0)
	assert.Equal(t, []forgotten{{id(999), false}, {id(2), true}}, out, "the last clean one, then the least recent signal one")
}

func TestBytesBoundTheKeptDecisions(t *testing.T) {
	var forgot []pcommon.TraceID
	c := New[int](100, 4*EntryBytes+1000, 0, func(id pcommon.TraceID, _ int, _ bool) { forgot = append(forgot, id) })
	c.Keep(id(1), 1, true, 600)
	c.Keep(id(2), 2, false, 300)
	assert.Equal(t, int64(2*EntryBytes+900), c.KeptBytes())
	assert.Equal(t, 1, c.Keep(id(3), 3, true, 300), "past the byte bound, the clean decision goes")
	assert.Equal(t, []pcommon.TraceID{id(2)}, forgot)
	assert.Equal(t, int64(2*EntryBytes+900), c.KeptBytes())

	assert.Zero(t, c.Keep(id(1), 1, true, 100), "a decision kept again is replaced, with its new size")
	assert.Equal(t, int64(2*EntryBytes+400), c.KeptBytes())

	forgot = nil
	assert.Equal(t, 1, c.Keep(id(4), 4, true, 5000), "a decision larger than the bound is forgotten at once")
	assert.Equal(t, []pcommon.TraceID{id(4)}, forgot)
	_, ok := c.Kept(id(4))
	assert.False(t, ok)
	kept, _ := c.Len()
	assert.Equal(t, 2, kept)
}

// EntryBytes covers what an entry takes on the heap once the cache is full, so the byte
// bound holds the memory the README says.
func TestEntryBytesCoversAnEntry(t *testing.T) {
	type decision struct {
		threshold uint64
		flags     [4]uint8
		payloads  *int
	}
	const n = 100_000
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	c := New[decision](n, noBytes, 0, nil)
	for i := range uint64(n) {
		c.Keep(id(i), decision{threshold: i}, i%2 == 0, 0)
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	per := int64(after.HeapAlloc-before.HeapAlloc) / n
	t.Logf("%d bytes of heap per kept decision (EntryBytes %d)", per, EntryBytes)
	assert.LessOrEqual(t, per, int64(EntryBytes))
	runtime.KeepAlive(c)
}

func TestDroppedForgetsOldestFirst(t *testing.T) {
	c := New[struct{}](0, 0, 3, nil)
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
	for _, c := range []*Cache[int]{New[int](0, noBytes, 0, nil), New[int](10, 0, 0, nil)} {
		c.Keep(id(1), 1, true, 0)
		c.Drop(id(2), 1)
		_, ok := c.Kept(id(1))
		assert.False(t, ok)
		dropped, mark := c.Dropped(id(2))
		assert.False(t, dropped)
		assert.Zero(t, mark)
	}
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
	c := New[struct{}](0, 0, 2, nil)
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
