package retrystormpolicyextension

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/confmap/confmaptest"

	"github.com/retrystorm/retrystorm/processor/retrystormprocessor"
)

func TestDefaultConfigIsTheProcessors(t *testing.T) {
	cfg := NewFactory().CreateDefaultConfig()
	require.NoError(t, componenttest.CheckConfigStruct(cfg))
	require.NoError(t, confmap.Validate(cfg))
	assert.Equal(t, retrystormprocessor.NewDefaultPolicyConfig(), cfg)
}

func TestLoadConfig(t *testing.T) {
	cm, err := confmaptest.LoadConf(filepath.Join("testdata", "config.yaml"))
	require.NoError(t, err)
	tests := []struct {
		name    string
		check   func(t *testing.T, cfg *Config)
		wantErr []string
	}{
		{name: "retry_storm", check: func(t *testing.T, cfg *Config) { assert.Equal(t, createDefaultConfig(), cfg) }},
		{name: "retry_storm/tuned", check: func(t *testing.T, cfg *Config) {
			assert.Equal(t, 3, cfg.StormThreshold)
			assert.Equal(t, retrystormprocessor.KeepPercentConfig{Storm: 100, ToolError: 50, Divergence: 25, SpanError: 100, Incomplete: 100}, cfg.KeepPercent)
			assert.Equal(t, "RETRYSTORM_HASH_KEY", cfg.Hashing.KeyEnv)
			assert.Zero(t, cfg.Divergence.StaleCache.RememberedResults)
			assert.Equal(t, []string{"tool_name", "call_id"}, cfg.Completeness.Required)
		}},
		{name: "retry_storm/bad", wantErr: []string{
			"storm_threshold must be at least 2", "keep_percent.storm must be between 0 and 100",
		}},
		{name: "retry_storm/processor_key", wantErr: []string{"decision_wait"}},
		{name: "retry_storm/inline_key", wantErr: []string{"hashing.key is not allowed: put the key in key_file or key_env"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := createDefaultConfig()
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
			tt.check(t, cfg.(*Config))
		})
	}
}
