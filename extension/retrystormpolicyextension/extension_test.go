package retrystormpolicyextension

import (
	"context"
	"testing"

	"github.com/open-telemetry/opentelemetry-collector-contrib/pkg/sampling"
	"github.com/open-telemetry/opentelemetry-collector-contrib/processor/tailsamplingprocessor/pkg/samplingpolicy"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/extension/extensiontest"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/retrystorm/retrystorm/extension/retrystormpolicyextension/internal/metadata"
	"github.com/retrystorm/retrystorm/internal/fixtures"
)

// startExtension creates and starts the extension through its factory, with telemetry a
// test can read.
func startExtension(t *testing.T, cfg *Config) (*policyExtension, *componenttest.Telemetry) {
	t.Helper()
	tel := componenttest.NewTelemetry()
	t.Cleanup(func() { require.NoError(t, tel.Shutdown(context.Background())) })
	set := extensiontest.NewNopSettings(metadata.Type)
	set.TelemetrySettings = tel.NewTelemetrySettings()
	ext, err := NewFactory().Create(context.Background(), set, cfg)
	require.NoError(t, err)
	require.NoError(t, ext.Start(context.Background(), componenttest.NewNopHost()))
	t.Cleanup(func() { require.NoError(t, ext.Shutdown(context.Background())) })
	return ext.(*policyExtension), tel
}

func evaluate(t *testing.T, ev samplingpolicy.Evaluator, td ptrace.Traces) samplingpolicy.Decision {
	t.Helper()
	d, err := ev.Evaluate(context.Background(), traceIDOf(td), &samplingpolicy.TraceData{
		SpanCount: int64(td.SpanCount()), ReceivedBatches: td,
	})
	require.NoError(t, err)
	return d
}

// TestEvaluatorOnFixtures: each fixture whole, through one policy with no block of its own:
// every trace with a signal is sampled, the clean one is not, and each evaluation is
// counted by decision and reason.
func TestEvaluatorOnFixtures(t *testing.T) {
	ext, tel := startExtension(t, createDefaultConfig().(*Config))
	ev, err := ext.NewEvaluator("retry-storm", nil)
	require.NoError(t, err)
	for _, name := range fixtures.Names() {
		want := samplingpolicy.Sampled
		if cleanFixtures[name] {
			want = samplingpolicy.NotSampled
		}
		assert.Equal(t, want, evaluate(t, ev, fixtures.Load(t, name)), name)
	}
	m, err := tel.GetMetric(metadata.Evaluations)
	require.NoError(t, err)
	counts := map[[2]string]int64{}
	for _, dp := range m.Data.(metricdata.Sum[int64]).DataPoints {
		d, _ := dp.Attributes.Value(attribute.Key(metadata.AttributeDecision))
		r, _ := dp.Attributes.Value(attribute.Key(metadata.AttributeReason))
		counts[[2]string{d.AsString(), r.AsString()}] = dp.Value
	}
	assert.Equal(t, map[[2]string]int64{
		{"sampled", "storm"}:      int64(len(fixtures.Names()) - 2),
		{"sampled", "divergence"}: 1,
		{"not_sampled", "clean"}:  1,
	}, counts)
}

// TestEvaluatorThreshold: a sampled trace reports the threshold its trace id passed, so
// that tail_sampling can write it into tracestate.
func TestEvaluatorThreshold(t *testing.T) {
	ext, _ := startExtension(t, createDefaultConfig().(*Config))
	ev, err := ext.NewEvaluator("half", map[string]any{"keep_percent": map[string]any{
		"storm": 50, "tool_error": 50, "divergence": 50, "span_error": 50, "incomplete": 50,
	}})
	require.NoError(t, err)
	te := ev.(samplingpolicy.ThresholdEvaluator)
	td := fixtures.Load(t, "mastra.json")
	d, th, err := te.EvaluateWithThreshold(context.Background(), traceIDOf(td), &samplingpolicy.TraceData{ReceivedBatches: td})
	require.NoError(t, err)
	half, err := sampling.ProbabilityToThreshold(0.5)
	require.NoError(t, err)
	assert.Equal(t, half, th)
	assert.Equal(t, half.ShouldSample(sampling.TraceIDToRandomness(traceIDOf(td))), d == samplingpolicy.Sampled)
}

// TestPolicyBlockOverridesKeepPercent: a policy's own block overrides the extension's rates
// key by key; the analysis stays the extension's.
func TestPolicyBlockOverridesKeepPercent(t *testing.T) {
	ext, _ := startExtension(t, createDefaultConfig().(*Config))
	stormsOnly, err := ext.NewEvaluator("storms-only", map[string]any{
		"keep_percent": map[string]any{"tool_error": 0, "divergence": 0, "span_error": 0, "incomplete": 0},
	})
	require.NoError(t, err)
	none, err := ext.NewEvaluator("none", map[string]any{"keep_percent": map[string]any{
		"storm": 0, "tool_error": 0, "divergence": 0, "span_error": 0, "incomplete": 0,
	}})
	require.NoError(t, err)
	assert.Equal(t, samplingpolicy.Sampled, evaluate(t, stormsOnly, fixtures.Load(t, "mastra.json")))
	assert.Equal(t, samplingpolicy.NotSampled, evaluate(t, stormsOnly, fixtures.Load(t, "mixed_subagent_duplicate.json")),
		"kept for a finding only")
	assert.Equal(t, samplingpolicy.NotSampled, evaluate(t, none, fixtures.Load(t, "mastra.json")))
}

// TestPolicyBlockRejectsOtherKeys: a policy block with anything but keep_percent, or a bad
// rate, fails with an error naming the policy and the key.
func TestPolicyBlockRejectsOtherKeys(t *testing.T) {
	ext, _ := startExtension(t, createDefaultConfig().(*Config))
	for name, tt := range map[string]struct {
		block map[string]any
		want  []string
	}{
		"analysis key":   {map[string]any{"storm_threshold": 3}, []string{`retry_storm policy "p"`, "only keep_percent", "storm_threshold"}},
		"misspelt rate":  {map[string]any{"keep_percent": map[string]any{"strom": 10}}, []string{"only keep_percent", "strom"}},
		"bad rate":       {map[string]any{"keep_percent": map[string]any{"storm": 200}}, []string{"keep_percent.storm must be between 0 and 100"}},
		"not a map rate": {map[string]any{"keep_percent": "all"}, []string{"keep_percent"}},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := ext.NewEvaluator("p", tt.block)
			require.Error(t, err)
			for _, want := range tt.want {
				assert.ErrorContains(t, err, want)
			}
		})
	}
}

// TestIsStatefulExactlyWithTheStaleCacheMemory: tail_sampling's span-ingest strategy
// refuses stateful policies; only remembered results make this one stateful.
func TestIsStatefulExactlyWithTheStaleCacheMemory(t *testing.T) {
	ext, _ := startExtension(t, createDefaultConfig().(*Config))
	ev, err := ext.NewEvaluator("p", nil)
	require.NoError(t, err)
	assert.True(t, ev.IsStateful())
	cfg := createDefaultConfig().(*Config)
	cfg.Divergence.StaleCache.RememberedResults = 0
	ext, _ = startExtension(t, cfg)
	ev, err = ext.NewEvaluator("p", nil)
	require.NoError(t, err)
	assert.False(t, ev.IsStateful())
}

// TestStartReadsTheKey: the HMAC key is read at Start as the processor reads it; a missing
// variable fails Start without naming a key.
func TestStartReadsTheKey(t *testing.T) {
	cfg := createDefaultConfig().(*Config)
	cfg.Hashing.KeyEnv = "RETRYSTORM_POLICY_TEST_KEY"
	ext, err := NewFactory().Create(context.Background(), extensiontest.NewNopSettings(metadata.Type), cfg)
	require.NoError(t, err)
	err = ext.Start(context.Background(), componenttest.NewNopHost())
	assert.EqualError(t, err, "start retry_storm policy extension: hashing.key_env: environment variable RETRYSTORM_POLICY_TEST_KEY is not set")
	t.Setenv("RETRYSTORM_POLICY_TEST_KEY", "0123456789abcdef0123")
	require.NoError(t, ext.Start(context.Background(), componenttest.NewNopHost()))
	ev, err := ext.(samplingpolicy.Extension).NewEvaluator("p", nil)
	require.NoError(t, err)
	assert.Equal(t, samplingpolicy.Sampled, evaluate(t, ev, fixtures.Load(t, "mastra.json")))
	require.NoError(t, ext.Shutdown(context.Background()))
}

// TestNewEvaluatorBeforeStart: evaluators exist from Start on (tail_sampling makes them in
// its own Start, after the extensions').
func TestNewEvaluatorBeforeStart(t *testing.T) {
	ext, err := NewFactory().Create(context.Background(), extensiontest.NewNopSettings(metadata.Type), createDefaultConfig())
	require.NoError(t, err)
	_, err = ext.(samplingpolicy.Extension).NewEvaluator("p", nil)
	require.ErrorIs(t, err, errNotStarted)
	require.NoError(t, ext.Shutdown(context.Background()), "safe without Start")
}

// TestEvaluateOddTraceData: no trace data, or data without spans, is not sampled.
func TestEvaluateOddTraceData(t *testing.T) {
	ext, _ := startExtension(t, createDefaultConfig().(*Config))
	ev, err := ext.NewEvaluator("p", nil)
	require.NoError(t, err)
	d, err := ev.Evaluate(context.Background(), [16]byte{1}, nil)
	require.NoError(t, err)
	assert.Equal(t, samplingpolicy.NotSampled, d)
	d, err = ev.Evaluate(context.Background(), [16]byte{1}, &samplingpolicy.TraceData{ReceivedBatches: ptrace.NewTraces()})
	require.NoError(t, err)
	assert.Equal(t, samplingpolicy.NotSampled, d)
}
