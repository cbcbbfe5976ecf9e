// Package stalecache is the bounded cross-trace memory of result hashes behind the
// stale_cache_suspect finding. It is per collector: two collectors do not share it.
package stalecache // import "github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/stalecache"

import (
	lru "github.com/hashicorp/golang-lru/v2"
	"go.opentelemetry.io/collector/pdata/pcommon"
)

type sighting struct {
	at    pcommon.Timestamp
	trace pcommon.TraceID
}

// Memory remembers the first sighting of up to size result hashes, evicting the least
// recently used. It is safe for concurrent use by the processor's shards.
type Memory struct {
	cache *lru.Cache[string, sighting]
}

// New returns a Memory holding at most size hashes (minimum 1).
func New(size int) *Memory {
	c, _ := lru.New[string, sighting](max(size, 1))
	return &Memory{cache: c}
}

// Recall returns the first sighting of hash.
func (m *Memory) Recall(hash string) (pcommon.Timestamp, pcommon.TraceID, bool) {
	s, ok := m.cache.Get(hash)
	return s.at, s.trace, ok
}

// Remember records a sighting, keeping the earliest one.
func (m *Memory) Remember(hash string, at pcommon.Timestamp, trace pcommon.TraceID) {
	if prev, ok := m.cache.Peek(hash); ok && prev.at <= at {
		m.cache.Get(hash) // refresh recency
		return
	}
	m.cache.Add(hash, sighting{at: at, trace: trace})
}

// Len is the number of hashes held.
func (m *Memory) Len() int { return m.cache.Len() }
