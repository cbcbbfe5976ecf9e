package stalecache

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
)

// clock is a settable clock for the window.
type clock struct{ ns atomic.Int64 }

func (c *clock) now() time.Time          { return time.Unix(0, c.ns.Load()) }
func (c *clock) advance(d time.Duration) { c.ns.Add(int64(d)) }
func minutes(n int) pcommon.Timestamp    { return pcommon.Timestamp(time.Duration(n) * time.Minute) }
func holding(max int) Config {
	return Config{MinAge: time.Minute, RecheckWindow: 2 * time.Minute, HeldSuspects: max}
}
func suspect(fingerprint uint64, startMin int, trace byte) Suspect {
	return Suspect{Fingerprint: fingerprint, Start: minutes(startMin), Trace: pcommon.TraceID{trace}, Report: trace}
}

// TestHoldFindsTheMatchInEitherOrder: the stale read checked after the trace it copied was
// remembered matches at once; checked before, it is held and matched when that trace is
// remembered. Either way one match, naming the earlier trace.
func TestHoldFindsTheMatchInEitherOrder(t *testing.T) {
	c := &clock{}
	original, stale := pcommon.TraceID{1}, pcommon.TraceID{2}

	m := New(1000)
	m.HoldSuspects(holding(100), c.now)
	assert.Empty(t, m.Remember(7, minutes(0), original))
	h := m.Hold(suspect(7, 2, 2))
	require.True(t, h.Matched, "the original was remembered first")
	assert.False(t, h.Held)
	assert.Equal(t, original, h.Match.FirstTrace)
	assert.Equal(t, minutes(0), h.Match.First)

	m = New(1000)
	m.HoldSuspects(holding(100), c.now)
	h = m.Hold(suspect(7, 2, 2))
	require.True(t, h.Held)
	assert.False(t, h.Matched)
	assert.Equal(t, 1, m.HeldSuspects())
	matches := m.Remember(7, minutes(0), original)
	require.Len(t, matches, 1, "the original, remembered later, resolves the held suspect")
	assert.Equal(t, stale, matches[0].Suspect.Trace)
	assert.Equal(t, byte(2), matches[0].Suspect.Report)
	assert.Equal(t, original, matches[0].FirstTrace)
	assert.Equal(t, 0, m.HeldSuspects(), "a resolved suspect is let go")
	assert.Empty(t, m.Remember(7, minutes(0), pcommon.TraceID{3}), "and matched once")
}

// TestHoldNearMisses: a sighting in the suspect's own trace, one younger than min_age and
// one of another result resolve nothing; the suspect stays held.
func TestHoldNearMisses(t *testing.T) {
	c := &clock{}
	m := New(1000)
	m.HoldSuspects(holding(100), c.now)
	require.True(t, m.Hold(suspect(7, 10, 2)).Held)
	assert.Empty(t, m.Remember(7, minutes(0), pcommon.TraceID{2}), "its own trace")
	assert.Empty(t, m.Remember(7, minutes(10)-pcommon.Timestamp(30*time.Second), pcommon.TraceID{3}), "30s before: younger than min_age")
	assert.Empty(t, m.Remember(8, minutes(0), pcommon.TraceID{4}), "another result")
	assert.Equal(t, 1, m.HeldSuspects())
	assert.Len(t, m.Remember(7, minutes(9), pcommon.TraceID{5}), 1, "exactly min_age before")
}

// TestHeldSuspectsExpireAndAreBounded: a suspect is held for the window, then counted as
// expired (by Expire, or by the next Hold into its stripe); a full table forgets its
// oldest, counted as evicted.
func TestHeldSuspectsExpireAndAreBounded(t *testing.T) {
	c := &clock{}
	m := New(1000)
	m.HoldSuspects(holding(1), c.now) // one suspect per stripe
	require.True(t, m.Hold(suspect(7, 2, 2)).Held)
	c.advance(2 * time.Minute)
	assert.Equal(t, 0, m.Expire(), "held for the whole window")
	c.advance(time.Nanosecond)
	assert.Empty(t, m.Remember(7, minutes(0), pcommon.TraceID{1}), "past the window")
	assert.Equal(t, 1, m.Expire())
	assert.Equal(t, 0, m.Expire(), "counted once")

	require.True(t, m.Hold(suspect(6, 2, 2)).Held)
	c.advance(3 * time.Minute)
	h := m.Hold(suspect(8, 2, 3))
	assert.Equal(t, 1, h.Expired, "the next Hold into the stripe lets the expired one go")
	assert.Equal(t, 0, h.Evicted)

	// Small fingerprints share stripe 0, which holds one suspect.
	h = m.Hold(suspect(9, 2, 4))
	assert.Equal(t, 1, h.Evicted, "the stripe was full: its oldest is forgotten")
	assert.Equal(t, 1, m.HeldSuspects())
	assert.Empty(t, m.Remember(8, minutes(0), pcommon.TraceID{1}), "the evicted suspect")
	assert.Len(t, m.Remember(9, minutes(0), pcommon.TraceID{1}), 1)
}

// TestHoldingOffOnlyChecks: with no window the memory checks and never holds.
func TestHoldingOffOnlyChecks(t *testing.T) {
	m := New(1000)
	m.HoldSuspects(Config{MinAge: time.Minute}, nil)
	assert.False(t, m.Hold(suspect(7, 2, 2)).Held)
	assert.Empty(t, m.Remember(7, minutes(0), pcommon.TraceID{1}))
	m.Remember(7, minutes(0), pcommon.TraceID{1})
	assert.True(t, m.Hold(suspect(7, 2, 2)).Matched)
}

// TestHoldAndRememberRaceMissNothing: the stale reads are checked on two goroutines while
// two others remember the originals, so each pair meets in whatever order the scheduler
// gives; every pair is matched exactly once, by Hold or by Remember.
func TestHoldAndRememberRaceMissNothing(t *testing.T) {
	c := &clock{}
	m := New(100000)
	m.HoldSuspects(holding(10000), c.now)
	const pairs = 2000
	var matched [pairs]atomic.Int32
	var wg sync.WaitGroup
	for g := range 2 {
		wg.Add(2)
		go func() {
			defer wg.Done()
			for i := g; i < pairs; i += 2 {
				stale := Suspect{Fingerprint: splitmix(uint64(i)), Start: minutes(5), Trace: pcommon.TraceID{2, byte(i), byte(i >> 8)}, Report: i}
				if h := m.Hold(stale); h.Matched {
					matched[i].Add(1)
				}
			}
		}()
		go func() {
			defer wg.Done()
			for i := g; i < pairs; i += 2 {
				for _, mt := range m.Remember(splitmix(uint64(i)), minutes(0), pcommon.TraceID{1, byte(i), byte(i >> 8)}) {
					matched[mt.Suspect.Report.(int)].Add(1)
				}
			}
		}()
	}
	wg.Wait()
	for i := range matched {
		require.EqualValues(t, 1, matched[i].Load(), "pair %d", i)
	}
	assert.Equal(t, 0, m.HeldSuspects())
}
