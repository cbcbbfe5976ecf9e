package buffer // import "github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/buffer"

import (
	"context"
	"errors"
	"fmt"
	"math"
	"runtime"
	"sync"
	"time"

	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.uber.org/zap"

	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/held"
	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/inbound"
	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/loglimit"
	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/metadata"
	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/spanset"
)

// ErrShutDown is returned for spans offered once shutdown has begun.
var ErrShutDown = errors.New("retry_storm processor is shut down")

// Buffer routes spans to shards by trace id. It holds no trace state itself. Each shard
// has its verdict from verdicts (V and K: held.Verdict).
type Buffer[V, K any] struct {
	cfg      Config
	next     consumer.Traces
	logger   *zap.Logger
	tel      *telemetry
	opts     options
	verdicts held.Verdicts[V, K]
	// inbound takes client annotations out of every request (processor README, "Security").
	inbound *inbound.Filter

	shards    []*shard[V, K]
	ctx       context.Context // forwarding context, cancelled when shutdown runs out of time
	cancel    context.CancelFunc
	finishing chan struct{}
	// handoff is held while shard inputs are checked for room and sent (handOver); room
	// is signalled by a shard when it takes an input.
	handoff sync.Mutex
	room    chan struct{}
}

// New returns a Buffer that has verdicts decide what it holds and forwards what they keep
// to next; Start starts it. tb is the processor's telemetry, which the verdicts record on
// too.
func New[V, K any](logger *zap.Logger, tb *metadata.TelemetryBuilder, cfg Config, verdicts held.Verdicts[V, K], next consumer.Traces, opts ...Option) *Buffer[V, K] {
	o := defaultOptions()
	for _, opt := range opts {
		opt(&o)
	}
	return &Buffer[V, K]{
		cfg: cfg, next: next, logger: logger, tel: newTelemetry(tb), opts: o, verdicts: verdicts,
		inbound:   inbound.New(verdicts.ClientInputs()),
		finishing: make(chan struct{}),
		room:      make(chan struct{}, 1),
	}
}

// Start makes the shards and starts one goroutine per shard. key is the HMAC key of the
// payload hashes, read at start (nil: plain SHA-256).
func (b *Buffer[V, K]) Start(key []byte) error {
	sc := b.shardConfig()
	if err := b.verdicts.Start(key, b.opts.now, sc.maxTraceBytes); err != nil {
		return err
	}
	b.ctx, b.cancel = context.WithCancel(context.Background())
	b.shards = b.newShards(sc)
	if err := b.tel.b.RegisterBufferedCallback(b.buffered); err != nil {
		b.cancel()
		return fmt.Errorf("register retry_storm buffered gauges: %w", err)
	}
	if !b.opts.synchronous {
		for _, s := range b.shards {
			go s.run(b.opts.tick, b.finishing)
		}
	}
	return nil
}

// numShards is the number of shards: num_shards, or GOMAXPROCS.
func (b *Buffer[V, K]) numShards() int {
	if b.cfg.NumShards == 0 {
		return runtime.GOMAXPROCS(0)
	}
	return b.cfg.NumShards
}

// shardConfig is each shard's share of the configuration.
func (b *Buffer[V, K]) shardConfig() shardConfig {
	n := b.numShards()
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
	if b.opts.released {
		// Nothing is held: each trace is decided in the step that brought it.
		sc.released, sc.decisionWait = true, 0
		sc.maxBytes, sc.maxTraceBytes = math.MaxInt64, math.MaxInt64
	}
	return sc
}

func (b *Buffer[V, K]) newShards(sc shardConfig) []*shard[V, K] {
	evictLog := loglimit.New(evictionLogEvery)
	shards := make([]*shard[V, K], b.numShards())
	for i := range shards {
		shards[i] = &shard[V, K]{
			cfg: sc, now: b.opts.now, ctx: b.ctx, next: b.next, tel: b.tel, logger: b.logger,
			room:     b.room,
			evictLog: evictLog,
		}
		shards[i].init(b.verdicts.Shard())
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
func (b *Buffer[V, K]) buffered() (bytes, traces, spans int64) {
	for _, s := range b.shards {
		bytes += s.gauges.bytes.Load()
		traces += s.gauges.traces.Load()
		spans += s.gauges.spans.Load()
	}
	return bytes, traces, spans
}

// ConsumeTraces only routes: it cuts td by trace id, taking the client annotations out on
// the way, and hands each shard its pieces.
func (b *Buffer[V, K]) ConsumeTraces(ctx context.Context, td ptrace.Traces) error {
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
func (b *Buffer[V, K]) handOver(ctx context.Context, routed [][]spanset.Piece, at time.Time) error {
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
func (b *Buffer[V, K]) Shutdown(ctx context.Context) error {
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
func (b *Buffer[V, K]) CatchUp(ctx context.Context) error {
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
