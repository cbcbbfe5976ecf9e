// Package decisioncache remembers recent trace decisions so late spans follow their trace:
// kept traces in an LRU with their decision, dropped traces in a compact FIFO set whose
// entries carry a small mark (the processor marks drops that are provisional).
package decisioncache // import "github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/decisioncache"

import (
	"encoding/binary"

	"github.com/hashicorp/golang-lru/v2/simplelru"
	"go.opentelemetry.io/collector/pdata/pcommon"
)

// Cache holds the decisions of one shard. It is not safe for concurrent use: the shard
// goroutine that owns it is its only user.
type Cache[V any] struct {
	kept    *simplelru.LRU[pcommon.TraceID, V]
	dropped *Set
}

// New returns a cache remembering up to kept kept traces and dropped dropped traces; a size
// of 0 remembers none of that kind.
func New[V any](kept, dropped int) *Cache[V] {
	c := &Cache[V]{dropped: NewSet(dropped)}
	if kept > 0 {
		c.kept, _ = simplelru.NewLRU[pcommon.TraceID, V](kept, nil)
	}
	return c
}

// Keep records a kept trace with its decision and reports whether the least recently used
// decision was forgotten to make room.
func (c *Cache[V]) Keep(id pcommon.TraceID, v V) (evicted bool) {
	if c.kept == nil {
		return false
	}
	return c.kept.Add(id, v)
}

// Drop records a dropped trace with a mark (0 to MaxMark) and reports whether the oldest
// was forgotten to make room. Dropping a remembered trace again sets its mark anew,
// without taking a slot.
func (c *Cache[V]) Drop(id pcommon.TraceID, mark uint8) (evicted bool) {
	return c.dropped.Add(id, mark)
}

// Kept returns the decision of a kept trace, refreshing its recency.
func (c *Cache[V]) Kept(id pcommon.TraceID) (V, bool) {
	if c.kept == nil {
		var zero V
		return zero, false
	}
	return c.kept.Get(id)
}

// Dropped reports whether id was dropped, and the mark of that drop.
func (c *Cache[V]) Dropped(id pcommon.TraceID) (dropped bool, mark uint8) {
	return c.dropped.Has(id)
}

// Len returns the number of remembered kept and dropped traces.
func (c *Cache[V]) Len() (kept, dropped int) {
	if c.kept != nil {
		kept = c.kept.Len()
	}
	return kept, c.dropped.Len()
}

// Set is a bounded set of trace ids that forgets the oldest insert first. It stores a 64-bit
// fingerprint per trace (30–48 bytes per entry with the index, by the map's load): a trace
// is reported dropped by mistake only when its fingerprint collides with a remembered one,
// odds of size/2^64 per lookup. Each entry carries a mark of two bits in its index slot's
// top bits, which costs nothing more.
type Set struct {
	ring  []uint64
	next  int
	full  bool
	index map[uint64]uint32
}

// MaxMark is the largest mark an entry carries.
const MaxMark = 3

// markShift places an entry's mark above its ring position in the index.
const (
	markShift = 30
	posMask   = 1<<markShift - 1
)

// maxSetSize is the most ids a Set holds: ring positions must fit below the mark.
const maxSetSize = posMask

// NewSet returns a set holding at most size ids (at most 2^30 − 1).
func NewSet(size int) *Set {
	size = min(max(size, 0), maxSetSize)
	return &Set{ring: make([]uint64, size), index: make(map[uint64]uint32, min(size, 1<<16))}
}

// Add inserts id with a mark (0 to MaxMark; higher bits are ignored), evicting the oldest
// id when the set is full, and reports an eviction. An id already held gets the new mark
// and keeps its place.
func (s *Set) Add(id pcommon.TraceID, mark uint8) (evicted bool) {
	if len(s.ring) == 0 {
		return false
	}
	m := uint32(mark&MaxMark) << markShift
	fp := fingerprint(id)
	if i, ok := s.index[fp]; ok {
		s.index[fp] = i&posMask | m
		return false
	}
	if s.full {
		old := s.ring[s.next]
		if i, ok := s.index[old]; ok && int(i&posMask) == s.next {
			delete(s.index, old)
			evicted = true
		}
	}
	s.ring[s.next] = fp
	s.index[fp] = uint32(s.next) | m
	s.next++
	if s.next == len(s.ring) {
		s.next, s.full = 0, true
	}
	return evicted
}

// Has reports whether id is in the set, and its entry's mark.
func (s *Set) Has(id pcommon.TraceID) (held bool, mark uint8) {
	i, ok := s.index[fingerprint(id)]
	return ok, uint8(i >> markShift)
}

// Len is the number of ids held.
func (s *Set) Len() int { return len(s.index) }

// fingerprint folds the 128-bit id; the W3C random part (the low 56 bits) dominates.
func fingerprint(id pcommon.TraceID) uint64 {
	return binary.BigEndian.Uint64(id[8:]) ^ binary.BigEndian.Uint64(id[:8])*0x9e3779b97f4a7c15
}
