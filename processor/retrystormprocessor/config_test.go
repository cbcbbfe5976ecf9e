package retrystormprocessor

import (
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/confmap/confmaptest"

	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/analysis"
	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/buffer"
	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/metadata"
	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/sample"
	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/stalecache"
	"github.com/retrystorm/retrystorm/processor/retrystormprocessor/internal/toolspan"
)

func TestCreateDefaultConfig(t *testing.T) {
	cfg := createDefaultConfig().(*Config)
	require.NoError(t, componenttest.CheckConfigStruct(cfg))
	require.NoError(t, confmap.Validate(cfg))
	assert.Equal(t, 30*time.Second, cfg.DecisionWait)
	assert.Equal(t, 2*time.Second, cfg.RootGrace)
	assert.Equal(t, int64(268435456), cfg.MaxBufferedBytes)
	assert.Zero(t, cfg.MaxTraceBytes, "0: half a shard's share")
	assert.Zero(t, cfg.NumShards)
	assert.Equal(t, 2, cfg.StormThreshold)
	assert.Equal(t, DecisionCacheConfig{KeptTraces: 100000, KeptBytes: 32 << 20, DroppedTraces: 1000000}, cfg.DecisionCache)
	assert.True(t, cfg.Sampling.TraceStateRandomness, "the sampling spec: rv in tracestate is the randomness")
	assert.InDelta(t, 5.0, cfg.Sampling.CleanPercent, 0)
	assert.Equal(t, KeepPercentConfig{Storm: 100, ToolError: 100, Divergence: 100, SpanError: 100, Incomplete: 100}, cfg.Sampling.KeepPercent)
	assert.Empty(t, cfg.Sampling.Tools)
	def := toolspan.DefaultConfig()
	assert.Equal(t, def.Sources.CallID, cfg.Attributes.CallID)
	assert.Equal(t, def.Sources.ToolName, cfg.Attributes.ToolName)
	assert.Equal(t, def.Sources.ReadAsset, cfg.Attributes.ReadAsset)
	assert.Len(t, cfg.Recognition.ToolSpans, len(def.ToolSpans))
	assert.True(t, cfg.Status.OverrideOK)
	assert.Equal(t, HashingConfig{RedactPayloads: true}, cfg.Hashing)
	assert.Equal(t, 2048, cfg.Redaction.MaxHuntedValues)
	assert.Equal(t, DivergenceConfig{
		CaveatAttribute: "retrystorm.answer.caveat", CitedAssetsAttribute: "retrystorm.answer.cited_assets",
		ReadAssetAttribute: "retrystorm.read.asset",
		StaleCache: StaleCacheConfig{MaxDurationRatio: 0.1, MaxDuration: 50 * time.Millisecond, RememberedResults: 100000, MinAge: time.Minute,
			RecheckWindow: 2 * time.Minute, HeldSuspects: 10000},
	}, cfg.Divergence)
	assert.Equal(t, []string{"tool_name"}, cfg.Completeness.Required)
	// The engine is built from the defaults of the packages that use them, as they are.
	assert.Equal(t, analysis.DefaultConfig(), cfg.AnalysisConfig)
	assert.Equal(t, def.Recognition, cfg.Recognition)
	assert.Equal(t, def.ToolErrorValues, cfg.Status.ToolErrorValues)
}

func TestLoadConfig(t *testing.T) {
	cm, err := confmaptest.LoadConf(filepath.Join("testdata", "config.yaml"))
	require.NoError(t, err)
	tests := []struct {
		name    string
		check   func(t *testing.T, cfg *Config)
		wantErr []string
	}{
		{name: "", check: func(t *testing.T, cfg *Config) { assert.Equal(t, createDefaultConfig(), cfg) }},
		{name: "full", check: checkFullConfig},
		{name: "after_tail_sampling", check: func(t *testing.T, cfg *Config) {
			assert.False(t, cfg.Buffering)
			want := createDefaultConfig().(*Config)
			want.Buffering = false
			assert.Equal(t, want, cfg, "only buffering changes")
		}},
		{name: "inline_key", wantErr: []string{"hashing.key is not allowed: put the key in key_file or key_env"}},
		{name: "both_keys", wantErr: []string{"hashing.key_file and hashing.key_env are mutually exclusive"}},
		{name: "bad_durations", wantErr: []string{
			"decision_wait must be greater than 0", "root_grace must not be negative",
			"max_buffered_bytes must be at least 65536 (64 KiB)", "num_shards must not be negative",
			"storm_threshold must be at least 2",
		}},
		{name: "bad_sampling", wantErr: []string{
			"sampling.clean_percent must be between 0 and 100",
			"sampling.keep_percent.storm must be between 0 and 100",
			"sampling.keep_percent.incomplete must be between 0 and 100",
			"sampling.tools.charge_card.clean_percent must be between 0 and 100",
		}},
		{name: "tiny_buffer", wantErr: []string{"max_buffered_bytes must be at least 65536 (64 KiB)"}},
		{name: "negative_trace_bytes", wantErr: []string{"max_trace_bytes must not be negative (0 = half a shard's share of max_buffered_bytes)"}},
		{name: "trace_bytes_over_buffer", wantErr: []string{"max_trace_bytes must be at most max_buffered_bytes"}},
		{name: "bad_cache", wantErr: []string{
			"decision_cache.kept_traces must not be negative", "decision_cache.dropped_traces must not be negative",
			"decision_cache.kept_bytes must not be negative",
		}},
		{name: "too_large", wantErr: []string{
			"num_shards must be at most 1024 (about 70 MB)",
			"decision_cache.kept_traces must be at most 10000000 (about 1.5 GB)",
			"decision_cache.kept_bytes must be at most 17179869184 (16 GiB, up to 32 GiB resident)",
			"decision_cache.dropped_traces must be at most 50000000 (about 2.4 GB)",
			"divergence.stale_cache.remembered_results must be at most 10000000 (about 320 MB, allocated at start)",
			"divergence.stale_cache.held_suspects must be at most 1000000 (64 MB allocated at start, up to about 2 GB of records while full)",
		}},
		{name: "at_bounds", check: func(t *testing.T, cfg *Config) {
			assert.Equal(t, int64(65536), cfg.MaxBufferedBytes)
			assert.Equal(t, buffer.MaxNumShards, cfg.NumShards)
			assert.Equal(t, DecisionCacheConfig{KeptTraces: buffer.MaxKeptTraces, KeptBytes: buffer.MaxKeptBytes, DroppedTraces: buffer.MaxDroppedTraces}, cfg.DecisionCache)
			assert.Equal(t, stalecache.MaxRememberedResults, cfg.Divergence.StaleCache.RememberedResults)
			assert.Equal(t, stalecache.MaxHeldSuspects, cfg.Divergence.StaleCache.HeldSuspects)
		}},
		{name: "bad_completeness", wantErr: []string{`completeness.required[1] has unknown field "tool_id" (want one of `}},
		{name: "bad_recognition", wantErr: []string{
			"recognition.tool_spans[0] must set exactly one of attribute, span_name, span_name_prefix",
			"recognition.tool_spans[1] must set exactly one of attribute, span_name, span_name_prefix",
			"recognition.tool_spans[1].value needs attribute",
			"recognition.not_tool_spans[0] must set exactly one of attribute, span_name, span_name_prefix",
			"recognition.follow_model.handoff_prefixes[0] must not be empty",
			`attributes.call_id[0] must name an attribute, got ""`,
			`attributes.call_id[1] must name an attribute, got "#path"`,
		}},
		{name: "bad_divergence", wantErr: []string{
			"divergence.caveat_attribute must not be empty",
			"divergence.stale_cache.max_duration_ratio must be between 0 and 1",
			"divergence.stale_cache.max_duration must not be negative",
			"divergence.stale_cache.remembered_results must not be negative",
			"divergence.stale_cache.min_age must not be negative",
			"divergence.stale_cache.recheck_window must not be negative (0 holds no suspect)",
			"divergence.stale_cache.held_suspects must not be negative (0 holds no suspect)",
		}},
		{name: "reads_annotations", wantErr: []string{
			"attributes.args_hash[0]: retrystorm.args.hash is written by retry_storm and cannot be read from clients' spans",
			"attributes.status[1]: retrystorm.status is written by retry_storm and cannot be read from clients' spans",
			"recognition.agent_spans[0].attribute: retrystorm.call.summary is written by retry_storm and cannot be read from clients' spans",
			"divergence.caveat_attribute: retrystorm.call.class is written by retry_storm and cannot be read from clients' spans",
		}},
		{name: "bad_redaction", wantErr: []string{
			"redaction.min_value_length must be at least 4",
			"redaction.max_hunted_values must be at least 1",
			`redaction.message_attributes[0] must name an attribute, got ""`,
			`redaction.message_attributes[1] must name an attribute, got "*"`,
		}},
		{name: "negative_hunted_values", wantErr: []string{"redaction.max_hunted_values must be at least 1"}},
		{name: "unknown_key", wantErr: []string{"clean_pct"}},
	}
	for _, tt := range tests {
		t.Run("retry_storm/"+tt.name, func(t *testing.T) {
			sub, err := cm.Sub(component.NewIDWithName(metadata.Type, tt.name).String())
			require.NoError(t, err)
			cfg := createDefaultConfig().(*Config)
			err = sub.Unmarshal(cfg)
			if err == nil {
				err = confmap.Validate(cfg)
			}
			if len(tt.wantErr) == 0 {
				require.NoError(t, err)
				tt.check(t, cfg)
				return
			}
			require.Error(t, err)
			for _, want := range tt.wantErr {
				assert.ErrorContains(t, err, want)
			}
			assert.NotContains(t, err.Error(), "s3cr3t", "an inline key is never echoed")
		})
	}
}

func checkFullConfig(t *testing.T, cfg *Config) {
	assert.Equal(t, time.Minute, cfg.DecisionWait)
	assert.Equal(t, 5*time.Second, cfg.RootGrace)
	assert.Equal(t, int64(64<<20), cfg.MaxBufferedBytes)
	assert.Equal(t, int64(8<<20), cfg.MaxTraceBytes)
	assert.Equal(t, 4, cfg.NumShards)
	assert.Equal(t, 3, cfg.StormThreshold)
	assert.Equal(t, DecisionCacheConfig{KeptTraces: 5000, KeptBytes: 8 << 20, DroppedTraces: 20000}, cfg.DecisionCache)
	assert.InDelta(t, 0.5, cfg.Sampling.CleanPercent, 0)
	assert.False(t, cfg.Sampling.TraceStateRandomness)
	assert.Equal(t, KeepPercentConfig{Storm: 100, ToolError: 50, Divergence: 100, SpanError: 25, Incomplete: 10}, cfg.Sampling.KeepPercent)
	assert.Equal(t, map[string]ToolSamplingConfig{"charge_card": {CleanPercent: 100}, "search_docs": {CleanPercent: 1}}, cfg.Sampling.Tools)
	// A list the user sets replaces the default; the others keep theirs.
	assert.Equal(t, []string{"my.call.id", "gen_ai.tool.call.id"}, cfg.Attributes.CallID)
	assert.Equal(t, []string{"my.attempt"}, cfg.Attributes.Attempt)
	assert.Equal(t, []string{"my.tool"}, cfg.Attributes.ToolName)
	assert.Equal(t, []string{"my.args", "request#params.arguments"}, cfg.Attributes.Arguments)
	assert.Equal(t, toolspan.DefaultConfig().Sources.Result, cfg.Attributes.Result)
	assert.Equal(t, []ToolSpanRuleConfig{{Attribute: "my.kind", Value: "tool"}, {SpanNamePrefix: "tool "}}, cfg.Recognition.ToolSpans)
	assert.Equal(t, []string{"tool "}, cfg.Recognition.ToolNamePrefixes)
	assert.Empty(t, cfg.Recognition.ToolNameSuffixes)
	assert.Equal(t, toolspan.FollowModel{Enabled: true, OfferedTools: false, HandoffPrefixes: []string{"transfer_to_", "handoff_to_"}},
		cfg.Recognition.FollowModel, "a key left out keeps its default")
	assert.False(t, cfg.Status.OverrideOK)
	assert.Equal(t, HashingConfig{KeyEnv: "RETRYSTORM_HASH_KEY"}, cfg.Hashing)
	assert.Equal(t, StaleCacheConfig{MaxDurationRatio: 0.2, MaxDuration: 20 * time.Millisecond, RememberedResults: 500, MinAge: 30 * time.Second,
		RecheckWindow: 5 * time.Minute, HeldSuspects: 2000}, cfg.Divergence.StaleCache)
	assert.Equal(t, []string{"run_id", "call_id", "attempt", "tool_name", "args_hash", "status"}, cfg.Completeness.Required)
	assert.Equal(t, RedactionConfig{
		MessageAttributes: []string{"my.messages", "app.*.prompt"}, FlattenedMessages: []string{"my.flat"},
		MessageEvents: []string{"my.message"}, DeleteAttributes: []string{"gen_ai.input.messages", "llm.input_messages.*"},
		KeepPromptText: false, MinValueLength: 12, MaxHuntedValues: 8192,
	}, cfg.Redaction)

	assert.Equal(t, "asset.read", cfg.Divergence.ReadAssetAttribute)
	assert.Equal(t, "answer.cites", cfg.Divergence.CitedAssetsAttribute)
	// What the engine makes of them (read_asset_attribute tried first, the required fields)
	// is analysis's and findings' to test: TestConfigAsTheEngineReadsIt, TestNewRules.
}

func TestToolOverridesAreBounded(t *testing.T) {
	for _, tt := range []struct {
		tools   int
		wantErr string
	}{
		{tools: sample.MaxTools},
		{tools: sample.MaxTools + 1, wantErr: "sampling.tools must list at most 10000 tools, got 10001"},
	} {
		tools := make(map[string]any, tt.tools)
		for i := range tt.tools {
			tools[fmt.Sprintf("tool_%05d", i)] = map[string]any{"clean_percent": 1}
		}
		cfg := createDefaultConfig().(*Config)
		require.NoError(t, confmap.NewFromStringMap(map[string]any{"sampling": map[string]any{"tools": tools}}).Unmarshal(cfg))
		err := confmap.Validate(cfg)
		if tt.wantErr == "" {
			assert.NoError(t, err)
			continue
		}
		assert.EqualError(t, err, tt.wantErr)
	}
}
