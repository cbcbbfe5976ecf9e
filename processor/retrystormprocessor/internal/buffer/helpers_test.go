package buffer

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/otel/attribute"
	"go.uber.org/zap"

	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/analysis"
	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/attrsource"
	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/buffer/buffertest"
	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/metadata"
	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/redact"
	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/sample"
	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/toolspan"
	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/verdict"
)

// harness is a started buffer driven by a buffertest.Harness; buffer is there for tests that
// look into its shards.
type harness struct {
	*buffertest.Harness
	buffer *testBuffer
}

// testBuffer is the buffer with the processor's verdicts.
type testBuffer = Buffer[verdict.Notes, verdict.Kept]

// testShard and testTrace are a test buffer's shard and held trace.
type (
	testShard = shard[verdict.Notes, verdict.Kept]
	testTrace = pendingTrace[verdict.Notes, verdict.Kept]
)

// verdictConfig is the verdicts' configuration, embedded in testCfg under its own name.
type verdictConfig = verdict.Config

// testCfg is what a test buffer is built from: the store's configuration and the
// verdicts'. Released (buffering: false) sets both the verdicts' mode and the store's
// option.
type testCfg struct {
	Config
	verdictConfig
}

// newTestBuffer builds the buffer and its verdicts as the processor does.
func newTestBuffer(tb testing.TB, set component.TelemetrySettings, cfg *testCfg, next consumer.Traces, opts ...Option) *testBuffer {
	tb.Helper()
	builder, err := metadata.NewTelemetryBuilder(set)
	require.NoError(tb, err)
	vs, err := verdict.NewVerdicts(cfg.verdictConfig, builder, set.Logger)
	require.NoError(tb, err)
	if cfg.Released {
		opts = append(opts, WithReleasedTraces())
	}
	return New(set.Logger, builder, cfg.Config, vs, next, opts...)
}

func newHarness(t *testing.T, cfg *testCfg, next consumer.Traces, opts ...Option) *harness {
	t.Helper()
	return newLoggedHarness(t, cfg, next, nil, opts...)
}

// newLoggedHarness is newHarness with the buffer logging to logger (nil: no logs).
func newLoggedHarness(t *testing.T, cfg *testCfg, next consumer.Traces, logger *zap.Logger, opts ...Option) *harness {
	t.Helper()
	h := buffertest.NewHarness(t, next)
	b := newTestBuffer(t, h.TelemetrySettings(logger), cfg, h.Next, append([]Option{WithClock(h.Clock.Now)}, opts...)...)
	require.NoError(t, b.Start(nil))
	h.Drive(b)
	return &harness{Harness: h, buffer: b}
}

// testConfig is the buffer's configuration under the processor's defaults, on four shards.
func testConfig() *testCfg {
	src := toolspan.DefaultConfig().Sources
	rc := redact.DefaultConfig()
	rc.PayloadKeys = attrsource.RawKeys(src.Payload()...)
	rc.PayloadSources = slices.Concat(src.Payload()...)
	rc.IdempotencyKeys = attrsource.RawKeys(src.IdempotencyKey)
	rc.DeleteAttributes = []string{}
	keep := map[sample.Reason]float64{}
	for _, r := range sample.SignalReasons {
		keep[r] = 100
	}
	return &testCfg{
		Config: Config{
			DecisionWait:     30 * time.Second,
			RootGrace:        2 * time.Second,
			MaxBufferedBytes: 256 << 20,
			NumShards:        4,
			KeptTraces:       100_000,
			DroppedTraces:    1_000_000,
			KeptBytes:        32 << 20,
			ClientInputs:     []string{"retrystorm.read.asset", "retrystorm.answer.caveat", "retrystorm.answer.cited_assets"},
		},
		verdictConfig: verdictConfig{
			Sampling:       sample.Rates{Clean: 5, Keep: keep, Tools: map[string]float64{}},
			RedactPayloads: true,
			Analysis:       analysis.DefaultConfig(),
			Redaction:      rc,
			StaleCache: verdict.StaleCacheConfig{
				RememberedResults: 100_000, MinAge: time.Minute, RecheckWindow: 2 * time.Minute, HeldSuspects: 10_000,
			},
		},
	}
}

// TestTestConfigIsTheFactoryDefaults holds testConfig to the processor's defaults as the
// processor's own test writes them (testdata/factory_defaults.golden): the same but for the
// shard count, four here and GOMAXPROCS (0) by default.
func TestTestConfigIsTheFactoryDefaults(t *testing.T) {
	want, err := os.ReadFile(filepath.Join("testdata", "factory_defaults.golden"))
	require.NoError(t, err)
	cfg := *testConfig()
	require.Equal(t, 4, cfg.NumShards)
	cfg.NumShards = 0
	require.Equal(t, string(want), fmt.Sprintf("%#v\n%#v\n", cfg.Config, cfg.verdictConfig), "testConfig drifted from the processor's defaults")
}

// causeAttr is the cause attribute of a decision's Cause or a dropped span's DropCause.
func causeAttr(cause fmt.Stringer) attribute.KeyValue {
	return attribute.String("cause", cause.String())
}
