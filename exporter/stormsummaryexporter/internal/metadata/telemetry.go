package metadata // import "github.com/retrystorm/retrystorm/exporter/stormsummaryexporter/internal/metadata"

import (
	"errors"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/otel/metric"
)

// Metric names of the exporter's internal telemetry, the keys of metadata.yaml's
// telemetry.metrics with the collector's otelcol_ prefix.
const (
	MetricRecordsWritten      = "otelcol_exporter_storm_summary_records_written"
	MetricRecordsDeduplicated = "otelcol_exporter_storm_summary_records_deduplicated"
	MetricRecordsSuperseding  = "otelcol_exporter_storm_summary_records_superseding"
	MetricRecordsMalformed    = "otelcol_exporter_storm_summary_records_malformed"
	MetricRecordsUnsealed     = "otelcol_exporter_storm_summary_records_unsealed"
	MetricWriteErrors         = "otelcol_exporter_storm_summary_write_errors"
)

// metricStability ends every description, as mdatagen appends a metric's stability.
const metricStability = " [Alpha]"

// Meter returns the exporter's meter from the component's MeterProvider.
func Meter(settings component.TelemetrySettings) metric.Meter {
	return settings.MeterProvider.Meter(ScopeName)
}

// TelemetryBuilder holds the exporter's instruments.
type TelemetryBuilder struct {
	ExporterStormSummaryRecordsWritten      metric.Int64Counter
	ExporterStormSummaryRecordsDeduplicated metric.Int64Counter
	ExporterStormSummaryRecordsSuperseding  metric.Int64Counter
	ExporterStormSummaryRecordsMalformed    metric.Int64Counter
	ExporterStormSummaryRecordsUnsealed     metric.Int64Counter
	ExporterStormSummaryWriteErrors         metric.Int64Counter
}

// NewTelemetryBuilder creates every instrument of the exporter on the component's meter.
func NewTelemetryBuilder(settings component.TelemetrySettings) (*TelemetryBuilder, error) {
	meter := Meter(settings)
	var builder TelemetryBuilder
	var errs error
	for _, c := range []struct {
		dst               *metric.Int64Counter
		name, description string
		unit              string
	}{
		{&builder.ExporterStormSummaryRecordsWritten, MetricRecordsWritten,
			"Summary records appended to the summary file, by schema (storm or finding record).", "{record}"},
		{&builder.ExporterStormSummaryRecordsDeduplicated, MetricRecordsDeduplicated,
			"Summary records not written because a line at least as complete was written for their id, before or in the same batch, by schema.", "{record}"},
		{&builder.ExporterStormSummaryRecordsSuperseding, MetricRecordsSuperseding,
			"Summary records written for an id already written because they are more complete (a later part of a trace, a later revision), by schema; also counted in records_written.", "{record}"},
		{&builder.ExporterStormSummaryRecordsMalformed, MetricRecordsMalformed,
			"Call summaries and finding records on spans that could not be parsed and were skipped.", "{record}"},
		{&builder.ExporterStormSummaryRecordsUnsealed, MetricRecordsUnsealed,
			"Call summaries and finding records on spans that no retry_storm processor of this collector sealed, taken out of the batch before the sending queue (accept_unsealed is off).", "{record}"},
		{&builder.ExporterStormSummaryWriteErrors, MetricWriteErrors,
			"Failed appends of a batch to the summary file; the batch goes back to the retry and queue.", "{error}"},
	} {
		var err error
		*c.dst, err = meter.Int64Counter(c.name, metric.WithDescription(c.description+metricStability), metric.WithUnit(c.unit))
		errs = errors.Join(errs, err)
	}
	return &builder, errs
}

// Shutdown releases the builder; counters hold no callbacks, so there is nothing to undo.
func (builder *TelemetryBuilder) Shutdown() {}
