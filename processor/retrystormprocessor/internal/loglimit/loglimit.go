// Package loglimit lets one log line through per interval across goroutines.
package loglimit // import "github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/loglimit"

import (
	"sync/atomic"
	"time"
)

// Limiter lets one line through per interval across every shard, and counts the lines it
// held back for the next one to report. Shards share it through atomics only.
type Limiter struct {
	every      time.Duration
	next       atomic.Int64 // Unix nanoseconds before which lines are held back
	suppressed atomic.Int64
}

// New returns a Limiter letting one line through per every.
func New(every time.Duration) *Limiter { return &Limiter{every: every} }

// Allow reports whether a line may be logged now, and how many were held back since the
// last one that was.
func (l *Limiter) Allow(now time.Time) (ok bool, suppressed int64) {
	next := l.next.Load()
	if now.UnixNano() < next || !l.next.CompareAndSwap(next, now.Add(l.every).UnixNano()) {
		l.suppressed.Add(1)
		return false, 0
	}
	return true, l.suppressed.Swap(0)
}
