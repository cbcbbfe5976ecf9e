package retrystormprocessor // import "github.com/retrystorm/retrystorm/processor/retrystormprocessor"

import "time"

// Test seams. They are constructor options, never configuration a user could set.

type options struct {
	now         func() time.Time
	synchronous bool
	tick        time.Duration
}

type option func(*options)

const defaultTick = 100 * time.Millisecond

func defaultOptions() options {
	return options{now: time.Now, tick: defaultTick}
}

// withClock replaces the clock that stamps arrivals and decides deadlines.
func withClock(now func() time.Time) option {
	return func(o *options) { o.now = now }
}

// withSynchronous processes every ConsumeTraces inline on the caller's goroutine instead of
// on shard goroutines; callers must not call ConsumeTraces concurrently.
func withSynchronous() option {
	return func(o *options) { o.synchronous = true }
}

// withTick sets how often idle shards check deadlines.
func withTick(d time.Duration) option {
	return func(o *options) { o.tick = d }
}
