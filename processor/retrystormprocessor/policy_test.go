package retrystormprocessor

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/open-telemetry/opentelemetry-collector-contrib/pkg/sampling"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/confmap/confmaptest"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/processor/processortest"

	"github.com/retrystorm/retrystorm/internal/fixtures"
	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/metadata"
)

// fixtureReasons is the reason each fixture is decided for (testdata/traces/README.md):
// every storm trace for its storm, the sub-agent duplicate for its nested_duplicate
// finding, the one clean trace clean.
var fixtureReasons = map[string]string{
	"claude_code.json":                 "storm",
	"genai_semconv.json":               "storm",
	"logfire_mcp.json":                 "storm",
	"mastra.json":                      "storm",
	"mcp_fallback.json":                "storm",
	"mcp_semconv.json":                 "storm",
	"mixed_agent_many_tools.json":      "storm",
	"mixed_duplicate_side_effect.json": "storm",
	"mixed_nested_mcp_http.json":       "storm",
	"mixed_subagent_duplicate.json":    "divergence",
	"openinference.json":               "storm",
	"openllmetry_mcp.json":             "storm",
	"attempt_record.json":              "storm",
	"vercel_v6.json":                   "clean",
}

func newTestVerdict(t *testing.T, cfg *PolicyConfig) *TraceVerdict {
	t.Helper()
	v, err := NewTraceVerdict(componenttest.NewNopTelemetrySettings(), cfg, nil)
	require.NoError(t, err)
	return v
}

// TestPolicyDefaultsAreTheProcessors: every key the policy shares with the processor
// defaults to the processor's default.
func TestPolicyDefaultsAreTheProcessors(t *testing.T) {
	p := createDefaultConfig().(*Config)
	cfg := NewDefaultPolicyConfig()
	require.NoError(t, confmap.Validate(cfg))
	assert.Equal(t, p.StormThreshold, cfg.StormThreshold)
	assert.Equal(t, p.Sampling.KeepPercent, cfg.KeepPercent)
	assert.Equal(t, p.Attributes, cfg.Attributes)
	assert.Equal(t, p.Recognition, cfg.Recognition)
	assert.Equal(t, p.Status, cfg.Status)
	assert.Equal(t, p.Hashing, cfg.Hashing)
	assert.Equal(t, p.Divergence, cfg.Divergence)
	assert.Equal(t, p.Completeness, cfg.Completeness)
	assert.Equal(t, p.analysisConfig([]byte("k")), cfg.processorConfig().analysisConfig([]byte("k")))
}

// TestLoadPolicyConfig: the policy's keys decode and validate with the processor's error
// texts; keys only the processor has are refused.
func TestLoadPolicyConfig(t *testing.T) {
	cm, err := confmaptest.LoadConf(filepath.Join("testdata", "policy_config.yaml"))
	require.NoError(t, err)
	tests := []struct {
		name    string
		check   func(t *testing.T, cfg *PolicyConfig)
		wantErr []string
	}{
		{name: "policy", check: func(t *testing.T, cfg *PolicyConfig) { assert.Equal(t, NewDefaultPolicyConfig(), cfg) }},
		{name: "policy/analysis", check: checkAnalysisBlock},
		{name: "policy/no_memory", check: func(t *testing.T, cfg *PolicyConfig) {
			assert.Zero(t, cfg.Divergence.StaleCache.RememberedResults)
			assert.Equal(t, NewDefaultPolicyConfig().Divergence.StaleCache.MinAge, cfg.Divergence.StaleCache.MinAge)
		}},
		{name: "policy/inline_key", wantErr: []string{"hashing.key is not allowed: put the key in key_file or key_env"}},
		{name: "policy/both_keys", wantErr: []string{"hashing.key_file and hashing.key_env are mutually exclusive: set one"}},
		{name: "policy/bad_threshold", wantErr: []string{"storm_threshold must be at least 2"}},
		{name: "policy/bad_keep_percent", wantErr: []string{
			"keep_percent.storm must be between 0 and 100", "keep_percent.incomplete must be between 0 and 100",
		}},
		{name: "policy/bad_divergence", wantErr: []string{
			"divergence.caveat_attribute must not be empty",
			"divergence.stale_cache.max_duration_ratio must be between 0 and 1",
			"divergence.stale_cache.remembered_results must be at most 10000000 (about 320 MB, allocated at start)",
		}},
		{name: "policy/bad_completeness", wantErr: []string{`completeness.required[1] has unknown field "colour"`}},
		{name: "policy/processor_only_key", wantErr: []string{"decision_wait"}},
		{name: "policy/clean_percent", wantErr: []string{"sampling"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := NewDefaultPolicyConfig()
			sub, err := cm.Sub(tt.name)
			require.NoError(t, err)
			err = sub.Unmarshal(cfg)
			if err == nil {
				err = confmap.Validate(cfg)
			}
			if len(tt.wantErr) > 0 {
				require.Error(t, err)
				for _, want := range tt.wantErr {
					assert.ErrorContains(t, err, want)
				}
				assert.NotContains(t, err.Error(), "s3cr3t")
				return
			}
			require.NoError(t, err)
			tt.check(t, cfg)
		})
	}
}

// checkAnalysisBlock: the block copied from config.yaml's retry_storm/full gives the policy
// exactly the analysis the processor gets from it.
func checkAnalysisBlock(t *testing.T, cfg *PolicyConfig) {
	cm, err := confmaptest.LoadConf(filepath.Join("testdata", "config.yaml"))
	require.NoError(t, err)
	sub, err := cm.Sub("retry_storm/full")
	require.NoError(t, err)
	p := createDefaultConfig().(*Config)
	require.NoError(t, sub.Unmarshal(p))
	assert.Equal(t, p.Sampling.KeepPercent, cfg.KeepPercent)
	assert.Equal(t, p.Hashing, cfg.Hashing)
	assert.Equal(t, p.Divergence, cfg.Divergence)
	key := []byte("0123456789abcdef")
	assert.Equal(t, p.analysisConfig(key), cfg.processorConfig().analysisConfig(key))
}

// TestPolicyErrorsAreTheProcessors: a bad value under a shared key gives the processor's
// error text (keep_percent's under the processor's sampling.keep_percent).
func TestPolicyErrorsAreTheProcessors(t *testing.T) {
	policy := NewDefaultPolicyConfig()
	policy.StormThreshold = 0
	policy.KeepPercent.ToolError = 101
	policy.Status.ToolErrorValues = []string{" "}
	policy.Divergence.StaleCache.MinAge = -1
	policy.Divergence.StaleCache.HeldSuspects = maxHeldSuspects + 1
	policy.Completeness.Required = []string{"nope"}
	policy.Hashing.KeyFile, policy.Hashing.KeyEnv = "f", "E"
	p := createDefaultConfig().(*Config)
	p.StormThreshold = policy.StormThreshold
	p.Sampling.KeepPercent = policy.KeepPercent
	p.Status = policy.Status
	p.Divergence = policy.Divergence
	p.Completeness = policy.Completeness
	p.Hashing = policy.Hashing
	policyErr, processorErr := policy.Validate(), p.Validate()
	require.Error(t, policyErr)
	require.Error(t, processorErr)
	for _, line := range splitErrors(policyErr) {
		if line == "keep_percent.tool_error must be between 0 and 100" {
			line = "sampling." + line
		}
		assert.Contains(t, processorErr.Error(), line)
	}
	assert.Len(t, splitErrors(policyErr), 7)
}

func splitErrors(err error) []string {
	return slices.DeleteFunc(strings.Split(err.Error(), "\n"), func(line string) bool { return line == "" })
}

// TestTraceVerdictOnFixtures: every storm fixture is kept for its storm, the sub-agent
// duplicate for its finding, and the clean one is not kept.
func TestTraceVerdictOnFixtures(t *testing.T) {
	v := newTestVerdict(t, NewDefaultPolicyConfig())
	assert.ElementsMatch(t, fixtures.Names(), sortedKeys(fixtureReasons), "every fixture has an expected reason")
	for name, reason := range fixtureReasons {
		t.Run(name, func(t *testing.T) {
			td := fixtures.Load(t, name)
			before := ptrace.NewTraces()
			td.CopyTo(before)
			got, err := v.Evaluate(td)
			require.NoError(t, err)
			assert.Equal(t, reason, got.Reason)
			assert.Equal(t, reason != "clean", got.Keep)
			if got.Keep {
				assert.Equal(t, sampling.AlwaysSampleThreshold, got.Threshold)
			}
			assert.Equal(t, before, td, "the trace is not modified")
		})
	}
}

// TestTraceVerdictKeepsWhatTheProcessorKeeps: the processor, keeping no clean trace, keeps
// exactly the fixtures the policy samples, at default and at lowered rates.
func TestTraceVerdictKeepsWhatTheProcessorKeeps(t *testing.T) {
	for _, kp := range []KeepPercentConfig{
		NewDefaultPolicyConfig().KeepPercent,
		{Storm: 0, ToolError: 100, Divergence: 0, SpanError: 0, Incomplete: 0},
		{Storm: 50, ToolError: 0, Divergence: 50, SpanError: 50, Incomplete: 50},
	} {
		policy := NewDefaultPolicyConfig()
		policy.KeepPercent = kp
		v := newTestVerdict(t, policy)
		cfg := policy.processorConfig()
		cfg.Sampling.CleanPercent = 0
		// The policy decides on the trace id alone.
		cfg.Sampling.TraceStateRandomness = false
		sink := &consumertest.TracesSink{}
		p, err := NewOfflineTraces(processortest.NewNopSettings(metadata.Type), cfg, sink)
		require.NoError(t, err)
		require.NoError(t, p.Start(context.Background(), componenttest.NewNopHost()))
		want := map[pcommon.TraceID]bool{}
		for _, name := range fixtures.Names() {
			td := fixtures.Load(t, name)
			got, err := v.Evaluate(td)
			require.NoError(t, err)
			want[traceIDOf(td)] = got.Keep
			require.NoError(t, p.ConsumeTraces(context.Background(), td))
		}
		require.NoError(t, p.Shutdown(context.Background()))
		kept := map[pcommon.TraceID]bool{}
		for _, td := range sink.AllTraces() {
			for _, rs := range td.ResourceSpans().All() {
				for _, ss := range rs.ScopeSpans().All() {
					for _, span := range ss.Spans().All() {
						kept[span.TraceID()] = true
					}
				}
			}
		}
		for id, keep := range want {
			assert.Equalf(t, keep, kept[id], "trace %s at %+v", id, kp)
		}
	}
}

// TestTraceVerdictRates: each signal is kept at its own rate; the most generous signal
// decides.
func TestTraceVerdictRates(t *testing.T) {
	cfg := NewDefaultPolicyConfig()
	cfg.KeepPercent = KeepPercentConfig{Storm: 0, ToolError: 100, Divergence: 100, SpanError: 0, Incomplete: 0}
	v := newTestVerdict(t, cfg)
	for name, want := range map[string]Verdict{
		// A storm with failed attempts is kept for its tool errors.
		"mastra.json": {Keep: true, Reason: "tool_error", Threshold: sampling.AlwaysSampleThreshold},
		// Two ok attempts: no tool error, but duplicate_side_effect and result_drift.
		"mixed_duplicate_side_effect.json": {Keep: true, Reason: "divergence", Threshold: sampling.AlwaysSampleThreshold},
		"vercel_v6.json":                   {Reason: "clean", Threshold: sampling.NeverSampleThreshold},
	} {
		got, err := v.Evaluate(fixtures.Load(t, name))
		require.NoError(t, err)
		assert.Equal(t, want, got, name)
	}
	none, err := v.WithKeepPercent(KeepPercentConfig{})
	require.NoError(t, err)
	for _, name := range fixtures.Names() {
		got, err := none.Evaluate(fixtures.Load(t, name))
		require.NoError(t, err)
		assert.False(t, got.Keep, name)
	}
	_, err = v.WithKeepPercent(KeepPercentConfig{Storm: 120})
	assert.EqualError(t, err, "keep_percent.storm must be between 0 and 100")
}

// TestTraceVerdictDecidesOnTheTraceID: at 50% a storm is kept exactly when its trace id's
// randomness passes the 50% threshold, whatever the tracestate says.
func TestTraceVerdictDecidesOnTheTraceID(t *testing.T) {
	cfg := NewDefaultPolicyConfig()
	cfg.KeepPercent = KeepPercentConfig{Storm: 50, ToolError: 50}
	v := newTestVerdict(t, cfg)
	half, err := sampling.ProbabilityToThreshold(0.5)
	require.NoError(t, err)
	kept := 0
	for i := range 64 {
		td := fixtures.Load(t, "mastra.json")
		id := pcommon.TraceID{byte(i), 1, 2, 3, 4, 5, 6, 7, 8, byte(i * 37), byte(i * 11), byte(i * 5), byte(i * 3), byte(i * 7), byte(i * 13), byte(i * 17)}
		for _, rs := range td.ResourceSpans().All() {
			for _, ss := range rs.ScopeSpans().All() {
				for _, span := range ss.Spans().All() {
					span.SetTraceID(id)
					span.TraceState().FromRaw("ot=rv:ffffffffffffff")
				}
			}
		}
		got, err := v.Evaluate(td)
		require.NoError(t, err)
		assert.Equal(t, half.ShouldSample(sampling.TraceIDToRandomness(id)), got.Keep)
		if got.Keep {
			kept++
			assert.Equal(t, half, got.Threshold)
		}
	}
	assert.Greater(t, kept, 10)
	assert.Less(t, kept, 54)
}

// TestTraceVerdictIsStatefulWithTheStaleCacheMemory: only the stale-cache memory makes a
// verdict depend on earlier traces; verdicts with other rates share it.
func TestTraceVerdictIsStatefulWithTheStaleCacheMemory(t *testing.T) {
	v := newTestVerdict(t, NewDefaultPolicyConfig())
	assert.True(t, v.Stateful())
	other, err := v.WithKeepPercent(KeepPercentConfig{Storm: 10})
	require.NoError(t, err)
	assert.True(t, other.Stateful())
	assert.Same(t, v.engine, other.engine)
	cfg := NewDefaultPolicyConfig()
	cfg.Divergence.StaleCache.RememberedResults = 0
	assert.False(t, newTestVerdict(t, cfg).Stateful())
}

// TestTraceVerdictConcurrentEvaluations: evaluations at once, as a sampler's shards make
// them, agree with evaluations one by one (run with -race).
func TestTraceVerdictConcurrentEvaluations(t *testing.T) {
	v := newTestVerdict(t, NewDefaultPolicyConfig())
	names := fixtures.Names()
	traces := make([]ptrace.Traces, len(names))
	want := make([]Verdict, len(names))
	for i, name := range names {
		traces[i] = fixtures.Load(t, name)
		var err error
		want[i], err = v.Evaluate(traces[i])
		require.NoError(t, err)
	}
	var wg sync.WaitGroup
	results := make([][]Verdict, 8)
	for g := range results {
		wg.Go(func() {
			for round := range 10 {
				for i := range traces {
					j := (i + g + round) % len(traces)
					got, err := v.Evaluate(traces[j])
					if err != nil {
						got.Reason = err.Error()
					}
					if got != want[j] {
						results[g] = append(results[g], got)
					}
				}
			}
		})
	}
	wg.Wait()
	for g, wrong := range results {
		assert.Emptyf(t, wrong, "goroutine %d", g)
	}
}

// TestTraceVerdictOddInput: empty traces, spans without ids, cycles, duplicate ids and
// odd attribute types are decided without a panic or an error; a trace without a tool
// span is not kept.
func TestTraceVerdictOddInput(t *testing.T) {
	v := newTestVerdict(t, NewDefaultPolicyConfig())
	cases := map[string]ptrace.Traces{"empty": ptrace.NewTraces()}
	noIDs := ptrace.NewTraces()
	noIDs.ResourceSpans().AppendEmpty().ScopeSpans().AppendEmpty().Spans().AppendEmpty().SetName("execute_tool x")
	cases["span without ids"] = noIDs
	emptyResource := ptrace.NewTraces()
	emptyResource.ResourceSpans().AppendEmpty().ScopeSpans().AppendEmpty()
	cases["resource without spans"] = emptyResource
	cycle := ptrace.NewTraces()
	spans := cycle.ResourceSpans().AppendEmpty().ScopeSpans().AppendEmpty().Spans()
	id := pcommon.TraceID{9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9}
	for i, parent := range []byte{2, 1, 1} {
		s := spans.AppendEmpty()
		s.SetTraceID(id)
		s.SetSpanID(pcommon.SpanID{byte(i%2 + 1)}) // a duplicate id, too
		s.SetParentSpanID(pcommon.SpanID{parent})
		s.SetName("execute_tool lookup")
		s.Attributes().PutStr("gen_ai.operation.name", "execute_tool")
		s.Attributes().PutEmptyBytes("gen_ai.tool.call.id").FromRaw([]byte{0xff, 0})
		s.Attributes().PutEmptySlice("gen_ai.tool.name").AppendEmpty().SetDouble(1)
		s.Attributes().PutStr("gen_ai.tool.call.arguments", `{"a":`)
		s.SetStartTimestamp(pcommon.Timestamp(^uint64(0)))
	}
	cases["cycle, duplicate ids, odd attributes"] = cycle
	for name, td := range cases {
		t.Run(name, func(t *testing.T) {
			assert.NotPanics(t, func() {
				got, err := v.Evaluate(td)
				require.NoError(t, err)
				if td.SpanCount() < 2 {
					assert.False(t, got.Keep)
				}
			})
		})
	}
}

func traceIDOf(td ptrace.Traces) pcommon.TraceID {
	return td.ResourceSpans().At(0).ScopeSpans().At(0).Spans().At(0).TraceID()
}
