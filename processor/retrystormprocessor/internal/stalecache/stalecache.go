// Package stalecache is the bounded cross-trace memory of results behind the
// stale_cache_suspect finding, keyed by 64-bit result fingerprints. It is per collector:
// two collectors do not share it.
package stalecache // import "github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/stalecache"

import (
	"sync"

	"github.com/hashicorp/golang-lru/v2/simplelru"
	"go.opentelemetry.io/collector/pdata/pcommon"
)

type sighting struct {
	at    pcommon.Timestamp
	trace pcommon.TraceID
}

// stripes splits the memory so that shards remembering results at once rarely wait for
// each other: every shard remembers every result of every trace it decides. A fingerprint
// always falls in the same stripe, so any shard finds what another remembered.
const stripes = 16

// Memory remembers the first sighting of up to size result fingerprints, evicting the least
// recently used of each stripe (a sixteenth of size). It is safe for concurrent use by the
// processor's shards.
type Memory struct {
	stripe [stripes]struct {
		mu    sync.Mutex
		cache *simplelru.LRU[uint64, sighting]
		_     [64 - 16]byte // one stripe per 64-byte cache line
	}
}

// New returns a Memory holding size fingerprints, rounded up to a multiple of the stripes.
func New(size int) *Memory {
	m := &Memory{}
	per := max((size+stripes-1)/stripes, 1)
	for i := range m.stripe {
		m.stripe[i].cache, _ = simplelru.NewLRU[uint64, sighting](per, nil)
	}
	return m
}

func (m *Memory) of(hash uint64) int {
	// The fingerprints are uniform hashes: their top bits pick a stripe evenly.
	return int(hash >> 60)
}

// Recall returns the first sighting of a result fingerprint.
func (m *Memory) Recall(hash uint64) (pcommon.Timestamp, pcommon.TraceID, bool) {
	st := &m.stripe[m.of(hash)]
	st.mu.Lock()
	s, ok := st.cache.Get(hash)
	st.mu.Unlock()
	return s.at, s.trace, ok
}

// Remember records a sighting, keeping the earliest one.
func (m *Memory) Remember(hash uint64, at pcommon.Timestamp, trace pcommon.TraceID) {
	st := &m.stripe[m.of(hash)]
	st.mu.Lock()
	defer st.mu.Unlock()
	if prev, seen := st.cache.Peek(hash); seen && prev.at <= at {
		st.cache.Get(hash) // refresh recency
		return
	}
	st.cache.Add(hash, sighting{at: at, trace: trace})
}

// Len is the number of fingerprints held.
func (m *Memory) Len() int {
	n := 0
	for i := range m.stripe {
		st := &m.stripe[i]
		st.mu.Lock()
		n += st.cache.Len()
		st.mu.Unlock()
	}
	return n
}
