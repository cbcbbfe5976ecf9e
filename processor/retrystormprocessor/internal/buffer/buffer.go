package retrystormprocessor // import "github.com/retrystorm/retrystorm/processor/retrystormprocessor"

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/processor"
	"go.uber.org/zap"

	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/analysis"
	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/decision"
	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/findings"
	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/redact"
	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/stalecache"
	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/toolspan"
)

var (
	errNotStarted = errors.New("retry_storm processor is not started")
	errShutDown   = errors.New("retry_storm processor is shut down")
)

// retryStormProcessor routes spans to shards by trace id. It holds no trace state itself.
type retryStormProcessor struct {
	cfg    *Config
	next   consumer.Traces
	logger *zap.Logger
	tel    *telemetry
	opts   options
	policy *decision.Policy

	shards    []*shard
	ctx       context.Context // forwarding context, cancelled when shutdown runs out of time
	cancel    context.CancelFunc
	finishing chan struct{}
	// handoff is held while shard inputs are checked for room and sent (handOver); room
	// is signalled by a shard when it takes an input.
	handoff  sync.Mutex
	room     chan struct{}
	started  atomic.Bool
	stopped  atomic.Bool
	stopOnce sync.Once
	stopErr  error
}

var _ processor.Traces = (*retryStormProcessor)(nil)

func newRetryStormProcessor(set processor.Settings, cfg *Config, next consumer.Traces, opts ...option) (*retryStormProcessor, error) {
	o := defaultOptions()
	for _, opt := range opts {
		opt(&o)
	}
	tel, err := newTelemetry(set.TelemetrySettings)
	if err != nil {
		return nil, fmt.Errorf("create retry_storm telemetry: %w", err)
	}
	policy, err := decision.NewPolicy(samplingRates(&cfg.Sampling))
	if err != nil {
		return nil, fmt.Errorf("build sampling policy: %w", err)
	}
	return &retryStormProcessor{
		cfg: cfg, next: next, logger: set.Logger, tel: tel, opts: o, policy: policy,
		finishing: make(chan struct{}),
		room:      make(chan struct{}, 1),
	}, nil
}

func samplingRates(s *SamplingConfig) decision.Rates {
	r := decision.Rates{
		Clean: s.CleanPercent,
		Keep: map[string]float64{
			decision.ReasonStorm: s.KeepPercent.Storm, decision.ReasonToolError: s.KeepPercent.ToolError,
			decision.ReasonDivergence: s.KeepPercent.Divergence, decision.ReasonSpanError: s.KeepPercent.SpanError,
			decision.ReasonIncomplete: s.KeepPercent.Incomplete,
		},
		Tools: make(map[string]float64, len(s.Tools)),
	}
	for tool, tc := range s.Tools {
		r.Tools[tool] = tc.CleanPercent
	}
	return r
}

func (p *retryStormProcessor) Capabilities() consumer.Capabilities {
	return consumer.Capabilities{MutatesData: true}
}

// Start reads the HMAC key and starts one goroutine per shard.
func (p *retryStormProcessor) Start(_ context.Context, _ component.Host) error {
	key, err := readKey(p.cfg.Hashing)
	if err != nil {
		return fmt.Errorf("start retry_storm: %w", err)
	}
	if key != nil && len(key) < minKeyBytes {
		p.logger.Warn("hashing key is short; hashes of low-entropy arguments are easier to brute-force",
			zap.Int("hashing.key.min_bytes", minKeyBytes))
	}
	var mem findings.ResultMemory
	var held *stalecache.Memory
	if sc := p.cfg.Divergence.StaleCache; sc.RememberedResults > 0 {
		held = stalecache.New(sc.RememberedResults)
		held.HoldSuspects(stalecache.Holding{MinAge: sc.MinAge, Window: sc.RecheckWindow, Max: sc.HeldSuspects, Now: p.opts.now})
		mem = held
	}
	p.ctx, p.cancel = context.WithCancel(context.Background())
	p.shards = p.newShards(p.cfg.analysisConfig(key), mem, held)
	if err := p.tel.b.RegisterBufferedCallback(p.buffered); err != nil {
		p.cancel()
		return fmt.Errorf("register retry_storm buffered gauges: %w", err)
	}
	if !p.opts.synchronous {
		for _, s := range p.shards {
			go s.run(p.opts.tick, p.finishing)
		}
	}
	p.started.Store(true)
	return nil
}

func (p *retryStormProcessor) newShards(ac analysis.Config, mem findings.ResultMemory, held *stalecache.Memory) []*shard {
	n := p.cfg.NumShards
	if n == 0 {
		n = runtime.GOMAXPROCS(0)
	}
	share := max(p.cfg.MaxBufferedBytes/int64(n), 1)
	sc := shardConfig{
		decisionWait:  p.cfg.DecisionWait,
		rootGrace:     p.cfg.RootGrace,
		maxBytes:      share,
		maxTraceBytes: p.cfg.traceBytesBound(share),
		redact:        p.cfg.Hashing.RedactPayloads,
		keptCache:     ceilDiv(p.cfg.DecisionCache.KeptTraces, n),
		droppedCache:  ceilDiv(p.cfg.DecisionCache.DroppedTraces, n),
	}
	rc := p.cfg.redactConfig()
	lateLog := &logLimiter{every: lateSignalLogEvery}
	shards := make([]*shard, n)
	for i := range shards {
		shards[i] = &shard{
			cfg: sc, now: p.opts.now, ctx: p.ctx, next: p.next, tel: p.tel, logger: p.logger,
			analyzer:   analysis.New(ac, mem),
			recognizer: toolspan.NewExtractor(ac.Recognition, ac.Key, ac.OverrideOK),
			redactor:   redact.New(rc, ac.Key),
			room:       p.room,
			policy:     p.policy,
			lateLog:    lateLog,
			stale:      held,
		}
		shards[i].init()
	}
	return shards
}

func ceilDiv(a, b int) int { return (a + b - 1) / b }

// buffered sums the shards' gauges for the meter.
func (p *retryStormProcessor) buffered() (bytes, traces, spans int64) {
	for _, s := range p.shards {
		bytes += s.gauges.bytes.Load()
		traces += s.gauges.traces.Load()
		spans += s.gauges.spans.Load()
	}
	return bytes, traces, spans
}

// ConsumeTraces only routes: it cuts td by trace id and hands each shard its pieces.
func (p *retryStormProcessor) ConsumeTraces(ctx context.Context, td ptrace.Traces) error {
	if !p.started.Load() {
		return errNotStarted
	}
	if p.stopped.Load() {
		return errShutDown
	}
	at := p.opts.now()
	routed := route(td, len(p.shards))
	if p.opts.synchronous {
		for i, pieces := range routed {
			if len(pieces) > 0 {
				p.shards[i].step(pieces, at)
			}
		}
		return nil
	}
	return p.handOver(ctx, routed, at)
}

// handOver gives each shard its pieces, all or none: pieces already with one shard when
// the caller gives up on another would be buffered twice once the caller retries the
// request. Under handoff, where only handOver and settle send, a shard whose input has
// room keeps it until the send, so the sends are made only once every shard concerned has
// room; until then handOver waits for a shard to take an input, the caller's context, or
// shutdown.
func (p *retryStormProcessor) handOver(ctx context.Context, routed [][]piece, at time.Time) error {
	for {
		p.handoff.Lock()
		fits := true
		for i, pieces := range routed {
			if in := p.shards[i].in; len(pieces) > 0 && len(in) == cap(in) {
				fits = false
				break
			}
		}
		if fits {
			for i, pieces := range routed {
				if len(pieces) > 0 {
					p.shards[i].in <- shardInput{pieces: pieces, at: at}
				}
			}
			p.handoff.Unlock()
			return nil
		}
		p.handoff.Unlock()
		select {
		case <-p.room:
		case <-time.After(roomPoll):
			// A shard that took its last input signalled a caller waiting on another.
		case <-p.finishing:
			return errShutDown
		case <-ctx.Done():
			return fmt.Errorf("route spans to retry_storm shards: %w", ctx.Err())
		}
	}
}

// roomPoll bounds how long a waiting handOver sleeps without a signal: one signal wakes
// one waiter, so another waiting on a shard that has gone quiet looks again on its own.
const roomPoll = time.Millisecond

// Shutdown decides every buffered trace and forwards what is kept. When ctx ends first, the
// forwarding context is cancelled, the rest is dropped and counted, and the error returned;
// shard goroutines end as soon as the next consumer returns.
func (p *retryStormProcessor) Shutdown(ctx context.Context) error {
	if !p.started.Load() {
		return nil
	}
	p.stopOnce.Do(func() { p.stopErr = p.stop(ctx) })
	return p.stopErr
}

func (p *retryStormProcessor) stop(ctx context.Context) error {
	p.stopped.Store(true)
	defer p.tel.b.Shutdown()
	defer p.cancel()
	if p.opts.synchronous {
		for _, s := range p.shards {
			s.finish()
		}
		return nil
	}
	close(p.finishing)
	for _, s := range p.shards {
		select {
		case <-s.done:
		case <-ctx.Done():
			p.cancel()
			return fmt.Errorf("shutdown retry_storm: decide and flush buffered traces: %w", ctx.Err())
		}
	}
	return nil
}

// settle waits until every piece routed so far is ingested and due deadlines at the
// current clock are decided. Tests use it with an injected clock.
func (p *retryStormProcessor) settle(ctx context.Context) error {
	for _, s := range p.shards {
		if p.opts.synchronous {
			s.step(nil, time.Time{})
			continue
		}
		ack := make(chan struct{})
		// Sent under handoff like routed pieces, so handOver's room check holds.
		p.handoff.Lock()
		select {
		case s.in <- shardInput{ack: ack}:
			p.handoff.Unlock()
		case <-ctx.Done():
			p.handoff.Unlock()
			return ctx.Err()
		}
		select {
		case <-ack:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}
