package buffer

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/otel/attribute"
	"go.uber.org/zap"

	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/buffer/buffertest"
	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/metadata"
	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/verdict"
)

// harness is a started buffer driven by a buffertest.Harness; buffer is there for tests that
// look into its shards.
type harness struct {
	*buffertest.Harness
	buffer *testBuffer
}

// testBuffer is the buffer with the processor's verdicts; testShard and testTrace are its
// shard and held trace.
type (
	testBuffer = Buffer[verdict.Notes, verdict.Kept]
	testShard  = shard[verdict.Notes, verdict.Kept]
	testTrace  = pendingTrace[verdict.Notes, verdict.Kept]
)

func newHarness(t *testing.T, cfg *testSetup, next consumer.Traces, opts ...Option) *harness {
	t.Helper()
	return newLoggedHarness(t, cfg, next, nil, opts...)
}

// newLoggedHarness is newHarness with the buffer logging to logger (nil: no logs).
func newLoggedHarness(t *testing.T, cfg *testSetup, next consumer.Traces, logger *zap.Logger, opts ...Option) *harness {
	t.Helper()
	h := buffertest.NewHarness(t, next)
	b := newTestBuffer(t, h.TelemetrySettings(logger), cfg, h.Next, append([]Option{WithClock(h.Clock.Now)}, opts...)...)
	require.NoError(t, b.Start(nil))
	h.Drive(b)
	return &harness{Harness: h, buffer: b}
}

// testSetup is the buffer's configuration and its stages', as the processor's
// configuration holds them; Released is buffering: false (the verdicts' mode and the
// store's option).
type testSetup struct {
	Config
	verdict.Stages
	Released bool
}

// newTestBuffer builds the buffer and its verdicts as the processor does.
func newTestBuffer(tb testing.TB, set component.TelemetrySettings, cfg *testSetup, next consumer.Traces, opts ...Option) *testBuffer {
	tb.Helper()
	builder, err := metadata.NewTelemetryBuilder(set)
	require.NoError(tb, err)
	vs, err := verdict.NewVerdicts(verdict.Config{Stages: cfg.Stages, Released: cfg.Released}, builder, set.Logger)
	require.NoError(tb, err)
	if cfg.Released {
		opts = append(opts, WithReleasedTraces())
	}
	return New(set.Logger, builder, cfg.Config, vs, next, opts...)
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
