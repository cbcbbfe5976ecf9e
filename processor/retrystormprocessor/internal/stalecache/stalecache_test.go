package stalecache

import (
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"go.opentelemetry.io/collector/pdata/pcommon"
)

func TestMemoryKeepsEarliestSightingAndIsBounded(t *testing.T) {
	m := New(2 * stripes) // two per stripe
	t1, t2 := pcommon.TraceID{1}, pcommon.TraceID{2}
	// 1, 2 and 3 share a stripe (the top bits pick it).
	m.Remember(1, 100, t1)
	m.Remember(1, 50, t2)
	m.Remember(1, 300, t1)
	at, tr, ok := m.Recall(1)
	assert.True(t, ok)
	assert.EqualValues(t, 50, at)
	assert.Equal(t, t2, tr)

	m.Remember(2, 1, t1)
	m.Remember(3, 1, t1)
	assert.Equal(t, 2, m.Len())
	_, _, ok = m.Recall(1)
	assert.False(t, ok, "the least recently used fingerprint of the stripe is evicted")
}

func TestMemoryIsSharedAcrossGoroutinesAndStripes(t *testing.T) {
	m := New(stripes * 64) // each stripe below gets at most 64
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range uint64(200) {
				h := i<<56 | uint64(g) // spread over every stripe
				m.Remember(h, pcommon.Timestamp(i), pcommon.TraceID{byte(g)})
			}
		}()
	}
	wg.Wait()
	assert.Equal(t, 800, m.Len())
	for g := range 4 {
		at, tr, ok := m.Recall(uint64(199)<<56 | uint64(g))
		assert.True(t, ok, "what one goroutine remembered, another recalls")
		assert.EqualValues(t, 199, at)
		assert.Equal(t, pcommon.TraceID{byte(g)}, tr)
	}
}
