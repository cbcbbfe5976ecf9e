package retrystormprocessor // import "github.com/retrystorm/retrystorm/processor/retrystormprocessor"

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/processor"
	"go.uber.org/zap"

	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/buffer"
	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/payload"
)

var errNotStarted = errors.New("retry_storm processor is not started")

// retryStormProcessor is the component around the buffer: it reads the HMAC key at start
// and keeps ConsumeTraces and Shutdown to the collector's lifecycle.
type retryStormProcessor struct {
	cfg    *Config
	logger *zap.Logger
	buffer *buffer.Buffer

	started  atomic.Bool
	stopped  atomic.Bool
	stopOnce sync.Once
	stopErr  error
}

var _ processor.Traces = (*retryStormProcessor)(nil)

func newRetryStormProcessor(set processor.Settings, cfg *Config, next consumer.Traces, opts ...buffer.Option) (*retryStormProcessor, error) {
	b, err := buffer.New(set.TelemetrySettings, cfg.BufferConfig, cfg.StagesConfig, next, opts...)
	if err != nil {
		return nil, err
	}
	return &retryStormProcessor{cfg: cfg, logger: set.Logger, buffer: b}, nil
}

func (p *retryStormProcessor) Capabilities() consumer.Capabilities {
	return consumer.Capabilities{MutatesData: true}
}

// Start reads the HMAC key and starts the buffer's shards.
func (p *retryStormProcessor) Start(_ context.Context, _ component.Host) error {
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
