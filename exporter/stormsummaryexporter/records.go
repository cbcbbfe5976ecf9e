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

// selectRecords parses the call summaries of the batch, keeps those the include setting
// selects and fills their trace link. Malformed summaries are counted and skipped.
func (e *summaryExporter) selectRecords(ctx context.Context, td ptrace.Traces) []stormrecord.Record {
	var records []stormrecord.Record
	malformed := 0
	var firstErr error
	for _, span := range tracespans.All(td) {
		summary, ok := span.Attributes().Get(stormrecord.AttrCallSummary)
		if !ok {
			continue
		}
		record, err := parseSummary(summary, span)
		if err != nil {
			malformed++
			if firstErr == nil {
				firstErr = err
			}
			continue
		}
		if e.selected(&record) {
			record.TraceURL = traceURL(e.cfg.TraceURL, &record)
			records = append(records, record)
		}
	}
	if malformed > 0 {
		e.telemetry.ExporterStormSummaryRecordsMalformed.Add(ctx, int64(malformed))
		e.logger.Debug("skipped malformed call summaries", zap.Int("summary.malformed", malformed), zap.Error(firstErr))
	}
	return records
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
	normalizeLists(&record)
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
// segment or a query value.
func traceURL(template string, record *stormrecord.Record) *string {
	if template == "" {
		return nil
	}
	runID := ""
	if record.RunID != nil {
		runID = *record.RunID
	}
	link := strings.NewReplacer(
		placeholderTraceID, escapeURLValue(record.TraceID),
		placeholderCallKey, escapeURLValue(record.CallKey),
		placeholderRunID, escapeURLValue(runID),
	).Replace(template)
	return &link
}

func escapeURLValue(value string) string {
	return strings.ReplaceAll(url.QueryEscape(value), "+", "%20")
}
