package stalecache

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"go.opentelemetry.io/collector/pdata/pcommon"
)

func TestMemoryKeepsEarliestSightingAndIsBounded(t *testing.T) {
	m := New(2)
	t1, t2 := pcommon.TraceID{1}, pcommon.TraceID{2}
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
	assert.False(t, ok, "the least recently used hash is evicted")
}
