package buffer // import "github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/buffer"

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.uber.org/zap"

	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/findings"
	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/inbound"
	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/loglimit"
	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/sample"
	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/spanset"
	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/stalecache"
	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/verdict"
)

// ErrShutDown is returned for spans offered once shutdown has begun.
var ErrShutDown = errors.New("retry_storm processor is shut down")

// Buffer routes spans to shards by trace id. It holds no trace state itself.
type Buffer struct {
	cfg    Config
	stages verdict.Stages
	next   consumer.Traces
	logger *zap.Logger
	tel    *telemetry
	opts   options
	policy *sample.Policy
	// inbound takes client annotations out of every request (processor README, "Security").
	inbound *inbound.Filter

	shards    []*shard
	ctx       context.Context // forwarding context, cancelled when shutdown runs out of time
	cancel    context.CancelFunc
	finishing chan struct{}
	// handoff is held while shard inputs are checked for room and sent (handOver); room
	// is signalled by a shard when it takes an input.
	handoff sync.Mutex
	room    chan struct{}
}

// New returns a Buffer of a validated cfg, deciding traces with stages, that forwards
// what it keeps to next; Start starts it.
func New(set component.TelemetrySettings, cfg Config, stages verdict.Stages, next consumer.Traces, opts ...Option) (*Buffer, error) {
	o := defaultOptions()
	for _, opt := range opts {
		opt(&o)
	}
	tel, err := newTelemetry(set)
	if err != nil {
		return nil, fmt.Errorf("create retry_storm telemetry: %w", err)
	}
	policy, err := sample.NewPolicy(stages.Sampling)
	if err != nil {
		return nil, fmt.Errorf("build sampling policy: %w", err)
	}
	return &Buffer{
		cfg: cfg, stages: stages, next: next, logger: set.Logger, tel: tel, opts: o, policy: policy,
		inbound:   inbound.New(stages.ClientInputs()),
		finishing: make(chan struct{}),
		room:      make(chan struct{}, 1),
	}, nil
}

// Start makes the shards and starts one goroutine per shard. key is the HMAC key of the
// payload hashes, read at start (nil: plain SHA-256).
func (b *Buffer) Start(key []byte) error {
	var mem findings.ResultMemory
	held := stalecache.NewMemory(b.stages.Divergence.StaleCache, b.opts.now)
	if held != nil {
		mem = held // a nil *Memory in the interface would not read as "no memory"
	}
	b.ctx, b.cancel = context.WithCancel(context.Background())
	b.shards = b.newShards(key, mem, held)
	if err := b.tel.b.RegisterBufferedCallback(b.buffered); err != nil {
		b.cancel()
		return fmt.Errorf("register retry_storm buffered gauges: %w", err)
	}
	if err := b.tel.verdict.Register(); err != nil {
		b.cancel()
		return fmt.Errorf("register retry_storm observable counters: %w", err)
	}
	if !b.opts.synchronous {
		for _, s := range b.shards {
			go s.run(b.opts.tick, b.finishing)
		}
	}
	return nil
}

func (b *Buffer) newShards(key []byte, mem findings.ResultMemory, held *stalecache.Memory) []*shard {
	n := b.cfg.NumShards
	if n == 0 {
		n = runtime.GOMAXPROCS(0)
	}
	share := max(b.cfg.MaxBufferedBytes/int64(n), 1)
	dc := b.cfg.DecisionCache
	keptShare := dc.KeptBytes / int64(n)
	sc := shardConfig{
		decisionWait:  b.cfg.DecisionWait,
		rootGrace:     b.cfg.RootGrace,
		maxBytes:      share,
		maxTraceBytes: traceBytesBound(b.cfg.MaxTraceBytes, share),
		keptCache:     ceilDiv(dc.KeptTraces, n),
		keptBytes:     keptShare,
		// One decision's values take at most a quarter of its shard's share.
		maxDecisionBytes: min(maxDecisionBytes, keptShare/4),
		droppedCache:     ceilDiv(dc.DroppedTraces, n),
	}
	vc := verdict.Config{Stages: b.stages, Key: key, MaxTraceBytes: sc.maxTraceBytes}
	shared := verdict.Shared{
		Policy: b.policy, Memory: mem, Held: held, Tel: b.tel.verdict, Logger: b.logger,
		LateLog: loglimit.New(lateSignalLogEvery),
	}
	evictLog := loglimit.New(evictionLogEvery)
	shards := make([]*shard, n)
	for i := range shards {
		shards[i] = &shard{
			cfg: sc, now: b.opts.now, ctx: b.ctx, next: b.next, tel: b.tel, logger: b.logger,
			room:     b.room,
			evictLog: evictLog,
		}
		shards[i].init(vc, shared)
	}
	return shards
}

// traceBytesBound is the per-trace bound of a shard whose share of max_buffered_bytes is
// share: max_trace_bytes capped at the share, or half the share when it is 0.
func traceBytesBound(maxTraceBytes, share int64) int64 {
	if maxTraceBytes == 0 {
		return max(share/2, 1)
	}
	return min(maxTraceBytes, share)
}

func ceilDiv(a, b int) int { return (a + b - 1) / b }

// buffered sums the shards' gauges for the meter.
func (b *Buffer) buffered() (bytes, traces, spans int64) {
	for _, s := range b.shards {
		bytes += s.gauges.bytes.Load()
		traces += s.gauges.traces.Load()
		spans += s.gauges.spans.Load()
	}
	return bytes, traces, spans
}

// ConsumeTraces only routes: it cuts td by trace id, taking the client annotations out on
// the way, and hands each shard its pieces.
func (b *Buffer) ConsumeTraces(ctx context.Context, td ptrace.Traces) error {
	at := b.opts.now()
	var removed inbound.Counts
	routed := route(td, len(b.shards), b.inbound, &removed)
	b.tel.clientAnnotations(removed)
	if b.opts.synchronous {
		for i, pieces := range routed {
			if len(pieces) > 0 {
				b.shards[i].step(pieces, at)
			}
		}
		return nil
	}
	return b.handOver(ctx, routed, at)
}

// handOver gives each shard its pieces, all or none: pieces already with one shard when
// the caller gives up on another would be buffered twice once the caller retries the
// request. Under handoff, where only handOver and CatchUp send, a shard whose input has
// room keeps it until the send, so the sends are made only once every shard concerned has
// room; until then handOver waits for a shard to take an input, the caller's context, or
// shutdown.
func (b *Buffer) handOver(ctx context.Context, routed [][]spanset.Piece, at time.Time) error {
	for {
		b.handoff.Lock()
		fits := true
		for i, pieces := range routed {
			if in := b.shards[i].in; len(pieces) > 0 && len(in) == cap(in) {
				fits = false
				break
			}
		}
		if fits {
			for i, pieces := range routed {
				if len(pieces) > 0 {
					b.shards[i].in <- shardInput{pieces: pieces, at: at}
				}
			}
			b.handoff.Unlock()
			return nil
		}
		b.handoff.Unlock()
		select {
		case <-b.room:
		case <-time.After(roomPoll):
			// A shard that took its last input signalled a caller waiting on another.
		case <-b.finishing:
			return ErrShutDown
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
// shard goroutines end as soon as the next consumer returns. It is called once, after Start.
func (b *Buffer) Shutdown(ctx context.Context) error {
	defer b.tel.b.Shutdown()
	defer b.cancel()
	if b.opts.synchronous {
		for _, s := range b.shards {
			s.finish()
		}
		return nil
	}
	close(b.finishing)
	for _, s := range b.shards {
		select {
		case <-s.done:
		case <-ctx.Done():
			b.cancel()
			return fmt.Errorf("shutdown retry_storm: decide and flush buffered traces: %w", ctx.Err())
		}
	}
	return nil
}

// CatchUp waits until every shard has ingested what was routed to it so far and decided
// what is due at the current clock. Tests use it with an injected clock.
func (b *Buffer) CatchUp(ctx context.Context) error {
	for _, s := range b.shards {
		if b.opts.synchronous {
			s.step(nil, time.Time{})
			continue
		}
		ack := make(chan struct{})
		// Sent under handoff like routed pieces, so handOver's room check holds.
		b.handoff.Lock()
		select {
		case s.in <- shardInput{ack: ack}:
			b.handoff.Unlock()
		case <-ctx.Done():
			b.handoff.Unlock()
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
