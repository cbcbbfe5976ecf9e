// Package stormsconnector turns the annotations the retry_storm processor leaves on kept
// spans into OTLP metrics (calls, attempts, storms, findings, failed-attempt tokens per
// tool, extrapolated from the sampling threshold to all decided traffic) and OTLP log
// records (one per storm or finding record), so they reach any metrics or logs backend.
package stormsconnector // import "github.com/retrystorm/retrystorm/connector/stormsconnector"

import (
	"context"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/connector"
	"go.opentelemetry.io/collector/consumer"
	otelmetric "go.opentelemetry.io/otel/metric"

	"github.com/retrystorm/retrystorm/connector/stormsconnector/internal/metadata"
)

// NewFactory returns the factory of the storms connector.
func NewFactory() connector.Factory {
	return connector.NewFactory(metadata.Type, func() component.Config { return createDefaultConfig() },
		connector.WithTracesToMetrics(createTracesToMetrics, metadata.TracesToMetricsStability),
		connector.WithTracesToLogs(createTracesToLogs, metadata.TracesToLogsStability))
}

func createTracesToMetrics(_ context.Context, set connector.Settings, cfg component.Config, next consumer.Metrics) (connector.Traces, error) {
	malformed, err := malformedCounter(set)
	if err != nil {
		return nil, err
	}
	seal, err := newSealCheck(set, cfg.(*Config).AcceptUnsealed)
	if err != nil {
		return nil, err
	}
	return newStormMetrics(cfg.(*Config).Metrics, next, set.Logger, malformed, seal), nil
}

func createTracesToLogs(_ context.Context, set connector.Settings, cfg component.Config, next consumer.Logs) (connector.Traces, error) {
	malformed, err := malformedCounter(set)
	if err != nil {
		return nil, err
	}
	seal, err := newSealCheck(set, cfg.(*Config).AcceptUnsealed)
	if err != nil {
		return nil, err
	}
	return &stormRecords{cfg: cfg.(*Config).Logs, next: next, logger: set.Logger, malformed: malformed, seal: seal}, nil
}

// malformedCounter is the connector's count of records it skipped because they did not
// parse: nothing is dropped without a metric saying so.
func malformedCounter(set connector.Settings) (func(context.Context, int64), error) {
	c, err := set.MeterProvider.Meter(metadata.ScopeName).Int64Counter(metadata.RecordsMalformed,
		otelmetric.WithUnit("{record}"),
		otelmetric.WithDescription("Call summaries and finding records on spans that did not parse and were skipped."))
	if err != nil {
		return nil, err
	}
	return func(ctx context.Context, n int64) { c.Add(ctx, n) }, nil
}
