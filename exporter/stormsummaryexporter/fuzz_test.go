package stormsummaryexporter

import (
	"encoding/json"
	"testing"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/retrystorm/retrystorm/internal/stormrecord"
)

func FuzzParseSummary(f *testing.F) {
	valid, err := json.Marshal(stormRecord(traceIDHex(1), "span_19"))
	if err != nil {
		f.Fatal(err)
	}
	for _, input := range []string{string(valid), `{}`, `{"schema":"retrystorm.storm/v1","call_key":"k"}`, `{"schema":`, `null`, `[]`, `"x"`} {
		f.Add(input)
	}
	f.Fuzz(func(t *testing.T, summary string) {
		span := ptrace.NewSpan()
		span.SetTraceID(pcommon.TraceID{1})
		value := pcommon.NewValueStr(summary)
		record, err := stormrecord.ParseCallSummary(value, span)
		if err != nil {
			return
		}
		if record.Schema != stormrecord.Schema || record.CallKey == "" || record.ID == "" {
			t.Fatalf("accepted an unusable summary: %+v", record)
		}
		if record.Statuses == nil || record.Findings == nil || record.SideEffects == nil || record.AttemptSpanIDs == nil {
			t.Fatalf("a list would be written as null: %+v", record)
		}
		if _, err := json.Marshal(&record); err != nil {
			t.Fatalf("accepted record does not encode: %v", err)
		}
	})
}

func FuzzParseFindingRecord(f *testing.F) {
	valid, err := json.Marshal(findingRecord(traceIDHex(1), "00000000000000a1"))
	if err != nil {
		f.Fatal(err)
	}
	for _, input := range []string{string(valid), `{}`, `{"schema":"retrystorm.finding/v1"}`, `{"schema":"retrystorm.finding/v1","findings":null}`, `{"schema":`, `null`, `[]`} {
		f.Add(input, true)
	}
	f.Fuzz(func(t *testing.T, value string, spanHasIDs bool) {
		span := ptrace.NewSpan()
		if spanHasIDs {
			span.SetTraceID(pcommon.TraceID{1})
			span.SetSpanID(pcommon.SpanID{2})
		}
		record, err := stormrecord.ParseFindingRecord(pcommon.NewValueStr(value), span)
		if err != nil {
			return
		}
		if record.Schema != stormrecord.FindingSchema || record.SpanID == "" || record.ID == "" || record.Findings == nil {
			t.Fatalf("accepted an unusable finding record: %+v", record)
		}
		if _, err := json.Marshal(&record); err != nil {
			t.Fatalf("accepted record does not encode: %v", err)
		}
	})
}
