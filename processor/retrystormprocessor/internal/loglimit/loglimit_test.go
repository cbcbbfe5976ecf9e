package loglimit

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestLimiterLetsOneLineThroughPerInterval(t *testing.T) {
	l := New(time.Second)
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	ok, suppressed := l.Allow(at)
	assert.True(t, ok)
	assert.Zero(t, suppressed)
	for i := range 3 {
		ok, _ = l.Allow(at.Add(time.Duration(i) * 300 * time.Millisecond))
		assert.False(t, ok, "held back within the interval")
	}
	ok, suppressed = l.Allow(at.Add(time.Second))
	assert.True(t, ok)
	assert.EqualValues(t, 3, suppressed, "the next line reports what was held back")
}
