package stormsconnector // import "github.com/retrystorm/retrystorm/connector/stormsconnector"

import (
	"errors"
	"fmt"
	"slices"
	"time"
)

// Config is the storms connector's configuration (README, "Configuration").
type Config struct {
	Metrics MetricsConfig `mapstructure:"metrics"`
	Logs    LogsConfig    `mapstructure:"logs"`
	// AcceptUnsealed reads annotations no retry_storm processor of this collector sealed:
	// annotations another collector's retry_storm wrote, read back over OTLP by a collector
	// whose every sender is trusted (README, "Which spans are read"). Default false.
	AcceptUnsealed bool `mapstructure:"accept_unsealed"`
	// prevent unkeyed literal initialization
	_ struct{}
}

// MetricsConfig shapes the traces → metrics direction.
type MetricsConfig struct {
	// MaxTools bounds the distinct values of the tool attribute: the first MaxTools tool
	// names seen, then _other (the retry_storm processor's rule). Default 100.
	MaxTools int `mapstructure:"max_tools"`
	// FlushInterval is how often the cumulative counters are emitted. Default 15s.
	FlushInterval time.Duration `mapstructure:"flush_interval"`
	// NewSeriesHold is how long a new series is emitted at 0 before its count, so that the
	// scrape of whatever reads the metrics sees it at 0 first and counts its first
	// increment as growth: at least that scrape interval. 0 emits it at 0 once, enough for a
	// backend every export reaches (OTLP). Default 1m, Prometheus' default scrape_interval.
	NewSeriesHold time.Duration `mapstructure:"new_series_hold"`
}

// LogsConfig shapes the traces → logs direction.
type LogsConfig struct {
	// Include selects the records sent as log records: storm, failure, finding (the
	// storm_summary exporter's include). Default [storm, finding].
	Include []string `mapstructure:"include"`
}

const (
	includeStorm   = "storm"
	includeFailure = "failure"
	includeFinding = "finding"
)

var includeValues = []string{includeStorm, includeFailure, includeFinding}

const (
	defaultMaxTools      = 100
	defaultFlushInterval = 15 * time.Second
	defaultNewSeriesHold = time.Minute
)

func createDefaultConfig() *Config {
	return &Config{
		Metrics: MetricsConfig{MaxTools: defaultMaxTools, FlushInterval: defaultFlushInterval, NewSeriesHold: defaultNewSeriesHold},
		Logs:    LogsConfig{Include: []string{includeStorm, includeFinding}},
	}
}

// Validate checks the configuration at collector start.
func (c *Config) Validate() error {
	var errs []error
	if c.Metrics.MaxTools < 1 {
		errs = append(errs, fmt.Errorf("metrics.max_tools: %d, must be at least 1", c.Metrics.MaxTools))
	}
	if c.Metrics.FlushInterval <= 0 {
		errs = append(errs, fmt.Errorf("metrics.flush_interval: %s, must be positive", c.Metrics.FlushInterval))
	}
	if c.Metrics.NewSeriesHold < 0 {
		errs = append(errs, fmt.Errorf("metrics.new_series_hold: %s, must not be negative", c.Metrics.NewSeriesHold))
	}
	if len(c.Logs.Include) == 0 {
		errs = append(errs, fmt.Errorf("logs.include: empty, want one or more of %v", includeValues))
	}
	for _, v := range c.Logs.Include {
		if !slices.Contains(includeValues, v) {
			errs = append(errs, fmt.Errorf("logs.include: unknown value %q, want one of %v", v, includeValues))
		}
	}
	return errors.Join(errs...)
}

func (c *LogsConfig) includes(v string) bool { return slices.Contains(c.Include, v) }
