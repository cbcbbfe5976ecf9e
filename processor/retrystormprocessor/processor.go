package retrystormprocessor // import "github.com/retrystorm/retrystorm/processor/retrystormprocessor"

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/processor"
	"go.uber.org/zap"

	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/buffer"
	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/metadata"
	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/payload"
	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/verdict"
)

var errNotStarted = errors.New("retry_storm processor is not started")

// retryStormProcessor is the component around the buffer: it reads the HMAC key at start
// and keeps ConsumeTraces and Shutdown to the collector's lifecycle.
type retryStormProcessor struct {
	cfg      *Config
	logger   *zap.Logger
	buffer   *buffer.Buffer[verdict.Notes, verdict.Kept]
	verdicts *verdict.Verdicts

	started  atomic.Bool
	stopped  atomic.Bool
	stopOnce sync.Once
	stopErr  error
}

var _ processor.Traces = (*retryStormProcessor)(nil)

func newRetryStormProcessor(set processor.Settings, cfg *Config, next consumer.Traces, opts ...buffer.Option) (*retryStormProcessor, error) {
	if !cfg.Buffering {
		opts = append(opts, buffer.WithReleasedTraces())
	}
	tb, err := metadata.NewTelemetryBuilder(set.TelemetrySettings)
	if err != nil {
		return nil, fmt.Errorf("create retry_storm telemetry: %w", err)
	}
	// The store (buffer) holds traces until they are due; the verdicts decide them.
	verdicts, err := verdict.NewVerdicts(verdict.Config{Stages: cfg.StagesConfig, Released: !cfg.Buffering}, tb, set.Logger)
	if err != nil {
		return nil, err
	}
	b := buffer.New(set.Logger, tb, cfg.BufferConfig, verdicts, next, opts...)
	return &retryStormProcessor{cfg: cfg, logger: set.Logger, buffer: b, verdicts: verdicts}, nil
}

func (p *retryStormProcessor) Capabilities() consumer.Capabilities {
	return consumer.Capabilities{MutatesData: true}
}

// Start reads the HMAC key and starts the buffer's shards. After tail_sampling
// (`buffering: false`), the stale-cache check shares the result memory of the retry_storm
// policy extension when the collector runs one (sharedResultMemory).
func (p *retryStormProcessor) Start(_ context.Context, host component.Host) error {
	if !p.cfg.Buffering {
		if m := p.sharedResultMemory(host); m != nil {
			p.verdicts.UseMemory(m.m)
		}
	}
	key, err := p.cfg.Hashing.ReadKey()
	if err != nil {
		return fmt.Errorf("start retry_storm: %w", err)
	}
	if key != nil && len(key) < payload.MinKeyBytes {
		p.logger.Warn("hashing key is short; hashes of low-entropy arguments are easier to brute-force",
			zap.Int("hashing.key.min_bytes", payload.MinKeyBytes))
	}
	if err := p.buffer.Start(key); err != nil {
		return err
	}
	p.started.Store(true)
	return nil
}

// ConsumeTraces hands td to the buffer, which only routes it to its shards.
func (p *retryStormProcessor) ConsumeTraces(ctx context.Context, td ptrace.Traces) error {
	if !p.started.Load() {
		return errNotStarted
	}
	if p.stopped.Load() {
		return buffer.ErrShutDown
	}
	return p.buffer.ConsumeTraces(ctx, td)
}

// Shutdown decides every buffered trace and forwards what is kept, within ctx (the buffer's
// Shutdown). It is safe without Start and when called again.
func (p *retryStormProcessor) Shutdown(ctx context.Context) error {
	if !p.started.Load() {
		return nil
	}
	p.stopOnce.Do(func() {
		p.stopped.Store(true)
		p.stopErr = p.buffer.Shutdown(ctx)
	})
	return p.stopErr
}

// sharedResultMemory is the result memory of the retry_storm policy extension the
// collector runs, if one does and its stale-cache check is on: the policy assessed every
// trace, kept or not, so a stale read is checked against all of them, as a buffering
// processor checks it against every trace it decided. With several, the first by id.
func (p *retryStormProcessor) sharedResultMemory(host component.Host) *ResultMemory {
	if host == nil {
		return nil
	}
	exts := host.GetExtensions()
	ids := slices.SortedFunc(maps.Keys(exts), func(a, b component.ID) int { return strings.Compare(a.String(), b.String()) })
	for _, id := range ids {
		if src, ok := exts[id].(resultMemorySource); ok {
			if m := src.ResultMemory(); m != nil {
				p.logger.Info("the stale-cache check uses the result memory of the retry_storm sampling policy",
					zap.String("extension", id.String()))
				return m
			}
		}
	}
	return nil
}
