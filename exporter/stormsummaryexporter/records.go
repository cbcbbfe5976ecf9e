package stormsummaryexporter // import "github.com/retrystorm/retrystorm/exporter/stormsummaryexporter"

import (
	"context"
	"net/url"
	"strings"

	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.uber.org/zap"

	"github.com/retrystorm/retrystorm/internal/stormrecord"
	"github.com/retrystorm/retrystorm/internal/tracespans"
)

// summary is one record selected for the file: the storm record of a call or the finding
// record of a span, with what the writer and the telemetry need to know of it.
type summary struct {
	id     string
	schema string
	// record is the *stormrecord.Record or *stormrecord.FindingRecord to encode.
	record any
	// complete orders the records of one id (stormrecord.Completeness).
	complete stormrecord.Completeness
}

// selectRecords parses the call summaries and finding records of the batch, keeps those
// the include setting selects and fills their trace link. Malformed ones are counted and
// skipped.
func (e *summaryExporter) selectRecords(ctx context.Context, td ptrace.Traces) []summary {
	var selected []summary
	malformed := 0
	var firstErr error
	skip := func(err error) {
		malformed++
		if firstErr == nil {
			firstErr = err
		}
	}
	for _, span := range tracespans.All(td) {
		attrs := span.Attributes()
		if value, ok := attrs.Get(stormrecord.AttrCallSummary); ok {
			record, err := stormrecord.ParseCallSummary(value, span)
			switch {
			case err != nil:
				skip(err)
			case e.selected(&record):
				record.TraceURL = traceURL(e.cfg.TraceURL, record.TraceID, record.CallKey, record.RunID)
				selected = append(selected, summary{id: record.ID, schema: record.Schema, record: &record, complete: record.Completeness()})
			}
		}
		if value, ok := attrs.Get(stormrecord.AttrFindingSummary); ok {
			record, err := stormrecord.ParseFindingRecord(value, span)
			switch {
			case err != nil:
				skip(err)
			case e.cfg.includes(includeFinding) && len(record.Findings) > 0:
				record.TraceURL = traceURL(e.cfg.TraceURL, record.TraceID, "", record.RunID)
				selected = append(selected, summary{id: record.ID, schema: record.Schema, record: &record, complete: record.Completeness()})
			}
		}
	}
	if malformed > 0 {
		e.telemetry.ExporterStormSummaryRecordsMalformed.Add(ctx, int64(malformed))
		e.logger.Debug("skipped malformed call summaries", zap.Int("summary.malformed", malformed), zap.Error(firstErr))
	}
	return selected
}

// selected applies include: storm, failure (a failed call that is not a storm), finding.
func (e *summaryExporter) selected(record *stormrecord.Record) bool {
	return (e.cfg.includes(includeStorm) && record.Storm) ||
		(e.cfg.includes(includeFailure) && !record.Storm && record.Failed()) ||
		(e.cfg.includes(includeFinding) && len(record.Findings) > 0)
}

// traceURL fills the trace_url template; every value is escaped so it is safe in a path
// segment or a query value. A finding record has no call: its {call_key} is empty.
func traceURL(template, traceID, callKey string, runID *string) *string {
	if template == "" {
		return nil
	}
	run := ""
	if runID != nil {
		run = *runID
	}
	link := strings.NewReplacer(
		placeholderTraceID, escapeURLValue(traceID),
		placeholderCallKey, escapeURLValue(callKey),
		placeholderRunID, escapeURLValue(run),
	).Replace(template)
	return &link
}

func escapeURLValue(value string) string {
	return strings.ReplaceAll(url.QueryEscape(value), "+", "%20")
}
