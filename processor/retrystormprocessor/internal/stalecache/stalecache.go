// Package stalecache is the bounded cross-trace memory of results behind the
// stale_cache_suspect finding, keyed by 64-bit fingerprints of the canonical results. It is per collector: two collectors do not share it.
package stalecache // import "github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/stalecache"

import (
	lru "github.com/hashicorp/golang-lru/v2"
	"go.opentelemetry.io/collector/pdata/pcommon"
)

type sighting struct {
	at    pcommon.Timestamp
	trace pcommon.TraceID
}

// Memory remembers the first sighting of up to size result fingerprints, evicting the least
// recently used. It is safe for concurrent use by the processor's shards.
type Memory struct {
	cache *lru.Cache[uint64, sighting]
}

// New returns a Memory holding at most size fingerprints (minimum 1).
func New(size int) *Memory {
	c, _ := lru.New[uint64, sighting](max(size, 1))
	return &Memory{cache: c}
}

// Recall returns the first sighting of a result fingerprint.
func (m *Memory) Recall(hash uint64) (pcommon.Timestamp, pcommon.TraceID, bool) {
	s, ok := m.cache.Get(hash)
	return s.at, s.trace, ok
}

// Remember records a sighting, keeping the earliest one. Most results are new: for them
// it is one operation on the cache.
func (m *Memory) Remember(hash uint64, at pcommon.Timestamp, trace pcommon.TraceID) {
	prev, seen, _ := m.cache.PeekOrAdd(hash, sighting{at: at, trace: trace})
	switch {
	case !seen:
	case prev.at <= at:
		m.cache.Get(hash) // refresh recency
	default:
		m.cache.Add(hash, sighting{at: at, trace: trace})
	}
}

// Len is the number of hashes held.
func (m *Memory) Len() int { return m.cache.Len() }
