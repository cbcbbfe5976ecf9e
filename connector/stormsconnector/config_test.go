package stormsconnector

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/confmap/confmaptest"
)

func TestDefaultConfigIsValidAndDocumented(t *testing.T) {
	cfg := NewFactory().CreateDefaultConfig().(*Config)
	require.NoError(t, confmap.Validate(cfg))
	require.Equal(t, 100, cfg.Metrics.MaxTools)
	require.Equal(t, 15*time.Second, cfg.Metrics.FlushInterval)
	require.Equal(t, time.Minute, cfg.Metrics.NewSeriesHold)
	require.Equal(t, []string{"storm", "finding"}, cfg.Logs.Include)
	require.False(t, cfg.AcceptUnsealed)
}

func TestConfigFromYAML(t *testing.T) {
	cm, err := confmaptest.LoadConf(filepath.Join("testdata", "config.yaml"))
	require.NoError(t, err)
	for name, want := range map[string]string{
		"storms":               "",
		"storms/tuned":         "",
		"storms/no_tools":      "metrics.max_tools: 0, must be at least 1",
		"storms/zero_interval": "metrics.flush_interval: 0s, must be positive",
		"storms/negative_hold": "metrics.new_series_hold: -1s, must not be negative",
		"storms/push_hold":     "",
		"storms/bad_include":   `logs.include: unknown value "storms"`,
		"storms/empty_include": "logs.include: empty",
	} {
		t.Run(name, func(t *testing.T) {
			cfg := NewFactory().CreateDefaultConfig()
			sub, err := cm.Sub(name)
			require.NoError(t, err)
			require.NoError(t, sub.Unmarshal(cfg))
			err = confmap.Validate(cfg)
			if want == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorContains(t, err, want)
		})
	}
	cfg := NewFactory().CreateDefaultConfig()
	sub, _ := cm.Sub("storms/tuned")
	require.NoError(t, sub.Unmarshal(cfg))
	require.Equal(t, &Config{Metrics: MetricsConfig{MaxTools: 20, FlushInterval: 5 * time.Second, NewSeriesHold: 15 * time.Second}, Logs: LogsConfig{Include: []string{"storm", "failure", "finding"}}, AcceptUnsealed: true}, cfg)
}

func TestUnknownKeyIsAnError(t *testing.T) {
	cm, err := confmaptest.LoadConf(filepath.Join("testdata", "config.yaml"))
	require.NoError(t, err)
	sub, err := cm.Sub("storms/typo")
	require.NoError(t, err)
	require.ErrorContains(t, sub.Unmarshal(NewFactory().CreateDefaultConfig()), "max_tool")
}
