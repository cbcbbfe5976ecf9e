package retrystormprocessor

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/processor/processortest"

	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/buffer/buffertest"
	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/metadata"
)

// startOffline feeds forty storm traces to an offline processor, each with padding bytes
// in an attribute of its first span.
func startOffline(t *testing.T, cfg *Config, padding int) (*consumertest.TracesSink, func()) {
	t.Helper()
	sink := &consumertest.TracesSink{}
	p, err := NewOfflineTraces(processortest.NewNopSettings(metadata.Type), cfg, sink)
	require.NoError(t, err)
	require.NoError(t, p.Start(context.Background(), componenttest.NewNopHost()))
	for i := range 40 {
		td := buffertest.StormTrace(buffertest.TraceID(uint64(i + 1)))
		if padding > 0 {
			td.ResourceSpans().At(0).ScopeSpans().At(0).Spans().At(0).Attributes().PutStr("padding", strings.Repeat("p", padding))
		}
		require.NoError(t, p.ConsumeTraces(context.Background(), td))
	}
	return sink, func() { require.NoError(t, p.Shutdown(context.Background())) }
}

// TestOfflineDecidesWhenTheInputEnds: forty requests move the offline clock four minutes,
// far past decision_wait and root_grace, and no trace is decided before Shutdown, which
// decides every one.
func TestOfflineDecidesWhenTheInputEnds(t *testing.T) {
	sink, shutdown := startOffline(t, testConfig(), 0)
	time.Sleep(300 * time.Millisecond) // the shards' ticks would decide what is due
	assert.Zero(t, sink.SpanCount(), "nothing is decided because time passed")
	shutdown()
	assert.Len(t, buffertest.SinkSpans(sink), 40, "every storm trace is kept at the end")
}

// TestOfflineRootGraceZeroStillDecidesAtTheRoot: root_grace 0 means "decide when the root
// arrives", offline too.
func TestOfflineRootGraceZeroStillDecidesAtTheRoot(t *testing.T) {
	cfg := testConfig()
	cfg.RootGrace = 0
	sink, shutdown := startOffline(t, cfg, 0)
	defer shutdown()
	assert.Eventually(t, func() bool { return len(buffertest.SinkSpans(sink)) == 40 }, 10*time.Second, 10*time.Millisecond)
}

// TestOfflineMemoryBoundDecidesEarly: past max_buffered_bytes the oldest traces are decided
// before the input ends; each storm trace is still kept, whole.
func TestOfflineMemoryBoundDecidesEarly(t *testing.T) {
	cfg := testConfig()
	cfg.NumShards = 1
	cfg.MaxBufferedBytes = 64 << 10 // the smallest bound: it holds about seven of these traces
	sink, shutdown := startOffline(t, cfg, 8<<10)
	assert.Eventually(t, func() bool { return len(buffertest.SinkSpans(sink)) >= 30 }, 10*time.Second, 10*time.Millisecond,
		"the bound decides traces before Shutdown")
	shutdown()
	byTrace := buffertest.SinkSpans(sink)
	require.Len(t, byTrace, 40)
	whole := buffertest.StormTrace(buffertest.TraceID(1)).SpanCount()
	for id, spans := range byTrace {
		assert.Lenf(t, spans, whole, "trace %s is kept whole", id)
	}
}

// TestOfflineRefusesAnInvalidConfiguration: validation as at a collector's start.
func TestOfflineRefusesAnInvalidConfiguration(t *testing.T) {
	cfg := testConfig()
	cfg.StormThreshold = 1
	_, err := NewOfflineTraces(processortest.NewNopSettings(metadata.Type), cfg, &consumertest.TracesSink{})
	assert.ErrorContains(t, err, "storm_threshold")
}
