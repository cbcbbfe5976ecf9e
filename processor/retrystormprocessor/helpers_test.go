package retrystormprocessor

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/processor/processortest"

	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/buffer"
	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/buffer/buffertest"
	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/metadata"
)

// driven is the processor as a harness drives it: catching up is its buffer's.
type driven struct{ *retryStormProcessor }

func (d driven) CatchUp(ctx context.Context) error { return d.buffer.CatchUp(ctx) }

// newHarness starts a processor with an injected clock, a sink (unless next is given) and
// its own telemetry.
func newHarness(t *testing.T, cfg *Config, next consumer.Traces, opts ...buffer.Option) *buffertest.Harness {
	t.Helper()
	h := buffertest.NewHarness(t, next)
	set := processortest.NewNopSettings(metadata.Type)
	set.TelemetrySettings = h.TelemetrySettings(nil)
	p, err := newRetryStormProcessor(set, cfg, h.Next, append([]buffer.Option{buffer.WithClock(h.Clock.Now)}, opts...)...)
	require.NoError(t, err)
	require.NoError(t, p.Start(context.Background(), componenttest.NewNopHost()))
	h.Drive(driven{p})
	return h
}

func testConfig() *Config {
	cfg := createDefaultConfig().(*Config)
	cfg.NumShards = 4
	return cfg
}
