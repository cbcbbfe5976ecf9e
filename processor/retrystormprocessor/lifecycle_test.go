package retrystormprocessor

import (
	"context"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/processor/processortest"
	"go.opentelemetry.io/otel/attribute"

	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/buffer"
	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/buffer/buffertest"
	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/metadata"
)

func newUnstarted(t *testing.T, cfg *Config) *retryStormProcessor {
	t.Helper()
	p, err := NewFactory().CreateTraces(context.Background(), processortest.NewNopSettings(metadata.Type), cfg, consumertest.NewNop())
	require.NoError(t, err)
	return p.(*retryStormProcessor)
}

func TestFactory(t *testing.T) {
	f := NewFactory()
	assert.Equal(t, metadata.Type, f.Type())
	assert.Equal(t, metadata.TracesStability, f.TracesStability())
	p := newUnstarted(t, f.CreateDefaultConfig().(*Config))
	assert.True(t, p.Capabilities().MutatesData, "kept spans are annotated in place")
}

func TestStartShutdownWithoutData(t *testing.T) {
	p := newUnstarted(t, testConfig())
	require.NoError(t, p.Start(context.Background(), componenttest.NewNopHost()))
	require.NoError(t, p.Shutdown(context.Background()))
}

func TestShutdownWithoutStart(t *testing.T) {
	p := newUnstarted(t, testConfig())
	require.NoError(t, p.Shutdown(context.Background()))
	assert.ErrorIs(t, p.ConsumeTraces(context.Background(), buffertest.CleanTrace(buffertest.TraceID(1), "lookup")), errNotStarted)
}

func TestShutdownTwice(t *testing.T) {
	p := newUnstarted(t, testConfig())
	require.NoError(t, p.Start(context.Background(), componenttest.NewNopHost()))
	require.NoError(t, p.Shutdown(context.Background()))
	require.NoError(t, p.Shutdown(context.Background()))
	assert.ErrorIs(t, p.ConsumeTraces(context.Background(), buffertest.CleanTrace(buffertest.TraceID(1), "lookup")), buffer.ErrShutDown)
}

func TestShutdownFlushesBufferedStormTraces(t *testing.T) {
	h := newHarness(t, testConfig(), nil)
	for i := range 20 {
		h.Consume(buffertest.WithoutRoot(buffertest.StormTrace(buffertest.TraceID(uint64(i)))))
	}
	h.CatchUp()
	assert.Zero(t, h.Sink.SpanCount(), "nothing is due before shutdown")
	require.NoError(t, h.Shutdown(context.Background()))
	byTrace := buffertest.SinkSpans(h.Sink)
	require.Len(t, byTrace, 20)
	for id, spans := range byTrace {
		assert.Lenf(t, spans, 3, "trace %s is flushed whole", id)
	}
	assert.EqualValues(t, 20, h.Sum(metadata.MetricEarlyDecisions, attribute.String("cause", buffer.CauseShutdown.String())))
	h.Conservation()
	assert.Zero(t, h.Sum(metadata.MetricBufferedSpans))
}

// blockingConsumer holds every batch until its context ends, like an exporter whose backend
// is down.
type blockingConsumer struct {
	consumertest.TracesSink
	entered chan struct{}
	once    sync.Once
}

func (b *blockingConsumer) ConsumeTraces(ctx context.Context, _ ptrace.Traces) error {
	b.once.Do(func() { close(b.entered) })
	<-ctx.Done()
	return ctx.Err()
}

func TestShutdownHonoursDeadlineWithSlowNextConsumer(t *testing.T) {
	next := &blockingConsumer{entered: make(chan struct{})}
	h := newHarness(t, testConfig(), next)
	h.Consume(buffertest.WithoutRoot(buffertest.StormTrace(buffertest.TraceID(7))))
	h.CatchUp()

	ctx, cancel := context.WithCancel(context.Background())
	result := make(chan error, 1)
	go func() { result <- h.Shutdown(ctx) }()
	<-next.entered // the shard is now stuck forwarding the storm trace
	cancel()
	err := <-result
	require.ErrorIs(t, err, context.Canceled)
	assert.Contains(t, err.Error(), "shutdown retry_storm")
	// The shard goroutines end once the next consumer returns; goleak checks it in TestMain.
}
