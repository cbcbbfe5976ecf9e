package stormsummaryexporter // import "github.com/retrystorm/retrystorm/exporter/stormsummaryexporter"

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strings"

	"go.opentelemetry.io/collector/pdata/pcommon"
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
			record, err := parseSummary(value, span)
			switch {
			case err != nil:
				skip(err)
			case e.selected(&record):
				record.TraceURL = traceURL(e.cfg.TraceURL, record.TraceID, record.CallKey, record.RunID)
				selected = append(selected, summary{id: record.ID, schema: record.Schema, record: &record, complete: record.Completeness()})
			}
		}
		if value, ok := attrs.Get(stormrecord.AttrFindingSummary); ok {
			record, err := parseFindingRecord(value, span)
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

// parseSummary decodes the record on a last attempt. Only what the record cannot be
// written without is checked; the span supplies a missing trace id and the id is derived
// when absent, as the processor would.
func parseSummary(summary pcommon.Value, span ptrace.Span) (stormrecord.Record, error) {
	var record stormrecord.Record
	if summary.Type() != pcommon.ValueTypeStr {
		return record, fmt.Errorf("parse call summary: attribute is %s, want a JSON string", summary.Type())
	}
	if err := json.Unmarshal([]byte(summary.Str()), &record); err != nil {
		return record, fmt.Errorf("parse call summary: %w", err)
	}
	if record.Schema != stormrecord.Schema {
		return record, fmt.Errorf("parse call summary: schema %q, want %q", record.Schema, stormrecord.Schema)
	}
	if record.CallKey == "" {
		return record, errors.New("parse call summary: call_key is empty")
	}
	if record.TraceID == "" && !span.TraceID().IsEmpty() {
		record.TraceID = span.TraceID().String()
	}
	if record.ID == "" {
		record.ID = stormrecord.RecordID(record.TraceID, record.CallKey)
	}
	// A summary from a processor that predates revisions is the first.
	record.Revision = max(record.Revision, 1)
	normalizeLists(&record)
	return record, nil
}

// parseFindingRecord decodes the finding record on the span trace-level findings concern;
// like parseSummary it takes a missing trace id, span id or id from the span.
func parseFindingRecord(value pcommon.Value, span ptrace.Span) (stormrecord.FindingRecord, error) {
	var record stormrecord.FindingRecord
	if value.Type() != pcommon.ValueTypeStr {
		return record, fmt.Errorf("parse finding record: attribute is %s, want a JSON string", value.Type())
	}
	if err := json.Unmarshal([]byte(value.Str()), &record); err != nil {
		return record, fmt.Errorf("parse finding record: %w", err)
	}
	if record.Schema != stormrecord.FindingSchema {
		return record, fmt.Errorf("parse finding record: schema %q, want %q", record.Schema, stormrecord.FindingSchema)
	}
	if record.TraceID == "" && !span.TraceID().IsEmpty() {
		record.TraceID = span.TraceID().String()
	}
	if record.SpanID == "" && !span.SpanID().IsEmpty() {
		record.SpanID = span.SpanID().String()
	}
	if record.SpanID == "" {
		return record, errors.New("parse finding record: span_id is empty")
	}
	if record.ID == "" {
		record.ID = stormrecord.FindingRecordID(record.TraceID, record.SpanID)
	}
	if record.Findings == nil {
		record.Findings = []stormrecord.Finding{}
	}
	record.Revision = max(record.Revision, 1)
	return record, nil
}

// normalizeLists turns absent lists into empty ones, so every list field of a written
// record is a JSON array; unknown scalars stay null.
func normalizeLists(record *stormrecord.Record) {
	if record.Statuses == nil {
		record.Statuses = []string{}
	}
	if record.SideEffects == nil {
		record.SideEffects = []string{}
	}
	if record.Findings == nil {
		record.Findings = []stormrecord.Finding{}
	}
	if record.AttemptSpanIDs == nil {
		record.AttemptSpanIDs = []string{}
	}
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
