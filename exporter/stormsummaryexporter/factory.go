// Package stormsummaryexporter writes one JSONL summary record per retry storm (and, when
// configured, per failed call or call with findings) from the annotations the retry_storm
// processor leaves on spans.
package stormsummaryexporter // import "github.com/retrystorm/retrystorm/exporter/stormsummaryexporter"

import (
	"context"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/config/configoptional"
	"go.opentelemetry.io/collector/config/configretry"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/exporter"
	"go.opentelemetry.io/collector/exporter/exporterhelper"

	"github.com/retrystorm/retrystorm/exporter/stormsummaryexporter/internal/metadata"
)

const (
	defaultMaxMegabytes  = 100
	defaultMaxBackups    = 10
	defaultRememberedIDs = 100_000
	defaultPreloadBytes  = 4 * 1024 * 1024
)

// NewFactory returns the factory of the storm_summary exporter.
func NewFactory() exporter.Factory {
	return exporter.NewFactory(metadata.Type, createDefaultConfig,
		exporter.WithTraces(createTraces, metadata.TracesStability))
}

func createDefaultConfig() component.Config {
	return &Config{
		TimeoutConfig: exporterhelper.NewDefaultTimeoutConfig(),
		QueueConfig:   configoptional.Some(exporterhelper.NewDefaultQueueConfig()),
		RetryConfig:   configretry.NewDefaultBackOffConfig(),
		Include:       []string{includeStorm},
		Rotation: RotationConfig{
			MaxMegabytes: defaultMaxMegabytes,
			MaxBackups:   defaultMaxBackups,
		},
		Dedup: DedupConfig{
			RememberedIDs: defaultRememberedIDs,
			PreloadBytes:  defaultPreloadBytes,
		},
	}
}

func createTraces(ctx context.Context, set exporter.Settings, cfg component.Config) (exporter.Traces, error) {
	return newTracesExporter(ctx, set, cfg.(*Config))
}

func newTracesExporter(ctx context.Context, set exporter.Settings, cfg *Config, opts ...exporterOption) (exporter.Traces, error) {
	summaries, err := newSummaryExporter(cfg, set, opts...)
	if err != nil {
		return nil, err
	}
	exp, err := exporterhelper.NewTraces(ctx, set, cfg, summaries.pushTraces,
		exporterhelper.WithCapabilities(consumer.Capabilities{MutatesData: false}),
		exporterhelper.WithTimeout(cfg.TimeoutConfig),
		exporterhelper.WithRetry(cfg.RetryConfig),
		exporterhelper.WithQueue(cfg.QueueConfig),
		exporterhelper.WithStart(summaries.start),
		exporterhelper.WithShutdown(summaries.shutdown),
	)
	if err != nil {
		return nil, err
	}
	return sealedTraces{Traces: exp, summaries: summaries}, nil
}
