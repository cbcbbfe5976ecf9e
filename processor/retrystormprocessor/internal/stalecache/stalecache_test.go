package stalecache

import (
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"go.opentelemetry.io/collector/pdata/pcommon"
)

// splitmix spreads counters into uniform 64-bit fingerprints, as real result fingerprints are.
func splitmix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ x>>30) * 0xbf58476d1ce4e5b9
	x = (x ^ x>>27) * 0x94d049bb133111eb
	return x ^ x>>31
}

func TestMemoryKeepsEarliestSighting(t *testing.T) {
	m := New(1000)
	t1, t2 := pcommon.TraceID{1}, pcommon.TraceID{2}
	m.Remember(7, 100, t1)
	m.Remember(7, 50, t2)
	m.Remember(7, 300, t1)
	at, tr, ok := m.Recall(7)
	assert.True(t, ok)
	assert.EqualValues(t, 50, at)
	assert.Equal(t, t2, tr)
	_, _, ok = m.Recall(8)
	assert.False(t, ok)

	m.Remember(0, 10, t1) // 0 marks an empty entry, yet a fingerprint of 0 is remembered
	_, _, ok = m.Recall(0)
	assert.True(t, ok)
}

// TestMemoryEvictsTheLeastRecentlyUsedOfABucket: with one bucket per stripe, small
// fingerprints all fall in stripe 0's one bucket.
func TestMemoryEvictsTheLeastRecentlyUsedOfABucket(t *testing.T) {
	m := New(ways * stripes)
	assert.Equal(t, ways*stripes, m.Cap())
	tr := pcommon.TraceID{1}
	for p := uint64(1); p <= ways; p++ {
		m.Remember(p, pcommon.Timestamp(p), tr)
	}
	_, _, ok := m.Recall(1) // now the most recently used
	assert.True(t, ok)
	m.Remember(ways+1, 9, tr)
	assert.Equal(t, ways, m.Len())
	_, _, ok = m.Recall(2)
	assert.False(t, ok, "the least recently used fingerprint of the bucket is forgotten")
	for _, p := range []uint64{1, 3, 4, ways + 1} {
		_, _, ok = m.Recall(p)
		assert.True(t, ok, p)
	}
}

// TestMemoryIsBounded: remembering ten times its size fills the memory to about its size
// and never past it.
func TestMemoryIsBounded(t *testing.T) {
	m := New(10000)
	for i := range uint64(100000) {
		m.Remember(splitmix(i), pcommon.Timestamp(i), pcommon.TraceID{1})
	}
	assert.LessOrEqual(t, m.Len(), m.Cap())
	assert.GreaterOrEqual(t, m.Len(), m.Cap()*99/100)
	assert.Less(t, m.Cap(), 10000+ways*stripes)
	// The newest fingerprints are all still there.
	for i := uint64(100000 - 100); i < 100000; i++ {
		_, _, ok := m.Recall(splitmix(i))
		assert.True(t, ok, i)
	}
}

func TestMemoryIsSharedAcrossGoroutinesAndStripes(t *testing.T) {
	m := New(100000)
	var wg sync.WaitGroup
	for g := range uint64(4) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range uint64(200) {
				m.Remember(splitmix(g<<32|i), pcommon.Timestamp(i), pcommon.TraceID{byte(g)})
			}
		}()
	}
	wg.Wait()
	assert.Equal(t, 800, m.Len())
	for g := range uint64(4) {
		at, tr, ok := m.Recall(splitmix(g<<32 | 199))
		assert.True(t, ok, "what one goroutine remembered, another recalls")
		assert.EqualValues(t, 199, at)
		assert.Equal(t, pcommon.TraceID{byte(g)}, tr)
	}
}

// BenchmarkRemember remembers new results in a full memory of the default size, the
// common case: most results are new.
func BenchmarkRemember(b *testing.B) {
	m := New(100000)
	for i := range uint64(200000) {
		m.Remember(splitmix(i), 1, pcommon.TraceID{1})
	}
	i := uint64(200000)
	b.ReportAllocs()
	for b.Loop() {
		m.Remember(splitmix(i), 1, pcommon.TraceID{1})
		i++
	}
}
