package retrystormprocessor // import "github.com/retrystorm/retrystorm/processor/retrystormprocessor"

import (
	"context"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/processor"

	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/buffer"
)

// offlineWait stands in for decision_wait, a non-zero root_grace and the stale-cache
// recheck_window offline: longer than any input takes to read.
const offlineWait = 100 * 365 * 24 * time.Hour

// offlineStep is how far the offline clock moves per request: past the hold after which
// the buffer holds waiting spans compactly, so every trace still waiting is held so.
const offlineStep = 6 * time.Second

// NewOfflineTraces returns the retry_storm processor for traces read from files
// (`stormreport scan`) rather than received: the same engine, configuration and telemetry
// on a clock of its own. In a file no span is still in flight, so no trace is decided
// because time passed: decision_wait and a non-zero root_grace become longer than any
// input takes to read (root_grace 0 still decides a trace when its root arrives), and the
// stale-cache recheck_window too, so a suspect waits for its sighting however far apart
// they are in the input. A trace is decided when max_buffered_bytes or max_trace_bytes is
// reached (memory pressure decides the oldest first, as in a collector) or at Shutdown,
// which decides every trace still buffered. The clock moves offlineStep per request, so
// the spans that wait are held packed or compacted, as spans waiting seconds in a
// collector are. Everything else (recognition, analysis, sampling, the stale-cache memory,
// provisional decisions, the annotations the storm_summary exporter reads) is what a
// collector with cfg does, so the records are the ones it would write.
//
// It is the one export beside the factory and the configuration types, for the offline
// scan: a collector never calls it.
func NewOfflineTraces(set processor.Settings, cfg *Config, next consumer.Traces) (processor.Traces, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	offline := *cfg
	// A file's traces are read request by request: they are held and decided whole
	// whatever buffering says.
	offline.Buffering = true
	offline.DecisionWait = offlineWait
	if offline.RootGrace > 0 {
		offline.RootGrace = offlineWait
	}
	if offline.Divergence.StaleCache.RecheckWindow > 0 {
		offline.Divergence.StaleCache.RecheckWindow = offlineWait
	}
	clock := &offlineClock{base: time.Now()}
	p, err := newRetryStormProcessor(set, &offline, next, buffer.WithClock(clock.now))
	if err != nil {
		return nil, err
	}
	return &offlineProcessor{retryStormProcessor: p, clock: clock}, nil
}

// offlineClock starts at base and moves when told.
type offlineClock struct {
	base    time.Time
	elapsed atomic.Int64
}

func (c *offlineClock) now() time.Time { return c.base.Add(time.Duration(c.elapsed.Load())) }

type offlineProcessor struct {
	*retryStormProcessor
	clock *offlineClock
}

// ConsumeTraces moves the clock one step, then hands td to the buffer.
func (p *offlineProcessor) ConsumeTraces(ctx context.Context, td ptrace.Traces) error {
	p.clock.elapsed.Add(int64(offlineStep))
	return p.retryStormProcessor.ConsumeTraces(ctx, td)
}
