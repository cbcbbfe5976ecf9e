package buffer

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/otel/attribute"
	"go.uber.org/zap"

	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/analysis"
	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/buffer/buffertest"
	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/redact"
	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/sample"
	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/stalecache"
)

// harness is a started buffer driven by a buffertest.Harness; buffer is there for tests that
// look into its shards.
type harness struct {
	*buffertest.Harness
	buffer *Buffer
}

func newHarness(t *testing.T, cfg *Config, next consumer.Traces, opts ...Option) *harness {
	t.Helper()
	return newLoggedHarness(t, cfg, next, nil, opts...)
}

// newLoggedHarness is newHarness with the buffer logging to logger (nil: no logs).
func newLoggedHarness(t *testing.T, cfg *Config, next consumer.Traces, logger *zap.Logger, opts ...Option) *harness {
	t.Helper()
	h := buffertest.NewHarness(t, next)
	b, err := New(h.TelemetrySettings(logger), *cfg, h.Next, append([]Option{WithClock(h.Clock.Now)}, opts...)...)
	require.NoError(t, err)
	require.NoError(t, b.Start(nil))
	h.Drive(b)
	return &harness{Harness: h, buffer: b}
}

// testConfig is the buffer's configuration under the processor's defaults, on four shards.
func testConfig() *Config {
	return &Config{
		DecisionWait:     30 * time.Second,
		RootGrace:        2 * time.Second,
		MaxBufferedBytes: 256 << 20,
		NumShards:        4,
		KeptTraces:       100_000,
		DroppedTraces:    1_000_000,
		KeptBytes:        32 << 20,
		Sampling:         sample.DefaultConfig(),
		RedactPayloads:   true,
		Analysis:         analysis.DefaultConfig(),
		Redaction:        redact.DefaultConfig(),
		StaleCache:       stalecache.DefaultConfig(),
	}
}

// causeAttr is the cause attribute of a decision's Cause or a dropped span's DropCause.
func causeAttr(cause fmt.Stringer) attribute.KeyValue {
	return attribute.String("cause", cause.String())
}
