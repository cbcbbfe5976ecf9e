package buffer

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/otel/attribute"
	"go.uber.org/zap"

	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/buffer/buffertest"
	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/verdict"
)

// harness is a started buffer driven by a buffertest.Harness; buffer is there for tests that
// look into its shards.
type harness struct {
	*buffertest.Harness
	buffer *Buffer
}

func newHarness(t *testing.T, cfg *testSetup, next consumer.Traces, opts ...Option) *harness {
	t.Helper()
	return newLoggedHarness(t, cfg, next, nil, opts...)
}

// newLoggedHarness is newHarness with the buffer logging to logger (nil: no logs).
func newLoggedHarness(t *testing.T, cfg *testSetup, next consumer.Traces, logger *zap.Logger, opts ...Option) *harness {
	t.Helper()
	h := buffertest.NewHarness(t, next)
	b, err := New(h.TelemetrySettings(logger), cfg.Config, cfg.Stages, h.Next, append([]Option{WithClock(h.Clock.Now)}, opts...)...)
	require.NoError(t, err)
	require.NoError(t, b.Start(nil))
	h.Drive(b)
	return &harness{Harness: h, buffer: b}
}

// testSetup is the buffer's configuration and its stages', as the processor's
// configuration holds them.
type testSetup struct {
	Config
	verdict.Stages
}

// testConfig is the processor's defaults, on four shards.
func testConfig() *testSetup {
	cfg := &testSetup{Config: DefaultConfig(), Stages: verdict.DefaultStages()}
	cfg.NumShards = 4
	return cfg
}

// causeAttr is the cause attribute of a decision's Cause or a dropped span's DropCause.
func causeAttr(cause fmt.Stringer) attribute.KeyValue {
	return attribute.String("cause", cause.String())
}
