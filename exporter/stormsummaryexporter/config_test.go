package stormsummaryexporter

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/confmap/confmaptest"

	"github.com/retrystorm/retrystorm/exporter/stormsummaryexporter/internal/metadata"
)

func TestCreateDefaultConfig(t *testing.T) {
	cfg := createDefaultConfig().(*Config)
	require.NoError(t, componenttest.CheckConfigStruct(cfg))
	assert.Equal(t, []string{"storm"}, cfg.Include)
	assert.Equal(t, RotationConfig{MaxMegabytes: 100, MaxBackups: 10}, cfg.Rotation)
	assert.Equal(t, DedupConfig{RememberedIDs: 100_000, PreloadBytes: 4 << 20}, cfg.Dedup)
	assert.Empty(t, cfg.TraceURL)
	assert.True(t, cfg.QueueConfig.HasValue(), "sending_queue is on by default")
	assert.True(t, cfg.RetryConfig.Enabled, "retry_on_failure is on by default")
	assert.Equal(t, 5*time.Second, cfg.TimeoutConfig.Timeout)
	assert.EqualError(t, confmap.Validate(cfg), "path must be set", "path is required")
}

func TestLoadConfig(t *testing.T) {
	cm, err := confmaptest.LoadConf(filepath.Join("testdata", "config.yaml"))
	require.NoError(t, err)

	tests := []struct {
		name    string
		check   func(t *testing.T, cfg *Config)
		wantErr []string
	}{
		{
			name: "",
			check: func(t *testing.T, cfg *Config) {
				want := createDefaultConfig().(*Config)
				want.Path = "./storms.jsonl"
				assert.Equal(t, want, cfg)
			},
		},
		{
			name: "full",
			check: func(t *testing.T, cfg *Config) {
				assert.Equal(t, "/var/lib/retrystorm/storms.jsonl", cfg.Path)
				assert.Equal(t, []string{"storm", "failure", "finding"}, cfg.Include)
				assert.Equal(t, "http://localhost:16686/trace/{trace_id}?call={call_key}&run={run_id}", cfg.TraceURL)
				assert.Equal(t, RotationConfig{MaxMegabytes: 20, MaxBackups: 3, Compress: true}, cfg.Rotation)
				assert.Equal(t, DedupConfig{RememberedIDs: 5000, PreloadBytes: 65536}, cfg.Dedup)
				assert.True(t, cfg.AcceptUnsealed)
				assert.Equal(t, 2*time.Second, cfg.TimeoutConfig.Timeout)
				require.True(t, cfg.QueueConfig.HasValue())
				assert.Equal(t, 2, cfg.QueueConfig.Get().NumConsumers)
				assert.Equal(t, int64(50), cfg.QueueConfig.Get().QueueSize)
				assert.Equal(t, time.Second, cfg.RetryConfig.InitialInterval)
				assert.Equal(t, time.Minute, cfg.RetryConfig.MaxElapsedTime)
			},
		},
		{
			name: "deprecated_seed_bytes",
			check: func(t *testing.T, cfg *Config) {
				assert.Equal(t, DedupConfig{RememberedIDs: 100_000, PreloadBytes: 65536}, cfg.Dedup, "seed_bytes is read as preload_bytes")
			},
		},
		{name: "no_path", wantErr: []string{"path must be set"}},
		{name: "bad_include", wantErr: []string{
			`include has unknown value "storms" (want storm, failure or finding)`,
			`include has unknown value "clean" (want storm, failure or finding)`,
		}},
		{name: "empty_include", wantErr: []string{"include must list at least one of storm, failure, finding"}},
		{name: "bad_trace_url", wantErr: []string{
			"trace_url has unknown placeholder {traceid} (want {trace_id}, {call_key} or {run_id})",
			`trace_url must be an http or https URL, got scheme "localhost"`,
		}},
		{name: "bad_rotation", wantErr: []string{
			"rotation.max_megabytes must be greater than 0",
			"rotation.max_backups must not be negative",
		}},
		{name: "bad_dedup", wantErr: []string{
			"dedup.remembered_ids must be greater than 0",
			"dedup.preload_bytes must not be negative",
		}},
	}
	for _, tt := range tests {
		t.Run("storm_summary/"+tt.name, func(t *testing.T) {
			sub, err := cm.Sub(component.NewIDWithName(metadata.Type, tt.name).String())
			require.NoError(t, err)
			cfg := createDefaultConfig().(*Config)
			require.NoError(t, sub.Unmarshal(cfg))
			err = confmap.Validate(cfg)
			if len(tt.wantErr) == 0 {
				require.NoError(t, err)
				tt.check(t, cfg)
				return
			}
			require.Error(t, err)
			for _, want := range tt.wantErr {
				assert.ErrorContains(t, err, want)
			}
		})
	}
}

// TestPreloadBytesUnderBothNames: preload_bytes and seed_bytes, its deprecated name, are one
// key; a section giving both is refused rather than one of them silently winning.
func TestPreloadBytesUnderBothNames(t *testing.T) {
	cm, err := confmaptest.LoadConf(filepath.Join("testdata", "config.yaml"))
	require.NoError(t, err)
	sub, err := cm.Sub(component.NewIDWithName(metadata.Type, "both_preload_names").String())
	require.NoError(t, err)
	err = sub.Unmarshal(createDefaultConfig().(*Config))
	require.Error(t, err)
	assert.ErrorContains(t, err, "dedup.seed_bytes is the deprecated name of dedup.preload_bytes")
}
