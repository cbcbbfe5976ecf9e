package buffer // import "github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/buffer"

import "time"

// Constructor options: the clock (WithClock), the mode `buffering: false` selects
// (WithReleasedTraces), and test seams the processor passes on from its tests.

type options struct {
	now         func() time.Time
	synchronous bool
	tick        time.Duration
	released    bool
}

// Option is an option of New.
type Option func(*options)

const defaultTick = 100 * time.Millisecond

func defaultOptions() options {
	return options{now: time.Now, tick: defaultTick}
}

// WithClock replaces the clock that stamps arrivals and decides deadlines: tests drive it,
// and the offline scan (NewOfflineTraces) runs the buffer on a clock of its own.
func WithClock(now func() time.Time) Option {
	return func(o *options) { o.now = now }
}

// WithSynchronous processes every ConsumeTraces inline on the caller's goroutine instead of on
// shard goroutines; callers must not call ConsumeTraces concurrently.
func WithSynchronous() Option {
	return func(o *options) { o.synchronous = true }
}

// WithTick sets how often idle shards check deadlines.
func WithTick(d time.Duration) Option {
	return func(o *options) { o.tick = d }
}

// WithReleasedTraces takes every trace as released whole by a sampler before the buffer
// (`buffering: false`, after tail_sampling): each is decided as soon as it arrives, kept
// whatever it shows, its spans' tracestate left as they came; later spans of it take the
// late path. Nothing is held, so neither memory pressure nor max_trace_bytes decides
// anything early.
func WithReleasedTraces() Option {
	return func(o *options) { o.released = true }
}
