// Package stalecache is the bounded cross-trace memory of results behind the
// stale_cache_suspect finding, keyed by 64-bit result fingerprints. It is per collector:
// two collectors do not share it.
package stalecache // import "github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/stalecache"

import (
	"math/bits"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
)

// ways is the number of fingerprints a bucket holds: a fingerprint can only sit in the one
// bucket it hashes to, and the least recently used of that bucket's four makes room.
const ways = 4

// entry is one remembered result: 32 bytes, no pointers, so the collector never scans the
// memory, and a bucket is two cache lines.
type entry struct {
	fingerprint uint64 // 0: empty
	at          pcommon.Timestamp
	trace       pcommon.TraceID
}

// bucket holds its entries most recently used first, the empty ones last.
type bucket [ways]entry

// stripes splits the memory so that shards remembering results at once rarely wait for
// each other: every shard remembers every result of every trace it decides. A fingerprint
// always falls in the same stripe, so any shard finds what another remembered.
const stripes = 16

// Memory remembers the first sighting of about size result fingerprints in a fixed table
// of four-way buckets: one lookup is one bucket, and remembering allocates nothing. When
// a bucket is full, its least recently used fingerprint is forgotten. With HoldSuspects it
// also holds suspects (hold.go). It is safe for concurrent use by the processor's shards.
type Memory struct {
	stripe [stripes]stripe
	// cfg and now are HoldSuspects's: min_age for both the check and holding, and the
	// clock of the recheck window.
	cfg Config
	now func() time.Time

	// unclaimed are matches a sighting remembered by a caller that reports no finding
	// resolved (Unclaimed); pending says there are some, read without the lock.
	unclaimedMu sync.Mutex
	unclaimed   []Match
	pending     atomic.Bool
}

// New returns a Memory of size fingerprints, rounded up to whole buckets in every stripe.
func New(size int) *Memory {
	m := &Memory{}
	per := max((size+stripes*ways-1)/(stripes*ways), 1)
	for i := range m.stripe {
		m.stripe[i].buckets = make([]bucket, per)
	}
	return m
}

// locate returns the stripe and bucket of fingerprint, and fingerprint as stored (0 marks an empty
// entry, so a fingerprint of 0 is stored as 1: they then count as one result).
func (m *Memory) locate(fingerprint uint64) (*sync.Mutex, *bucket, uint64) {
	st, b, p := m.locateStripe(fingerprint)
	return &st.mu, b, p
}

// stripe is one lock's share of the memory: one stripe per 64-byte cache line.
type stripe struct {
	mu      sync.Mutex
	buckets []bucket
	held    *heldTable // nil until HoldSuspects
	_       [64 - 40]byte
}

func (m *Memory) locateStripe(fingerprint uint64) (*stripe, *bucket, uint64) {
	if fingerprint == 0 {
		fingerprint = 1
	}
	// The fingerprints are uniform hashes: the top bits pick a stripe, the rest a bucket
	// of it (multiplied into range, which needs no power of two).
	st := &m.stripe[fingerprint>>60]
	i, _ := bits.Mul64(fingerprint<<4, uint64(len(st.buckets)))
	return st, &st.buckets[i], fingerprint
}

// find returns the index of fingerprint in b, moved to the front as most recently used, or -1.
func (b *bucket) find(fingerprint uint64) int {
	for i := range b {
		switch b[i].fingerprint {
		case fingerprint:
			if i > 0 {
				e := b[i]
				copy(b[1:i+1], b[:i])
				b[0] = e
			}
			return 0
		case 0:
			return -1 // the rest is empty
		}
	}
	return -1
}

// Recall returns the first sighting of a result fingerprint.
func (m *Memory) Recall(fingerprint uint64) (pcommon.Timestamp, pcommon.TraceID, bool) {
	mu, b, p := m.locate(fingerprint)
	mu.Lock()
	defer mu.Unlock()
	if b.find(p) < 0 {
		return 0, pcommon.TraceID{}, false
	}
	return b[0].at, b[0].trace, true
}

// Remember records a sighting, keeping the earliest one, and returns the held suspects it
// resolves (hold.go), which it no longer holds.
func (m *Memory) Remember(fingerprint uint64, at pcommon.Timestamp, trace pcommon.TraceID) []Match {
	st, b, p := m.locateStripe(fingerprint)
	st.mu.Lock()
	defer st.mu.Unlock()
	if b.find(p) == 0 {
		if at < b[0].at {
			b[0].at, b[0].trace = at, trace
		}
	} else {
		copy(b[1:], b[:ways-1]) // the last, empty or least recently used, falls out
		b[0] = entry{fingerprint: p, at: at, trace: trace}
	}
	if st.held == nil {
		return nil
	}
	return st.held.resolve(p, at, trace, &m.cfg, m.now().UnixNano())
}

// Len is the number of fingerprints held.
func (m *Memory) Len() int {
	n := 0
	for i := range m.stripe {
		st := &m.stripe[i]
		st.mu.Lock()
		for j := range st.buckets {
			for _, e := range st.buckets[j] {
				if e.fingerprint != 0 {
					n++
				}
			}
		}
		st.mu.Unlock()
	}
	return n
}

// Cap is the number of fingerprints the memory can hold.
func (m *Memory) Cap() int {
	return stripes * len(m.stripe[0].buckets) * ways
}

// Unclaimed keeps matches that a sighting resolved for a caller that reports no finding
// itself — the retry_storm sampling policy, whose memory the processor after the sampler
// shares: the holder of the suspects takes them (TakeUnclaimed) and reports them. They are
// bounded by the suspects held.
func (m *Memory) Unclaimed(matches []Match) {
	if len(matches) == 0 {
		return
	}
	m.unclaimedMu.Lock()
	m.unclaimed = append(m.unclaimed, matches...)
	m.pending.Store(true)
	m.unclaimedMu.Unlock()
}

// TakeUnclaimed returns the matches kept by Unclaimed since the last call, and forgets
// them.
func (m *Memory) TakeUnclaimed() []Match {
	if !m.pending.Load() {
		return nil
	}
	m.unclaimedMu.Lock()
	defer m.unclaimedMu.Unlock()
	out := m.unclaimed
	m.unclaimed = nil
	m.pending.Store(false)
	return out
}
