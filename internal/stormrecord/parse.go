package stormrecord // import "github.com/retrystorm/retrystorm/internal/stormrecord"

import (
	"encoding/json"
	"errors"
	"fmt"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

// ParseCallSummary decodes the record on a last attempt (AttrCallSummary), for every reader
// of annotated spans (the storm_summary exporter, the storms connector). Only what the
// record cannot be used without is checked; the span supplies a missing trace id and the id
// is derived when absent, as the processor would. Lists absent from the JSON become empty.
func ParseCallSummary(summary pcommon.Value, span ptrace.Span) (Record, error) {
	var record Record
	if summary.Type() != pcommon.ValueTypeStr {
		return record, fmt.Errorf("parse call summary: attribute is %s, want a JSON string", summary.Type())
	}
	if err := json.Unmarshal([]byte(summary.Str()), &record); err != nil {
		return record, fmt.Errorf("parse call summary: %w", err)
	}
	if record.Schema != Schema {
		return record, fmt.Errorf("parse call summary: schema %q, want %q", record.Schema, Schema)
	}
	if record.CallKey == "" {
		return record, errors.New("parse call summary: call_key is empty")
	}
	if record.TraceID == "" && !span.TraceID().IsEmpty() {
		record.TraceID = span.TraceID().String()
	}
	if record.ID == "" {
		record.ID = RecordID(record.TraceID, record.CallKey)
	}
	// A summary from a processor that predates revisions is the first.
	record.Revision = max(record.Revision, 1)
	normalizeLists(&record)
	return record, nil
}

// ParseFindingRecord decodes the finding record (AttrFindingSummary) on the span
// trace-level findings concern; like ParseCallSummary it takes a missing trace id, span id
// or id from the span.
func ParseFindingRecord(value pcommon.Value, span ptrace.Span) (FindingRecord, error) {
	var record FindingRecord
	if value.Type() != pcommon.ValueTypeStr {
		return record, fmt.Errorf("parse finding record: attribute is %s, want a JSON string", value.Type())
	}
	if err := json.Unmarshal([]byte(value.Str()), &record); err != nil {
		return record, fmt.Errorf("parse finding record: %w", err)
	}
	if record.Schema != FindingSchema {
		return record, fmt.Errorf("parse finding record: schema %q, want %q", record.Schema, FindingSchema)
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
		record.ID = FindingRecordID(record.TraceID, record.SpanID)
	}
	if record.Findings == nil {
		record.Findings = []Finding{}
	}
	record.Revision = max(record.Revision, 1)
	return record, nil
}

// normalizeLists turns absent lists into empty ones, so every list field of a written
// record is a JSON array; unknown scalars stay null.
func normalizeLists(record *Record) {
	if record.Statuses == nil {
		record.Statuses = []string{}
	}
	if record.SideEffects == nil {
		record.SideEffects = []string{}
	}
	if record.Findings == nil {
		record.Findings = []Finding{}
	}
	if record.AttemptSpanIDs == nil {
		record.AttemptSpanIDs = []string{}
	}
}
