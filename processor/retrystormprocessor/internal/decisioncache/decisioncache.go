// Package decisioncache remembers recent trace decisions so late spans follow their trace:
// kept traces in LRUs with their decision, bounded in entries and in bytes, clean decisions
// forgotten before signal ones; dropped traces in a compact FIFO set whose entries carry a
// small mark (the processor marks drops that are provisional, and kept decisions it had to
// forget).
package decisioncache // import "github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/decisioncache"

import (
	"encoding/binary"

	"github.com/hashicorp/golang-lru/v2/simplelru"
	"go.opentelemetry.io/collector/pdata/pcommon"
)

// EntryBytes is what remembering one kept decision costs besides what its value points
// to: the LRU's list element and map entry, the trace id, the value and its size
// (measured: TestEntryBytesCoversAnEntry).
const EntryBytes = 176

// Cache holds the decisions of one shard. It is not safe for concurrent use: the shard
// goroutine that owns it is its only user.
type Cache[V any] struct {
	// clean and signal hold kept decisions by class: room is made in clean first, so a
	// flood of clean keeps never pushes out a signal decision.
	clean, signal *simplelru.LRU[pcommon.TraceID, kept[V]]
	maxEntries    int
	maxBytes      int64
	bytes         int64
	dropped       *Set
	// evicted is told of every kept decision forgotten to make room.
	evicted func(id pcommon.TraceID, v V, signal bool)
}

// kept is a kept decision with its class and the bytes it takes.
type kept[V any] struct {
	v      V
	bytes  int64
	signal bool
}

// New returns a cache remembering up to keptEntries kept decisions taking up to keptBytes
// (EntryBytes each plus the bytes Keep is told of) and dropped dropped traces; a size of 0
// remembers none of that kind. evicted, when not nil, is told of each kept decision
// forgotten to make room.
func New[V any](keptEntries int, keptBytes int64, dropped int, evicted func(id pcommon.TraceID, v V, signal bool)) *Cache[V] {
	c := &Cache[V]{dropped: NewSet(dropped), maxEntries: keptEntries, maxBytes: keptBytes, evicted: evicted}
	if keptEntries > 0 && keptBytes > 0 {
		// One more than the bound: Keep adds, then makes room itself, class by class.
		c.clean, _ = simplelru.NewLRU[pcommon.TraceID, kept[V]](keptEntries+1, nil)
		c.signal, _ = simplelru.NewLRU[pcommon.TraceID, kept[V]](keptEntries+1, nil)
	}
	return c
}

// Keep records a kept trace with its decision, whether it is a signal decision, and the
// bytes its value points to, and reports how many decisions were forgotten to make room:
// the least recently used clean ones first, signal ones only when no clean one is left. A
// trace remembered already has its decision replaced, in its class. A decision that alone
// takes more than the byte bound is forgotten at once, as if evicted.
func (c *Cache[V]) Keep(id pcommon.TraceID, v V, signal bool, bytes int64) (evicted int) {
	if c.clean == nil {
		return 0
	}
	e := kept[V]{v: v, bytes: EntryBytes + max(bytes, 0), signal: signal}
	if old, ok := c.peek(id); ok {
		c.remove(id, old)
	}
	if e.bytes > c.maxBytes {
		if c.evicted != nil {
			c.evicted(id, v, signal)
		}
		return 1
	}
	c.class(signal).Add(id, e)
	c.bytes += e.bytes
	for c.clean.Len()+c.signal.Len() > c.maxEntries || c.bytes > c.maxBytes {
		lru := c.clean
		if lru.Len() == 0 {
			lru = c.signal
		}
		oldID, old, _ := lru.RemoveOldest()
		c.bytes -= old.bytes
		evicted++
		if c.evicted != nil {
			c.evicted(oldID, old.v, old.signal)
		}
	}
	return evicted
}

func (c *Cache[V]) class(signal bool) *simplelru.LRU[pcommon.TraceID, kept[V]] {
	if signal {
		return c.signal
	}
	return c.clean
}

func (c *Cache[V]) peek(id pcommon.TraceID) (kept[V], bool) {
	if e, ok := c.clean.Peek(id); ok {
		return e, true
	}
	return c.signal.Peek(id)
}

func (c *Cache[V]) remove(id pcommon.TraceID, e kept[V]) {
	c.class(e.signal).Remove(id)
	c.bytes -= e.bytes
}

// Drop records a dropped trace with a mark (0 to MaxMark) and reports whether the oldest
// was forgotten to make room. Dropping a remembered trace again sets its mark anew,
// without taking a slot.
func (c *Cache[V]) Drop(id pcommon.TraceID, mark uint8) (evicted bool) {
	return c.dropped.Add(id, mark)
}

// Kept returns the decision of a kept trace, refreshing its recency in its class.
func (c *Cache[V]) Kept(id pcommon.TraceID) (V, bool) {
	if c.clean != nil {
		if e, ok := c.clean.Get(id); ok {
			return e.v, true
		}
		if e, ok := c.signal.Get(id); ok {
			return e.v, true
		}
	}
	var zero V
	return zero, false
}

// Dropped reports whether id was dropped, and the mark of that drop.
func (c *Cache[V]) Dropped(id pcommon.TraceID) (dropped bool, mark uint8) {
	return c.dropped.Has(id)
}

// Len returns the number of remembered kept and dropped traces.
func (c *Cache[V]) Len() (kept, dropped int) {
	if c.clean != nil {
		kept = c.clean.Len() + c.signal.Len()
	}
	return kept, c.dropped.Len()
}

// KeptBytes is what the kept decisions take, by the sizes Keep was told of.
func (c *Cache[V]) KeptBytes() int64 { return c.bytes }

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
