// Package zerostart holds a counter's new series at 0 in their first exports, so that a
// reader counting growth between samples (Prometheus' rate() and increase()) sees each series
// grow from 0 rather than appear with its first counts already in it.
package zerostart // import "github.com/retrystorm/retrystorm/internal/zerostart"

import "time"

// Series remembers when each series of a counter was first exported. Not safe for
// concurrent use.
type Series[K comparable] struct {
	hold  time.Duration
	first map[K]time.Time
}

// New returns the memory of a counter whose series are exported at 0 in their first export
// and in every export less than hold after it; with hold 0, in the first export only.
func New[K comparable](hold time.Duration) *Series[K] {
	return &Series[K]{hold: hold, first: map[K]time.Time{}}
}

// Zero reports whether the export at now shows series k at 0 instead of its count. The
// first call for k is its first export.
func (s *Series[K]) Zero(k K, now time.Time) bool {
	first, seen := s.first[k]
	if !seen {
		s.first[k] = now
		return true
	}
	return now.Sub(first) < s.hold
}
