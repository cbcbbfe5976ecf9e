package metadata // import "github.com/retrystorm/retrystorm/exporter/stormsummaryexporter/internal/metadata"

import (
	"errors"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/otel/metric"
)

// Metric names of the exporter's internal telemetry (DESIGN.md, "Telemetry").
const (
	MetricRecordsWritten      = "otelcol_exporter_storm_summary_records_written"
	MetricRecordsDeduplicated = "otelcol_exporter_storm_summary_records_deduplicated"
	MetricRecordsSuperseding  = "otelcol_exporter_storm_summary_records_superseding"
	MetricRecordsMalformed    = "otelcol_exporter_storm_summary_records_malformed"
	MetricWriteErrors         = "otelcol_exporter_storm_summary_write_errors"
)

// AttrSchema is the attribute of records_written, records_superseding and records_deduplicated naming the
// record's schema (stormrecord.Schema or stormrecord.FindingSchema).
const AttrSchema = "schema"

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
	ExporterStormSummaryWriteErrors         metric.Int64Counter
}

// NewTelemetryBuilder creates every instrument of the exporter on the component's meter.
func NewTelemetryBuilder(settings component.TelemetrySettings) (*TelemetryBuilder, error) {
	meter := Meter(settings)
	var builder TelemetryBuilder
	var err, errs error
	builder.ExporterStormSummaryRecordsWritten, err = meter.Int64Counter(
		MetricRecordsWritten,
		metric.WithDescription("Summary records appended to the summary file, by schema (storm or finding record). [Development]"),
		metric.WithUnit("{record}"),
	)
	errs = errors.Join(errs, err)
	builder.ExporterStormSummaryRecordsDeduplicated, err = meter.Int64Counter(
		MetricRecordsDeduplicated,
		metric.WithDescription("Summary records not written because their id was already written, by schema. [Development]"),
		metric.WithUnit("{record}"),
	)
	errs = errors.Join(errs, err)
	builder.ExporterStormSummaryRecordsSuperseding, err = meter.Int64Counter(
		MetricRecordsSuperseding,
		metric.WithDescription("Summary records written for an id already written because they are more complete (a later part of a trace, a later revision), by schema; also counted in records_written. [Development]"),
		metric.WithUnit("{record}"),
	)
	errs = errors.Join(errs, err)
	builder.ExporterStormSummaryRecordsMalformed, err = meter.Int64Counter(
		MetricRecordsMalformed,
		metric.WithDescription("Call summaries and finding records on spans that could not be parsed and were skipped. [Development]"),
		metric.WithUnit("{record}"),
	)
	errs = errors.Join(errs, err)
	builder.ExporterStormSummaryWriteErrors, err = meter.Int64Counter(
		MetricWriteErrors,
		metric.WithDescription("Failed appends of a batch to the summary file; the batch goes back to the retry and queue. [Development]"),
		metric.WithUnit("{error}"),
	)
	errs = errors.Join(errs, err)
	return &builder, errs
}

// Shutdown releases the builder; counters hold no callbacks, so there is nothing to undo.
func (builder *TelemetryBuilder) Shutdown() {}
